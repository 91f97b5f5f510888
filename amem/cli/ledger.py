"""Ledger commands: schema, show, history, pending, approve, reject, revert, verify, policy."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from amem.cli.app import (
    JsonOpt,
    app,
    cell,
    db_app,
    emit,
    emit_json,
    fmt_value,
    open_memory,
    out,
    parse_time,
    settings,
)


@db_app.command("upgrade")
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision.")] = "head", as_json: JsonOpt = False
) -> None:
    """Create the ledger, or migrate it to this amem's schema."""
    from amem.ledger import schema
    from amem.ledger.store import create_engine

    cfg = settings()
    cfg.home.mkdir(parents=True, exist_ok=True)
    engine = create_engine(cfg.database_url)
    try:
        before = schema.current_revision(engine)
        schema.upgrade(engine, revision)
        after = schema.current_revision(engine)
    finally:
        engine.dispose()
    url = engine.url.render_as_string(hide_password=True)
    emit(
        {"ledger": url, "before": before, "after": after},
        as_json,
        lambda d: out.print(
            f"ledger {d['ledger']}: schema {d['before'] or 'empty'} -> {d['after']}", markup=False
        ),
    )


@db_app.command("downgrade")
def db_downgrade(
    revision: Annotated[str, typer.Argument(help="Target revision, e.g. 0001 or -1.")],
    as_json: JsonOpt = False,
) -> None:
    """Step the schema back (raw logs are never dropped)."""
    from amem.ledger import schema
    from amem.ledger.store import create_engine

    engine = create_engine(settings().database_url)
    try:
        before = schema.current_revision(engine)
        schema.downgrade(engine, revision)
        after = schema.current_revision(engine)
    finally:
        engine.dispose()
    emit(
        {"before": before, "after": after},
        as_json,
        lambda d: out.print(f"schema {d['before']} -> {d['after'] or 'empty'}", markup=False),
    )


@db_app.command("current")
def db_current(as_json: JsonOpt = False) -> None:
    """Show the ledger's schema revision and the one this amem expects."""
    from amem.ledger import schema
    from amem.ledger.store import create_engine

    engine = create_engine(settings().database_url)
    try:
        data = {"current": schema.current_revision(engine), "head": schema.head_revision()}
    finally:
        engine.dispose()
    emit(data, as_json, lambda d: out.print(f"current {d['current'] or 'empty'}, head {d['head']}"))


def _render_note(note: Any) -> None:
    if note is None:
        out.print("the note did not exist at that time")
        return
    table = Table(title=f"note {note.id} (scope {note.scope}, version {note.version})", show_header=False)
    table.add_column("attribute", style="bold")
    table.add_column("value", overflow="fold")
    data = note.model_dump(mode="json")
    extra = data.pop("extra", {})
    for key, value in {**data, **extra}.items():
        if key in ("id", "scope", "version"):
            continue
        table.add_row(cell(key), fmt_value(value, 400))
    out.print(table)


