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


def test_a_reviewer_limited_to_no_account_is_told_they_decide_in_none(
    console_env: dict[str, str], password_hash: str
) -> None:
    """`scopes: []` leaves a lead no account: the Policy page and the queue say so in words, as the
    sidebar does, instead of an empty list of accounts."""
    from pathlib import Path

    reviewers = Path(console_env["AMEM_POLICY"]).parent / "reviewers.yaml"
    with reviewers.open("a", encoding="utf-8") as out:
        out.write(f'  dave: {{name: Dave, roles: [cs_lead], scopes: [], password_hash: "{password_hash}"}}\n')
    with Memory():  # the store, its policy installed as the console's
        at = open_console("dave", "policy")
        said = plain(" ".join(i.value for i in at.info))
        assert "in no account (the policy gives you none" in said and "in the accounts" not in said
        queue = plain(texts(open_console("dave")))
        assert "Your accounts: none (the policy gives you no account" in queue
        assert "no account" in plain(" ".join(c.value for c in at.sidebar.caption))


def test_a_console_under_an_uninstalled_policy_file_says_its_reviewer_decides_nothing(mem: Memory) -> None:
    """The file was edited but not installed: governance refuses every decision of this process, so
    the page must not tell the reviewer what they may decide."""
    import os

    import yaml

    path = os.environ["AMEM_POLICY"]
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    data["self_approval"] = True
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(data, f)
    at = open_console("alice", "policy")
    page = plain(" ".join(w.value for w in at.main.warning) + " ".join(i.value for i in at.info))
    assert "You (alice, roles: cs_lead) decide nothing in this console now" in page
    assert "is not the one installed in the ledger" in page and "may decide:" not in page
