"""The policy as `amem policy` and the console's policy page show it (services/audit.py)."""

from __future__ import annotations

from amem.policy import load_policy, parse_policy
from amem.services.audit import policy_overview
from tests.conftest import REPO


def _rows(text: str) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    overview = policy_overview(parse_policy(text))
    return {a.attribute: (a.mode, [(r.when, r.mode) for r in a.rules]) for a in overview.attributes}


def test_an_attribute_shows_its_own_mode_and_the_rules_that_narrow_it() -> None:
    """Before, the mode shown was what a model's proposal gets: context, applied at once for agents
    and people with a rule holding the model's values, was shown as review, its auto nowhere."""
    rows = _rows(
        "default_mode: review\n"
        "attributes:\n"
        "  context:\n    mode: auto\n"
        "    rules:\n      - when: {proposer_kinds: [llm]}\n        mode: review\n"
        "  keywords:\n    rules:\n      - when: {proposer_kinds: [person]}\n        mode: auto\n"
        "  content: {mode: frozen}\n"
    )
    assert rows["context"] == ("auto", [("proposer is llm", "review")])
    assert rows["keywords"] == ("review", [("proposer is person", "auto")])  # default_mode, narrowed
    assert rows["content"] == ("frozen", [])


def test_the_guards_on_a_rule_tag_are_shown_for_tags_and_for_the_category() -> None:
    """Re-filing a note away from contract waits for a person, as dropping the tag does: `amem
    policy` showed the guard on tags only, and category as applied at once with no narrowing."""
    overview = policy_overview(load_policy(REPO / "policies.yaml"))
    rows = {a.attribute: a for a in overview.attributes}
    assert [(r.when, r.mode) for r in rows["tags"].rules] == [("the change drops contract", "review")]
    assert rows["category"].mode == "auto"
    assert [(r.when, r.mode) for r in rows["category"].rules] == [
        (
            "the change re-files the note away from contract (or clears its category) and no tag of the "
            "note says it",
            "review",
        )
    ]
    # where a person looks anyway, or no rule names a tag, there is no guard to show
    assert _rows(
        "attributes:\n  category: {mode: review}\n  context:\n    rules:\n"
        "      - when: {tags_any: [contract]}\n        mode: frozen\n"
    )["category"] == ("review", [])
    assert _rows("attributes:\n  category: {mode: auto}\n")["category"] == ("auto", [])
