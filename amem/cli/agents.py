"""Commands for agents' inputs: ``amem status`` (what became of an input) and ``amem worker``."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from amem.cli.app import JsonOpt, PasswordStdinOpt, app, authenticate, emit, err, open_memory, operator, out
from amem.cli.blocks import printable, shown
from amem.cli.notes import leased_words


@app.command("status")
def input_status(
    raw_log_id: Annotated[
        str, typer.Argument(help="The raw log id add_note(wait=False) or the API returned.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """What became of an input: queued, processing, done (with its note), failed (with why) or erased."""
    with open_memory(create=False) as memory:
        status = memory.input_status(raw_log_id)

    def render(s: Any) -> None:
        line = f"{s.raw_log_id}: {s.status}"
        if s.status == "done":
            line += f", note {s.note_id}"
        elif s.status == "processing":
            line += f" (a worker holds it until {s.lease_until:%Y-%m-%d %H:%M:%S} UTC)"
        elif s.status == "failed":
            line += f": {s.error}"
            if "amem reprocess" not in (s.error or ""):  # nothing else retries a failed input
                line += " (its text is kept; `amem reprocess` retries it)"
        elif s.status == "erased":
            line += " on a data subject's request (`amem erase`); its text is gone"
        out.print(printable(line), markup=False)

    emit(status, as_json, render)


class _Stopping:
    """The first Ctrl-C or SIGTERM to ``amem worker``: the workers finish the batch they hold, then
    stop; which signal it was (None: none came)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: int | None = None

    def __call__(self, signum: int, frame: object) -> None:
        self.signal = signum
        self.event.set()
        for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal stops at once
            signal.signal(sig, signal.SIG_DFL)


