"""Note commands: add, import, reprocess, update, delete, notes."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer
from rich.table import Table

from amem.cli.app import (
    JsonOpt,
    PasswordStdinOpt,
    app,
    editor,
    emit,
    fmt_value,
    open_memory,
    out,
    settings,
    store_label,
)
from amem.cli.blocks import printable, shown
from amem.domain.progress import Progress, no_progress

if TYPE_CHECKING:
    from amem.domain.models import AddOutcome
    from amem.policy import Policy


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
    """Add a note: the raw log is kept, then a note is built, linked and evolved.

    An input erased on a data subject's request (`amem erase`) is never kept again: run again with
    its --idempotency-key, it exits 2 saying when and by whom it was erased, and records nothing."""
    with open_memory() as mem:
        variants = mem.new_scope_variants([scope])  # read before this input makes the scope known
        note_id = mem.add_note(text, at=at, actor=actor, scope=scope, idempotency_key=idempotency_key)
        note = mem.read(note_id)
        pending = mem.pending(note_id=note_id, limit=100)
    _warn_case_variants(variants)
    data = {"note_id": note_id, "note": note, "pending_proposals": [p.id for p in pending]}

    def render(d: dict[str, Any]) -> None:
        n = d["note"]
        out.print(shown(f"note {n.id} in scope {n.scope}"))
        out.print(shown(f"  keywords: {', '.join(n.keywords) or '-'}"))
        out.print(shown(f"  tags: {', '.join(n.tags) or '-'}"))
        out.print(shown(f"  context: {n.context or '-'}"))
        out.print(shown(f"  links: {', '.join(link.note_id for link in n.links) or '-'}"))
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
        int, typer.Option("--batch-size", min=1, help="Inputs analysed and written together (1 or more).")
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
        str | None,
        typer.Option(
            "--scope-column",
            help='CSV: the column naming the account (else --scope); default: "scope" where the file '
            "has it. A column named here that the file lacks refuses the file.",
        ),
    ] = None,
    at_column: Annotated[
        str | None,
        typer.Option(
            "--at-column",
            help='CSV: the column holding when it was said (ISO 8601); default: "at" where the file has '
            "it. A column named here that the file lacks refuses the file.",
        ),
    ] = None,
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
    recorded before (--record-again records those anyway). A line whose input was erased on a data
    subject's request is never recorded again: those lines are counted and named apart, with their
    erasures, and exit 0 as the skipped ones do. Lines another run holds (the same import started
    twice, or one killed) are named as such, exit 4 until they are done. --check only
    checks the file: every wrong line named at once, nothing opened or recorded."""
    from amem.cli.import_files import read_csv, read_jsonl
    from amem.cli.progress import reporter
    from amem.errors import InvalidBatchInputError, InvalidInputError

    data = _read_bytes(path)
    is_csv = file_format is ImportFormat.csv or (
        file_format is ImportFormat.auto and path.lower().endswith(".csv")
    )
    try:
        if is_csv:
            read = read_csv(data, content=content_column, scope=scope_column, at=at_column, key=key_column)
        else:
            read = read_jsonl(data)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{path}, {exc}; nothing was recorded") from None
    numbers, items, unread = read.numbers, read.items, read.unread
    if scope:  # a line naming no account, or an empty one (null, ""), as a CSV row's empty cell
        items = [item if _names_scope(item) else {**item, "scope": scope} for item in items]
    # the fields of a CSV row's problems are its columns, as the user named them
    columns = {"at": at_column} if is_csv and at_column is not None else {}
    _check_lines(path, actor, numbers, items, unread, columns)  # every wrong line, before any store opens
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
    recording = _Recording()
    try:
        with open_memory() as mem, reporter(as_json) as progress:
            recording.progress = progress
            # one read for the whole file, before its lines make their scopes known
            variants = mem.new_scope_variants([i["scope"] for i in items if isinstance(i.get("scope"), str)])
            try:
                outcomes = mem.add_notes(
                    items, actor=actor, batch_size=batch_size, progress=recording, skip_recorded=skip_recorded
                )
            except InvalidBatchInputError as exc:
                raise _wrong_lines(path, _by_line(numbers, items, exc.problems, columns)) from None
            recording.kept = True
            _warn_case_variants(variants)
            waiting = mem.count_review_items().items
            # what became so far of each input not analysed now: one recorded before and still not
            # analysed is pending, not skipped: if failed, `amem reprocess` is what completes it; if
            # another run holds it (the same import started twice), that run; an erased one has
            # nothing left to do
            statuses = {o.raw_log_id: mem.input_status(o.raw_log_id) for o in outcomes if o.note_id is None}
    except KeyboardInterrupt as stop:  # the message `amem` prints says how to finish: it must be true
        advice = _how_to_finish(items, skip_recorded=skip_recorded, kept=recording.kept)
        stop.how_to_finish = advice  # type: ignore[attr-defined]  # read by amem.cli.main
        raise
    # a line whose input was erased on a data subject's request (the library names the erasure) is
    # said apart: neither skipped as a line kept before, nor pending for `amem reprocess`
    erased = [
        {"line": number, "raw_log_id": o.raw_log_id, "erasure_id": o.erasure_id}
        for number, o in zip(numbers, outcomes, strict=True)
        if o.erasure_id is not None
    ]
    # one raw log a line: a line repeating an earlier line of this file (kept once) is skipped, as
    # one recorded by an earlier run is, and is never counted as a second note or a second failure
    firsts, repeats = _first_lines_of_each_raw_log([o for o in outcomes if o.erasure_id is None])
    # one recorded before that the run holding it finished meanwhile (an import run twice at once)
    # is skipped as any line recorded and analysed before is
    unsettled = {o.raw_log_id for o in firsts if o.recorded_before and o.raw_log_id in statuses} - {
        i for i, s in statuses.items() if s.status in ("erased", "done")
    }
    failed = [o for o in firsts if o.note_id is None and (not o.recorded_before or o.raw_log_id in unsettled)]
    skipped = [o for o in firsts if o.recorded_before and o.raw_log_id not in unsettled]
    held = _held([statuses[o.raw_log_id] for o in failed])
    causes = Counter(
        statuses[o.raw_log_id].error or o.error or "no reason recorded"
        for o in failed
        if statuses[o.raw_log_id].status != "processing"
    )
    data = {
        "added": len(firsts) - len(failed) - len(skipped),
        "pending": len(failed),
        "skipped": len(skipped) + repeats,
        "erased": len(erased),
        "erased_lines": erased,
        "held": held.count,
        "held_until": held.until,
        "held_raw_log_ids": held.raw_log_ids,
        "review_items": waiting,
        "outcomes": [o.model_dump() for o in outcomes],
    }

    def render(d: dict[str, Any]) -> None:
        waiting_for = d["pending"] - d["held"]
        out.print(
            f"{d['added']} notes added"
            + (
                f"; {waiting_for} raw logs kept but not analysed (run `amem reprocess`)"
                if waiting_for
                else ""
            ),
            markup=False,
        )
        for line in _why_not_analysed(causes):
            out.print(line, markup=False)
        if d["held"]:
            out.print(_held_words(d["held_raw_log_ids"], d["held_until"]), markup=False)
        if d["skipped"]:
            out.print(
                f"{d['skipped']} lines recorded before (the same idempotency key, or the same scope, at, "
                "actor and text): skipped, not recorded again",
                markup=False,
            )
        if d["erased"]:
            out.print(_erased_words(d["erased_lines"]), markup=False)
        if d["review_items"]:
            out.print(
                f"review items waiting for a person: {d['review_items']}; see them with `amem pending`",
                markup=False,
            )
        else:
            out.print("nothing waits for review", markup=False)

    emit(data, as_json, render)
    if failed:  # held ones included: a run killed holding them reads as one at work, so they are
        raise typer.Exit(4)  # not done until that run finishes them or, after the lease, reprocess


