"""Ledger commands: schema, show, history, pending, approve, reject, revert, verify, policy."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from amem.cli.app import (
    CheckpointsOpt,
    JsonOpt,
    PasswordStdinOpt,
    PublicKeyOpt,
    app,
    authenticate,
    cell,
    db_app,
    editor,
    emit,
    emit_json,
    fmt_value,
    open_memory,
    out,
    parse_time,
    print_verification,
    settings,
    sign_in,
    store_label,
)


@db_app.command("upgrade", context_settings={"ignore_unknown_options": True})
def db_upgrade(
    revision: Annotated[str, typer.Argument(help="Target revision: head, e.g. 0003, or +1.")] = "head",
    as_json: JsonOpt = False,
) -> None:
    """Create the ledger, or migrate it to this amem's schema."""
    from amem.services import schema_admin

    cfg = settings()
    cfg.home.mkdir(parents=True, exist_ok=True)
    step = schema_admin.upgrade(cfg.database_url, revision)
    emit(
        {"ledger": step.url, "before": step.before, "after": step.after},
        as_json,
        lambda d: out.print(
            f"ledger {d['ledger']}: schema {d['before'] or 'empty'} -> {d['after']}", markup=False
        ),
    )


@db_app.command("downgrade", context_settings={"ignore_unknown_options": True})
def db_downgrade(
    revision: Annotated[str, typer.Argument(help="Target revision: e.g. 0001, base, or -1 (one step back).")],
    as_json: JsonOpt = False,
) -> None:
    """Step the schema back (raw logs are never dropped)."""
    from amem.services import schema_admin

    step = schema_admin.downgrade(settings().database_url, revision)
    emit(
        {"before": step.before, "after": step.after},
        as_json,
        lambda d: out.print(f"schema {d['before']} -> {d['after'] or 'empty'}", markup=False),
    )


@db_app.command("current")
def db_current(as_json: JsonOpt = False) -> None:
    """Show the ledger's schema revision and the one this amem expects."""
    from amem.services import schema_admin

    found = schema_admin.state(settings().database_url)
    data = {"current": found.current, "head": found.head}
    emit(data, as_json, lambda d: out.print(f"current {d['current'] or 'empty'}, head {d['head']}"))


def _render_note(note: Any) -> None:
    if note is None:
        out.print("the note did not exist at that time")
        return
    table = Table(title=f"note {note.id} (scope {note.scope}, version {note.version})", show_header=False)
    table.add_column("attribute", style="bold")
    table.add_column("value", overflow="fold")
    data = note.model_dump(mode="json")
    team = data.pop("extra", {})
    for key, value in data.items():
        if key in ("id", "scope", "version"):
            continue
        table.add_row(cell(key), fmt_value(value, 400))
    if team:
        # apart from the note's own fields: a team attribute never stands in for one of them (a
        # policy installed before such names were refused may declare raw_log_ids or scope)
        table.add_section()
        table.add_row("team attributes", "", style="italic")
        for key, value in team.items():
            table.add_row(cell(key), fmt_value(value, 400))
    out.print(table)