@contextmanager
def _stop_on_signal() -> Iterator[_Stopping]:
    """Ctrl-C and SIGTERM set ``_Stopping`` instead of raising in the main thread while workers run
    (raised, the store closed under them and the batch they held stayed leased to a process gone);
    the handlers before are put back after."""
    stopping = _Stopping()
    if threading.current_thread() is not threading.main_thread():  # only the main thread gets signals
        yield stopping
        return
    before = {sig: signal.signal(sig, stopping) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopping
    finally:
        for sig, handler in before.items():
            if handler is not None:
                signal.signal(sig, handler)


@app.command("worker")
def worker(
    once: Annotated[
        bool, typer.Option("--once", help="Process what is queued now, then exit (else run until stopped).")
    ] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Workers in this process.")] = 1,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Inputs a worker claims and analyses together.")
    ] = 16,
    as_json: JsonOpt = False,
) -> None:
    """Analyse queued inputs (add_note with wait=False, the HTTP API, the MCP server).

    Any number of workers, in any number of processes, share the queue; Ctrl-C or SIGTERM stops
    after the batch (a second one at once). --once exits 4 when inputs failed (`amem status`
    says why, `amem reprocess` retries them), 130 or 143 when a signal stopped it."""
    with open_memory() as memory, _stop_on_signal() as stopping:
        if once:
            # the heavy parts, built once before the threads start; an index that cannot be opened
            # refuses to start here, the queue untouched, as start_workers does (opened by the first
            # batch, it would mark every queued input failed, left to `amem reprocess`)
            memory.pipeline  # noqa: B018
            memory.search_service  # noqa: B018
            workers = [memory.worker(batch_size=batch_size, name=f"worker{i}") for i in range(concurrency)]
            threads = [
                threading.Thread(target=w.drain, args=(stopping.event,), name=w.owner) for w in workers
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            from amem.services.worker import WorkerStats

            stats = WorkerStats.total(workers)
        else:
            pool = memory.start_workers(concurrency, batch_size=batch_size)
            err.print(f"{concurrency} worker(s) running; Ctrl-C to stop", markup=False)
            while not stopping.event.wait(1.0):
                pass
            # each worker finishes its batch; one that cannot leaves leases that end (inputs kept)
            pool.stop(timeout=memory.settings.worker_lease_seconds)
            stats = pool.stats
        depth = memory.queue_depth()
        # inputs still under another run's lease (a worker killed mid-batch): when they are free
        free_by = memory.pipeline.leases_end() if depth["processing"] else None
        lease_seconds = memory.settings.worker_lease_seconds
    failed = stats.failed

    def render(d: dict[str, Any]) -> None:
        # erased meanwhile, or given back to the queue: not failed, and not counted as such
        others = [f"{d['erased']} erased meanwhile"] if d["erased"] else []
        others += [f"{d['given_back']} given back to the queue"] if d["given_back"] else []
        out.print(
            f"processed {d['processed']} inputs ({d['failed']} failed"
            + "".join(f"; {other}" for other in others)
            + f"); queued now: {d['queue']['queued']}",
            markup=False,
        )
        if d["queue"]["processing"]:
            held = d["queue"]["processing"]
            out.print(
                leased_words(
                    f"{held} {'input' if held == 1 else 'inputs'} still",
                    "this worker",
                    free_by,
                    lease_seconds,
                    "amem worker --once" if once else "amem worker",
                ),
                markup=False,
            )

    emit(
        {
            "processed": stats.processed,
            "failed": failed,
            "erased": stats.erased,
            "given_back": stats.given_back,
            "queue": depth,
            "held_until": free_by,
        },
        as_json,
        render,
    )
    if not once:
        return  # a signal is how a running worker is meant to stop
    if stopping.signal is not None:
        how = "terminated (SIGTERM)" if stopping.signal == signal.SIGTERM else "interrupted"
        err.print(
            f"{how}: each worker finished the batch it held; the inputs not taken stay queued for the "
            "next worker (`amem worker --once` again)",
            markup=False,
        )
        raise typer.Exit(128 + stopping.signal)  # as a shell reports a signal: 130 Ctrl-C, 143 SIGTERM
    if failed:  # as `amem import` does: kept, not analysed; the caller's script learns it
        raise typer.Exit(4)


tokens_app = typer.Typer(help="Bearer tokens of agents and services (the HTTP API).", no_args_is_help=True)
app.add_typer(tokens_app, name="tokens")


@tokens_app.command("create")
def tokens_create(
    name: Annotated[str, typer.Argument(help="Who uses it: an agent or service name, or a reviewer.")],
    role: Annotated[
        str,
        typer.Option(
            "--role",
            help="agent (adds, reads, searches) or reviewer (the reviewer's own, instead of their "
            "password; their password is asked for).",
        ),
    ] = "agent",
    expires_in_days: Annotated[
        int | None,
        typer.Option(
            "--expires-in-days",
            help="Refused from that many days on; 0: never. Default: 90 for a reviewer token (it stands "
            "in for a password), never for an agent token.",
        ),
    ] = None,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Revoke the name's other active tokens in the same step (a rotation: the old ones stop "
            "as the new one starts; the new one keeps their scopes unless --scope is given).",
        ),
    ] = False,
    scopes: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            help="An agent token: the only scope it may read and add to (repeat for more). Default: "
            "every scope.",
        ),
    ] = None,
    password_stdin: PasswordStdinOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Create a token and print it once: only its sha256 is kept.

    A reviewer token is created by that reviewer: their password is asked for."""
    with open_memory() as memory:
        by = authenticate(memory.authentication, name, password_stdin) if role == "reviewer" else None
        token, info = memory.tokens.create(
            name,
            role,
            by=by,
            created_by=None if by else operator(),
            expires_in_days=expires_in_days,
            replace=replace,
            scopes=scopes or None,
        )

    def render(d: dict[str, Any]) -> None:
        expires = f"expires {info.expires_at:%Y-%m-%d %H:%M} UTC" if info.expires_at else "never expires"
        reach = f"scopes {', '.join(info.scopes)}" if info.scopes else "every scope"
        out.print(
            f"{d['token']}\n(token {d['id']} for {d['identity']}, role {d['role']}, {reach}, {expires}; "
            "shown once: keep it secret)",
            markup=False,
        )

    emit({"token": token, **info.model_dump(mode="json")}, as_json, render)


@tokens_app.command("list")
def tokens_list(as_json: JsonOpt = False) -> None:
    """Every token: name, role, last used, when it expires or was revoked (never the token itself).

    Dates by day, so names and roles fit whole at 80 columns; a wider terminal adds when each was
    made; `--json` gives every moment to the second."""
    from rich import box
    from rich.table import Table

    from amem.domain.models import utcnow

    with open_memory(create=False) as memory:
        items = memory.tokens.list()
        policy = memory.policy

    def render(rows: list[Any]) -> None:
        now = utcnow()
        day = lambda d: f"{d:%Y-%m-%d}" if d else "never"  # noqa: E731

        def state(t: Any) -> str:
            if t.revoked_at:
                return f"revoked {day(t.revoked_at)}"
            if t.expires_at and t.expires_at <= now:
                return f"expired {day(t.expires_at)}"
            return f"expires {day(t.expires_at)}" if t.expires_at else "never expires"

        # an admin picks the token to revoke by these: each shown whole (folded, never cut with "…")
        table = Table(
            title="tokens", box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1), collapse_padding=True
        )
        # what each token may read, only where one is limited or a reviewer's (who decides less)
        limited = any(t.scopes or t.role.value == "reviewer" for t in rows)
        made = out.width >= 100  # when it was made: also in `amem tokens history`
        cols = ["id", "name", "role", *(["reads"] if limited else []), *(["created"] if made else [])]
        # names kept on one line where none is long: what a token reads wraps at its spaces instead
        whole = ("id", "role", *(["name"] if all(len(t.name) <= 24 for t in rows) else []))
        for col in (*cols, "last used", "state"):
            table.add_column(col, no_wrap=col in whole, overflow="fold")
        for t in rows:
            table.add_row(
                t.id,
                shown(t.name),
                t.role.value,
                *([shown(_reads(policy, t.scopes, t.role.value, t.name))] if limited else []),
                *([day(t.created_at)] if made else []),
                day(t.last_used_at),
                state(t),
            )
        out.print(table)

    emit(items, as_json, render)


def _reads(policy: Any, scopes: list[str] | None, role: str, name: str) -> str:
    """The scopes a token may read ("all": every one); for a reviewer's token, whose reads are never
    limited, also where its reviewer decides by the policy in force, so "all" is not read as a grant:
    "all (decides in acme)"."""
    reads = ", ".join(scopes) if scopes else "all"
    if role != "reviewer":
        return reads
    decides = policy.scopes_of(name)
    if decides is None:
        return reads
    return f"{reads} (decides in {', '.join(decides) if decides else 'none'})"


@tokens_app.command("history")
def tokens_history(as_json: JsonOpt = False) -> None:
    """Every token made and revoked, oldest first, as the event chain records it (`amem verify`
    proves it, and finds a token no recorded creation backs).

    A table where the terminal is wide enough (120 columns), else one line an event; `--json` for
    scripts."""
    from rich.table import Table

    with open_memory(create=False) as memory:
        items = memory.tokens.history()
        policy = memory.policy

    def render(rows: list[Any]) -> None:
        limited = any(e.scopes or e.role.value == "reviewer" for e in rows)

        def cells(e: Any) -> list[str]:
            return [
                f"{e.at:%Y-%m-%d %H:%M}", e.action, e.token_id, shown(e.name), e.role.value,
                *([shown(_reads(policy, e.scopes, e.role.value, e.name))] if limited else []),
                shown(e.by or "-"), f"{e.expires_at:%Y-%m-%d}" if e.expires_at else "never",
            ]  # fmt: skip

        if out.width < 120:
            out.print("tokens made and revoked", markup=False)
            for e in rows:
                at, action, token, name, role, *rest = cells(e)
                *scoped, by, expires = rest
                where = f", reads {scoped[0]}" if scoped else ""
                out.print(
                    f"{at}  {action} {token} {name} ({role}{where}) by {by}, expires {expires}",
                    markup=False,
                    soft_wrap=True,
                )
            return
        table = Table(title="tokens made and revoked")
        scopes = ["reads"] if limited else []
        for col in ("at", "action", "token", "name", "role", *scopes, "by", "expires"):
            table.add_column(col, no_wrap=col in ("at", "token"), overflow="fold")
        for e in rows:
            table.add_row(*cells(e))
        out.print(table)

    emit(items, as_json, render)


@tokens_app.command("revoke")
def tokens_revoke(
    name_or_id: Annotated[
        str,
        typer.Argument(
            help="A token's name (all its active tokens; agent:NAME or person:NAME: that role's only) "
            "or its id."
        ),
    ],
    as_json: JsonOpt = False,
) -> None:
    """Revoke tokens at once: the next request with them gets 401. The record names the operating
    system account that ran it (os:USER@HOST)."""
    with open_memory(create=False) as memory:
        count = memory.tokens.revoke(name_or_id, by=operator())
    emit({"revoked": count}, as_json, lambda d: out.print(f"revoked {d['revoked']} token(s)", markup=False))


def _require(module: str, extra: str) -> None:
    import importlib.util

    from amem.errors import ConfigError

    if importlib.util.find_spec(module) is None:
        raise ConfigError(f"this command needs {module}: pip install 'amem[{extra}]'")


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port.")] = 8765,
    workers: Annotated[
        int, typer.Option("--workers", min=0, help="Queue workers in this process (0: run `amem worker`).")
    ] = 1,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Inputs per worker batch.")] = 16,
    decisions: Annotated[
        bool,
        typer.Option(
            "--decisions",
            help="Reviewers' tokens may also approve and reject through the API (under the same "
            "governance as the console). Default: the API decides nothing.",
        ),
    ] = False,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs and /openapi.json); needs the `api` extra."""
    _require("fastapi", "api")
    _require("uvicorn", "api")
    import uvicorn

    from amem.api.access_log import logging_config
    from amem.api.app import create_app

    with open_memory() as memory:
        api = create_app(memory, workers=workers, batch_size=batch_size, decisions=decisions)
        uvicorn.run(api, host=host, port=port, log_config=logging_config())  # no query in its log


