"""The console against a real SQLite ledger, with a reviewers file of the tests' own.

The reviewers file holds bcrypt hashes of a password known only to these tests; the policy is a
copy of the repository's, pointing at that file (AMEM_POLICY). Pages run in Streamlit's AppTest,
signed in by putting the reviewer's identity into session_state (the sign-in form itself is
tested once, in test_sign_in.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from amem.domain.models import Note, ProposalStatus
from amem.memory import Memory
from amem.services.accounts import hash_password
from approval_ui.state import ACCOUNT_KEY

REPO = Path(__file__).resolve().parents[2]
APP = REPO / "approval_ui" / "app.py"
#: Hashed into the tests' reviewers file; never shipped anywhere.
PASSWORD = "tests-only-secret-1"
PAGES = {
    "queue": "views/review_queue.py",
    "explorer": "views/note_explorer.py",
    "audit": "views/audit_log.py",
    "policy": "views/policy.py",
    "facts": "views/account_facts.py",
    "tokens": "views/my_tokens.py",
}


@pytest.fixture(scope="session")
def password_hash() -> str:
    return hash_password(PASSWORD, rounds=4)  # the lowest work factor: fast tests, same code path


def write_console_policy(directory: Path, password_hash: str) -> Path:
    """A copy of the repository's policy whose reviewers file gives alice, bob and audrey a password."""
    directory.mkdir(parents=True, exist_ok=True)
    policy = directory / "policies.yaml"
    shutil.copy(REPO / "policies.yaml", policy)
    (directory / "reviewers.yaml").write_text(
        "reviewers:\n"
        f'  alice: {{name: Alice Martin, roles: [cs_lead], password_hash: "{password_hash}"}}\n'
        f'  bob: {{name: Bob Chen, roles: [sales_lead], password_hash: "{password_hash}"}}\n'
        f'  audrey: {{name: Audrey Klein, roles: [auditor], password_hash: "{password_hash}"}}\n'
        "  carol: {name: Carol Diaz, roles: [sales_lead], scopes: [acme]}\n",
        encoding="utf-8",
    )
    return policy


@pytest.fixture
def console_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, password_hash: str) -> dict[str, str]:
    """AMEM_* settings of a fresh store, as `amem ui` would pass them to the app."""
    env = {
        "AMEM_POLICY": str(write_console_policy(tmp_path / "policy", password_hash)),
        "AMEM_HOME": str(tmp_path / "home"),
        "AMEM_DATABASE_URL": f"sqlite:///{tmp_path / 'ledger.sqlite3'}",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def mem(console_env: dict[str, str]) -> Iterator[Memory]:
    """The store the console reads, opened the same way (from the environment)."""
    memory = Memory()
    try:
        yield memory
    finally:
        memory.close()


def open_console(reviewer: str | None, page: str = "queue", **query_params: str) -> AppTest:
    """The app, signed in as ``reviewer``, showing ``page``."""
    at = AppTest.from_file(str(APP), default_timeout=60)
    if reviewer is not None:
        at.session_state[ACCOUNT_KEY] = reviewer
    at.run()
    if page != "queue":
        at.switch_page(PAGES[page])
    for key, value in query_params.items():
        at.query_params[key] = value
    if page != "queue" or query_params:
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def delete_notes(mem: Memory, notes: list[Note]) -> None:
    """Tombstones for ``notes``, proposed by bob and approved by alice where the policy holds them."""
    from tests.factories import signed_in

    for note in notes:
        p = mem.delete(note.id, actor="bob", reason="duplicate")
        if p.status == ProposalStatus.PENDING:
            mem.approve(p.id, reviewer=signed_in(mem, "alice"))


def texts(at: AppTest) -> str:
    """Everything the page says in markdown, captions, alerts and code, as one string."""
    parts: list[str] = []
    for kind in ("markdown", "caption", "success", "info", "warning", "error", "code", "title", "subheader"):
        parts.extend(str(e.value) for e in getattr(at, kind))
    return "\n".join(parts)


def plain(markdown: str) -> str:
    """Markdown as the reader sees it: backslash escapes and invisible word joiners removed."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")
