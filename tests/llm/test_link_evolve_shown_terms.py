"""The link step's prompt shows every keyword and tag a note may be given (amem/llm/link_evolve.py):
shown 12 keywords and 8 tags, the model's update of a neighbour was written from part of them, and
the rest were lost when it replaced the whole list."""

from __future__ import annotations

import json

from amem.llm.construct_note import NOTE_TAGS
from amem.llm.link_evolve import SHOWN_TERMS, build_messages, unseen
from tests.llm.builders import note, raw_log

TAGS = ["acme", "sso", "security", "renewal", "okta", "saml", "auditor", "compliance"]
TAGS += ["enterprise", "q2", "it-team", "blocker"]
KEYWORDS = [f"term {n}" for n in range(20)]


def _neighbours_shown(messages: list[dict[str, str]]) -> list[dict[str, object]]:
    user = messages[-1]["content"]
    return json.loads(user.split("<neighbours>")[1].split("</neighbours>")[0])


def test_a_neighbour_is_shown_with_every_tag_and_keyword_a_note_is_given() -> None:
    full = note("Acme needs SSO via SAML before renewing", tags=["contract", *TAGS], keywords=KEYWORDS)
    assert len(full.tags) == NOTE_TAGS  # twelve from the model, and its category's
    (shown,) = _neighbours_shown(build_messages(note("Acme picked Azure AD"), raw_log("x"), [full]))
    assert shown["tags"] == ["contract", *TAGS]
    assert shown["keywords"] == KEYWORDS
    assert unseen(full, "tags") == [] and unseen(full, "keywords") == []


def test_a_note_a_person_gave_more_shows_its_first_ones_and_names_the_rest_unseen() -> None:
    more = [f"tag-{n}" for n in range(SHOWN_TERMS["tags"] + 3)]
    crowded = note("Acme's account plan", tags=more, keywords=[*KEYWORDS, "extra one"])
    (shown,) = _neighbours_shown(build_messages(note("Acme picked Azure AD"), raw_log("x"), [crowded]))
    assert shown["tags"] == more[: SHOWN_TERMS["tags"]]
    assert unseen(crowded, "tags") == more[SHOWN_TERMS["tags"] :]
    assert unseen(crowded, "keywords") == ["extra one"]
