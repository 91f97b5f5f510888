"""keywords: YAKE's phrases without filler or dates; tags and context from them."""

from __future__ import annotations

from amem.llm.offline.keywords import Keywords, context, tags


def test_keywords_name_the_subject_not_dates_or_filler() -> None:
    found = Keywords()("Hey, update: Globex reported that SSO login fails since last Tuesday. Thanks!")
    assert "Globex" in found and "SSO login" in found
    assert not {"tuesday", "update", "hey", "thanks"} & {k.lower() for k in found}


def test_tags_are_the_category_then_keywords_as_slugs() -> None:
    assert tags("support issue", ["SSO login", "Globex"]) == ["support-issue", "sso-login", "globex"]


def test_context_is_a_template_with_the_key_sentence() -> None:
    out = context("pricing", ["Globex", "per seat"], ["Hi Priya.", "Globex pays $55 per seat."])
    assert out == "Pricing note about Globex and per seat. Key point: Globex pays $55 per seat."