@app.command()
def show(
    note_id: Annotated[str, typer.Argument(help="Note id.")],
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="ISO 8601 date or time (UTC unless it says): the note as it stood at the end of it "
            "(2026-12-07: that whole day; 2026-12-07T04:41:09Z: that second, as history shows it).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a note now, or as it stood at --as-of."""
    moment = parse_time(as_of, "--as-of")
    with open_memory(create=False) as mem:
        note = mem.as_of(note_id, moment) if moment else mem.read(note_id)
    emit(note, as_json, _render_note)


@app.command()
def history(note_id: Annotated[str, typer.Argument(help="Note id.")], as_json: JsonOpt = False) -> None:
    """Every proposal, decision and change of a note, oldest first, one block per event."""
    with open_memory(create=False) as mem:
        events = mem.history(note_id)
        policy = mem.policy

    def words(attribute: str, value: Any) -> str:
        from amem.services.review import value_words

        return value_words(value, policy.type_of(attribute) if policy.knows(attribute) else "text")

    def render(items: list[Any]) -> None:
        from amem.cli import blocks

        blocks.history(out, note_id, items, words)

    emit(events, as_json, render)


KindOpt = Annotated[
    str | None,
    typer.Option(
        "--kind", help="Only items holding this kind: contradiction, deletion, correction, revert, value."
    ),
]


def _review_filter(
    scope: str | None,
    attribute: str | None,
    kind: str | None,
    proposer: str | None = None,
    newest_first: bool = False,
) -> Any:
    from amem.services.review import REVIEW_KINDS, ReviewFilter

    if kind is not None and kind not in REVIEW_KINDS:
        raise typer.BadParameter(f"{kind!r}: expected one of {', '.join(REVIEW_KINDS)}", param_hint="--kind")
    return ReviewFilter(
        scope=scope,
        attribute=attribute,
        kind=kind,  # type: ignore[arg-type]
        proposer=proposer,
        newest_first=newest_first,
    )


@app.command()
def pending(
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    attribute: Annotated[str | None, typer.Option(help="Only items holding this attribute.")] = None,
    kind: KindOpt = None,
    proposer: Annotated[str | None, typer.Option(help="Only this proposer (name or kind:name).")] = None,
    newest_first: Annotated[bool, typer.Option("--newest-first", help="Newest first.")] = False,
    # the bounds of `amem facts` (services.facts MAX_PAGE, MAX_OFFSET): past them the ledger overflows
    limit: Annotated[int, typer.Option(min=1, max=1000, help="At most this many items (1 to 1,000).")] = 20,
    offset: Annotated[int, typer.Option(min=0, max=2**62, help="Skip this many items.")] = 0,
    reviewer: Annotated[
        str | None,
        typer.Option(
            "--reviewer",
            help="Only the accounts this reviewer decides in (reviewers.yaml scopes): their queue. "
            "Reading needs no password.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Review items waiting for a reviewer, one per input.

    Each shows every value it holds for review, current and proposed in full, the reason, the
    evidence marked in the raw log, and the source."""
    f = _review_filter(scope, attribute, kind, proposer, newest_first)
    with open_memory(create=False) as mem:
        whose = None
        if reviewer is not None:
            from amem.errors import InvalidInputError
            from amem.services.accounts import account_for

            account = account_for(mem.policy, reviewer)
            if account is None:
                raise InvalidInputError(f"--reviewer {reviewer!r} is not a reviewer of the policy in force")
            whose = account.id
        page = mem.review_items(f, limit=limit, offset=offset, reviewer=whose)
        if not page.items and not offset:
            _known_filter(mem, f)  # nothing matches: a typo is named, not answered as an empty queue
        second_looks = mem.second_looks(whose) if whose is not None else 0
        # items matching in accounts they do not decide in: named when their queue is empty, as
        # approve does, and counted under --json (``waiting_elsewhere``) whatever their queue holds
        elsewhere = _elsewhere(mem, f, whose, own=page.total) if whose else (0, None)

    def render(p: Any) -> None:
        from amem.cli import blocks

        if second_looks:
            out.print(
                f"{second_looks} correction(s) by other reviewers wait for your second look "
                "(--kind correction)",
                markup=False,
                soft_wrap=True,
            )
        if not p.items and not offset:
            chosen = _filter_words(f)
            count, where = elsewhere
            if count and where is not None:
                lead = f"nothing pending matches {chosen}" if chosen else "nothing pending"
                verb = (
                    ("matches" if count == 1 else "match") if chosen else ("waits" if count == 1 else "wait")
                )
                out.print(
                    f"{lead} in the accounts {whose} decides in ({where}) in {store_label()}; "
                    f"{_items(count)} {verb} in others",
                    markup=False,
                )
            elif chosen:
                out.print(f"nothing pending matches {chosen} in {store_label()}", markup=False)
            else:
                out.print(f"nothing pending in {store_label()}", markup=False)
            return

        blocks.review_items(out, p, offset=offset)

    if as_json and whose is not None:  # the page, and how many items wait outside their accounts
        emit_json({**page.model_dump(mode="json"), "waiting_elsewhere": elsewhere[0]})
        return
    emit(page, as_json, render)


def _items(count: int) -> str:
    """``1 review item``, ``3 review items``."""
    return f"{count} review item" + ("" if count == 1 else "s")


def _known_filter(mem: Any, f: Any) -> None:
    """Where nothing matches: a mistyped --scope or --attribute is named, not answered with an empty
    queue (a reviewer reading "nothing pending" would take the queue for empty). Called only then:
    an attribute a policy no longer declares may still hold pending values, and a new account's
    inputs may wait before its first note, so neither is refused while something matches."""
    from amem.cli.search import refuse_unknown_scope
    from amem.errors import InvalidInputError

    if f.scope:
        refuse_unknown_scope(mem, f.scope)
    if f.attribute and not mem.policy.knows(f.attribute):
        from amem.domain.models import CORE_ATTRIBUTES

        known = [*CORE_ATTRIBUTES, *mem.policy.declared_attributes()]
        raise InvalidInputError(
            f"--attribute {f.attribute!r} is not an attribute of the policy in force; "
            f"known: {', '.join(known)}"
        )


def _filter_words(f: Any) -> str:
    """The filters a reviewer chose, as they typed them."""
    chosen = [
        ("--scope", f.scope),
        ("--attribute", f.attribute),
        ("--kind", f.kind),
        ("--proposer", f.proposer),
    ]
    return " ".join(f"{flag} {value}" for flag, value in chosen if value)


def _render_decision(p: Any) -> None:
    out.print(
        f"proposal {p.id} ({p.attribute} of {p.note_id}): {p.status.value}"
        + (f" by {p.reviewer}" if p.reviewer else ""),
        markup=False,
    )
    if p.status.value == "conflict":
        out.print(f"  {p.review_comment}; propose again against the current value", markup=False)


ReviewerOpt = Annotated[
    str, typer.Option("--reviewer", help="The reviewer deciding; their password is asked for.")
]


def _is_proposal(mem: Any, ident: str) -> bool:
    from amem.errors import NotFoundError

    try:
        mem.proposal(ident)
    except NotFoundError:
        return False
    return True


def _finish_report(report: Any, as_json: bool, verb: str) -> None:
    """The report, and the exit status README's table gives it: 2 when nothing was decided (every
    value skipped), 3 on a conflict, and 2 when an approval approved nothing because the policy
    refused its values (frozen or no longer declared since), as approving one proposal says."""
    from amem.cli import blocks

    emit(report, as_json, lambda r: blocks.decision_report(out, r))
    statuses = {p.status.value for p in report.decided}
    if report.skipped and not report.decided:
        raise typer.Exit(2)
    if "conflict" in statuses:
        raise typer.Exit(3)
    # in an approval, a value recorded as rejected is one the policy refused
    if verb == "approve" and "rejected" in statuses and "approved" not in statuses:
        raise typer.Exit(2)


AllOpt = Annotated[
    bool, typer.Option("--all", help="Every item matching --scope/--attribute/--kind, on any page.")
]
AllScopeOpt = Annotated[str | None, typer.Option(help="With --all: only this scope.")]
AllAttributeOpt = Annotated[str | None, typer.Option(help="With --all: only this attribute.")]
AllProposerOpt = Annotated[
    str | None,
    typer.Option(
        help="With --all: only values this proposer made (llm:MODEL, person:NAME; see `amem review-stats`)."
    ),
]
YesOpt = Annotated[bool, typer.Option("--yes", help="With --all: do not ask for confirmation.")]
ItemOpt = Annotated[
    str | None,
    typer.Argument(
        metavar="[ITEM_OR_PROPOSAL]",
        help="A review item (its raw log id: every value it holds) or one proposal id.",
    ),
]


@app.command()
def approve(
    reviewer: ReviewerOpt,
    ident: ItemOpt = None,
    comment: Annotated[str | None, typer.Option("--comment", help="Why.")] = None,
    password_stdin: PasswordStdinOpt = False,
    approve_all: AllOpt = False,
    scope: AllScopeOpt = None,
    attribute: AllAttributeOpt = None,
    kind: KindOpt = None,
    proposer: AllProposerOpt = None,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Approve a review item, one proposal, or --all items matching a filter.

    --all counts the items, then asks for confirmation. Each value goes through the policy for the
    reviewer: one they may not decide is skipped and reported. Exit 3 on a conflict (the note
    changed since the proposal was made)."""
    _decide(
        "approve",
        reviewer,
        ident,
        comment,
        password_stdin,
        approve_all,
        _review_filter(scope, attribute, kind, proposer),
        yes,
        as_json,
    )


@app.command()
def reject(
    reviewer: ReviewerOpt,
    comment: Annotated[str, typer.Option("--comment", help="Why (required).")],
    ident: ItemOpt = None,
    password_stdin: PasswordStdinOpt = False,
    reject_all: AllOpt = False,
    scope: AllScopeOpt = None,
    attribute: AllAttributeOpt = None,
    kind: KindOpt = None,
    proposer: AllProposerOpt = None,
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Reject a pending proposal, every value a review item holds, or --all items matching a
    filter (a run of wrong values: a bad import's dates, a model's misreading).

    --all counts the items, then asks for confirmation; the comment says why, on each."""
    _decide(
        "reject",
        reviewer,
        ident,
        comment,
        password_stdin,
        reject_all,
        _review_filter(scope, attribute, kind, proposer),
        yes,
        as_json,
    )


def _decide(
    verb: str,
    reviewer: str,
    ident: str | None,
    comment: str | None,
    password_stdin: bool,
    every: bool,
    f: Any,
    yes: bool,
    as_json: bool,
) -> None:
    """approve or reject: one item, one proposal, or --all matching the filter ``f`` after a count."""
    from amem.errors import InvalidInputError

    if every and ident is not None:
        raise InvalidInputError(f"{verb} takes an item or proposal id, or --all (with filters), not both")
    if not every and ident is None:
        raise InvalidInputError(
            f"{verb} needs an item or proposal id (see `amem pending`), or --all with filters"
        )
    if not every and (f.scope or f.attribute or f.kind or f.proposer):
        raise InvalidInputError("--scope, --attribute, --kind and --proposer only go with --all")
    with open_memory(create=False, warn=False) as mem:  # a decision says it itself
        shown = None
        if ident is not None and not _is_proposal(mem, ident):
            # what the reviewer is about to decide, said before they sign in to decide it: if the
            # item holds other values by then, nothing is decided
            shown = mem.review_item(ident)
            if not as_json:
                held = ", ".join(f.proposal.attribute for f in shown.fields)
                values = "held value" if len(shown.fields) == 1 else "held values"
                out.print(f"item {ident} ({shown.scope}), {len(shown.fields)} {values}: {held}", markup=False)
        if every and mem.count_review_items(f, reviewer=reviewer).items == 0:
            _known_filter(mem, f)  # a typo is named, before any password is asked
            _nothing_matches(mem, f, reviewer, as_json)  # counted first: no password asked in vain
            return
        who = sign_in(mem, reviewer, password_stdin)
        if every:
            counted = mem.count_review_items(f, reviewer=who.id)  # in the scopes they decide in
            if counted.items == 0:
                _nothing_matches(mem, f, who.id, as_json)
                return
            what = f"{counted.items} review items ({counted.proposals} held values) match"
            if not yes:
                if as_json:
                    raise InvalidInputError("--all with --json needs --yes (there is no prompt to answer)")
                if not typer.confirm(f"{what}. {verb.title()} them all as {reviewer}?", default=False):
                    out.print(
                        {"approve": "nothing approved", "reject": "nothing rejected"}[verb], markup=False
                    )
                    return
            elif not as_json:
                out.print(f"{what}.", markup=False)
            decide_all = mem.approve_matching if verb == "approve" else mem.reject_matching
            report = decide_all(
                f,
                reviewer=who,
                expected_items=counted.items,
                fingerprint=counted.fingerprint,
                comment=comment,
            )
            _finish_report(report, as_json, verb)
            return
        assert ident is not None
        if shown is None:
            if verb == "approve":
                decided = mem.approve(ident, reviewer=who, comment=comment)
            else:
                decided = mem.reject(ident, reviewer=who, comment=comment)
            emit(decided, as_json, _render_decision)
            if decided.status.value == "conflict":
                raise typer.Exit(3)
            return
        if verb == "approve":
            report = mem.approve_item(ident, reviewer=who, shown=shown.proposal_ids, comment=comment)
        else:
            report = mem.reject_item(ident, reviewer=who, shown=shown.proposal_ids, comment=comment)
    _finish_report(report, as_json, verb)


def _nothing_matches(mem: Any, f: Any, reviewer: str, as_json: bool) -> None:
    """Nothing for ``reviewer`` to decide under filter ``f``; where items match in accounts they do
    not decide in, say so, as a single decision there is refused saying so."""
    elsewhere, where = _elsewhere(mem, f, reviewer)
    data: dict[str, Any] = {"matched": 0, "matched_elsewhere": elsewhere}
    if elsewhere and where is not None:
        line = (
            f"nothing pending matches in the accounts {reviewer} decides in ({where}); "
            f"{_items(elsewhere)} {'matches' if elsewhere == 1 else 'match'} in others"
        )
    else:
        line = "nothing pending matches"
    emit(data, as_json, lambda _: out.print(line, markup=False))


def _elsewhere(mem: Any, f: Any, reviewer: str, *, own: int = 0) -> tuple[int, str | None]:
    """How many review items match ``f`` in the accounts ``reviewer`` does not decide in (``own``:
    how many match in theirs), and their accounts in words (None: every account, so none elsewhere)."""
    scopes = mem.governance.policy.scopes_of(reviewer)
    if scopes is None:
        return 0, None
    return max(mem.count_review_items(f).items - own, 0), ", ".join(scopes) or "no account"


@app.command()
def revert(
    change: Annotated[int, typer.Argument(help="Change sequence number (see `amem history`).")],
    reviewer: Annotated[
        str, typer.Option("--reviewer", "--actor", help="The reviewer asking; their password is asked for.")
    ],
    reason: Annotated[str | None, typer.Option("--reason", help="Why.")] = None,
    password_stdin: PasswordStdinOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Propose restoring the value a change replaced; routed by the policy like any proposal.

    Exit 2 when the policy refuses it (the attribute frozen): the revert is recorded as rejected,
    saying why, and nothing is applied."""
    with open_memory(create=False, warn=False) as mem:  # a decision says it itself
        proposal = mem.revert(change, reviewer=sign_in(mem, reviewer, password_stdin), reason=reason)
    emit(
        proposal,
        as_json,
        lambda p: out.print(
            f"proposal {p.id} restores {p.attribute} of {p.note_id}: {p.status.value}", markup=False
        ),
    )
    if proposal.status.value == "rejected":  # as an approval the policy refuses: why, on stderr
        from amem.errors import FrozenAttributeError

        raise FrozenAttributeError(
            f"{proposal.review_comment or 'refused by policy'} ({proposal.rule}): the revert, proposal "
            f"{proposal.id}, was recorded as rejected and nothing was applied",
            proposal=proposal,
        )


@app.command("review-stats")
def review_stats(
    days: Annotated[int, typer.Option(min=1, max=3650, help="Decisions of the last N days.")] = 30,
    as_json: JsonOpt = False,
) -> None:
    """What reviewers did with held values, per attribute and per model: approved as proposed,
    corrected, rejected, conflicts, and what waits now.

    An attribute or a model whose values reviewers mostly turn down is a policy to change (apply
    or freeze it) or a model to replace: every such value costs a person a look."""
    with open_memory(create=False) as mem:
        verdicts = mem.review_verdicts(days=days)

    def render(v: Any) -> None:
        if not v.by_attribute:
            out.print(f"nothing held for review, and no decisions, in the last {v.days} days", markup=False)
            return
        for rows, label in ((v.by_attribute, "attribute"), (v.by_source, "proposer")):
            out.print(f"held values by {label}, decided in the last {v.days} days", markup=False)
            for r in rows:
                share = "" if r.approved_share is None else f"; {r.approved_share:.0%} approved as proposed"
                out.print(f"  {r.name}", markup=False, soft_wrap=True)
                out.print(
                    f"    {r.waiting} waiting, {r.approved} approved, {r.corrected} corrected, "
                    f"{r.rejected} rejected, {r.conflict} conflict{share}",
                    markup=False,
                    soft_wrap=True,
                )
            out.print()
        said = v.noisy_words()
        if said is not None:
            out.print(said, markup=False, soft_wrap=True)

    emit(verdicts, as_json, render)


@app.command()
def correct(
    proposal_id: Annotated[str, typer.Argument(help="The held value to correct (a proposal id).")],
    value: Annotated[
        str,
        typer.Argument(
            help="The right value, read as the held value's attribute type in the policy (as `amem "
            "update` reads it): text as typed, a date-time in ISO 8601 (2027-03-01), a list as JSON "
            '(\'["SSO", "price"]\').'
        ),
    ],
    reviewer: ReviewerOpt,
    comment: Annotated[str | None, typer.Option("--comment", help="Why the value was wrong.")] = None,
    password_stdin: PasswordStdinOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Reject a held value and propose the right one from the same input, as the reviewer.

    The correction names the value it replaces and is routed by the policy: where reviewers may not
    approve their own proposals, another reviewer approves it (it waits in the queue)."""
    from amem.cli.notes import typed_value

    with open_memory(create=False, warn=False) as mem:  # a decision says it itself
        # read as its attribute's type, as `amem update` reads it: read as JSON whatever the type,
        # a next_step of 2027 was a number (refused) and `null` cleared the value it corrects
        held = mem.proposal(proposal_id)
        parsed = typed_value(mem.policy, held.attribute, value)
        done = mem.correct(
            proposal_id, parsed, reviewer=sign_in(mem, reviewer, password_stdin), comment=comment
        )

    def render(d: Any) -> None:
        fix = d.correction
        out.print(f"proposal {d.corrected.id}: rejected, corrected by {d.corrected.reviewer}", markup=False)
        waits = " (another reviewer approves it)" if fix.status.value == "pending" else ""
        what = f"proposal {fix.id} ({fix.attribute} of {fix.note_id})"
        out.print(f"{what}: {fix.status.value}{waits}", markup=False)

    emit(done, as_json, render)


@app.command()
def verify(
    checkpoints: CheckpointsOpt = None, public_key: PublicKeyOpt = None, as_json: JsonOpt = False
) -> None:
    """Recompute both hash chains and prove checkpoints. Exit 1 if tampered.

    Every row is compared with its event and every note replayed; the first bad row is named."""
    from amem.cli.progress import reporter

    with open_memory(create=False) as mem, reporter(as_json) as progress:
        result = mem.verify(checkpoints=checkpoints, public_key=public_key, progress=progress)
    if as_json:
        emit_json(result)
    else:
        print_verification(result, f"store {store_label()}")
    if not result.ok:
        raise typer.Exit(1)


@app.command()
def propose(
    note_id: Annotated[str, typer.Argument(help="Note id.")],
    attribute: Annotated[str, typer.Argument(help="Attribute name.")],
    value: Annotated[
        str,
        typer.Argument(
            help="New value, read as the attribute's type in the policy (as `amem update` reads it): "
            "text as typed, a list as JSON, a date-time in ISO 8601."
        ),
    ],
    reason: Annotated[str, typer.Option("--reason", help="Why.")],
    actor: Annotated[
        str,
        typer.Option(
            "--actor", help="Who proposes: agent:NAME, or a person's name (their password is asked for)."
        ),
    ],
    password_stdin: PasswordStdinOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Propose a new value for one attribute; the policy routes it. A person signs in as for a
    decision; an agent proposes as agent:NAME."""
    from amem.cli.notes import typed_value

    with open_memory(create=False) as mem:
        parsed = typed_value(mem.policy, attribute, value)
        p = mem.propose(
            note_id, attribute, parsed, reason=reason, proposer=editor(mem, actor, password_stdin)
        )
    emit(
        p,
        as_json,
        lambda p: out.print(
            f"proposal {p.id}: {p.status.value} ({p.rule})"
            + (f": {p.review_comment}" if p.status.value == "rejected" and p.review_comment else ""),
            markup=False,
        ),
    )
    if p.status.value == "rejected":  # the policy refused it: a script checking $? must see that
        raise typer.Exit(2)


policy_app = typer.Typer(
    help="The policy in force; install the next one in the ledger.", invoke_without_command=True
)
app.add_typer(policy_app, name="policy")


@policy_app.callback()
def policy_show(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The policy in force: each attribute's mode and who may approve it, and where it comes from
    (installed in the ledger, or the policy file while none is installed)."""
    if ctx.invoked_subcommand is not None:
        return
    cfg = settings()
    if cfg.database_url_override is None and not (cfg.home / "ledger.sqlite3").exists():
        # no store yet: show the file the first `amem add` would install, and create nothing (a
        # store made now would install it as version 1 before any reviewer has a password)
        from amem.policy import load_policy
        from amem.services.audit import policy_overview

        pol = load_policy(cfg.policy_path)
        overview, installed, mismatch = policy_overview(pol), None, None
        described = (
            f"the policy file {pol.source} (no store yet at {cfg.home.resolve()}: the first "
            "`amem add` or `amem init` installs it as version 1; set reviewers' passwords first)"
        )
    else:
        with open_memory(create=False) as mem:
            pol, in_force, overview = mem.policy, mem.policy_in_force, mem.policy_overview()
        installed, mismatch, described = in_force.installed, in_force.mismatch, in_force.describe()
    rows = [
        {
            "attribute": a.attribute,
            "type": a.type,
            "mode": a.mode,
            "rules": [f"{r.when} -> {r.mode}" for r in a.rules],
            "approver_roles": a.approver_roles,
        }
        for a in overview.attributes
    ]
    data = {
        "source": pol.source,
        "in_force": described,
        "installed": installed.model_dump(mode="json", exclude={"text"}) if installed else None,
        "mismatch": mismatch,
        "default_mode": pol.default_mode.value,
        "self_approval": pol.self_approval,
        "policy_admins": pol.admin_roles(),
        "attributes": rows,
        "reviewers": {k: v.roles for k, v in pol.reviewers.items()},
        "reviewer_scopes": {k: v.scopes for k, v in pol.reviewers.items() if v.scopes is not None},
    }

    def render(d: dict[str, Any]) -> None:
        out.print(f"policy in force: {d['in_force']}", markup=False)
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
                        ", ".join(r["approver_roles"]) or "nobody",
                    )
                )
            )
        out.print(table)
        admins = ", ".join(d["policy_admins"]) or "no role"
        out.print(f"may install the next policy: {admins} (a reviewer limited to no accounts)", markup=False)

    emit(data, as_json, render)


@policy_app.command("install")
def policy_install(
    path: Annotated[
        str, typer.Argument(help="The policy file to install (its reviewers file is folded in).")
    ],
    reviewer: ReviewerOpt,
    password_stdin: PasswordStdinOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Record a policy in the ledger as the policy in force for every process on it.

    Only a reviewer with a policy_admins role of the installed policy may install the next one
    (their password is asked for); a first install (none installed, or a new ledger's version 1 that
    gives no policy admin a password) is signed in under the policy installed.
    """
    from amem.policy import fingerprint, load_policy
    from amem.services.authentication import Authentication
    from amem.services.policy_registry import is_unclaimed

    new = load_policy(path)
    # no "this process reads but decides nothing": installing FILE is what ends that mismatch, and
    # the install decides by the installed version's admins, whatever this process's file says
    with open_memory(warn=False) as mem:
        installed = mem.policy_in_force.installed
        if installed is None or is_unclaimed(installed):
            authentication = Authentication(new, fingerprint(new))
        else:
            authentication = mem.authentication
        by = authenticate(authentication, reviewer, password_stdin)
        version, is_new = mem.install_policy(new, by=by)
    data = {**version.model_dump(mode="json", exclude={"text"}), "new": is_new}
    emit(
        data,
        as_json,
        lambda d: out.print(
            f"policy version {d['version']} (sha256 {d['sha256'][:12]}) "
            + ("installed" if d["new"] else "was already in force")
            + f" by {d['installed_by']}",
            markup=False,
        ),
    )


@policy_app.command("export")
def policy_export(
    version: Annotated[
        int | None,
        typer.Option("--version", min=1, help="The installed version to print (amem policy history)."),
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="ISO 8601 date or time (UTC unless it says): the version in force at the end of it "
            "(a date: that whole day).",
        ),
    ] = None,
) -> None:
    """Print an installed policy's text, reviewers included: the one in force now, or --version N,
    or the one in force at --as-of (for an auditor: the policy as it was).

    To start processes with the policy in force: `amem policy export > policies.yaml`."""
    from amem.errors import InvalidInputError
    from amem.services.policy_registry import chosen_version

    if version is not None and as_of is not None:
        raise InvalidInputError("give --version or --as-of, not both")
    moment = parse_time(as_of, "--as-of")
    with open_memory(create=False) as mem:
        versions = mem.policy_versions()
    sys.stdout.write(chosen_version(versions, number=version, moment=moment).text)


@policy_app.command("history")
def policy_history(as_json: JsonOpt = False) -> None:
    """Every policy version installed in the ledger, oldest first: its sha256 (what each proposal's
    policy_sha256 names), who installed it and when. `amem policy export --version N` prints one."""
    with open_memory(create=False) as mem:
        versions = mem.policy_versions()
    rows = [
        v.model_dump(mode="json", include={"version", "sha256", "installed_by", "installed_at"})
        for v in versions
    ]

    def render(items: list[dict[str, Any]]) -> None:
        table = Table(title="installed policy versions")
        for col in ("version", "sha256", "installed by", "installed at"):
            table.add_column(col)
        for r in items:  # the full sha256 in --json; 12 characters name a version here
            shown = (r["version"], str(r["sha256"])[:12], r["installed_by"], str(r["installed_at"])[:19])
            table.add_row(*(cell(x) for x in shown))
        out.print(table)

    emit(rows, as_json, render)
