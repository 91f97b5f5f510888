"""The repository's policy, as the write pipeline passes it to the analyst."""

from __future__ import annotations

import pytest

from amem.policy import Policy, load_policy
from tests.conftest import REPO


@pytest.fixture(scope="session")
def policy() -> Policy:
    return load_policy(REPO / "policies.yaml")
