"""Policy page: what the installed policy keeps that amem refuses in a new one (a team attribute
named like a note's own field, installed before amem refused it) is said on the page, with what to
do about it: only the logs said it, and the console's reader never saw it."""

from __future__ import annotations

from pathlib import Path

import yaml

from amem.domain.models import utcnow
from amem.memory import Memory
from amem.policy import load_policy
from amem.services import policy_registry
from tests.approval_ui.conftest import open_console, plain


def _install_as_an_older_amem_did(policy_file: Path) -> None:
    """The console's policy file, given a team attribute ``reason``, installed without the check an
    older amem did not make (the version recorded as it was)."""
    data = yaml.safe_load(policy_file.read_text("utf-8"))
    data["attributes"]["reason"] = {"type": "text", "mode": "review", "description": "Why they called."}
    with Memory() as mem:  # the store, its policy installed as version 1
        policy_file.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
        with mem.ledger.write() as tx:
            previous = tx.installed_policy()
            policy_registry.record_install(
                tx, load_policy(policy_file), installed_by="alice", now=utcnow(), previous=previous
            )


def test_a_name_reserved_since_the_policy_was_installed_is_said_on_the_policy_page(
    console_env: dict[str, str],
) -> None:
    _install_as_an_older_amem_did(Path(console_env["AMEM_POLICY"]))
    at = open_console("alice", "policy")
    said = plain(" ".join(w.value for w in at.main.warning))
    assert "attributes.reason: attribute name 'reason' is reserved" in said
    assert "kept, as the installed policy held it" in said and "declare the new name" in said
    assert "decide nothing" not in said  # the file is the installed policy: no mismatch


def test_a_policy_amem_accepts_shows_no_warning(console_env: dict[str, str]) -> None:
    with Memory():
        pass
    at = open_console("alice", "policy")
    assert not at.main.warning
