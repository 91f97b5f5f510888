"""Identities: one canonical form, at most one kind prefix."""

from __future__ import annotations

import pytest

from amem.domain.identity import canonical_identity, identity_key
from amem.errors import InvalidInputError


@pytest.mark.parametrize(
    "name",
    [
        "person:person:alice",
        "person:person:       alice",
        "person:agent:alice",
        "Person: LLM:alice",
        "person:system:alice",
        "agent:agent:sales-bot",
    ],
)
def test_a_name_with_a_second_kind_prefix_is_refused(name: str) -> None:
    """Before, one prefix was removed here and every prefix by ``identity_key``, so
    ``person:agent:alice`` was the reviewer ``agent:alice`` to one check and ``alice`` to another."""
    with pytest.raises(InvalidInputError, match="carries a second kind prefix"):
        canonical_identity(name, what="reviewer")


def test_one_kind_prefix_and_colons_that_name_no_kind_still_make_a_name() -> None:
    assert canonical_identity("Person: Alice") == identity_key("person:alice") == "alice"
    assert canonical_identity("llm:openai:gpt-4o") == "openai:gpt-4o"  # "openai" is no kind


def test_a_stored_name_with_a_second_prefix_stays_readable() -> None:
    """An installed policy version read back from the ledger keeps the name it was installed with."""
    assert canonical_identity("person:agent:alice", stored=True) == "agent:alice"
