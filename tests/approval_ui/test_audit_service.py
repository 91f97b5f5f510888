"""The console's read-only services on both backends: trail, exports, statistics, links, queue."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import sqlalchemy as sa

from amem.domain.models import utcnow
from amem.ledger.audit_queries import AuditQuery
from amem.ledger.tables import UTCDateTime, proposals
from amem.memory import Memory
from amem.policy import Mode, fingerprint, load_policy
from amem.services import audit
from amem.services.authentication import Authentication
from tests.conftest import REPO
from tests.factories import admin_can_sign_in, llm_proposer, make_note, signed_in


def _decided(memory: Memory) -> tuple[str, str, str]:
    note = make_note(memory, "Acme call", keywords=["sso"])
    ok = memory.propose(note.id, "decision_rationale", "Okta", reason="call", proposer=llm_proposer(memory))
    memory.approve(ok.id, reviewer=signed_in(memory, "alice"), comment="fine")
    no = memory.propose(note.id, "next_step", "-1 discount", reason="guess", proposer=llm_proposer(memory))
    memory.reject(no.id, reviewer=signed_in(memory, "bob"), comment="not said")
    return note.id, ok.id, no.id


def test_the_trail_has_every_change_proposal_and_decision_newest_first(memory: Memory) -> None:
    _note_id, _ok, _no = _decided(memory)
    events = audit.audit_events(memory.ledger, AuditQuery())
    assert [(e.event, e.attribute, e.actor) for e in events] == [
        ("rejected", "next_step", "person:bob"),
        ("proposed", "next_step", "llm:offline"),
        ("applied", "decision_rationale", "person:alice"),
        ("approved", "decision_rationale", "person:alice"),
        ("proposed", "decision_rationale", "llm:offline"),
        ("applied", "keywords", "llm:offline"),
        ("proposed", "keywords", "llm:offline"),
        ("created", "content", "agent:sales-agent"),
    ]
    assert audit.count_audit_events(memory.ledger, AuditQuery()) == 8
    applied = events[2]
    assert applied.change_seq == 3 and applied.status == "approved" and applied.hash
    assert applied.old_value is None and applied.new_value == "Okta"
    assert events[1].new_value == "-1 discount" and events[0].comment == "not said"


def test_filters_combine(memory: Memory) -> None:
    _note_id, _ok, no = _decided(memory)
    other = make_note(memory, "other", keywords=["x"])
    q = AuditQuery
    assert {e.note_id for e in audit.audit_events(memory.ledger, q(note_id=other.id))} == {other.id}
    assert [e.event for e in audit.audit_events(memory.ledger, q(actor="alice"))] == ["applied", "approved"]
    assert [e.event for e in audit.audit_events(memory.ledger, q(actor="person:bob"))] == ["rejected"]
    assert {e.proposal_id for e in audit.audit_events(memory.ledger, q(statuses=["rejected"]))} == {no}
    kinds = audit.audit_events(memory.ledger, q(kinds=["decision"]))
    assert [e.event for e in kinds] == ["rejected", "approved"]
    keyword_changes = audit.audit_events(memory.ledger, q(attribute="keywords", kinds=["change"]))
    assert [(e.event, e.new_value) for e in keyword_changes] == [("applied", ["x"]), ("applied", ["sso"])]
    assert audit.audit_events(memory.ledger, q(until=utcnow() - timedelta(days=1))) == []
    assert audit.count_audit_events(memory.ledger, q(since=utcnow() - timedelta(minutes=5))) == 11
    page = audit.audit_events(memory.ledger, q(), limit=3, offset=3)
    assert [(e.event, e.attribute) for e in page] == [
        ("rejected", "next_step"),
        ("proposed", "next_step"),
        ("applied", "decision_rationale"),
    ]


def test_exports_are_exact_and_spreadsheet_safe(memory: Memory) -> None:
    _decided(memory)
    q = AuditQuery(attribute="next_step")
    lines = [json.loads(line) for line in audit.export_jsonl(memory.ledger, q).decode().splitlines()]
    assert [(x["event"], x["new_value"]) for x in lines] == [
        ("rejected", "-1 discount"),
        ("proposed", "-1 discount"),
    ]
    raw = audit.export_csv(memory.ledger, q)
    assert raw.startswith("\ufeff".encode())
    rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    assert [r["new_value"] for r in rows] == ["'-1 discount", "'-1 discount"]
    assert rows[0]["actor"] == "person:bob" and rows[0]["comment"] == "not said"


def test_text_that_reads_as_json_stays_text_in_the_trail_and_its_exports(memory: Memory) -> None:
    note = make_note(memory, "Acme call", context="null", category="50", keywords=["true", "[1]"])
    for kinds in (["change"], ["change", "proposal", "decision"]):
        q = AuditQuery(note_id=note.id, kinds=kinds)
        trail = {e.attribute: e.new_value for e in audit.audit_events(memory.ledger, q)}
        assert (trail["context"], trail["category"], trail["keywords"]) == ("null", "50", ["true", "[1]"])
        lines = [json.loads(x) for x in audit.export_jsonl(memory.ledger, q).decode().splitlines()]
        exported = {x["attribute"]: x["new_value"] for x in lines}
        assert (exported["context"], exported["category"]) == ("null", "50")
    rows = csv.DictReader(io.StringIO(audit.export_csv(memory.ledger, q).decode("utf-8-sig")))
    assert {r["attribute"]: r["new_value"] for r in rows}["context"] == "null"


def test_incoming_links_come_from_the_database_with_their_reasons(memory: Memory) -> None:
    target = make_note(memory, "target")
    make_note(memory, "source", links=[{"note_id": target.id, "reason": "same deal"}])
    make_note(memory, "unrelated", links=[])
    other_scope = make_note(memory, "elsewhere", scope="globex")
    found = audit.incoming_links(memory.ledger, target)
    assert [(x.content, x.reason) for x in found] == [("source", "same deal")]
    assert audit.incoming_links(memory.ledger, other_scope) == []


def test_statistics_per_day(memory: Memory) -> None:
    _decided(memory)
    counts = {(c.status, c.proposals) for c in audit.proposals_per_day(memory.ledger)}
    assert counts == {("auto_applied", 1), ("approved", 1), ("rejected", 1)}
    times = audit.review_times(memory.ledger)
    assert times.decisions == 2 and len(times.days) == 1 and times.days[0].day == utcnow().date()
    assert 0 <= times.median_hours < 0.1
    assert audit.review_times(memory.ledger, now=utcnow() + timedelta(days=60)).decisions == 0


def test_an_erasure_s_deletions_are_not_reviews(memory: Memory) -> None:
    """Each erased note is marked deleted by the eraser as the erasure runs: those decisions waited
    in no queue, and would pull the review times towards zero."""
    _decided(memory)
    gone = memory.add_note("Mrs Quibblestone called", actor="agent:x", scope="acme")
    memory.erase(by=signed_in(memory, "alice"), reason="request", raw_log_id=memory.read(gone).raw_log_ids[0])
    assert memory.read(gone).deleted
    assert audit.review_times(memory.ledger).decisions == 2
    # nor approvals: the day's chart shows them as the erasure they are
    counts = {(c.status, c.proposals) for c in audit.proposals_per_day(memory.ledger)}
    assert ("erasure", 1) in counts and ("approved", 1) in counts


def test_review_items_bring_the_current_value_and_raw_logs(memory: Memory) -> None:
    note = make_note(memory, "Acme call")
    p = memory.propose(
        note.id,
        "decision_rationale",
        "Okta",
        reason="r",
        proposer=llm_proposer(memory),
        raw_log_ids=note.raw_log_ids,
    )
    [item] = audit.review_items(memory.ledger, memory.policy, [p])
    assert item.current_value is None and not item.stale
    assert [r.text for r in item.raw_logs] == ["Acme call"] and item.note is not None


def test_find_notes_matches_words_and_escapes_wildcards(memory: Memory) -> None:
    make_note(memory, "Acme wants 100% uptime")
    make_note(memory, "Acme wants SSO")
    found = audit.find_notes(memory.ledger, scope="acme", text="100%")
    assert [n.content for n in found.notes] == ["Acme wants 100% uptime"] and found.total == 1
    assert audit.find_notes(memory.ledger, scope="acme", text="sso").total == 1
    assert audit.find_notes(memory.ledger, scope="acme", text="_").total == 0
    assert audit.find_notes(memory.ledger, scope="acme", limit=1).total == 2


def test_policy_overview_reads_the_policy() -> None:
    overview = audit.policy_overview(load_policy(REPO / "policies.yaml"))
    rows = {a.attribute: a for a in overview.attributes}
    assert rows["content"].mode == "frozen" and rows["keywords"].mode == "auto"
    assert [(r.when, r.mode) for r in rows["context"].rules] == [("note tagged contract", "review")]
    # a change of tags that would strip that protection waits for a person
    assert [(r.when, r.mode) for r in rows["tags"].rules] == [("the change drops contract", "review")]
    assert rows["deleted"].approver_roles == ["cs_lead"]
    assert {r.role: r.reviewers for r in overview.roles}["auditor"] == ["audrey"]


def test_verdicts_count_what_reviewers_did_with_each_attribute_and_model(memory: Memory) -> None:
    """The queue's precision as reviewers see it: approved as proposed, corrected, rejected, per
    attribute and per model; conflicts are not judged, and what waits is counted apart."""
    newer = llm_proposer(memory, name="gpt", model="openai/gpt-4o-mini", prompt_version="construct/4")
    _decided(memory)  # decision_rationale approved, next_step rejected (both LLM offline test/1)
    note = make_note(memory, "Globex renews in March")
    alice, bob = signed_in(memory, "alice"), signed_in(memory, "bob")
    wrong = memory.propose(note.id, "valid_at", "2026-03-01", reason="r", proposer=newer)
    memory.correct(wrong.id, "2027-03-01", reviewer=alice)  # a correction: waits for bob
    stale = memory.propose(note.id, "decision_rationale", "budget", reason="r", proposer=newer)
    memory.propose(note.id, "customer_priorities", ["uptime"], reason="r", proposer=newer)
    other = memory.propose(
        note.id, "decision_rationale", "budget cut", reason="r", proposer=llm_proposer(memory)
    )
    assert memory.proposal(stale.id).status.value == "superseded"  # not a verdict either
    memory.approve(other.id, reviewer=bob)

    v = audit.verdicts(memory.ledger)
    rows = {r.name: (r.waiting, r.approved, r.corrected, r.rejected, r.conflict) for r in v.by_attribute}
    assert rows == {
        "decision_rationale": (0, 2, 0, 0, 0),
        "next_step": (0, 0, 0, 1, 0),
        "valid_at": (1, 0, 1, 0, 0),  # the correction waits; the model's value was corrected
        "customer_priorities": (1, 0, 0, 0, 0),
    }
    sources = {r.name: (r.waiting, r.approved, r.corrected, r.rejected) for r in v.by_source}
    assert sources == {
        "llm:offline · test/1": (0, 2, 0, 1),
        "llm:gpt (openai/gpt-4o-mini) · construct/4": (1, 0, 1, 0),
        "people's edits": (1, 0, 0, 0),
    }
    share = {r.name: r.approved_share for r in v.by_source}
    assert share["llm:offline · test/1"] == 2 / 3 and share["people's edits"] is None
    assert audit.verdicts(memory.ledger, now=utcnow() + timedelta(days=60)).by_attribute[0].decided == 0
    # an approval the policy refused (the attribute frozen meanwhile) is no one's verdict on the value
    held = memory.policy.attributes["customer_priorities"]
    attributes = {
        **memory.policy.attributes,
        "customer_priorities": held.model_copy(update={"mode": Mode.FROZEN}),
    }
    frozen = admin_can_sign_in(memory.policy).model_copy(update={"attributes": attributes})
    memory.install_policy(
        frozen, by=Authentication(frozen, fingerprint(frozen)).signed_in("alice", method="test")
    )
    with Memory(memory.home, database_url=memory.settings.database_url, policy=frozen) as later:
        waiting = later.pending(attribute="customer_priorities")[0].id
        report = later.approve_item(waiting, reviewer=signed_in(later, "alice"), shown=[waiting])
        assert report.summary() == "1 refused by the policy (frozen since), not approved"
        again = {
            r.name: (r.waiting, r.approved, r.rejected) for r in audit.verdicts(later.ledger).by_attribute
        }
    assert again.get("customer_priorities", (0, 0, 0)) == (0, 0, 0)
    # a conflict (approved after the note changed) was judged by no one: it counts apart
    assert audit.VerdictRow(name="x", approved=1, rejected=1, conflict=5).approved_share == 0.5


def test_the_changes_of_one_write_read_in_chain_order_in_the_trail_and_its_exports(memory: Memory) -> None:
    """A note's analysis applies several attributes in one write, at one time. The trail broke that
    tie by proposal id (random), so the page and the exports showed them out of chain order."""
    for text in ("Acme wants SSO before renewal in March", "Globex renews in April", "Initech: security"):
        memory.add_note(text, actor="agent:sales-agent", scope="acme")
    chain = [c.seq for c in memory.changes(limit=1000)]
    assert len(chain) > 3 * 2 and chain == sorted(chain)  # several changes per write
    oldest_first = audit.audit_events(memory.ledger, AuditQuery(), limit=1000, newest_first=False)
    assert [e.change_seq for e in oldest_first if e.change_seq is not None] == chain
    newest_first = audit.audit_events(memory.ledger, AuditQuery(), limit=1000)
    assert [e.change_seq for e in newest_first if e.change_seq is not None] == chain[::-1]
    lines = [json.loads(x) for x in audit.export_jsonl(memory.ledger, AuditQuery()).decode().splitlines()]
    assert [x["change_seq"] for x in lines if x["change_seq"] is not None] == chain[::-1]
    rows = csv.DictReader(io.StringIO(audit.export_csv(memory.ledger, AuditQuery()).decode("utf-8-sig")))
    assert [int(r["change_seq"]) for r in rows if r["change_seq"]] == chain[::-1]


def test_a_correction_its_reviewer_approves_themselves_is_no_review(memory: Memory) -> None:
    """Where the policy allows self-approval, a correction is approved in the transaction that makes
    it. It counted as a reviewer's approval of a person's edit and as a review that waited no time."""
    first = make_note(memory, "Acme call")
    wrong = memory.propose(
        first.id, "next_step", "send a discount", reason="r", proposer=llm_proposer(memory)
    )
    memory.correct(wrong.id, "send the SSO quote", reviewer=signed_in(memory, "alice"))
    memory.approve(memory.pending()[0].id, reviewer=signed_in(memory, "bob"))  # a second look: a review
    looser = admin_can_sign_in(memory.policy).model_copy(update={"self_approval": True})
    memory.install_policy(
        looser, by=Authentication(looser, fingerprint(looser)).signed_in("alice", method="test")
    )
    with Memory(memory.home, database_url=memory.settings.database_url, policy=looser) as later:
        second = make_note(later, "Globex call")
        wrong = later.propose(second.id, "next_step", "call in May", reason="r", proposer=llm_proposer(later))
        fix = later.correct(wrong.id, "call in June", reviewer=signed_in(later, "alice")).correction
        assert fix.status.value == "approved" and fix.reviewer == "alice"

        v = audit.verdicts(later.ledger)
        times = audit.review_times(later.ledger)
    [step] = [r for r in v.by_attribute if r.name == "next_step"]
    assert (step.approved, step.corrected, step.rejected) == (1, 2, 0)  # bob's approval, 2 corrections
    assert step.approved_share == 1 / 3
    assert {r.name: r.approved for r in v.by_source}["people's edits"] == 1
    # alice's two rejections and bob's approval; not the approval alice gave herself
    assert times.decisions == 3 and times.days[0].decisions == 3


def test_review_times_count_every_decision_of_the_window(memory: Memory) -> None:
    """The waits were read into Python, at most 50,000 of them: beyond that the page showed 50,000
    decisions, and a median and 90th percentile of an arbitrary part of them."""
    note = make_note(memory, "Acme call")
    decided = memory.propose(note.id, "next_step", "call", reason="r", proposer=llm_proposer(memory))
    memory.approve(decided.id, reviewer=signed_in(memory, "alice"))  # waited under a second
    # Copies of that decision (one INSERT ... SELECT, for speed), decided an hour ago after waiting
    # 1 h (the 25,005 shortest), 2 h (up to the 45,009th) or 10 h. Of all 50,011 waits sorted, the
    # median is the 25,006th (index 25,005) and the 90th percentile, by nearest rank, the
    # ceil(0.9 * 50,011) = 45,010th (index 45,009): each the last of its kind.
    n, median_at, p90_at = 50_011, 25_005, 45_009
    at = utcnow() - timedelta(hours=1)
    copies = sa.select(sa.literal(1).label("v")).cte("copies", recursive=True)
    copies = copies.union_all(sa.select(copies.c.v + 1).where(copies.c.v < n - 1))
    made = sa.case(
        (copies.c.v <= median_at, sa.literal(at - timedelta(hours=1), UTCDateTime)),
        (copies.c.v <= p90_at, sa.literal(at - timedelta(hours=2), UTCDateTime)),
        else_=sa.literal(at - timedelta(hours=10), UTCDateTime),
    )
    top = sa.select(sa.func.max(proposals.c.seq)).scalar_subquery()
    given = {
        "id": sa.literal("p_copy") + sa.cast(copies.c.v, sa.String),
        "seq": top + copies.c.v,
        "reviewed_at": sa.literal(at, UTCDateTime),
        "created_at": made,
    }
    names = [c.name for c in proposals.c]
    rows = sa.select(*(given.get(name, proposals.c[name]) for name in names)).where(
        proposals.c.id == decided.id
    )
    with memory.ledger.engine.begin() as conn:
        conn.execute(
            proposals.insert().from_select(
                names, rows.add_cte(copies).join_from(proposals, copies, sa.true())
            )
        )

    times = audit.review_times(memory.ledger)
    assert times.decisions == n and sum(d.decisions for d in times.days) == n
    assert (times.median_hours, times.p90_hours) == (1.0, 2.0)
