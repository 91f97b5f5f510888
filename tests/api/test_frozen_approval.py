"""An approval the policy refuses (the attribute frozen since the value was held) answers 409 with
what was recorded, as a refusal does, never 200 as if approved; the items say so beforehand. The
rejection is the policy's at the reviewer's request, her comment kept. Both backends."""

from __future__ import annotations

from fastapi.testclient import TestClient

from amem.api.app import create_app
from amem.domain.models import ProposalStatus
from amem.memory import Memory
from amem.policy import AttributePolicy, fingerprint
from amem.services.authentication import Authentication
from tests.factories import admin_can_sign_in, held_by_model, said, signed_in


def test_approving_a_value_frozen_since_answers_409_and_the_items_mark_it(memory: Memory) -> None:
    note = said(memory, "Acme call: next step is to send the quote")
    other = said(memory, "Acme call: next step is to book the demo")
    held = [
        held_by_model(memory, n, "next_step", v)
        for n, v in ((note, "send the quote"), (other, "book the demo"))
    ]
    attributes = {**memory.policy.attributes, "next_step": AttributePolicy(type="text", mode="frozen")}
    frozen = admin_can_sign_in(memory.policy).model_copy(update={"attributes": attributes})
    memory.install_policy(
        frozen, by=Authentication(frozen, fingerprint(frozen)).signed_in("alice", method="test")
    )

    with Memory(memory.home, database_url=memory.settings.database_url, policy=frozen) as later:
        token, _ = later.tokens.create("alice", "reviewer", by=signed_in(later, "alice"))
        alice = {"Authorization": f"Bearer {token}"}
        with TestClient(create_app(later, decisions=True)) as api:
            items = api.get("/v1/review/items", headers=alice).json()["items"]
            marks = [f["policy_frozen"] for i in items for f in i["fields"]]
            assert len(marks) == 2 and all(m["version"] == 2 and m["since"] for m in marks)

            one = api.post(
                f"/v1/review/proposals/{held[0].id}/approve", json={"comment": "ok"}, headers=alice
            )
            assert one.status_code == 409, one.text
            assert "refused by the policy: next_step is frozen by policy v2" in one.json()["detail"]
            decided = one.json()["proposal"]
            assert (decided["status"], decided["reviewer"]) == ("rejected", "alice")  # who asked

            key = other.raw_log_ids[0]
            whole = api.post(
                f"/v1/review/items/{key}/approve", json={"proposals": [held[1].id]}, headers=alice
            )
            assert whole.status_code == 409, whole.text
            assert whole.json()["detail"].startswith(
                "refused by the policy, not approved: 1 refused by the policy"
            )
            assert [p["id"] for p in whole.json()["report"]["decided"]] == [held[1].id]

    for p in held:
        decided = memory.proposal(p.id)
        assert decided.status == ProposalStatus.REJECTED and decided.reviewer == "alice"
    assert (memory.proposal(held[0].id).review_comment or "").endswith(
        "approval asked by person:alice, who wrote: ok"
    )
    assert memory.read(note.id).extra.get("next_step") is None and memory.verify().ok
