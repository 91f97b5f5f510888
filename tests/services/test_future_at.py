"""An input's `at` is when it was said: one later than the server's clock (beyond AT_CLOCK_SKEW) is
a typo or a wrong clock, and is refused at every entry point, naming it and now. Before, an input
dated 2209 was kept, sorted first as the newest said, and the price said after it never retired it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from amem.domain.models import utcnow
from amem.errors import InvalidBatchInputError, InvalidInputError
from amem.memory import Memory
from amem.services.pipeline import AT_CLOCK_SKEW


@pytest.mark.parametrize("wait", [True, False])
def test_an_input_dated_in_the_future_is_refused_and_nothing_kept(memory: Memory, wait: bool) -> None:
    with pytest.raises(InvalidInputError) as refused:
        memory.add_note(
            "Omega price is 10 EUR per seat.",
            at="2209-01-01T00:00:00Z",
            actor="agent:x",
            scope="omega",
            wait=wait,
        )
    said = str(refused.value)
    assert said.startswith("at: '2209-01-01T00:00:00Z' is in the future: this server's clock says it is now ")
    assert str(utcnow().year) in said
    assert memory.count_raw_logs() == 0


def test_a_batch_names_every_future_input_with_its_other_wrong_ones_and_keeps_none(memory: Memory) -> None:
    inputs = [
        {"content": "Omega price is now 12 EUR per seat.", "scope": "omega", "at": "2026-03-05T00:00:00Z"},
        {"content": "Omega signs in 3026.", "scope": "omega", "at": "3026-01-01T00:00:00Z"},
        {"content": "", "scope": "omega"},
        {"content": "Omega renews.", "scope": "omega", "at": utcnow() + timedelta(days=2)},
    ]
    assert [n for n, _ in memory.check_inputs(inputs, actor="agent:x")] == [2, 3, 4]
    with pytest.raises(InvalidBatchInputError) as refused:
        memory.add_notes(inputs, actor="agent:x", wait=False)
    said = str(refused.value)
    assert said.startswith("3 inputs are wrong: input 2: at: '3026-01-01T00:00:00Z' is in the future")
    assert "input 3: content is empty" in said and "input 4: at: " in said
    assert memory.count_raw_logs() == 0


def test_a_clock_a_little_ahead_is_taken_as_skew(memory: Memory) -> None:
    """A sender's clock some minutes ahead of the server's is no mistake of theirs: kept as given."""
    ahead = utcnow() + AT_CLOCK_SKEW - timedelta(minutes=5)
    raw_log_id = memory.add_note(
        "Omega asked for a demo.", at=ahead, actor="agent:x", scope="omega", wait=False
    )
    (raw,) = memory.raw_logs([raw_log_id])
    assert raw.occurred_at == ahead


def test_a_local_time_without_its_offset_is_kept_as_far_ahead_as_a_zone_can_be(memory: Memory) -> None:
    """A time without an offset is read as UTC, but a CRM export in Tokyo's time writes 9 hours
    ahead of UTC: kept (R2: the first version refused every recent line of such an export). Beyond
    the furthest zone (UTC+14) and the skew it is refused, told to give its offset; the same moment
    given with its offset is judged as given."""
    tokyo_now = (utcnow() + timedelta(hours=9)).replace(tzinfo=None, microsecond=0)
    raw_log_id = memory.add_note(
        "Umbrella has 7 seats.", at=tokyo_now.isoformat(), actor="agent:x", scope="umbrella", wait=False
    )
    (raw,) = memory.raw_logs([raw_log_id])
    assert raw.occurred_at.replace(tzinfo=None) == tokyo_now  # read as UTC, as before

    with pytest.raises(InvalidInputError) as refused:
        memory.add_note(
            "Umbrella renews.", at=tokyo_now.isoformat() + "Z", actor="agent:x", scope="umbrella", wait=False
        )
    assert "is in the future" in str(refused.value)

    too_far = (utcnow() + timedelta(hours=20)).replace(tzinfo=None).isoformat(timespec="seconds")
    with pytest.raises(InvalidInputError) as refused:
        memory.add_note("Umbrella renews.", at=too_far, actor="agent:x", scope="umbrella", wait=False)
    assert str(refused.value).startswith(f"at: {too_far!r} gives no offset from UTC, so it is read as UTC")
    assert "with its offset (e.g. 2026-03-01T09:30:00+09:00)" in str(refused.value)
    assert memory.count_raw_logs() == 1