@app.command()
def show(
    note_id: Annotated[str, typer.Argument(help="Note id.")],
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="ISO 8601 time: the note as it stood then.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a note now, or as it stood at --as-of."""
    moment = parse_time(as_of, "--as-of")
    with open_memory() as mem:
        note = mem.as_of(note_id, moment) if moment else mem.read(note_id)
    emit(note, as_json, _render_note)


@app.command()
def history(note_id: Annotated[str, typer.Argument(help="Note id.")], as_json: JsonOpt = False) -> None:
    """Every proposal, decision and change of a note, oldest first."""
    with open_memory() as mem:
        events = mem.history(note_id)

    def render(items: list[Any]) -> None:
        table = Table(title=f"history of {note_id}")
        for col in ("when", "event", "attribute", "value", "who", "why"):
            table.add_column(col, overflow="fold")
        table.add_column("raw logs", no_wrap=True)
        for e in items:
            why = e.reason or e.comment or ""
            if e.change_seq:
                why = f"change {e.change_seq}"
            table.add_row(
                e.at.strftime("%Y-%m-%d %H:%M:%S"),
                e.event,
                cell(e.attribute),
                fmt_value(e.new_value),
                cell(e.actor + (f" ({e.model})" if e.model else "")),
                cell(why),
                ", ".join(e.raw_log_ids),
            )
        out.print(table)

    emit(events, as_json, render)


@app.command()
def pending(
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    attribute: Annotated[str | None, typer.Option(help="Only this attribute.")] = None,
    proposer: Annotated[str | None, typer.Option(help="Only this proposer (name or kind:name).")] = None,
    newest_first: Annotated[bool, typer.Option("--newest-first", help="Newest first.")] = False,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Proposals waiting for a reviewer."""
    from amem.ledger.store import ProposalFilter

    f = ProposalFilter(
        status=["pending"], scope=scope, attribute=attribute, proposer=proposer, newest_first=newest_first
    )
    with open_memory() as mem:
        items = mem.proposals(f, limit=limit)

    def render(ps: list[Any]) -> None:
        if not ps:
            out.print("nothing pending")
            return
        table = Table(title="pending proposals")
        for col in ("proposal", "note"):  # ids are copied into the next command: never wrapped
            table.add_column(col, no_wrap=True)
        for col in ("attribute", "current", "proposed", "reason", "proposer", "created"):
            table.add_column(col, overflow="fold")
        for p in ps:
            table.add_row(
                p.id,
                p.note_id,
                cell(p.attribute),
                fmt_value(p.old_value, 40),
                fmt_value(p.new_value, 40),
                fmt_value(p.reason, 60),
                cell(f"{p.proposer.kind.value}:{p.proposer.id}"),
                p.created_at.strftime("%Y-%m-%d %H:%M"),
            )
        out.print(table)

    emit(items, as_json, render)


def _render_decision(p: Any) -> None:
    out.print(
        f"proposal {p.id} ({p.attribute} of {p.note_id}): {p.status.value}"
        + (f" by {p.reviewer}" if p.reviewer else ""),
        markup=False,
    )
    if p.status.value == "conflict":
        out.print(f"  {p.review_comment}; propose again against the current value", markup=False)


@app.command()
def approve(
    proposal_id: Annotated[str, typer.Argument(help="Proposal id.")],
    reviewer: Annotated[str, typer.Option("--reviewer", help="The reviewer's identity.")],
    comment: Annotated[str | None, typer.Option("--comment", help="Why.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve a pending proposal (conflict if the note changed since it was made)."""
    with open_memory() as mem:
        decided = mem.approve(proposal_id, reviewer=reviewer, comment=comment)
    emit(decided, as_json, _render_decision)
    if decided.status.value == "conflict":
        raise typer.Exit(3)


@app.command()
def reject(
    proposal_id: Annotated[str, typer.Argument(help="Proposal id.")],
    reviewer: Annotated[str, typer.Option("--reviewer", help="The reviewer's identity.")],
    comment: Annotated[str, typer.Option("--comment", help="Why (required).")],
    as_json: JsonOpt = False,
) -> None:
    """Reject a pending proposal."""
    with open_memory() as mem:
        decided = mem.reject(proposal_id, reviewer=reviewer, comment=comment)
    emit(decided, as_json, _render_decision)


@app.command()
def revert(
    change: Annotated[int, typer.Argument(help="Change sequence number (see `amem history`).")],
    actor: Annotated[str, typer.Option("--actor", help="Who asks for the revert.")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Propose restoring the value a change replaced; routed by the policy like any proposal."""
    with open_memory() as mem:
        proposal = mem.revert(change, actor=actor, reason=reason)
    emit(
        proposal,
        as_json,
        lambda p: out.print(
            f"proposal {p.id} restores {p.attribute} of {p.note_id}: {p.status.value}", markup=False
        ),
    )


@app.command()
def verify(
    checkpoints: Annotated[
        str | None,
        typer.Option("--checkpoints", help="Checkpoint log: prove the ledger extends every statement in it."),
    ] = None,
    public_key: Annotated[
        str | None,
        typer.Option("--public-key", help="Key checkpoints are signed with (default: the signing key's)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recompute both hash chains, compare every row with its event, replay every note; prove
    checkpoints. Exit 1, naming the first bad row, if tampered."""
    with open_memory() as mem:
        result = mem.verify(checkpoints=checkpoints, public_key=public_key)
    if as_json:
        emit_json(result)
    else:
        out.print(f"{'OK' if result.ok else 'TAMPERED'}: {result.message}", markup=False)
        for problem in result.problems[1:]:
            out.print(f"  also: {problem}", markup=False)
        for proof in result.checkpoints:
            out.print(f"  {'proven' if proof.proven else 'NOT PROVEN'}: {proof.message}", markup=False)
    if not result.ok:
        raise typer.Exit(1)


@app.command()
def propose(
    note_id: Annotated[str, typer.Argument(help="Note id.")],
    attribute: Annotated[str, typer.Argument(help="Attribute name.")],
    value: Annotated[str, typer.Argument(help="New value as JSON (a bare word is taken as text).")],
    reason: Annotated[str, typer.Option("--reason", help="Why.")],
    actor: Annotated[str, typer.Option("--actor", help="Who proposes (name, or agent:name).")],
    as_json: JsonOpt = False,
) -> None:
    """Propose a new value for one attribute; the policy routes it."""
    import json

    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    with open_memory() as mem:
        p = mem.propose(note_id, attribute, parsed, reason=reason, proposer=actor)
    emit(p, as_json, lambda p: out.print(f"proposal {p.id}: {p.status.value} ({p.rule})", markup=False))


@app.command("policy")
def policy_show(as_json: JsonOpt = False) -> None:
    """The policy in force: each attribute's mode and who may approve it."""
    from amem.policy import CORE_TYPES, load_policy

    pol = load_policy(settings().policy_path)
    rows = []
    for name in [*CORE_TYPES, *pol.declared_attributes()]:
        routing = pol.route(name, [], "llm")  # type: ignore[arg-type]
        attr = pol.attributes.get(name)
        rows.append(
            {
                "attribute": name,
                "type": pol.type_of(name),
                "mode": routing.mode.value,
                "rules": [f"{r.when.describe()} -> {r.mode.value}" for r in (attr.rules if attr else [])],
                "approver_roles": pol.approver_roles(name),
            }
        )
    data = {
        "source": pol.source,
        "default_mode": pol.default_mode.value,
        "self_approval": pol.self_approval,
        "attributes": rows,
        "reviewers": {k: v.roles for k, v in pol.reviewers.items()},
    }

    def render(d: dict[str, Any]) -> None:
        table = Table(title=f"policy {d['source']}")
        for col in ("attribute", "type", "mode", "narrowed by", "approved by"):
            table.add_column(col)
        for r in d["attributes"]:
            table.add_row(
                *(
                    cell(x)
                    for x in (
                        r["attribute"],
                        r["type"],
                        r["mode"],
                        "; ".join(r["rules"]),
                        ", ".join(r["approver_roles"]),
                    )
                )
            )
        out.print(table)

    emit(data, as_json, render)
