"""The typer application and what every command shares: opening the store, printing, errors."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.text import Text

app = typer.Typer(
    name="amem",
    help="amem: an evolving, auditable memory store for AI agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Markdown joins a docstring's wrapped lines into paragraphs; typer's "rich" mode keeps every
    # line break, so help wrapped at 100 columns came out ragged on an 80-column terminal
    rich_markup_mode="markdown",
)
db_app = typer.Typer(help="Create or migrate the ledger's schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")


class PipeAwareConsole(Console):
    """A console whose closed pipe (``amem pending | head``) reaches ``amem.cli.main`` as
    BrokenPipeError: rich's own handling exits 1, which means tampering here."""

    def on_broken_pipe(self) -> None:
        del self._buffer[:]  # what the reader refused: never written by a later print in this process
        raise BrokenPipeError


out = PipeAwareConsole(highlight=False, soft_wrap=True)
err = PipeAwareConsole(stderr=True, highlight=False, soft_wrap=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
HomeOpt = Annotated[
    str | None,
    typer.Option(
        "--home",
        help="Store directory (default: $AMEM_HOME, else the nearest .amem here or above, "
        "else the per-user data directory; see `amem where`).",
    ),
]
DbOpt = Annotated[
    str | None, typer.Option("--database-url", help="Ledger URL (default: $AMEM_DATABASE_URL).")
]
CheckpointsOpt = Annotated[
    str | None,
    typer.Option("--checkpoints", help="Checkpoint log: prove the ledger extends every statement in it."),
]
PublicKeyOpt = Annotated[
    str | None,
    typer.Option("--public-key", help="Key checkpoints are signed with (default: the signing key's)."),
]
PasswordStdinOpt = Annotated[
    bool,
    typer.Option(
        "--password-stdin",
        help="Read the reviewer's password from standard input (one line), for scripts. "
        "Otherwise it is asked for, hidden; it is never an argument.",
    ),
]
PolicyOpt = Annotated[str | None, typer.Option("--policy", help="Policy file (default: $AMEM_POLICY).")]


class State:
    home: str | None = None
    database_url: str | None = None
    policy: str | None = None
    llm: str | None = None


state = State()
#: The policy's warnings are printed by ``open_memory``, each as a `warning:` line; with no handler of
#: its own, Python's last resort printed the registry's log of them as well, as a bare line.
logging.getLogger("amem.services.policy_registry").addHandler(logging.NullHandler())


@app.callback()
def _global(
    home: HomeOpt = None,
    database_url: DbOpt = None,
    policy: PolicyOpt = None,
    llm: Annotated[
        str | None, typer.Option("--llm", help="litellm model string (default: $AMEM_LLM_MODEL).")
    ] = None,
) -> None:
    state.home, state.database_url, state.policy, state.llm = home, database_url, policy, llm


def open_memory(*, create: bool = True, warn: bool = True) -> Any:
    from amem.memory import Memory

    mem = Memory(
        state.home, database_url=state.database_url, policy=state.policy, llm=state.llm, create=create
    )
    print_policy_warnings(mem, mismatch=warn)
    return mem


def print_policy_warnings(mem: Any, *, mismatch: bool = True) -> None:
    """What is wrong with the policy in force, each a `warning:` line on stderr, as every command
    that opens a store says it once (``open_memory``; `amem init`, `restore` and `demo`, which open
    their own): the flaws it keeps or the file would bring (always: a decision does not say these),
    and with ``mismatch`` that this process decides nothing because its file is not the installed one."""
    for warning in mem.policy_in_force.warnings:
        err.print(f"warning: {warning}", markup=False)
    if mismatch and mem.policy_in_force.mismatch:
        err.print(f"warning: {mem.policy_in_force.mismatch}", markup=False)


def sign_in(mem: Any, reviewer: str, password_stdin: bool) -> Any:
    """The reviewer, authenticated by the personal token in AMEM_REVIEWER_TOKEN when set (never on
    the command line), else by their password (prompted, hidden, or one line of stdin)."""
    from amem.errors import AuthenticationError, PolicyMismatchError

    if mem.governance.mismatch:  # said before any password is asked for
        raise PolicyMismatchError(mem.governance.mismatch)
    token = os.environ.get("AMEM_REVIEWER_TOKEN")
    if token:
        from amem.domain.identity import same_identity

        who = mem.authenticate_token(token)
        if not same_identity(who.id, reviewer):
            raise AuthenticationError(f"AMEM_REVIEWER_TOKEN is {who.id}'s token, not {reviewer.strip()}'s")
        info = mem.tokens.authenticate(token)
        if info.expires_soon():
            err.print(
                f"warning: AMEM_REVIEWER_TOKEN expires on {info.expires_at:%Y-%m-%d %H:%M} UTC; make the "
                f"next one with `amem tokens create {info.name} --role reviewer --replace`",
                markup=False,
            )
        return who
    return authenticate(mem.authentication, reviewer, password_stdin)


def editor(mem: Any, actor: str, password_stdin: bool) -> Any:
    """Who edits a note: an agent (``agent:NAME``) by its name; a person only signed in, as for a
    decision. A policy may apply a person's edits without review (``proposer_kinds``), and history
    names them: a name typed on the command line would let anyone act as that person."""
    from amem.domain.identity import split_kind
    from amem.domain.models import ActorKind
    from amem.errors import InvalidInputError, PermissionDeniedError

    kind, name = split_kind(actor.strip())
    if not actor.strip() or kind == ActorKind.AGENT.value:
        return actor  # an agent, or nobody (refused by the library with its own message)
    if kind is not None and kind != ActorKind.PERSON.value:
        # what the model proposes, and what amem does itself, are recorded by amem, never typed
        raise InvalidInputError(f"--actor {actor.strip()}: edit as agent:NAME or as a person, not as {kind}:")
    try:
        mem.authentication.person(actor)
    except PermissionDeniedError:
        raise PermissionDeniedError(
            f"{name.strip()} is an agent in the policy: edit as agent:{name.strip()}"
        ) from None
    return sign_in(mem, actor, password_stdin).actor


def authenticate(authentication: Any, reviewer: str, password_stdin: bool) -> Any:
    """``reviewer`` proven by their password under ``authentication``'s policy."""
    from amem.errors import AuthenticationError

    authentication.person(reviewer)  # an agent is refused before any password is asked for
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise AuthenticationError("--password-stdin: standard input held no password")
    else:
        import warnings

        with warnings.catch_warnings():  # no terminal: getpass reads the line shown, and warns so
            warnings.simplefilter("ignore", getpass_warning())
            try:
                password = typer.prompt(f"Password for {reviewer.strip()}", hide_input=True, err=True)
            except typer.Abort:
                if sys.stdin.isatty():
                    raise  # Ctrl-C at the prompt
                raise AuthenticationError(  # a script whose input ended: say how to give it
                    f"no terminal to ask {reviewer.strip()}'s password on: give it as one line on "
                    "standard input with --password-stdin, or set AMEM_REVIEWER_TOKEN to their token"
                ) from None
    return authentication.with_password(reviewer, password)


def getpass_warning() -> type[Warning]:
    import getpass

    return getpass.GetPassWarning


def print_verification(result: Any, what: str) -> None:
    """A verification as `amem verify` prints it: OK or TAMPERED, what was checked (``what``: the
    store, or a backup's copy), every further problem, each checkpoint proven or not, and what an
    auditor should know that is not tampering (an erasure after a checkpoint redacted rows it signed)."""
    out.print(f"{'OK' if result.ok else 'TAMPERED'}: {result.message} ({what})", markup=False)
    for problem in result.problems[1:]:
        out.print(f"  also: {problem}", markup=False)
    for proof in result.checkpoints:
        label = "proven" if proof.proven else "newer" if proof.newer_than_ledger else "NOT PROVEN"
        out.print(f"  {label}: {proof.message}", markup=False)
    for notice in getattr(result, "notices", []):  # not tampering: what an auditor should know
        out.print(f"  note: {notice}", markup=False)


def operator() -> str:
    """Who ran this command, as the operating system says (``os:USER@HOST``): recorded where no
    reviewer signs, such as an agent token made or a token revoked, so the record never says nobody."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a bare container)
        user = f"uid{os.getuid()}"
    return f"os:{user}@{socket.gethostname()}"


def settings() -> Any:
    from amem.config import Settings

    return Settings.from_env(
        home=state.home,
        database_url_override=state.database_url,
        policy_path=state.policy,
        llm_model=state.llm,
    )


def store_label() -> str:
    """The store a command looked at, in a message: its directory, or the ledger URL when set apart."""
    cfg = settings()
    if cfg.database_url_override:
        return cfg.shown_database_url
    return str(cfg.home.resolve())


def to_data(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        return {k: to_data(v) for k, v in value.items()}
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(to_data(value), indent=2, ensure_ascii=False, default=str) + "\n")


def emit(value: Any, as_json: bool, render: Callable[[Any], None]) -> None:
    if as_json:
        emit_json(value)
    else:
        render(value)


def fmt_value(value: Any, width: int = 60) -> Text:
    """A table cell for any value: shortened, never read as rich markup, its control characters
    shown rather than obeyed (``blocks.printable``)."""
    from amem.cli.blocks import printable

    if value is None:
        return Text("∅")
    text = printable(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return Text(text if len(text) <= width else text[: width - 1] + "…")


def cell(text: object) -> Text:
    """A table cell from the ledger: its control characters shown rather than obeyed."""
    from amem.cli.blocks import shown

    return shown(text)


#: The options that give a moment "as of": read as the end of the period typed (a date: that
#: whole day), as the HTTP API, the MCP server and the console read theirs (values.parse_as_of).
AS_OF_OPTIONS = frozenset({"--as-of"})


def parse_time(text: str | None, option: str) -> datetime | None:
    """The moment ``text`` gives for ``option``, in UTC: an --as-of the end of the period it names
    (a history line's second, a day), any other option (--since, --until) the exact moment."""
    if text is None:
        return None
    from amem.domain.values import parse_as_of, parse_datetime

    read = parse_as_of if option in AS_OF_OPTIONS else parse_datetime
    return read(text, what=option)


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
