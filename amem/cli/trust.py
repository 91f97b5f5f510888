"""Signing key, checkpoints, backups and erasure: `amem keys init`, `amem checkpoint`, `amem backup`,
`amem erase` (verify is in amem.cli.ledger)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from amem.cli.app import (
    CheckpointsOpt,
    JsonOpt,
    PasswordStdinOpt,
    PublicKeyOpt,
    app,
    emit,
    open_memory,
    out,
    print_policy_warnings,
    print_verification,
    settings,
    sign_in,
)

keys_app = typer.Typer(help="The key that signs checkpoints (kept outside the ledger).", no_args_is_help=True)
app.add_typer(keys_app, name="keys")

KeyOpt = Annotated[
    str | None,
    typer.Option("--key", help="Private key file (default: $AMEM_SIGNING_KEY or keys/ in the store)."),
]


@keys_app.command("init")
def keys_init(key: KeyOpt = None, as_json: JsonOpt = False) -> None:
    """Write a new Ed25519 signing key (mode 0600) and its public key (KEY.pub); never overwrites."""
    from amem.services import checkpoints as cp

    path = Path(key) if key else cp.default_key_path(settings().home)
    key_id = cp.init_key(path)
    emit(
        {"key": str(path), "public_key": str(cp.public_key_path(path)), "key_id": key_id},
        as_json,
        lambda d: out.print(
            f"signing key {d['key_id']} written to {d['key']} (0600); public key {d['public_key']}. "
            "Keep the private key where the ledger's writers cannot read it.",
            markup=False,
        ),
    )


@app.command()
def checkpoint(
    key: KeyOpt = None,
    log: Annotated[
        str | None,
        typer.Option("--log", help="Checkpoint log (default: $AMEM_CHECKPOINT_LOG or checkpoints.jsonl)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Sign the ledger's chain heads and append the statement to the checkpoint log."""
    from amem.services import checkpoints as cp

    with open_memory(create=False) as mem:
        statement = mem.checkpoint(key=key, log=log)
        written_to = Path(log) if log else cp.default_log_path(mem.home)
    emit(
        statement,
        as_json,
        lambda s: out.print(
            f"checkpoint signed by key {s['key_id']}: {s['event_seq']} events (head {s['event_hash'][:12]}), "
            f"{s['change_seq']} changes, at {s['at']}; appended to {written_to} "
            f"(`amem verify --checkpoints {written_to}` proves the ledger still extends it)",
            markup=False,
        ),
    )


