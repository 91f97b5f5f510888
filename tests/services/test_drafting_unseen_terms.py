"""A neighbour's evolved keywords or tags keep the values the link step did not show the model
(amem/services/drafting.py, amem/llm/link_evolve.py): an update's list replaces the whole value, so
what the model never saw was dropped with it, and applied by itself (tags and keywords are auto)."""

from __future__ import annotations

import json
from typing import Any

from amem.llm.link_evolve import SHOWN_TERMS
from amem.memory import Memory
from amem.services.drafting import Snapshot, draft
from tests.factories import raw_log
from tests.services.test_drafting import NEW, POLICY, answers, by_attribute, neighbour
from tests.services.test_pipeline import construct, link

TAGS = ["acme", "sso", "security", "renewal", "okta", "saml", "auditor", "compliance"]
TAGS += ["enterprise", "q2", "it-team", "blocker"]


def _tags_shown_plus(added: str) -> Any:
    """The link step's answer a model gives from its prompt: the first neighbour linked, its tags as
    shown with one more."""

    def answer(messages: list[dict[str, str]]) -> str:
        user = messages[-1]["content"]
        (first, *_) = json.loads(user.split("<neighbours>")[1].split("</neighbours>")[0])
        update = {"note_id": first["id"], "tags": [*first["tags"], added], "reason": "Azure AD is the IdP"}
        return link(links=[{"note_id": first["id"], "reason": "same SSO thread"}], updates=[update])

    return answer


def test_a_neighbour_with_twelve_tags_keeps_them_all_when_the_model_adds_one(
    mem: Memory, scripted_llm: Any
) -> None:
    """Shown 8 of the note's 12 tags, the model's update carried those 8 and its own: 'enterprise',
    'q2', 'it-team' and 'blocker' were gone, applied without anyone seeing it."""
    scripted_llm.push(construct(tags=TAGS), link())
    first = mem.add_note(
        "Acme needs SSO via SAML before renewing; their auditor asked for it", actor="agent:a", scope="acme"
    )
    assert mem.read(first).tags == TAGS
    scripted_llm.push(construct(tags=["acme", "azure-ad"]), _tags_shown_plus("azure-ad"))
    mem.add_note("Acme's SSO will use Azure AD as the identity provider", actor="agent:a", scope="acme")
    assert mem.read(first).tags == [*TAGS, "azure-ad"]


def test_values_the_model_was_not_shown_are_kept_and_those_it_left_out_are_dropped() -> None:
    """A note a person gave more tags and keywords than the prompt shows: the model's lists are
    written from the first ones; the rest follow them, in their order. A shown value the model
    left out is its choice, and goes."""
    limit, kw_limit = SHOWN_TERMS["tags"], SHOWN_TERMS["keywords"]
    tags = [f"tag-{n}" for n in range(limit + 3)]
    keywords = [f"term {n}" for n in range(kw_limit + 2)]
    crowded = neighbour("n_0000000crowded", "Acme's account plan", tags=tags, keywords=keywords)
    left_out = {"tag-2", tags[limit - 1]}  # shown, and not in the answer: the model's choice
    # an unseen tag the model happens to give too (in another case) is not given twice
    given_tags = [*(t for t in tags[:limit] if t not in left_out), f"TAG-{limit}"]
    given = answers(
        link={
            "updates": [
                {
                    "note_id": crowded.id,
                    "tags": given_tags,
                    "keywords": [*keywords[1:kw_limit], "azure ad"],
                    "reason": "Azure AD is the IdP",
                }
            ]
        }
    )
    raw = raw_log("Acme's SSO will use Azure AD as the identity provider")
    snapshot = Snapshot(neighbours={crowded.id: crowded}, shown={crowded.id: crowded})
    drafts = by_attribute(draft(NEW, raw, given, snapshot, POLICY))
    assert drafts[(crowded.id, "tags")] == [*given_tags, *tags[limit + 1 :]]
    assert not left_out & set(drafts[(crowded.id, "tags")])  # type: ignore[arg-type]
    assert drafts[(crowded.id, "keywords")] == [*keywords[1:kw_limit], "azure ad", *keywords[kw_limit:]]


def test_an_update_that_only_restates_what_was_shown_changes_nothing() -> None:
    """The unseen values added back make the model's list the note's own: no change is proposed."""
    tags = [f"tag-{n}" for n in range(SHOWN_TERMS["tags"] + 2)]
    crowded = neighbour("n_0000000crowded", "Acme's account plan", tags=tags)
    given = answers(
        link={"updates": [{"note_id": crowded.id, "tags": tags[: SHOWN_TERMS["tags"]], "reason": "same"}]}
    )
    raw = raw_log("Acme's plan is unchanged")
    drafts = by_attribute(draft(NEW, raw, given, Snapshot(neighbours={crowded.id: crowded}), POLICY))
    assert (crowded.id, "tags") not in drafts