#: The erased lines an import names by line; --json lists every one.
SHOWN_ERASED = 5


def _erased_words(lines: list[dict[str, Any]]) -> str:
    """What an import says of its lines whose inputs were erased on a data subject's request: how
    many, which lines and by which erasures, and that they were not recorded again (the erasure
    stands: running the import again changes nothing, so it is no failure)."""
    shown = ", ".join(f"{e['line']} (erasure {e['erasure_id']})" for e in lines[:SHOWN_ERASED])
    more = f" and {len(lines) - SHOWN_ERASED:,} more (--json lists each)" if len(lines) > SHOWN_ERASED else ""
    many = len(lines) > 1
    return (
        f"{len(lines)} {'lines are inputs' if many else 'line is an input'} erased on a data subject's "
        "request (see `amem erasures`): not recorded again, and nothing of "
        f"{'them' if many else 'it'} analysed; line{'s' if many else ''} {shown}{more}"
    )


def _warn_case_variants(variants: dict[str, list[str]]) -> None:
    """Say each new scope that differs only in case from another: it is kept as given, so "Acme"
    from a CRM and an agent's "acme" are two accounts to search and facts, which the user may not mean."""
    from amem.cli.app import err

    for name, others in variants.items():
        err.print(
            f"warning: new scope {name!r} differs only in case from {', '.join(map(repr, others))}: kept "
            "as given, it is a scope of its own for search, facts and review (`amem erase --scope` "
            "reaches every spelling)",
            markup=False,
        )


