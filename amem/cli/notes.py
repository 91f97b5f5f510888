"""Note commands: add, import, reprocess, update, delete, notes."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from amem.cli.app import (
    JsonOpt,
    PasswordStdinOpt,
    app,
    cell,
    editor,
    emit,
    fmt_value,
    open_memory,
    out,
    settings,
    store_label,
)


@app.command()
def add(
    text: Annotated[str, typer.Argument(help="The text to remember (kept verbatim as a raw log).")],
    at: Annotated[str | None, typer.Option("--at", help="When it happened (ISO 8601; default: now).")] = None,
    actor: Annotated[str, typer.Option("--actor", help="Who says it: agent:NAME or a person's name.")] = (
        "agent:cli"
    ),
    scope: Annotated[str, typer.Option("--scope", help="Whose memory: an account, a user.")] = "default",
    idempotency_key: Annotated[
        str | None,
        typer.Option(
            "--idempotency-key",
            help="Your own name for this input (a message id): run again with it, nothing is kept twice "
            "and the note kept before is shown.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a note: the raw log is kept, then a note is built, linked and evolved."""
    with open_memory() as mem:
        note_id = mem.add_note(text, at=at, actor=actor, scope=scope, idempotency_key=idempotency_key)
        note = mem.read(note_id)
        pending = mem.pending(note_id=note_id, limit=100)
    data = {"note_id": note_id, "note": note, "pending_proposals": [p.id for p in pending]}

    def render(d: dict[str, Any]) -> None:
        n = d["note"]
        out.print(f"note {n.id} in scope {n.scope}", markup=False)
        out.print(f"  keywords: {', '.join(n.keywords) or '-'}", markup=False)
        out.print(f"  tags: {', '.join(n.tags) or '-'}", markup=False)
        out.print(f"  context: {n.context or '-'}", markup=False)
        out.print(f"  links: {', '.join(link.note_id for link in n.links) or '-'}", markup=False)
        if d["pending_proposals"]:
            out.print(
                f"  waiting for review: {len(d['pending_proposals'])} (see `amem pending`)", markup=False
            )

    emit(data, as_json, render)


class ImportFormat(StrEnum):
    auto = "auto"
    jsonl = "jsonl"
    csv = "csv"


