"""A number attribute's canonical value is the number as both ledgers give it back when it is
stored alone in a JSON column (a proposal's, a change's value)."""

from __future__ import annotations

import math

import pytest

from amem.domain.values import normalize
from amem.errors import InvalidInputError


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (5.0, 5),
        (-0.0, 0),
        (1.2345678901234568e17, 123456789012345680),
        (9223372036854775807, 9223372036854775807),
        (-9223372036854775808, -9223372036854775808),
        (12.5, 12.5),
        (1e-07, 1e-07),
        (40, 40),
    ],
)
def test_a_number_is_kept_as_both_ledgers_give_it_back(given: float, stored: int | float) -> None:
    """SQLite keeps 5.0 alone in a JSON column as the integer 5; PostgreSQL's JSONB gives
    1.2345678901234568e17 back as 123456789012345680 and -0.0 as 0.0. Hashed as given, the
    proposal and its change failed `amem verify` on one ledger or the other."""
    value = normalize("seats", "number", given)
    assert value == stored and type(value) is type(stored)
    assert math.copysign(1.0, value) == math.copysign(1.0, stored)


@pytest.mark.parametrize("given", [1e20, 9223372036854775808, -9223372036854775809, 1e300])
def test_a_number_no_ledger_keeps_exactly_is_refused_saying_so(given: float) -> None:
    """Beyond SQLite's integers, SQLite keeps 16 digits or so and PostgreSQL all of them: the two
    give back different numbers, and neither the one hashed."""
    with pytest.raises(InvalidInputError, match=r"value of 'seats': .* is out of range: a number is kept"):
        normalize("seats", "number", given)


@pytest.mark.parametrize("given", [True, "12", math.nan, math.inf])
def test_what_is_not_a_finite_number_is_still_refused(given: object) -> None:
    with pytest.raises(InvalidInputError, match="seats"):
        normalize("seats", "number", given)