def _names_scope(item: dict[str, Any]) -> bool:
    """Whether an input names its account: a scope that is missing, null or blank takes --scope."""
    value = item.get("scope")
    return value is not None and not (isinstance(value, str) and not value.strip())


class _Recording:
    """The import's progress callback, noting when the lines are kept: ``add_notes`` reports only
    once it has committed every line of the run as a raw log (one transaction: all, or none)."""

    def __init__(self) -> None:
        self.kept = False
        self.progress: Progress = no_progress

    def __call__(self, task: str, done: int, total: int | None) -> None:
        self.kept = True
        self.progress(task, done, total)


def _how_to_finish(items: list[dict[str, Any]], *, skip_recorded: bool, kept: bool) -> str | None:
    """How to finish an interrupted import, when running it again would record some of its lines
    a second time (None: it would not, and the same import finishes it), for `amem`'s message. A
    run again skips a line with a key, and with --skip-recorded one with its time; any other line
    is recorded again, so a re-run doubled every such line and stranded the first copies."""
    again = sum(
        1
        for item in items
        if not _has_text(item, "idempotency_key") and not (skip_recorded and _has_text(item, "at"))
    )
    if not again:
        return None
    why = (
        f"{again:,} of its lines give no time (`at`) and no key, and would be recorded a second time"
        if skip_recorded
        else f"{again:,} of its lines have no key, and --record-again would record them a second time"
    )
    if kept:
        return (
            "every line of the file is kept as a raw log, and those not analysed yet are queued again; "
            "run `amem reprocess` to finish (`amem status RAW_LOG_ID` says what became of one), not "
            f"the same `amem import`: {why}"
        )
    return (
        "it stopped while recording its lines, which are kept all together or not at all: run "
        "`amem reprocess` first, which analyses them if they were kept and says how many it did; run "
        f"the same `amem import` again only if none were: {why}"
    )


def _has_text(item: dict[str, Any], name: str) -> bool:
    value = item.get(name)
    return value is not None and (not isinstance(value, str) or bool(value.strip()))


