"""`amem pending --reviewer NAME` with nothing in NAME's accounts: an item waiting in another
account must be named, as `amem approve --all` names it, never read as an empty queue."""

from __future__ import annotations

import io
import os
from pathlib import Path
from unittest.mock import patch

import pytest
import yaml

from amem.cli import main
from amem.memory import Memory
from amem.policy import load_policy
from tests.factories import llm_proposer, said, signed_in


def test_pending_for_a_reviewer_names_the_items_waiting_in_accounts_they_do_not_decide_in(
    reviewer_passwords: dict[str, str], memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:  # the passwords first: the store opens under their policy
    n = said(memory, "globex call", scope="globex")
    memory.propose(
        n.id, "next_step", "call back", reason="r", proposer=llm_proposer(memory), raw_log_ids=n.raw_log_ids
    )
    reviewers = Path(os.environ["AMEM_POLICY"]).parent / "reviewers.yaml"
    data = yaml.safe_load(reviewers.read_text("utf-8"))
    data["reviewers"]["bob"]["scopes"] = ["acme"]
    reviewers.write_text(yaml.safe_dump(data), "utf-8")
    memory.install_policy(load_policy(os.environ["AMEM_POLICY"]), by=signed_in(memory, "alice"))
    home = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]

    def pending(*args: str) -> tuple[int, str]:
        with patch("sys.stdin", io.StringIO("")):
            code = main([*home, "pending", "--reviewer", "bob", *args])
        return code, " ".join(capsys.readouterr().out.split())

    code, out = pending()
    assert code == 0
    assert out.startswith("nothing pending in the accounts bob decides in (acme)")
    assert out.endswith("1 review item waits in others")
    code, out = pending("--attribute", "next_step")
    assert code == 0
    assert out.startswith(
        "nothing pending matches --attribute next_step in the accounts bob decides in (acme)"
    )
    assert out.endswith("1 review item matches in others")
    code, out = pending("--kind", "deletion")  # nothing matches anywhere: nothing said of others
    assert code == 0 and "others" not in out and out.startswith("nothing pending matches --kind deletion in ")
    code, out = pending("--scope", "globex")  # bob cannot decide there: still his queue, said so
    assert code == 0 and out.endswith("1 review item matches in others")
