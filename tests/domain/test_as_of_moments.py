"""The moment an "as of" a person types stands for (values.parse_as_of): the end of the period
it names, as every interface reads it."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from amem.domain.values import parse_as_of, parse_datetime
from amem.errors import InvalidInputError


@pytest.mark.parametrize(
    ("typed", "end"),
    [
        ("2026-12-07", datetime(2026, 12, 7, 23, 59, 59, 999_999, tzinfo=UTC)),
        (" 20261207 ", datetime(2026, 12, 7, 23, 59, 59, 999_999, tzinfo=UTC)),
        ("2026-12-07T04", datetime(2026, 12, 7, 4, 59, 59, 999_999, tzinfo=UTC)),
        ("2026-12-07T04:41", datetime(2026, 12, 7, 4, 41, 59, 999_999, tzinfo=UTC)),
        ("2026-12-07 04:41:09", datetime(2026, 12, 7, 4, 41, 9, 999_999, tzinfo=UTC)),
        ("2026-12-07T04:41:09Z", datetime(2026, 12, 7, 4, 41, 9, 999_999, tzinfo=UTC)),
        ("20261207T044109Z", datetime(2026, 12, 7, 4, 41, 9, 999_999, tzinfo=UTC)),
        ("2026-12-07T04:41:09.5", datetime(2026, 12, 7, 4, 41, 9, 599_999, tzinfo=UTC)),
        ("2026-12-07T04:41:09.123456Z", datetime(2026, 12, 7, 4, 41, 9, 123_456, tzinfo=UTC)),
        ("2026-12-07T04:41-05:00", datetime(2026, 12, 7, 9, 41, 59, 999_999, tzinfo=UTC)),
        ("2026-12-07T23:59:59+01:00", datetime(2026, 12, 7, 22, 59, 59, 999_999, tzinfo=UTC)),
        # a space before the offset, as `git log --date=iso` writes it: the offset's digits were
        # read as the clock (the end of the minute or the hour instead of the second)
        ("2026-12-07 04:41:09 +00:00", datetime(2026, 12, 7, 4, 41, 9, 999_999, tzinfo=UTC)),
        ("2026-12-07T04:41:09 +02", datetime(2026, 12, 7, 2, 41, 9, 999_999, tzinfo=UTC)),
        ("2026-12-07T04:41 Z", datetime(2026, 12, 7, 4, 41, 59, 999_999, tzinfo=UTC)),
    ],
)
def test_a_typed_moment_stands_for_the_end_of_the_period_it_names(typed: str, end: datetime) -> None:
    """Read as the start of the period, "as of 04:41:09" (a second `amem history` prints) missed a
    change made at 04:41:09.3, and "as of 2026-12-07" missed everything said that day."""
    assert parse_as_of(typed) == end


def test_a_day_picked_is_its_end_and_a_moment_a_program_holds_is_itself() -> None:
    """A date from a date picker is the end of that day in UTC (as the account-facts page reads
    it); a datetime object is already exact, and is kept to the microsecond."""
    assert parse_as_of(date(2026, 12, 7)) == datetime(2026, 12, 7, 23, 59, 59, 999_999, tzinfo=UTC)
    exact = datetime(2026, 12, 7, 4, 41, 9, tzinfo=UTC)
    assert parse_as_of(exact) == exact


def test_other_times_stay_the_exact_moment_typed() -> None:
    """An input's `at`, --since and --until are read as typed: only an as-of names a period."""
    assert parse_datetime("2026-12-07") == datetime(2026, 12, 7, tzinfo=UTC)
    assert parse_datetime("2026-12-07T04:41:09Z") == datetime(2026, 12, 7, 4, 41, 9, tzinfo=UTC)


@pytest.mark.parametrize("typed", ["last tuesday", "0.99999", "2026-12-07T", "", 5])
def test_a_moment_that_is_not_iso_8601_is_refused_by_name(typed: object) -> None:
    with pytest.raises(InvalidInputError, match=r"^--as-of: .* is not an ISO 8601 date-time"):
        parse_as_of(typed, what="--as-of")


def test_an_end_outside_the_calendar_in_utc_is_refused_naming_what_was_typed() -> None:
    with pytest.raises(InvalidInputError, match="as_of: 9999-12-31T23:59-01:00 is out of range"):
        parse_as_of("9999-12-31T23:59-01:00")