def _first_lines_of_each_raw_log(outcomes: list[AddOutcome]) -> tuple[list[AddOutcome], int]:
    """The outcome of the first line held by each raw log, in order, and how many later lines
    repeat one of them (the same input twice in the file, kept once)."""
    firsts: dict[str, AddOutcome] = {}
    for outcome in outcomes:
        firsts.setdefault(outcome.raw_log_id, outcome)
    return list(firsts.values()), len(outcomes) - len(firsts)


#: The most distinct reasons an import names for inputs it could not analyse (--json has each).
SHOWN_CAUSES = 5


def _why_not_analysed(causes: Counter[str]) -> list[str]:
    """Why inputs were kept but not analysed, each distinct reason once with how many it stopped
    (the model down, a bad answer), as `amem add` says why: "not analysed" alone left the caller
    to guess whether to wait, fix a setting or report a bug."""
    lines = [
        f"  why{f' ({count} raw logs)' if len(causes) > 1 or count > 1 else ''}: {printable(cause)}"
        for cause, count in causes.most_common(SHOWN_CAUSES)
    ]
    if len(causes) > SHOWN_CAUSES:
        rest = causes.most_common()[SHOWN_CAUSES:]
        lines.append(
            f"  and {len(rest):,} other reasons for {sum(c for _, c in rest):,} raw logs "
            "(--json gives each input's)"
        )
    return lines


def _read_bytes(path: str) -> bytes:
    """The file's bytes ("-": standard input); one that cannot be read is an error at once."""
    from amem.errors import InvalidInputError

    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None


def _check_lines(
    path: str,
    actor: str,
    numbers: list[int],
    items: list[dict[str, Any]],
    unread: list[tuple[int, str]],
    columns: dict[str, str],
) -> None:
    """The checks an import makes before recording, on this store's settings, without opening it:
    every wrong line named at once (a bad file creates no store). ``columns``: the CSV column a
    field was read from, where the user named it."""
    from amem.domain.models import Actor, ActorKind
    from amem.errors import InvalidInputError
    from amem.services.pipeline import checked_inputs

    if not actor.strip():
        raise InvalidInputError("an actor is required (e.g. agent:sales-bot or a person's name)")
    _, wrong = checked_inputs(settings(), items, Actor.parse(actor.strip(), ActorKind.AGENT))
    problems = sorted(unread + _by_line(numbers, items, wrong, columns))
    if problems:
        raise _wrong_lines(path, problems)


def _by_line(
    numbers: list[int],
    items: list[dict[str, Any]],
    problems: list[tuple[int, str]],
    columns: dict[str, str] | None = None,
) -> list[tuple[int, str]]:
    """The library's problems by input position, as the file's lines: a key given twice names the
    line of its first input, where the library can only count inputs ("input 1" was line 3 of a
    file with blank lines, or of a CSV with a cell over two lines); a field read from a column the
    user named is called by that column ("at: 'next week' ..." named no column of theirs)."""
    return [
        (numbers[i - 1], _in_columns(_key_repeated_by_line(numbers, items, i, problem), columns or {}))
        for i, problem in problems
    ]


def _in_columns(problem: str, columns: dict[str, str]) -> str:
    """``problem`` ("at: ...") with its field called by the CSV column it was read from."""
    field, sep, rest = problem.partition(": ")
    column = columns.get(field)
    return f"column {column!r}: {rest}" if sep and column is not None and column != field else problem


def _key_repeated_by_line(
    numbers: list[int], items: list[dict[str, Any]], position: int, problem: str
) -> str:
    """``problem`` of the input at ``position``, "is given to input N too" reworded to the line of
    the earlier input given the same key, in the same scope where one is (as the library compares)."""
    key = items[position - 1].get("idempotency_key")
    if not isinstance(key, str) or not problem.startswith(f"idempotency_key {key!r} is given to input "):
        return problem
    scope = str(items[position - 1].get("scope", "")).strip()
    earlier = [j for j in range(position - 1) if items[j].get("idempotency_key") == key]
    same_scope = [j for j in earlier if str(items[j].get("scope", "")).strip() == scope]
    first = (same_scope or earlier or [None])[0]
    if first is None:
        return problem
    return re.sub(r"is given to input \d+ too", f"is given to line {numbers[first]} too", problem, count=1)


