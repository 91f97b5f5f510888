"""``amem ui`` (the approval console) and ``amem reviewers`` (console accounts)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from amem.cli.app import JsonOpt, app, cell, emit, err, open_memory, out, settings

if TYPE_CHECKING:
    from amem.policy import Policy

reviewers_app = typer.Typer(help="Reviewer accounts of the approval console.", no_args_is_help=True)
app.add_typer(reviewers_app, name="reviewers")


#: What the console imports, and the extra that installs it.
CONSOLE_MODULES = ("streamlit", "streamlit_authenticator", "extra_streamlit_components", "jwt", "pandas")


def require_console() -> None:
    """Refuse, in one line, to start the console when its extra is not installed."""
    from importlib.util import find_spec

    from amem.errors import ConfigError

    missing = []
    for module in CONSOLE_MODULES:
        try:
            if find_spec(module) is None:
                missing.append(module)
        except (ImportError, ValueError):
            missing.append(module)
    if missing:
        raise ConfigError(
            f"the console needs {', '.join(missing)}: install it with "
            "pip install 'amem[console]' (in a checkout: make demo, or pip install -e '.[console]')"
        )


def app_path() -> str:
    """The console's entry script, wherever the approval_ui package is installed."""
    from importlib.util import find_spec
    from pathlib import Path

    spec = find_spec("approval_ui.state")  # a module's origin is a real file, even in editable installs
    if spec is None or spec.origin is None:
        raise RuntimeError("the approval_ui package is not installed")
    return str(Path(spec.origin).resolve().parent / "app.py")


def console_command(
    *, port: int, headless: bool, address: str, extra: list[str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """The ``streamlit run`` command line and environment for the configured store."""
    cfg = settings()
    env = dict(os.environ)
    env["AMEM_HOME"] = str(cfg.home.resolve())
    env["AMEM_DATABASE_URL"] = cfg.database_url
    if cfg.policy_path:
        env["AMEM_POLICY"] = str(os.path.abspath(cfg.policy_path))
    if cfg.llm_model:
        env["AMEM_LLM_MODEL"] = cfg.llm_model
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_path()),
        "--server.port",
        str(port),
        "--server.address",
        address,
        "--server.headless",
        "true" if headless else "false",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--client.toolbarMode",
        "viewer",
        *(extra or []),
    ]
    return cmd, env


@app.command()
def ui(
    port: Annotated[int, typer.Option("--port", help="Port to serve on.")] = 8501,
    headless: Annotated[
        bool, typer.Option("--headless/--no-headless", help="Do not open a browser window.")
    ] = True,
    address: Annotated[
        str, typer.Option("--address", help="Interface to listen on (0.0.0.0 for every interface).")
    ] = "127.0.0.1",
) -> None:
    """Run the approval console (Streamlit) on the configured store.

    Reviewers sign in with the password whose bcrypt hash is in their password_hash
    (see `amem reviewers hash-password`), or through a trusted proxy header
    (AMEM_UI_TRUSTED_HEADER=X-Forwarded-User). Behind a reverse proxy that only forwards, list it in
    AMEM_UI_TRUSTED_PROXIES so failed sign-ins are counted per client, not per proxy.
    """
    from amem.memory import require_store
    from amem.services.authentication import check_trusted_proxies

    check_trusted_proxies(os.environ.get("AMEM_UI_TRUSTED_PROXIES", ""))
    require_console()
    cfg = settings()
    # The console opens an existing store only: a mistyped --home is refused here, saying how to
    # make a store, before a server starts on it (and before anything is created there).
    require_store(cfg)
    cmd, env = console_command(port=port, headless=headless, address=address)
    err.print(f"approval console on http://{address}:{port} (ledger {cfg.shown_database_url})", markup=False)
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        # Become the server: signals (Ctrl-C, a supervisor's SIGTERM) reach Streamlit directly.
        os.execve(cmd[0], cmd, env)
    try:
        code = subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        code = 0
    if code:
        raise typer.Exit(code)


#: A password read from standard input, for scripts: ``--password-stdin`` as in every command that
#: asks for one; ``--stdin``, the older spelling, still works.
PasswordFromStdin = Annotated[
    bool,
    typer.Option(
        "--password-stdin",
        "--stdin",
        help="Read the password from standard input (one line), for scripts; --stdin is an older spelling.",
    ),
]


@reviewers_app.command("hash-password")
def hash_password_cmd(
    stdin: PasswordFromStdin = False,
    rounds: Annotated[int, typer.Option("--rounds", min=4, max=16, help="bcrypt work factor.")] = 12,
) -> None:
    """Print a bcrypt hash for a reviewer's password_hash. The password itself is never stored."""
    from amem.services.accounts import hash_password

    if stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    out.print(hash_password(password, rounds=rounds), markup=False)


