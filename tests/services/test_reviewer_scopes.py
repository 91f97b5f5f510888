"""Reviewers limited to the accounts they own (reviewers.yaml ``scopes``): governance refuses their
decisions, reverts and erasures elsewhere, and the queue they are shown holds their accounts only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from amem.domain.models import Actor, ActorKind
from amem.errors import PermissionDeniedError, ReviewSetChangedError
from amem.memory import Memory
from amem.policy import canonical_text, load_policy
from amem.services.review import ReviewFilter
from tests.factories import llm_proposer, make_note, policy_with_scopes, signed_in

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def owned(database_url: str, tmp_path: Path) -> Iterator[Memory]:
    """The repository's policy, alice (cs_lead) owning acme only, and carol, a cs_lead of every account."""
    policy = policy_with_scopes(tmp_path / "policy", alice=["acme"])
    mem = Memory(tmp_path / "home", database_url=database_url, policy=policy)
    try:
        yield mem
    finally:
        mem.close()


def _held(mem: Memory, scope: str, content: str) -> str:
    note = make_note(mem, content, scope=scope)
    return mem.propose(
        note.id, "decision_rationale", "they said so", reason="r", proposer=llm_proposer(mem)
    ).id


def test_a_reviewer_decides_in_their_accounts_only(owned: Memory) -> None:
    alice = signed_in(owned, "alice")
    ours, theirs = _held(owned, "acme", "Acme renews"), _held(owned, "globex", "Globex renews")
    with pytest.raises(PermissionDeniedError, match="alice decides in acme only, not in globex"):
        owned.approve(theirs, reviewer=alice)
    with pytest.raises(PermissionDeniedError, match="not in globex"):
        owned.reject(theirs, reviewer=alice, comment="no")
    assert owned.approve(ours, reviewer=alice).status.value == "approved"
    assert owned.approve(theirs, reviewer=signed_in(owned, "carol")).status.value == "approved"


def test_the_queue_of_a_reviewer_holds_their_accounts_and_approve_all_stays_in_them(owned: Memory) -> None:
    _held(owned, "acme", "Acme renews")
    theirs = _held(owned, "globex", "Globex renews")
    alice = signed_in(owned, "alice")
    everything = owned.count_review_items()
    mine = owned.count_review_items(reviewer="alice")
    assert (everything.items, mine.items) == (2, 1)
    assert [i.scope for i in owned.review_items(reviewer="alice").items] == ["acme"]
    assert owned.count_review_items(reviewer="carol").items == 2  # no limit: every account

    with pytest.raises(ReviewSetChangedError):  # counted as everyone's queue, not hers: nothing decided
        owned.approve_matching(
            ReviewFilter(), reviewer=alice, expected_items=2, fingerprint=everything.fingerprint
        )
    report = owned.approve_matching(
        ReviewFilter(), reviewer=alice, expected_items=mine.items, fingerprint=mine.fingerprint
    )
    assert len(report.decided) == 1 and not report.skipped
    assert owned.proposal(theirs).status.value == "pending"


def test_an_item_of_another_account_is_skipped_and_said(owned: Memory) -> None:
    theirs = _held(owned, "globex", "Globex renews")
    shown = owned.review_item(theirs).proposal_ids
    report = owned.approve_item(theirs, reviewer=signed_in(owned, "alice"), shown=shown)
    assert not report.decided and "not in globex" in report.skipped[0].reason


def test_reverts_and_erasures_stay_in_the_reviewers_accounts(owned: Memory) -> None:
    alice = signed_in(owned, "alice")
    note = make_note(owned, "Globex pays $55 per seat", scope="globex", tags=["pricing"])
    (change,) = [c for c in owned.note_versions(note.id) if c.attribute == "tags"]
    with pytest.raises(PermissionDeniedError, match="not in globex"):
        owned.revert(change.seq, reviewer=alice)
    raw = note.raw_log_ids[0]
    for selector in ({"raw_log_id": raw}, {"scope": "globex"}, {"actor": "agent:sales-agent"}):
        with pytest.raises(PermissionDeniedError, match="reaches raw logs of globex"):
            owned.erase(by=alice, reason="data subject's request", **selector)
    assert owned.raw_logs([raw])[0].text == "Globex pays $55 per seat"  # nothing erased


def test_a_policy_without_scopes_keeps_its_text_and_one_with_them_records_them(owned: Memory) -> None:
    """Scopes are optional: every policy installed before keeps the text, and so the sha256, its
    ledger recorded; a limit is part of the policy's text, so installing one is a new version."""
    plain = load_policy(REPO / "policies.yaml")
    assert "scopes" not in canonical_text(plain)
    assert "scopes:\n    - acme" in canonical_text(owned.policy)


def test_a_name_the_policy_does_not_list_has_an_empty_queue_not_every_account(owned: Memory) -> None:
    """A reviewer removed from the policy (their name still on a token, a bookmark) is no one: their
    queue holds nothing, where it used to hold every account's; asking for no one's queue (None)
    still reads them all."""
    _held(owned, "acme", "Acme renews")
    _held(owned, "globex", "Globex renews")
    assert owned.count_review_items(reviewer="zoe").items == 0
    assert owned.review_items(reviewer="zoe").items == []
    assert owned.second_looks("zoe") == 0
    assert owned.count_review_items().items == 2


def test_a_reviewers_own_edits_stay_in_their_accounts(owned: Memory) -> None:
    """A person's edit may apply by itself (tags do): alice, limited to acme, neither edits, deletes
    nor proposes on a globex note, however the library is called; in acme she does, and carol,
    of every account, edits anywhere. A person the policy does not name has no limit to keep."""
    theirs = make_note(owned, "Globex pays $55 per seat", scope="globex", tags=["pricing"])
    ours = make_note(owned, "Acme pays $40 per seat", tags=["pricing"])
    before = (len(owned.changes()), len(owned.proposals(limit=1000)))
    for who in ("alice", "Alice", Actor(kind=ActorKind.PERSON, id="alice")):
        with pytest.raises(PermissionDeniedError, match="alice decides in acme only, not in globex"):
            owned.update(theirs.id, actor=who, tags=["hacked"])
        with pytest.raises(PermissionDeniedError, match="not in globex"):
            owned.delete(theirs.id, actor=who, reason="not mine to delete")
        with pytest.raises(PermissionDeniedError, match="not in globex"):
            owned.propose(theirs.id, "decision_rationale", "price", reason="r", proposer=who)
    assert (len(owned.changes()), len(owned.proposals(limit=1000))) == before
    assert owned.read(theirs.id).tags == ["pricing"] and not owned.read(theirs.id).deleted

    (mine,) = owned.update(ours.id, actor="alice", tags=["pricing", "seats"])
    assert mine.status.value == "auto_applied"
    (anywhere,) = owned.update(theirs.id, actor="carol", tags=["pricing", "seats"])
    assert anywhere.status.value == "auto_applied"
    (named_nowhere,) = owned.update(theirs.id, actor="dave", tags=["pricing"])
    assert named_nowhere.status.value == "auto_applied"
    by_agent = owned.propose(theirs.id, "tags", ["x"], reason="r", proposer="agent:sales-agent")
    assert by_agent.status.value == "auto_applied"  # agents: their tokens carry their own limits
