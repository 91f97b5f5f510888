"""How a batch's problems read: each problem once, with the positions that have it, and a count
where there are too many to name."""

from __future__ import annotations

from amem.errors import SHOWN_POSITIONS, SHOWN_PROBLEMS, describe_problems


def test_one_problem_reads_as_before() -> None:
    assert describe_problems([(3, "content is empty")]) == "input 3: content is empty"


def test_the_same_problem_is_said_once_with_its_positions() -> None:
    problems = [(2, "scope: Field required"), (4, "not JSON"), (5, "scope: Field required")]
    assert describe_problems(problems, "line") == (
        "3 lines are wrong: lines 2 and 5: scope: Field required; line 4: not JSON"
    )


def test_many_positions_and_many_problems_are_counted_not_listed() -> None:
    same = [(n, "scope: Field required") for n in range(1, 1502)]
    text = describe_problems(same, "line")
    more = 1501 - SHOWN_POSITIONS
    assert text == f"1,501 lines are wrong: lines 1, 2, 3, 4, 5 and {more:,} more: scope: Field required"
    varied = [(n, f"not UTF-8 at column {n}") for n in range(1, 31)]
    text = describe_problems(varied, "line")
    assert text.count("not UTF-8") == SHOWN_PROBLEMS
    assert text.endswith(f"; {30 - SHOWN_PROBLEMS} other problems on {30 - SHOWN_PROBLEMS} more lines")
