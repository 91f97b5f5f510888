"""``amem export``: the auditors' export of changes, proposals, raw logs, model calls, events,
erasures or tokens, streamed."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, BinaryIO

import typer

from amem.cli.app import app, err, open_memory


class ExportKind(StrEnum):
    changes = "changes"
    proposals = "proposals"
    raw_logs = "raw-logs"
    llm_calls = "llm-calls"
    events = "events"
    erasures = "erasures"
    tokens = "tokens"


class ExportFormat(StrEnum):
    csv = "csv"
    jsonl = "jsonl"


@app.command("export")
def export(
    kind: Annotated[ExportKind, typer.Argument(help="What to export.", case_sensitive=False)],
    fmt: Annotated[ExportFormat, typer.Option("--format", help="csv or jsonl.")] = ExportFormat.jsonl,
    scope: Annotated[str | None, typer.Option("--scope", help="Only this scope.")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="From this time on (ISO 8601, inclusive).")
    ] = None,
    until: Annotated[str | None, typer.Option("--until", help="Before this time (ISO 8601).")] = None,
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Write to this file (default: standard output).")
    ] = None,
) -> None:
    """Export every change, proposal, raw log or model call, the event chain itself, the erasures,
    or the tokens made and revoked, oldest first.

    Changes carry prev_hash and hash (to check the chain elsewhere), proposals, raw logs and model
    calls (llm-calls: the prompt's digest, the answer, tokens, errors) their own event's seq and
    hash; erasures one row per row they redacted, with its digests before and
    after and the erasure's own record and event; tokens each made or revoked, with its event. Any
    size of ledger: rows are read and written page by page.

    Times: changes by applied_at, proposals by created_at, raw logs by received_at, model calls by
    created_at, events by at,
    erasures by erased_at, tokens by at.
    """
    from amem.cli.app import parse_time
    from amem.services.export import write

    moments = parse_time(since, "--since"), parse_time(until, "--until")
    table = kind.value.replace("-", "_")
    with open_memory(create=False) as mem:
        if scope is not None:  # before anything is written: an unknown scope is not an empty export
            from amem.cli.search import refuse_unknown_scope

            refuse_unknown_scope(mem, scope)
        rows = mem.export(table, scope=scope, since=moments[0], until=moments[1])
        if output is None:
            sys.stdout.flush()  # anything printed before goes first
            binary = getattr(sys.stdout, "buffer", None)
            write(rows, table, fmt.value, sys.stdout if binary is None else Utf8Out(binary))
            (sys.stdout if binary is None else binary).flush()
            return
        try:
            target = open(output, "w", encoding="utf-8", newline="")  # noqa: SIM115
        except OSError as exc:
            from amem.errors import InvalidInputError

            raise InvalidInputError(f"cannot write {output}: {exc.strerror or exc}") from None
        with target:
            count = write(rows, table, fmt.value, target)
    err.print(f"{count} {kind.value} written to {output}", markup=False)


class Utf8Out:
    """Standard output written as UTF-8, whatever its own encoding: a Windows console redirected to
    a file, or a Latin-1 locale, stopped an export at its first accent or Chinese character with
    "internal error (UnicodeEncodeError)", the file cut after the rows before it. An export is a
    UTF-8 file, as with --output."""

    def __init__(self, binary: BinaryIO) -> None:
        self.binary = binary

    def write(self, text: str, /) -> int:
        self.binary.write(text.encode("utf-8"))
        return len(text)