class Held(NamedTuple):
    """The inputs a worker's lease holds (their raw log ids), and the latest moment one of those
    leases ends."""

    raw_log_ids: list[str]
    until: datetime | None

    @property
    def count(self) -> int:
        return len(self.raw_log_ids)


def _held(statuses: list[Any]) -> Held:
    """Of these input statuses, those a lease holds (another import or a worker analysing them, or
    one stopped without giving them back): nothing else takes them before their lease ends."""
    held = [s for s in statuses if s.status == "processing" and s.lease_until is not None]
    return Held([s.raw_log_id for s in held], max((s.lease_until for s in held), default=None))


#: The held raw logs an import names; --json lists every one (`held_raw_log_ids`).
SHOWN_HELD = 3


def _held_words(raw_log_ids: list[str], until: datetime | None) -> str:
    """What an import says of its inputs another run holds: being analysed there (an import of the
    same file started before this one, a worker) or left by a run killed holding them, which the
    ledger cannot tell apart; so nothing is lost, how to follow them, and when they are free."""
    count = len(raw_log_ids)
    one = count == 1
    shown = ", ".join(raw_log_ids[:SHOWN_HELD])
    more = f" and {count - SHOWN_HELD:,} more (--json lists each)" if count > SHOWN_HELD else ""
    end = f" until {until:%Y-%m-%d %H:%M:%S} UTC" if until is not None else ""
    return (
        f"{count} {'input is' if one else 'inputs are'} being processed by another run (an import or "
        f"worker holding {'it' if one else 'them'}{end}, renewed while it works): nothing is lost; "
        f"`amem status RAW_LOG_ID` says what became of {'it' if one else 'each'} "
        f"(raw log{'' if one else 's'} {shown}{more}). If that run was stopped: after that time "
        "`amem reprocess` analyses what it left"
    )


def leased_words(held: str, by: str, free_by: datetime | None, lease_seconds: float, then: str) -> str:
    """What `amem reprocess` and `amem worker --once` say of the inputs ``held`` ("3 of them") under
    a lease of another run, which ``by`` leaves alone: that run may still be at work or have stopped
    without giving them back, when they are free (``free_by``: the leases' end as the queue reads
    it; the local clock plus a lease was off by the clocks' skew), and to run ``then`` after."""
    until = f"by {free_by:%Y-%m-%d %H:%M:%S} UTC" if free_by is not None else "now"
    return (
        f"{held} held by a worker's lease (an import or worker still running, or one stopped without "
        f"giving them back), which {by} leaves alone; a lease lasts {lease_seconds:g} s from its last "
        "renewal (AMEM_WORKER_LEASE_SECONDS), so unless a worker still at work renews it they are free "
        f"{until}: run `{then}` then (`amem status RAW_LOG_ID` says what became of one)"
    )


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
        held = mem.queue_depth()["processing"] if left else 0
        # the leases' own end, by the clock they are read by (PostgreSQL: the server's)
        free_by = mem.pipeline.leases_end() if held else None
        lease_seconds = mem.settings.worker_lease_seconds
    data = {"processed": done, "still_unprocessed": left, "held": held}

    def render(d: dict[str, Any]) -> None:
        out.print(
            f"processed {len(d['processed'])} raw logs; {d['still_unprocessed']} still unprocessed",
            markup=False,
        )
        if d["held"]:
            out.print(
                leased_words(f"{d['held']} of them", "reprocess", free_by, lease_seconds, "amem reprocess"),
                markup=False,
            )

    emit(data, as_json, render)
    if left:
        raise typer.Exit(1)


