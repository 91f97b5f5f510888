"""Policy page: modes, narrowing rules and approver roles, as the policy says."""

from __future__ import annotations

from amem.memory import Memory
from tests.approval_ui.conftest import open_console, plain, texts


def test_the_policy_reads_as_modes_rules_and_roles(mem: Memory) -> None:
    at = open_console("bob", "policy")
    attributes = next(d.value for d in at.dataframe if "attribute" in d.value.columns)
    rows = {r["attribute"]: r for r in attributes.to_dict("records")}
    assert rows["content"]["mode"] == "frozen" and rows["content"]["reviewed by"] == "nobody (frozen)"
    assert rows["keywords"]["mode"] == "auto"
    assert rows["context"]["mode"] == "auto"
    assert rows["context"]["rules"] == "1 (below)" and rows["keywords"]["rules"] == ""
    assert rows["decision_rationale"]["reviewed by"] == "sales_lead, cs_lead"
    assert rows["next_step"]["kind"] == "team" and "next concrete action" in rows["next_step"]["description"]
    roles = next(d.value for d in at.dataframe if "role" in d.value.columns)
    assert dict(zip(roles["role"], roles["approves"], strict=True))["cs_lead"] == "everything"
    reviewers = next(d.value for d in at.dataframe if "reviewer" in d.value.columns)
    assert dict(zip(reviewers["reviewer"], reviewers["password sign-in"], strict=True)) == {
        "alice": "yes",
        "bob": "yes",
        "audrey": "yes",
        "carol": "no",
    }
    assert not any("$2b$" in str(v) for v in reviewers.to_numpy().ravel())  # hashes stay private
    page = plain(texts(at))
    assert "- **context**: when note tagged contract → review" in page  # whole, not cut in a cell
    assert "You (bob, roles: sales_lead) may decide: context, decision_rationale, valid_at" in page
    assert "deleted" not in page.split("may decide:")[1].split(".")[0]


def test_an_auditor_is_told_they_decide_nothing(mem: Memory) -> None:
    at = open_console("audrey", "policy")
    assert "may decide: nothing (read-only)" in plain(texts(at))
