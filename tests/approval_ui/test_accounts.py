"""Reviewer accounts: bcrypt hashes, the authenticator's credentials, proxy identities."""

from __future__ import annotations

from pathlib import Path

import pytest

from amem.errors import InvalidInputError
from amem.policy import Policy, load_policy
from amem.services.accounts import (
    account_for,
    accounts,
    authenticator_credentials,
    check_password,
    hash_password,
    identity_from_headers,
)
from tests.approval_ui.conftest import PASSWORD, write_console_policy


@pytest.fixture
def policy(tmp_path: Path, password_hash: str) -> Policy:
    return load_policy(write_console_policy(tmp_path / "p", password_hash))


def test_a_hash_checks_its_password_only() -> None:
    digest = hash_password("correct horse", rounds=4)
    assert digest.startswith("$2b$04$") and "correct horse" not in digest
    assert check_password("correct horse", digest)
    assert not check_password("correct hors", digest)
    assert not check_password("correct horse", None)
    assert not check_password("correct horse", "not-a-hash")


def test_passwords_too_short_or_too_long_for_bcrypt_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="at least 8"):
        hash_password("short", rounds=4)
    with pytest.raises(InvalidInputError, match="72 bytes"):
        hash_password("é" * 40, rounds=4)


def test_credentials_hold_hashes_of_reviewers_that_have_one(policy: Policy) -> None:
    users = authenticator_credentials(policy)["usernames"]
    assert set(users) == {"alice", "bob", "audrey"}  # carol has no password_hash
    assert users["bob"]["roles"] == ["sales_lead"] and users["bob"]["name"] == "Bob Chen"
    assert all(check_password(PASSWORD, u["password"]) for u in users.values())


def test_roles_make_an_account_read_only_or_not(policy: Policy) -> None:
    known = accounts(policy)
    assert not known["alice"].read_only and not known["bob"].read_only
    assert known["audrey"].read_only
    assert "password_hash" not in repr(known["alice"])
    assert account_for(policy, "ALICE") == known["alice"]
    assert account_for(policy, "eve") is None and account_for(policy, " ") is None


def test_a_proxy_header_names_a_reviewer(policy: Policy) -> None:
    assert identity_from_headers(policy, {"x-forwarded-user": "bob"}, "X-Forwarded-User").id == "bob"
    assert identity_from_headers(policy, {"X-Forwarded-User": "eve"}, "X-Forwarded-User") is None
    assert identity_from_headers(policy, {"X-Other": "bob"}, "X-Forwarded-User") is None
