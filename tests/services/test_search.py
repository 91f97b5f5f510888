"""Search as a user sees it: hybrid ranking, scopes, tags, time, retirement, links, odd queries.

Every test runs on SQLite and on PostgreSQL (the ``memory`` fixture), with the real Chroma index
and the offline embedding model.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from amem.domain.models import Note, new_id, utcnow
from amem.errors import ConfigError, InvalidInputError
from amem.memory import Memory
from amem.services import search as search_module
from tests.factories import llm_proposer, make_note, said, signed_in

REVIEWER = "alice"


def ids(results: list) -> list[str]:
    return [r.note_id for r in results]


def decide(memory: Memory, note: Note, attribute: str, value: object) -> None:
    """Propose as the LLM, and approve as a reviewer when the policy holds it for review."""
    p = memory.propose(
        note.id, attribute, value, reason=f"test sets {attribute}", proposer=llm_proposer(memory)
    )
    if p.status.value == "pending":
        memory.approve(p.id, reviewer=signed_in(memory, REVIEWER))


@pytest.fixture
def crm(memory: Memory) -> dict[str, Note]:
    """A small account memory: pricing, support, onboarding, a personal remark."""
    return {
        "discount": make_note(
            memory,
            "Umbrella asked for a 15% discount on the annual renewal",
            keywords=["discount", "annual renewal"],
            tags=["pricing"],
        ),
        "sso": make_note(
            memory, "Login with SSO fails since the Okta upgrade", keywords=["SSO", "Okta"], tags=["support"]
        ),
        "kickoff": make_note(
            memory, "Kick-off workshop for the rollout is booked for Monday", tags=["onboarding"]
        ),
        "dog": make_note(memory, "The champion, Priya, adopted a beagle puppy last week", tags=["personal"]),
    }


def test_hybrid_search_finds_by_meaning_and_by_word(memory: Memory, crm: dict[str, Note]) -> None:
    # No word of the query is in the note: the vector side finds it.
    by_meaning = memory.search("customer wants a lower price", k=1, scope="acme")
    assert ids(by_meaning) == [crm["discount"].id]
    assert "vector" in by_meaning[0].matched_by

    # A rare exact word (a product name): the keyword side finds it, and both sides agree.
    by_word = memory.search("Okta", k=2, scope="acme")
    assert by_word[0].note_id == crm["sso"].id
    assert by_word[0].matched_by == ["vector", "keyword"]
    assert by_word[0].score >= by_word[1].score
    assert by_word[0].note.content == crm["sso"].content


def test_keywords_tags_and_context_are_searchable_too(memory: Memory, crm: dict[str, Note]) -> None:
    decide(memory, crm["dog"], "context", "Relationship building with the champion")
    found = memory.search("relationship", k=1, scope="acme")
    assert ids(found) == [crm["dog"].id] and "keyword" in found[0].matched_by
    # Stemming: "renewals" meets "renewal" (a keyword of the discount note).
    assert memory.search("renewals", k=1, scope="acme")[0].note_id == crm["discount"].id


def test_a_search_never_crosses_scopes(memory: Memory) -> None:
    mine = make_note(memory, "Globex wants 40 more seats in March", scope="globex", tags=["expansion"])
    theirs = make_note(memory, "Globex wants 40 more seats in March", scope="initech", tags=["expansion"])
    make_note(memory, "Unrelated note about the weather", scope="initech")

    found = memory.search("seats Globex March", k=10, scope="globex", include_retired=True)
    assert ids(found) == [mine.id]
    assert ids(memory.search_agentic("seats", k=10, scope="globex")) == [mine.id]
    near = memory.search_service.nearest("globex", "more seats", 10)
    assert [n.id for n in near] == [mine.id]
    assert theirs.id in ids(memory.search("seats", k=10, scope="initech"))


def test_tag_filter_needs_every_tag(memory: Memory, crm: dict[str, Note]) -> None:
    both = make_note(memory, "Renewal call: discount approved by finance", tags=["pricing", "renewal"])
    assert set(ids(memory.search("discount", k=10, scope="acme", tags=["pricing"]))) == {
        crm["discount"].id,
        both.id,
    }
    assert ids(memory.search("discount", k=10, scope="acme", tags=["pricing", "renewal"])) == [both.id]
    assert memory.search("discount", k=10, scope="acme", tags=["no-such-tag"]) == []


def test_retired_notes_only_when_asked(memory: Memory, crm: dict[str, Note]) -> None:
    old_price = make_note(memory, "List price is 30 dollars per seat", tags=["pricing"])
    new_price = make_note(memory, "List price is 35 dollars per seat from June", tags=["pricing"])
    decide(memory, old_price, "invalid_at", utcnow() - timedelta(days=1))
    decide(memory, new_price, "invalid_at", utcnow() + timedelta(days=365))  # retires next year

    current = ids(memory.search("list price per seat", k=10, scope="acme"))
    assert new_price.id in current and old_price.id not in current
    everything = memory.search("list price per seat", k=10, scope="acme", include_retired=True)
    assert old_price.id in ids(everything)
    near = memory.search_service.nearest("acme", "list price per seat", 2)
    assert {n.id for n in near} == {old_price.id, new_price.id}


def test_as_of_searches_the_notes_as_they_stood(memory: Memory) -> None:
    early = make_note(memory, "Hooli plans to renew with 50 seats", tags=["renewal"])
    before = utcnow()
    later = make_note(memory, "Hooli plans to renew with 80 seats", tags=["renewal"])
    decide(memory, early, "tags", ["renewal", "at-risk"])
    decide(memory, early, "invalid_at", utcnow() - timedelta(seconds=1))

    now = memory.search("Hooli renew seats", k=10, scope="acme")
    assert ids(now) == [later.id]  # early is retired now
    then = memory.search("Hooli renew seats", k=10, scope="acme", as_of=before)
    assert ids(then) == [early.id]  # later did not exist yet; early was not retired yet
    assert then[0].note.invalid_at is None and then[0].note.tags == ["renewal"]
    # Tags are read as they were: "at-risk" came after ``before``.
    assert memory.search("Hooli", k=10, scope="acme", as_of=before, tags=["at-risk"]) == []
    assert ids(memory.search("Hooli", k=10, scope="acme", tags=["at-risk"], include_retired=True)) == [
        early.id
    ]


def test_as_of_finds_a_note_that_held_then_however_many_newer_ones_outrank_it(memory: Memory) -> None:
    # Each side draws a pool of candidates (100 for k=1); the notes made after the searched moment
    # outnumber it and match better, yet none of them existed then.
    old = said(
        memory,
        "Umbrella Corp agreed a price of 100 dollars per seat for the annual plan, signed by their CFO",
    )
    then = utcnow()
    for i in range(110):
        said(memory, f"Umbrella Corp price of {200 + i} dollars per seat quoted for plan {i}")
    query = "Umbrella price dollars per seat"
    assert old.id not in ids(memory.search(query, k=100, scope="acme"))  # outranked now
    assert ids(memory.search(query, k=1, scope="acme", as_of=then)) == [old.id]
    assert ids(memory.search_agentic(query, k=1, scope="acme", as_of=then)) == [old.id]


def test_as_of_with_a_tag_draws_more_candidates_until_a_note_that_held_then_is_found(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tags of a past moment are read once each note is rebuilt, so the index cannot filter on
    # them: when the candidates drawn all lack the tag, the search draws more.
    monkeypatch.setattr(search_module, "MIN_POOL", 1)  # 6 candidates a side for k=1
    tagged = make_note(memory, "Hooli seats", tags=["renewal"])
    for i in range(12):
        said(memory, f"Hooli plans to renew with {50 + i} seats at the annual renewal of seats")
    then = utcnow()
    decide(memory, tagged, "tags", ["archived"])  # it lost the tag since
    query = "Hooli renew seats annual renewal"
    assert memory.search(query, k=1, scope="acme", tags=["renewal"]) == []
    assert ids(memory.search(query, k=1, scope="acme", tags=["renewal"], as_of=then)) == [tagged.id]
    # and when no note held the tag then, the search ends once the candidates run out
    assert memory.search(query, k=1, scope="acme", tags=["archived"], as_of=then) == []


def test_deleted_notes_are_never_returned(memory: Memory, crm: dict[str, Note]) -> None:
    p = memory.delete(crm["sso"].id, actor="bob", reason="duplicate")
    memory.approve(p.id, reviewer=signed_in(memory, REVIEWER))
    for found in (
        memory.search("SSO Okta login", k=10, scope="acme", include_retired=True),
        memory.search("SSO Okta login", k=10, scope="acme", as_of=utcnow()),
        memory.search_agentic("SSO Okta login", k=10, scope="acme"),
    ):
        assert crm["sso"].id not in ids(found)
    assert crm["sso"].id not in [n.id for n in memory.search_service.nearest("acme", "SSO Okta", 10)]


def test_as_of_a_moment_a_note_deleted_since_held_it_is_found_as_then(
    memory: Memory, crm: dict[str, Note]
) -> None:
    """Before, a search as of a past moment never found a note deleted since, though it held then
    and ``amem facts --as-of`` and ``amem show --as-of`` show it: the full-text side drew only
    notes live now, and the vector index no longer holds deleted ones (their vectors, kept in the
    ledger, are compared instead)."""
    question = "SSO Okta login"
    then = memory.search(question, k=10, scope="acme")  # what an agent read
    before = utcnow()
    p = memory.delete(crm["sso"].id, actor="bob", reason="duplicate")
    memory.approve(p.id, reviewer=signed_in(memory, REVIEWER))
    assert crm["sso"].id not in ids(memory.search(question, k=10, scope="acme"))
    found = memory.search(question, k=10, scope="acme", as_of=before)
    assert ids(found) == ids(then) and found[0].note_id == crm["sso"].id
    assert found[0].matched_by == ["vector", "keyword"]  # both sides, as when it was live
    assert crm["sso"].id in ids(memory.search_agentic(question, k=1, scope="acme", as_of=before))


def test_a_note_erased_since_is_never_found_as_of_any_moment(memory: Memory, crm: dict[str, Note]) -> None:
    """A note whose input was erased is deleted, and its text is gone: as of a moment it held,
    a search still leaves it out (unlike a note deleted since)."""
    secret = said(memory, "Priya's home address is 12 Elm Street")
    memory.search("Priya home address", k=10, scope="acme")
    before = utcnow()
    memory.erase(by=signed_in(memory, REVIEWER), reason="request", raw_log_id=secret.raw_log_ids[0])
    for question in ("Priya home address Elm Street", "erased"):
        assert secret.id not in ids(memory.search(question, k=10, scope="acme", as_of=before))


def test_agentic_search_keeps_every_linked_note_beyond_k(memory: Memory, crm: dict[str, Note]) -> None:
    hit = crm["discount"]
    decide(
        memory,
        hit,
        "links",
        [
            {"note_id": crm["sso"].id, "reason": "the outage is why they want a discount"},
            {"note_id": crm["kickoff"].id, "reason": "discount depends on the rollout"},
        ],
    )
    decide(memory, crm["dog"], "links", [{"note_id": hit.id, "reason": "the champion pushes the discount"}])
    gone = make_note(memory, "Old draft of the discount terms")
    decide(
        memory,
        hit,
        "links",
        [*memory.read(hit.id).model_dump()["links"], {"note_id": gone.id, "reason": "x"}],
    )
    decide(memory, gone, "deleted", True)

    plain = memory.search("discount on the annual renewal", k=1, scope="acme")
    assert ids(plain) == [hit.id]
    found = memory.search_agentic("discount on the annual renewal", k=1, scope="acme")
    assert ids(found) == [hit.id, crm["sso"].id, crm["kickoff"].id, crm["dog"].id]
    assert found[0].matched_by != ["linked"] and found[0].linked_from is None
    linked = {r.note_id: r for r in found[1:]}
    assert all(r.matched_by == ["linked"] and r.linked_from == hit.id for r in linked.values())
    assert linked[crm["sso"].id].link_reason == "the outage is why they want a discount"
    assert linked[crm["dog"].id].link_reason == "the champion pushes the discount"  # an incoming link
    assert all(r.score <= found[0].score for r in linked.values())


def test_agentic_search_as_of_follows_the_links_to_a_hit_as_they_stood_then(memory: Memory) -> None:
    sso = make_note(memory, "Acme requires SSO with Okta before renewing")
    renewal = make_note(memory, "Acme renewal meeting booked with the procurement team")
    decide(memory, renewal, "links", [{"note_id": sso.id, "reason": "renewal depends on SSO"}])
    then = utcnow()
    decide(memory, renewal, "links", [])  # the link was dropped since

    found = memory.search_agentic("SSO Okta", k=1, scope="acme", as_of=then)
    assert ids(found) == [sso.id, renewal.id]  # renewal linked to the hit then
    assert found[1].linked_from == sso.id and found[1].link_reason == "renewal depends on SSO"
    assert ids(memory.search_agentic("SSO Okta", k=1, scope="acme")) == [sso.id]  # not now


def test_agentic_search_applies_the_filters_to_linked_notes(memory: Memory, crm: dict[str, Note]) -> None:
    decide(memory, crm["discount"], "links", [{"note_id": crm["sso"].id, "reason": "r"}])
    found = memory.search_agentic("discount", k=1, scope="acme", tags=["pricing"])
    assert ids(found) == [crm["discount"].id]  # the linked note lacks the tag


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced quote discount',
        "discount OR",
        "NEAR(discount renewal)",
        "content:discount",
        "tags:pricing -renewal",
        "discount* AND NOT (",
        "discount'; DROP TABLE notes; --",
        "discount & renewal | ! <-> :*",
        "Umbrella's 15% discount?!",
        "Ümbrella ✓ discount 日本",
        "^discount {renewal}",
    ],
)
def test_search_syntax_in_user_text_is_just_text(memory: Memory, crm: dict[str, Note], query: str) -> None:
    found = memory.search(query, k=2, scope="acme")
    assert crm["discount"].id in ids(found)
    assert "keyword" in found[ids(found).index(crm["discount"].id)].matched_by
    assert memory.notes(scope="acme", limit=10)  # the notes table is still there


def test_a_query_of_only_stop_words_falls_back_to_meaning(memory: Memory, crm: dict[str, Note]) -> None:
    found = memory.search("what is it about?", k=2, scope="acme")
    assert len(found) == 2 and all(r.matched_by == ["vector"] for r in found)


@pytest.mark.parametrize(
    ("query", "k", "scope"),
    [("", 5, "acme"), ("   ", 5, "acme"), ("discount", 0, "acme"), ("discount", 5, "")],
)
def test_bad_search_input_is_refused(memory: Memory, query: str, k: int, scope: str) -> None:
    with pytest.raises(InvalidInputError):
        memory.search(query, k=k, scope=scope)


@pytest.mark.parametrize("k", [search_module.MAX_K + 1, 2**62])
def test_a_k_beyond_the_maximum_is_refused_by_name(memory: Memory, crm: dict[str, Note], k: int) -> None:
    for find in (memory.search, memory.search_agentic):
        with pytest.raises(InvalidInputError, match=rf"k must be .* 1 to {search_module.MAX_K}"):
            find("discount", k, scope="acme")
    assert len(memory.search("discount", search_module.MAX_K, scope="acme")) == len(crm)


@pytest.mark.parametrize("tags", [[1], ["pricing", None], 7])
def test_tags_that_are_not_text_are_refused_by_name(
    memory: Memory, crm: dict[str, Note], tags: object
) -> None:
    for find in (memory.search, memory.search_agentic):
        with pytest.raises(InvalidInputError, match="tags must be"):
            find("discount", 5, scope="acme", tags=tags)  # type: ignore[arg-type]


def test_nearest_leaves_out_excluded_ids(memory: Memory, crm: dict[str, Note]) -> None:
    near = memory.search_service.nearest("acme", "discount renewal", 2, exclude_ids=[crm["discount"].id])
    assert len(near) == 2 and crm["discount"].id not in [n.id for n in near]
    assert memory.search_service.nearest("acme", "discount", 0) == []
    assert memory.search_service.nearest("nobody", "discount", 3) == []


def test_the_link_steps_keyword_window_never_narrows_a_users_search(memory: Memory) -> None:
    memory.search_service.neighbour_keyword_window = 2
    best = make_note(memory, "Escrow escrow escrow: escrow terms drafted")
    for i in range(4):
        make_note(memory, f"Escrow call number {i}")
    hits = memory.search("escrow", k=3, scope="acme")
    assert hits[0].note_id == best.id and "keyword" in hits[0].matched_by


def test_the_link_step_finds_neighbours_by_meaning_alone_in_a_scope_above_the_limit(memory: Memory) -> None:
    # One note shares only a rare word with the query and nothing of its meaning; more notes than
    # the vector side draws (50) are close in meaning, so only the keyword side can offer it.
    rare = make_note(memory, "The parking garage gate code is zqx4471")
    for i in range(59):
        make_note(memory, f"Request {i}: a discount on the annual renewal of the contract")
    service, query = memory.search_service, "annual renewal discount zqx4471"

    service.neighbour_keyword_scope_limit = 60  # the scope holds 60 notes: at the limit
    assert rare.id in [n.id for n in service.nearest("acme", query, 10)]
    service.neighbour_keyword_scope_limit = 59  # above it: the vector side alone
    assert rare.id not in [n.id for n in service.nearest("acme", query, 10)]
    # add_note's batch path (a new note, not yet written) decides the same way ...
    new = rare.model_copy(update={"id": new_id("n"), "content": query})
    assert rare.id not in [n.id for n in service.nearest_many([(new, query)], 10)[0]]
    service.neighbour_keyword_scope_limit = None
    assert rare.id in [n.id for n in service.nearest_many([(new, query)], 10)[0]]
    # ... and a user's search always has both sides.
    service.neighbour_keyword_scope_limit = 0
    assert rare.id in ids(memory.search(query, k=10, scope="acme"))


def test_the_link_steps_keyword_side_is_set_by_the_environment(
    database_url: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for value, count in (("250", 250), ("all", None), ("0", 0)):
        for name, attribute in (
            ("AMEM_LINK_KEYWORD_WINDOW", "neighbour_keyword_window"),
            ("AMEM_LINK_KEYWORD_SCOPE_LIMIT", "neighbour_keyword_scope_limit"),
        ):
            monkeypatch.setenv(name, value)
            with Memory(tmp_path / "home", database_url=database_url) as memory:
                assert getattr(memory.search_service, attribute) == count
    for name in ("AMEM_LINK_KEYWORD_WINDOW", "AMEM_LINK_KEYWORD_SCOPE_LIMIT"):
        monkeypatch.setenv(name, "")
    with Memory(tmp_path / "home", database_url=database_url) as memory:
        assert memory.search_service.neighbour_keyword_window is None  # every match ...
        assert memory.search_service.neighbour_keyword_scope_limit == 2000  # ... up to 2,000 notes
    for name in ("AMEM_LINK_KEYWORD_WINDOW", "AMEM_LINK_KEYWORD_SCOPE_LIMIT"):
        monkeypatch.setenv(name, "-5")
        with pytest.raises(ConfigError, match=rf"{name}='-5'.*'all'"):
            Memory(tmp_path / "home", database_url=database_url)
        monkeypatch.setenv(name, "")


def test_a_batchs_earlier_note_is_a_neighbour_as_it_would_be_once_stored(memory: Memory) -> None:
    """The full-text side cannot search a batch's notes before they are written; a note added in
    the same batch as the input it restates must still find it first, as it would one batch later."""
    for i in range(6):
        make_note(memory, f"Renewal call {i}: annual contract discount discussed, seats unchanged")
    service = memory.search_service
    first_text = "Globex renews the annual contract at $49 per seat with a 10% discount from May 1"
    recap_text = "Recap: Globex renews the annual contract at $49 per seat, 10% discount, from May 1"
    first = Note(id=new_id("n"), scope="acme", content=first_text, created_at=utcnow(), updated_at=utcnow())
    recap = first.model_copy(update={"id": new_id("n"), "content": recap_text})
    query = "annual contract discount renewal"
    batch = service.nearest_many([(first, query), (recap, query)], 1)
    assert [n.id for n in batch[1]] == [first.id]