@app.command("import")
def import_notes(
    path: Annotated[
        str,
        typer.Argument(
            help='A JSON Lines file ("-" for standard input): one {"content", "scope", "at", "metadata", '
            '"idempotency_key"} object a line (scope may come from --scope); or a CSV file with a header '
            "row (a CRM's export): the columns named by --content-column, --scope-column, --at-column "
            "and --key-column, every other cell into the input's metadata."
        ),
    ],
    actor: Annotated[str, typer.Option("--actor", help="Who says it: agent:NAME or a person's name.")] = (
        "agent:import"
    ),
    scope: Annotated[str | None, typer.Option("--scope", help="Scope for lines that name none.")] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", help="Inputs analysed and written together.")
    ] = 64,
    skip_recorded: Annotated[
        bool,
        typer.Option(
            "--skip-recorded/--record-again",
            help="Skip lines recorded before (same scope, at, actor and text), so an import can be run "
            "again after an interruption; lines without at are always recorded. A line with an "
            "idempotency key recorded before is skipped either way.",
        ),
    ] = True,
    file_format: Annotated[
        ImportFormat,
        typer.Option("--format", help="jsonl or csv; auto: csv for a .csv file, else jsonl."),
    ] = ImportFormat.auto,
    content_column: Annotated[
        str, typer.Option("--content-column", help="CSV: the column holding the text.")
    ] = "content",
    scope_column: Annotated[
        str, typer.Option("--scope-column", help="CSV: the column naming the account (else --scope).")
    ] = "scope",
    at_column: Annotated[
        str, typer.Option("--at-column", help="CSV: the column holding when it was said (ISO 8601).")
    ] = "at",
    key_column: Annotated[
        str | None,
        typer.Option(
            "--key-column",
            help="CSV: the column holding each row's own id (a CRM record id), its idempotency key: a "
            "row whose id this actor imported before is skipped, with or without its time.",
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Check every line and say how many are ready; open and record nothing."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add many notes at once (past conversations, a CRM export).

    Every line is checked before anything is recorded; then each is kept as a raw log and analysed
    like `amem add`. Running the same import again records nothing twice: a line whose
    idempotency key was imported before is skipped, and so is a line that gives its time and was
    recorded before (--record-again records those anyway). --check only
    checks the file: every wrong line named at once, nothing opened or recorded."""
    from amem.cli.import_files import read_csv, read_jsonl
    from amem.cli.progress import reporter
    from amem.errors import InvalidBatchInputError, InvalidInputError

    data = _read_bytes(path)
    is_csv = file_format is ImportFormat.auto and path.lower().endswith(".csv")
    if file_format is ImportFormat.csv or is_csv:
        try:
            read = read_csv(data, content=content_column, scope=scope_column, at=at_column, key=key_column)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{path}, {exc}; nothing was recorded") from None
    else:
        read = read_jsonl(data)
    numbers, items, unread = read.numbers, read.items, read.unread
    if scope:
        items = [item if "scope" in item else {**item, "scope": scope} for item in items]
    _check_lines(path, actor, numbers, items, unread)  # every wrong line at once, before any store opens
    if check:
        emit(
            {"ready": len(items), "recorded": 0},
            as_json,
            lambda d: out.print(
                f"{path}: {d['ready']} inputs ready to import, none wrong; nothing recorded "
                "(run it again without --check)",
                markup=False,
            ),
        )
        return
    with open_memory() as mem, reporter(as_json) as progress:
        try:
            outcomes = mem.add_notes(
                items, actor=actor, batch_size=batch_size, progress=progress, skip_recorded=skip_recorded
            )
        except InvalidBatchInputError as exc:
            raise _wrong_lines(path, [(numbers[i - 1], problem) for i, problem in exc.problems]) from None
        waiting = mem.count_review_items().items
        # a line recorded before and still not analysed (failed, or held elsewhere) is pending, not
        # skipped: `amem reprocess` is what completes it; an erased one has nothing left to do
        unsettled = {
            o.raw_log_id
            for o in outcomes
            if o.recorded_before and o.note_id is None and mem.input_status(o.raw_log_id).status != "erased"
        }
    failed = [
        o for o in outcomes if o.note_id is None and (not o.recorded_before or o.raw_log_id in unsettled)
    ]
    skipped = [o for o in outcomes if o.recorded_before and o.raw_log_id not in unsettled]
    data = {
        "added": len(outcomes) - len(failed) - len(skipped),
        "pending": len(failed),
        "skipped": len(skipped),
        "review_items": waiting,
        "outcomes": [o.model_dump() for o in outcomes],
    }

    def render(d: dict[str, Any]) -> None:
        out.print(
            f"{d['added']} notes added"
            + (
                f"; {d['pending']} raw logs kept but not analysed (run `amem reprocess`)"
                if d["pending"]
                else ""
            ),
            markup=False,
        )
        if d["skipped"]:
            out.print(
                f"{d['skipped']} lines recorded before (the same idempotency key, or the same scope, at, "
                "actor and text): skipped, not recorded again",
                markup=False,
            )
        if d["review_items"]:
            out.print(
                f"review items waiting for a person: {d['review_items']}; see them with `amem pending`",
                markup=False,
            )
        else:
            out.print("nothing waits for review", markup=False)

    emit(data, as_json, render)
    if failed:
        raise typer.Exit(4)


def _read_bytes(path: str) -> bytes:
    """The file's bytes ("-": standard input); one that cannot be read is an error at once."""
    from amem.errors import InvalidInputError

    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None


def _check_lines(
    path: str, actor: str, numbers: list[int], items: list[dict[str, Any]], unread: list[tuple[int, str]]
) -> None:
    """The checks an import makes before recording, on this store's settings, without opening it:
    every wrong line named at once (a bad file creates no store)."""
    from amem.domain.models import Actor, ActorKind
    from amem.errors import InvalidInputError
    from amem.services.pipeline import checked_inputs

    if not actor.strip():
        raise InvalidInputError("an actor is required (e.g. agent:sales-bot or a person's name)")
    _, wrong = checked_inputs(settings(), items, Actor.parse(actor.strip(), ActorKind.AGENT))
    problems = sorted(unread + [(numbers[i - 1], problem) for i, problem in wrong])
    if problems:
        raise _wrong_lines(path, problems)


def _wrong_lines(path: str, problems: list[tuple[int, str]]) -> Exception:
    """One error naming every wrong line of an import: "PATH, line 3: ..." for one, "PATH: 4 lines
    are wrong: lines 2, 5 and 9: ...; line 4: ..." for several."""
    from amem.errors import InvalidInputError, describe_problems

    where = f"{path}, " if len(problems) == 1 else f"{path}: "
    return InvalidInputError(f"{where}{describe_problems(problems, 'line')}; nothing was recorded")


@app.command()
def reprocess(
    limit: Annotated[int | None, typer.Option(help="At most this many raw logs.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Retry analysis of raw logs that an LLM outage or a crash left unprocessed."""
    from amem.cli.progress import reporter

    with open_memory(create=False) as mem:
        with reporter(as_json) as progress:
            done = mem.reprocess(limit=limit, progress=progress)
        left = mem.unprocessed_count()
    emit(
        {"processed": done, "still_unprocessed": left},
        as_json,
        lambda d: out.print(
            f"processed {len(d['processed'])} raw logs; {d['still_unprocessed']} still unprocessed",
            markup=False,
        ),
    )
    if left:
        raise typer.Exit(1)


@app.command()
def update(
    note_id: Annotated[str, typer.Argument(help="Note id.")],
    values: Annotated[list[str], typer.Argument(help="attribute=value pairs (value as JSON, or text).")],
    actor: Annotated[
        str,
        typer.Option(
            "--actor", help="Who edits: agent:NAME, or a person's name (their password is asked for)."
        ),
    ],
    reason: Annotated[str | None, typer.Option("--reason", help="Why.")] = None,
    password_stdin: PasswordStdinOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Edit attributes of a note: each becomes a proposal routed by the policy. A person signs in
    (AMEM_REVIEWER_TOKEN, or their password) as for a decision; an agent edits as agent:NAME."""
    attributes: dict[str, Any] = {}
    for item in values:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"{item!r}: expected attribute=value", param_hint="VALUES")
        try:
            attributes[name] = json.loads(raw)
        except json.JSONDecodeError:
            attributes[name] = raw
    with open_memory(create=False) as mem:
        who = editor(mem, actor, password_stdin)
        proposals = mem.update(note_id, actor=who, reason=reason, **attributes)
    emit(
        proposals,
        as_json,
        lambda ps: [
            out.print(f"{p.attribute}: {p.status.value} ({p.id}){_why(p)}", markup=False) for p in ps
        ],
    )


def _why(p: Any) -> str:
    """When the policy refused an edit, why (": refused by policy: content is frozen"): "rejected"
    alone leaves the editor guessing."""
    return f": {p.review_comment}" if p.status.value == "rejected" and p.review_comment else ""


@app.command()
def delete(
    note_id: Annotated[str, typer.Argument(help="Note id.")],
    actor: Annotated[
        str,
        typer.Option(
            "--actor", help="Who deletes: agent:NAME, or a person's name (their password is asked for)."
        ),
    ],
    reason: Annotated[str, typer.Option("--reason", help="Why (kept in history).")],
    password_stdin: PasswordStdinOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Propose a tombstone for a note: hidden from search once applied, kept in history. A person
    signs in as for a decision; an agent proposes as agent:NAME."""
    with open_memory(create=False) as mem:
        p = mem.delete(note_id, actor=editor(mem, actor, password_stdin), reason=reason)
    emit(p, as_json, lambda p: out.print(f"deletion {p.id}: {p.status.value}{_why(p)}", markup=False))


@app.command("notes")
def list_notes(
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    # the bounds of `amem facts` (services.facts MAX_PAGE, MAX_OFFSET): past them the ledger overflows
    limit: Annotated[int, typer.Option(min=1, max=1000, help="At most this many (1 to 1,000).")] = 50,
    offset: Annotated[int, typer.Option(min=0, max=2**62, help="Skip this many.")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """List notes, oldest first."""
    with open_memory(create=False) as mem:
        items = mem.notes(scope=scope, limit=limit, offset=offset)

    def render(ns: list[Any]) -> None:
        if not ns:
            out.print(f"no notes in {store_label()}" + (f" for scope {scope}" if scope else ""), markup=False)
            return
        table = Table(title="notes")
        table.add_column("note", no_wrap=True)  # an id is copied whole, never folded
        for col in ("scope", "content", "tags", "updated"):
            table.add_column(col, overflow="fold")
        for n in ns:
            table.add_row(
                n.id,
                cell(n.scope),
                fmt_value(n.content, 70),
                fmt_value(", ".join(n.tags), 40),
                n.updated_at.strftime("%Y-%m-%d %H:%M"),
            )
        out.print(table)

    emit(items, as_json, render)