@app.command("mcp")
def mcp_server(
    transport: Annotated[
        str, typer.Option("--transport", help="stdio (an MCP client starts this command) or http.")
    ] = "stdio",
    host: Annotated[str, typer.Option("--host", help="http: address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="http: port (the endpoint is /mcp).")] = 8766,
    workers: Annotated[
        int, typer.Option("--workers", min=0, help="Queue workers in this process (0: run `amem worker`).")
    ] = 1,
    actor: Annotated[
        str, typer.Option("--actor", help="stdio: who the inputs are from (http: each token's identity).")
    ] = "agent:mcp",
    scopes: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            help="stdio: the only scope the tools may read and add to (repeat for more; default: "
            "every scope). Over http, limit each token instead (amem tokens create --scope).",
        ),
    ] = None,
) -> None:
    """Serve amem's tools over MCP (stdio or streamable HTTP); needs the `mcp` extra."""
    from amem.errors import InvalidInputError

    if transport not in ("stdio", "http"):
        raise InvalidInputError(f"--transport {transport!r}: use stdio or http")
    if scopes and transport == "http":
        raise InvalidInputError(
            "--scope limits a stdio server; over http each token carries its own scopes "
            "(amem tokens create NAME --role agent --scope S)"
        )
    if scopes:  # as `amem tokens create --scope` checks them, before anything is served
        from amem.services.access import granted_scope

        for scope in scopes:
            granted_scope(scope)
    _require("mcp", "mcp")
    from amem.api.mcp_server import create_mcp_server

    with open_memory() as memory:
        if transport == "stdio":
            create_mcp_server(memory, actor=actor, workers=workers, scopes=scopes or None).run("stdio")
        else:  # every request carries a token of the ledger's; its identity is the actor
            url = f"http://{host}:{port}"
            server = create_mcp_server(memory, actor=actor, workers=workers, tokens_at=url)
            err.print(
                f"MCP at {url}/mcp: each request needs Authorization: Bearer TOKEN "
                "(amem tokens create NAME --role agent)",
                markup=False,
            )
            from amem.api.access_log import without_queries

            without_queries()  # its uvicorn keeps the access logger's own filters
            server.run("streamable-http", host=host, port=port)