@app.command()
def backup(
    dest: Annotated[str, typer.Argument(help="The backup file to write: a new file, never overwritten.")],
    checkpoints: CheckpointsOpt = None,
    public_key: PublicKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy the ledger while agents write, then verify the copy. Exit 1 if it does not.

    One consistent snapshot, written under a temporary name and renamed once whole: SQLite's online
    backup (a cp of a live ledger can miss its newest commits or tear), or for PostgreSQL pg_dump's
    custom format of the ledger's schema, restored into a scratch database to be verified and
    dropped. The copy's chains and rows are checked as by verify. The index is not copied: `amem
    reindex` rebuilds it from the copy."""
    from amem.cli.progress import reporter

    with open_memory(create=False) as mem, reporter(as_json) as progress:
        report = mem.backup(dest, checkpoints=checkpoints, public_key=public_key, progress=progress)

    def render(r: Any) -> None:
        heads, verified = r.heads, r.verified
        out.print(
            f"backed up to {r.path}: {r.bytes / 1e6:.1f} MB, copied in {r.copy_seconds:.1f} s and "
            f"verified in {r.seconds - r.copy_seconds:.1f} s; "
            f"{heads['counts'].get('raw_log', 0)} raw logs, {heads['event_seq']} events (head "
            f"{heads['event_hash'][:12]}), {heads['change_seq']} changes",
            markup=False,
        )
        for left in r.cleaned:  # what a backup killed earlier left behind
            out.print(f"removed {left}", markup=False)
        print_verification(verified, "the copy")

    emit(report, as_json, render)
    if not report.verified.ok:
        raise typer.Exit(1)


@app.command()
def restore(
    backup_file: Annotated[
        str, typer.Argument(help="A file `amem backup` wrote (SQLite, or a PostgreSQL dump).")
    ],
    checkpoints: CheckpointsOpt = None,
    public_key: PublicKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Restore a backup into this store's ledger place, which must be empty, verify it, then
    rebuild the index. Exit 1 if it does not verify.

    Never over a ledger: one newer than the backup holds inputs kept after it. Point --home or
    --database-url at a new place (a new SQLite file; a PostgreSQL database whose schema holds no
    table), restore there, then run amem against it."""
    from amem.cli.progress import reporter
    from amem.services import checkpoints as cp
    from amem.services.restore import restore as restore_backup

    cfg = settings()
    statements = cp.read_checkpoints(Path(checkpoints)) if checkpoints else []
    key = None
    if checkpoints:
        key = cp.load_public_key(Path(public_key) if public_key else cp.default_key_path(cfg.home))
    with reporter(as_json) as progress:
        report = restore_backup(
            Path(backup_file), cfg.database_url, checkpoints=statements, public_key=key, progress=progress
        )
        indexed = None
        if report.restored:  # the index is derived: rebuilt from the restored ledger's stored vectors
            from amem.memory import Memory

            with Memory(
                cfg.home, database_url=report.ledger_url, policy=cfg.policy_path, create=False
            ) as mem:
                print_policy_warnings(mem)  # the restored ledger's policy, as any command opening it says
                indexed = mem.reindex(progress=progress)

    def render(r: Any) -> None:
        for left in r.cleaned:  # the copies killed restores left
            out.print(f"removed {left}", markup=False)
        for kept in r.left:
            out.print(f"left {kept}", markup=False)
        heads = r.heads
        where = r.database_url + (f" (schema {r.schema_name})" if r.schema_name else "")
        held = (
            f"{heads['counts'].get('raw_log', 0)} raw logs, {heads['event_seq']} events (head "
            f"{heads['event_hash'][:12]}), {heads['change_seq']} changes"
        )
        if r.restored:
            out.print(f"restored {r.backup} into {where} in {r.seconds:.1f} s: {held}", markup=False)
            if r.upgraded_from:
                out.print(f"an older amem wrote it: migrated from schema {r.upgraded_from}", markup=False)
            out.print(f"index rebuilt: {indexed} notes", markup=False)
        elif r.kind == "sqlite":
            out.print(f"nothing restored: the copy of {r.backup} does not verify ({held})", markup=False)
        else:
            out.print(
                f"restored into {where}, but it does not verify ({held}): do not point amem at it; it is "
                "left there to be inspected (drop its schema when done)",
                markup=False,
            )
        print_verification(r.verified, "the restored ledger")

    emit(report.model_dump(mode="json") | {"indexed": indexed}, as_json, lambda d: render(report))
    if not report.restored:
        raise typer.Exit(1)


@app.command()
def erasures(as_json: JsonOpt = False) -> None:
    """Every erasure, newest first: who erased what, when, why, and the rows it redacted."""
    with open_memory(create=False) as mem:
        records = mem.erasures()

    def render(found: list) -> None:
        if not found:
            out.print("no erasures")
            return
        for r in found:
            out.print(
                f"{r.id} {r.erased_at:%Y-%m-%d %H:%M} UTC by {r.erased_by}: {r.asked}; "
                f"why: {r.reason}; redacted {r.redacted}",
                markup=False,
            )

    emit(records, as_json, render)


@app.command()
def erase(
    reason: Annotated[str, typer.Option("--reason", help="Why: the data subject's request (required).")],
    reviewer: Annotated[
        str, typer.Option("--reviewer", help="Who erases: a reviewer whose role the policy's erasers name.")
    ],
    raw_log: Annotated[str | None, typer.Option("--raw-log", help="Erase this raw log.")] = None,
    scope: Annotated[str | None, typer.Option("--scope", help="Erase every raw log of this scope.")] = None,
    actor: Annotated[
        str | None, typer.Option("--actor", help="Erase every raw log of this actor (name or kind:name).")
    ] = None,
    password_stdin: PasswordStdinOpt = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="With --scope or --actor: do not ask for confirmation.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Erase raw logs on a data subject's request, with all derived from them.

    The erasure is a recorded event and the chain still verifies; it cannot be undone. The
    reviewer's password is asked for, as for approve; --scope and --actor count the raw logs, then
    ask for confirmation (with --password-stdin, the answer is the line after the password)."""
    from amem.errors import InvalidInputError

    with open_memory(create=False, warn=False) as mem:
        who = sign_in(mem, reviewer, password_stdin)
        # before any question: one who may not erase, or not in every scope (every spelling of a
        # scope) the request reaches, is told at once; the erasure checks again as it erases
        plan = mem.erasure_plan(by=who, raw_log_id=raw_log, scope=scope, actor=actor)
        bulk = scope if scope is not None else actor
        if bulk is not None and raw_log is None and not yes:
            if as_json:
                raise InvalidInputError("erasing a scope or an actor with --json needs --yes (no prompt)")
            what = f"actor {actor}" if scope is None else _scope_words(scope, plan.scopes)
            if plan.raw_logs and not typer.confirm(
                f"{plan.raw_logs} raw logs of {what}, and everything derived from them, will be erased; "
                "this cannot be undone. Erase them?",
                default=False,
            ):
                out.print("nothing erased", markup=False)
                return
        from amem.cli.progress import reporter

        with reporter(as_json) as progress:  # the index's rebuild takes most of a large store's erasure
            report = mem.erase(
                by=who, reason=reason, raw_log_id=raw_log, scope=scope, actor=actor, progress=progress
            )

    def render(r: Any) -> None:
        head = f"erasure {r.erasure_id} by {r.erased_by}" + (
            f" of {_scope_words(scope, r.scopes)}" if scope is not None else ""
        )
        out.print(
            (
                f"{head}: nothing left to redact; "
                if r.nothing_redacted
                else f"{head}: {r.raw_logs} raw logs, {r.notes} notes, "
                f"{r.proposals} proposals, {r.changes} changes and {r.llm_calls} model answers redacted; "
            )
            + (
                f"{r.already_erased} of the raw logs chosen were already erased, by "
                + ", ".join(
                    f"{e.erasure_id} ({e.erased_by}, {e.erased_at:%Y-%m-%d %H:%M} UTC)"
                    for e in r.earlier_erasures
                )
                + " (this request is recorded as an erasure of no rows of theirs); "
                if r.already_erased
                else ""
            )
            + (f"{r.notes_deleted} erased notes marked deleted; " if r.notes_deleted else "")
            + (f"{r.review_comments} reviewers' comments redacted; " if r.review_comments else "")
            + (
                f"{r.values_quoting} later values that quoted the erased words redacted; "
                if r.values_quoting
                else ""
            )
            + (
                f"{r.reasons_quoting} later reasons or evidence that quoted the erased words redacted; "
                if r.reasons_quoting
                else ""
            )
            + (
                f"{r.proposals_withdrawn} pending proposals withdrawn, their proposed values erased; "
                if r.proposals_withdrawn
                else ""
            )
            + (
                f"{r.values_redacted} values of kept notes redacted in place, each a change by the "
                "eraser in the change feed; "
                if r.values_redacted
                else ""
            )
            + (
                f"{r.restated_values_proposed} values of kept inputs that restated an erased note "
                "proposed again on their own notes; "
                if r.restated_values_proposed
                else ""
            )
            + "the index was rebuilt and the databases compacted"
            + (
                f"; {r.older_sessions_open} database sessions begun before the erasure (of this database, or "
                "writing in another of the server) were still open, "
                "so the old row versions leave PostgreSQL's files at the next VACUUM FULL after they end"
                if r.older_sessions_open
                else ""
            )
            + (
                "; the erased bytes may remain in PostgreSQL's files: replication slot "
                + ", ".join(r.replication_slots_holding)
                + " (pg_replication_slots) holds an xmin from before the erasure, so PostgreSQL keeps "
                "the old row versions a standby fed by it may still read; they leave the files at the "
                "next VACUUM FULL after the slot moves past the erasure or is dropped"
                if r.replication_slots_holding
                else ""
            )
            + (
                "; the erased bytes remain in PostgreSQL's files of the tables "
                + ", ".join(r.tables_not_compacted)
                + ": another session held a lock on them through the wait (one idle in a transaction "
                "that read them), so they were not compacted; run VACUUM FULL on them once it ends"
                if r.tables_not_compacted
                else ""
            )
            + (
                f"; {r.index_segments_unchecked} index segments are in a file layout this version does not "
                "know, so their unused capacity was not cleared and may still hold stale bytes of the input"
                if r.index_segments_unchecked
                else ""
            ),
            markup=False,
        )
        for copy in r.copies_removed:  # whole copies of the ledger killed restores and backups left
            out.print(f"removed {copy}", markup=False)
        for copy in r.copies_left:
            out.print(
                f"left {copy}: a running restore or backup holds it (if it copies this ledger, it keeps "
                "what was erased until it is removed)",
                markup=False,
            )

    emit(report, as_json, render)


def _scope_words(scope: str, spellings: list[str]) -> str:
    """The scope an erasure names, as each spelling of it (whatever its case) it reaches."""
    if len(spellings) > 1:
        return f"scopes {', '.join(spellings)} ({scope} whatever its case)"
    return f"scope {spellings[0] if spellings else scope}"
