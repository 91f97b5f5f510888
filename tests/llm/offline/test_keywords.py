"""keywords: YAKE's phrases without filler or dates; tags and context from them."""

from __future__ import annotations

from amem.llm.offline.keywords import Keywords, context, key_sentence, tags


def test_keywords_name_the_subject_not_dates_or_filler() -> None:
    found = Keywords()("Hey, update: Globex reported that SSO login fails since last Tuesday. Thanks!")
    assert "Globex" in found and "SSO login" in found
    assert not {"tuesday", "update", "hey", "thanks"} & {k.lower() for k in found}


def test_tags_are_the_category_then_keywords_as_slugs() -> None:
    assert tags("support issue", ["SSO login", "Globex"]) == ["support-issue", "sso-login", "globex"]


def test_context_is_a_template_with_the_key_sentence() -> None:
    out = context("pricing", ["Globex", "per seat"], ["Hi Priya.", "Globex pays $55 per seat."])
    assert out == "Pricing note about Globex and per seat. Key point: Globex pays $55 per seat."


def test_the_key_point_is_never_a_greeting_and_a_subject_loses_its_marks() -> None:
    lines = ["Subject: RE: Globex pricing", "Hi Tomasz, hi Ines,", "Thanks, Priya"]
    out = context("pricing", ["Tomasz", "Globex", "Priya"], lines)
    assert out == "Pricing note about Tomasz, Globex and Priya. Key point: Globex pricing"
    lines = ["Subject: Fwd: Re: Calls not logging to Salesforce", "Hi Dana,", "Pilot reps' calls fail."]
    assert context("support issue", ["Dana", "Salesforce"], lines).endswith(
        "Key point: Calls not logging to Salesforce"
    )
    # only courtesy lines: the best of them still (a context says something of the note)
    assert context(None, ["Priya"], ["Hi Priya,", "Thanks!"]).endswith("Key point: Hi Priya,")


def test_a_chat_exports_stamps_are_neither_the_key_point_nor_keywords() -> None:
    lines = [
        "[24/03/26, 12:00] Anjali: got the countersigned copy, thanks Rohan",
        "[24/03/26, 12:02] Rohan: talk soon",
    ]
    assert key_sentence(lines, ["countersigned copy"]) == "Anjali: got the countersigned copy, thanks Rohan"
    found = Keywords()("[15/07/26, 14:30] Karan: Rohan, we're not enabling the AI reply suggestions for now.")
    assert not any(ch.isdigit() for k in found for ch in k)