@reviewers_app.command("set-password")
def set_password_cmd(
    reviewer: Annotated[str, typer.Argument(help="The reviewer (a name in the policy's reviewers).")],
    stdin: PasswordFromStdin = False,
) -> None:
    """Store a bcrypt hash of a reviewer's password in the policy's reviewers file.

    A reviewer whose entry is in policies.yaml keeps it there (roles, scopes): the reviewers file
    gets their password_hash alone, merged field by field when the policy loads. With the packaged
    default policy in force, its policies.yaml and reviewers.yaml are first copied into the current
    directory (where amem finds them next time) and the copy is changed.
    """
    from pathlib import Path

    import yaml

    from amem.domain.identity import canonical_identity, identity_key
    from amem.errors import InvalidInputError, PolicyError
    from amem.policy import DEFAULT_POLICY_PATH, load_policy, resolve_policy_path
    from amem.services.accounts import hash_password

    path = resolve_policy_path(settings().policy_path)
    if path.resolve() == DEFAULT_POLICY_PATH.resolve():
        for name in ("policies.yaml", "reviewers.yaml"):
            if Path(name).exists():
                raise InvalidInputError(f"./{name} exists but is not the policy in force; use --policy")
        for name in ("policies.yaml", "reviewers.yaml"):
            Path(name).write_text((DEFAULT_POLICY_PATH.parent / name).read_text("utf-8"), "utf-8")
        err.print("copied the default policies.yaml and reviewers.yaml into this directory", markup=False)
        path = Path("policies.yaml")
    policy = load_policy(path)
    who = canonical_identity(reviewer, what="reviewer")
    if policy.reviewer(who) is None:
        raise InvalidInputError(f"{who} is not a reviewer in {path}")
    if not policy.reviewers_file:
        raise InvalidInputError(
            f"{path} lists its reviewers itself: put the hash there (amem reviewers hash-password)"
        )
    own = (yaml.safe_load(path.read_text("utf-8")) or {}).get("reviewers") or {}
    if any(identity_key(k) == who and "password_hash" in (v or {}) for k, v in own.items()):
        raise InvalidInputError(
            f"{who}'s password_hash is in {path} itself: replace it there (amem reviewers hash-password "
            "prints one)"
        )
    if stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt(f"New password for {who}", hide_input=True, confirmation_prompt=True)
    digest = hash_password(password)
    file = (path.parent / policy.reviewers_file).resolve()
    text = file.read_text("utf-8")
    header = "".join(line + "\n" for line in text.splitlines() if line.startswith("#"))  # keep the header
    data = yaml.safe_load(text) or {}
    entries = data.get("reviewers") or {}
    data["reviewers"] = entries
    key = next((k for k in entries if identity_key(k) == who), who)
    entries[key] = {**(entries.get(key) or {}), "password_hash": digest}
    file.write_text(header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "utf-8")
    try:  # the policy must still load as it did, the reviewer's roles and scopes untouched
        after = load_policy(path).reviewer(who)
    except PolicyError:
        file.write_text(text, "utf-8")
        raise
    before = policy.reviewer(who)
    if after is None or before is None or (after.roles, after.scopes) != (before.roles, before.scopes):
        file.write_text(text, "utf-8")
        raise InvalidInputError(
            f"setting {who}'s password would change their roles or scopes; nothing changed"
        )
    out.print(f"password set for {who} in {file}", markup=False)


@reviewers_app.command("list")
def reviewers_list(as_json: JsonOpt = False) -> None:
    """The reviewers of the policy in force, their roles, and whether they have a password.

    The policy in force is the ledger's installed one, else the file."""
    from amem.services.accounts import accounts

    policy = _policy_in_force()
    rows = [
        {
            "reviewer": a.id,
            "name": a.name,
            "roles": list(a.roles),
            "scopes": list(a.scopes) if a.scopes is not None else None,
            "read_only": a.read_only,
            "password": a.can_sign_in_with_password,
        }
        for a in accounts(policy).values()
    ]

    def render(items: list[dict[str, object]]) -> None:
        table = Table(title=f"reviewers ({policy.source})")
        for col in ("reviewer", "name", "roles", "decides", "password sign-in"):
            table.add_column(col)
        for r in items:
            roles, scopes = r["roles"], r["scopes"]
            table.add_row(
                cell(r["reviewer"]),
                cell(r["name"]),
                cell(", ".join(roles) if isinstance(roles, list) else roles),
                _decides(bool(r["read_only"]), scopes if isinstance(scopes, list) else None),
                "yes" if r["password"] else "no",
            )
        out.print(table)

    emit(rows, as_json, render)


def _policy_in_force() -> Policy:
    """The ledger's installed policy; before there is a ledger (no store yet, or a database without
    its schema) the file, which `amem init` will install. A missing store is not created to ask."""
    from amem.errors import ConfigError, SchemaMismatchError
    from amem.memory import require_store
    from amem.policy import load_policy

    cfg = settings()
    try:
        require_store(cfg)
    except ConfigError:
        return load_policy(cfg.policy_path)
    try:
        with open_memory(create=False) as mem:
            return mem.policy
    except SchemaMismatchError:
        return load_policy(cfg.policy_path)


def _decides(read_only: bool, scopes: list[str] | None) -> str:
    """The list's "decides" cell: `scopes: []` in the policy limits a reviewer to no account, so
    governance refuses them everywhere; None means every account."""
    if read_only:
        return "no (read-only)"
    if scopes is None:
        return "yes"
    if not scopes:
        return "no (in no account)"
    return f"yes, in {', '.join(scopes)} only"