@app.command()
def update(
    note_id: Annotated[str, typer.Argument(help="Note id.")],
    values: Annotated[
        list[str],
        typer.Argument(
            help="attribute=value pairs, each value read as its attribute's type in the policy: text as "
            "typed (a number or null too; a JSON string's quotes are taken off), a list as JSON "
            "(tags='[\"churn-risk\"]', [] for none), a date-time in ISO 8601, a number, true or false."
        ),
    ],
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
    pairs: list[tuple[str, str]] = []
    for item in values:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"{item!r}: expected attribute=value", param_hint="VALUES")
        if name in _EDIT_PARAMETERS:  # the edit's own, never a note's attribute (the policy refuses them)
            where = "the note is the first argument" if name == "note_id" else f"use --{name}"
            raise typer.BadParameter(
                f"{item!r}: {name} is not an attribute of a note ({where})", param_hint="VALUES"
            )
        given = next((r for n, r in pairs if n == name), None)
        if given is not None:  # the last one silently won: which did the editor mean?
            raise typer.BadParameter(
                f"{item!r}: {name} is given twice ({name}={given} too): give each attribute once",
                param_hint="VALUES",
            )
        pairs.append((name, raw))
    with open_memory(create=False) as mem:
        # read before any password is asked for: a value its attribute cannot take is refused first
        attributes = {name: typed_value(mem.policy, name, raw) for name, raw in pairs}
        who = editor(mem, actor, password_stdin)
        proposals = mem.update(note_id, actor=who, reason=reason, **attributes)
    emit(
        proposals,
        as_json,
        lambda ps: [out.print(shown(f"{p.attribute}: {p.status.value} ({p.id}){_why(p)}")) for p in ps],
    )
    if proposals and all(p.status.value == "rejected" for p in proposals):
        raise typer.Exit(2)  # the policy refused every value, as an approval it refuses whole exits 2


#: Names ``Memory.update`` takes for the edit itself: passed as attributes they collided (exit 70).
_EDIT_PARAMETERS = frozenset({"note_id", "actor", "reason"})


def typed_value(policy: Policy, attribute: str, raw: str) -> Any:
    """``raw``, as typed after ``attribute=`` on the command line, read as the attribute's type in
    the policy: reading every value as JSON first turned next_step=2027 into a number (refused)
    and context=null into clearing the context. Text is the text typed (a JSON string's quotes
    taken off, as the help promised JSON); a list, a number, true/false as JSON; a date-time as
    ISO 8601 text. An attribute the policy does not know keeps the old reading: the policy
    refuses it, by name."""
    from amem.errors import InvalidInputError

    try:
        kind = policy.type_of(attribute)
    except KeyError:
        return _json_or_text(raw)
    if kind in ("text", "datetime"):
        quoted = _json_or_text(raw) if raw.startswith('"') else raw
        return quoted if isinstance(quoted, str) else raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        example = {
            "list[str]": f'{attribute}=\'["first", "second"]\' ({attribute}=[] for none)',
            "links": f'{attribute}=\'[{{"note_id": "n_...", "reason": "why"}}]\'',
            "number": f"{attribute}=12.5",
            "bool": f"{attribute}=true",
        }.get(kind, f"{attribute}=VALUE")
        raise InvalidInputError(
            f"{attribute}={raw}: {attribute} is a {kind} in the policy, written as JSON (e.g. {example})"
        ) from None


def _json_or_text(raw: str) -> Any:
    """The value as JSON where it is JSON, else the text itself (the help's "value as JSON, or text")."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


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
    emit(p, as_json, lambda p: out.print(shown(f"deletion {p.id}: {p.status.value}{_why(p)}")))
    if p.status.value == "rejected":
        raise typer.Exit(2)


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
                shown(n.scope),
                fmt_value(printable(n.content), 70),
                fmt_value(printable(", ".join(n.tags)), 40),
                n.updated_at.strftime("%Y-%m-%d %H:%M"),
            )
        out.print(table)

    emit(items, as_json, render)
