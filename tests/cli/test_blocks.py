"""`amem pending`'s blocks say what approving a value does when its proposed words alone mislead."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from amem.cli import main
from amem.memory import Memory
from tests.factories import contradict, said, signed_in


def test_pending_says_an_un_retirement_brings_the_fact_back(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """A proposal clearing a retirement read "current 5 March 2026, proposed (none)", as if a value
    were taken away; the console says it brings the fact back, and `amem pending` now says so too.
    An end date a person gives retires the fact and is not worded so."""
    old = said(memory, "Acme requires SSO via Okta", at=datetime(2026, 1, 10, tzinfo=UTC))
    new = said(memory, "Acme dropped the SSO requirement", at=datetime(2026, 3, 5, tzinfo=UTC))
    memory.approve(
        contradict(memory, old, new, "2026-03-05T00:00:00Z").id, reviewer=signed_in(memory, "alice")
    )
    (back,) = memory.update(old.id, actor="bob", reason="the requirement still stands", invalid_at=None)
    other = said(memory, "Globex runs on Okta", scope="globex")
    memory.update(other.id, actor="bob", reason="contract ended", invalid_at="2026-06-30T00:00:00Z")

    code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), "pending"])
    out = " ".join(capsys.readouterr().out.split())

    assert code == 0
    assert (
        f"invalid_at of note {old.id} current 5 March 2026 proposed (none) brings back the fact "
        "(retired from 5 March 2026): approving removes its end date, so it holds again" in out
    ), out
    assert out.count("brings back") == 1 and back.id in out
