"""Account facts and currency in the console's search: the current price first, retired ones
only on request and marked, each fact with its decisions and a link to its history."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from amem.domain.models import Note
from amem.memory import Memory
from tests.approval_ui.conftest import delete_notes, open_console, plain, texts
from tests.factories import llm_proposer, said, signed_in


def retire(mem: Memory, old: Note, new: Note, when: str) -> None:
    p = mem.propose(
        old.id,
        "invalid_at",
        when,
        reason="newer price",
        proposer=llm_proposer(mem),
        raw_log_ids=new.raw_log_ids,
    )
    mem.approve(p.id, reviewer=signed_in(mem, "alice"), comment="the price changed")


def three_prices(mem: Memory) -> list[Note]:
    first = said(mem, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    second = said(mem, "Acme pays $55 per seat after the uplift", at=datetime(2026, 4, 2, tzinfo=UTC))
    third = said(mem, "Acme pays $49 per seat from the renewal", at=datetime(2026, 8, 20, tzinfo=UTC))
    retire(mem, first, second, "2026-04-02T00:00:00Z")
    retire(mem, second, third, "2026-08-20T00:00:00Z")
    p = mem.propose(
        third.id, "decision_rationale", "a two-year commitment", reason="stated", proposer=llm_proposer(mem)
    )
    mem.approve(p.id, reviewer=signed_in(mem, "alice"), comment="matches the order form")
    return [first, second, third]


def test_account_facts_show_what_holds_now_newest_first(mem: Memory) -> None:
    prices = three_prices(mem)
    at = open_console("alice", "facts")
    page = plain(texts(at))
    assert "Acme pays $49 per seat from the renewal" in page
    assert "$42" not in page and "$55" not in page
    assert "said 20 August 2026 by agent:sales-agent" in page
    assert "**Why** · a two-year commitment" in page
    assert "decision_rationale approved by alice" in page and "matches the order form" in page
    assert prices[2].id in page
    at.checkbox(key="facts_retired").check().run()
    page = plain(texts(at))
    assert page.index("$49") < page.index("$55") < page.index("$42")  # newest said first
    assert page.count(":red[**Retired**]") == 2 and "retired 2 April 2026" in page


def test_account_facts_as_the_ledger_held_them_at_the_end_of_a_day(mem: Memory) -> None:
    """An auditor picks a day: the facts as the ledger held them at its end (the day before the
    notes were made: none); an empty date is now again. What each fact was then is
    tests/services/test_facts_as_of.py's."""
    prices = three_prices(mem)
    made = mem.read(prices[0].id).created_at.astimezone(UTC).date()  # the ledger's day, not said_at
    at = open_console("alice", "facts")
    at.date_input(key="facts_as_of").set_value(date(2026, 1, 1)).run()
    assert "0 facts as the ledger held them at the end of 2026-01-01 (UTC)" in plain(texts(at))
    at.date_input(key="facts_as_of").set_value(made - timedelta(days=1)).run()
    assert "0 facts as the ledger held them" in plain(texts(at))
    at.date_input(key="facts_as_of").set_value(made).run()
    page = plain(texts(at))
    assert f"1 fact as the ledger held them at the end of {made.isoformat()} (UTC)" in page and "$49" in page
    at.date_input(key="facts_as_of").set_value(None).run()
    assert "1 current fact, newest said first" in plain(texts(at))


def test_search_in_the_explorer_marks_retired_facts_after_the_current_one(mem: Memory) -> None:
    prices = three_prices(mem)
    at = open_console("alice", "explorer")
    at.toggle(key="explorer_semantic").set_value(True)
    at.text_input(key="explorer_text").input("how much does Acme pay per seat").run()
    frame = at.dataframe[0].value
    assert list(frame["content"]) == [prices[2].content]
    at.checkbox(key="explorer_retired").check().run()
    frame = at.dataframe[0].value
    assert frame["content"].iloc[0] == prices[2].content and frame["status"].iloc[0] == "current"
    assert list(frame["status"].iloc[1:]) == ["retired", "retired"]


def test_a_contested_fact_says_so_in_the_console(mem: Memory) -> None:
    from tests.factories import contradict

    first = said(mem, "Acme pays $42 per seat", at=datetime(2026, 1, 10, tzinfo=UTC))
    second = said(mem, "Acme pays $55 per seat after the uplift", at=datetime(2026, 4, 2, tzinfo=UTC))
    contradict(mem, first, second, "2026-04-02T00:00:00Z")
    page = plain(texts(open_console("alice", "facts")))
    assert page.count(":orange[**Contested**]") == 1
    assert 'a newer note says otherwise: "Acme pays $55 per seat after the uplift"' in page
    assert page.index("$55") < page.index("Contested") and page.index("$42") < page.index("Contested")


def test_a_retired_fact_a_pending_revert_would_bring_back_is_not_shown_as_contested(mem: Memory) -> None:
    """Before, any pending invalid_at proposal read as a retirement waiting: a revert that would
    bring the retired $55 back showed on it as "Contested · a newer note says otherwise; its
    retirement waits for review". It ends nothing; the fact shows as retired, as it is."""
    prices = three_prices(mem)
    change = [c for c in mem.note_versions(prices[1].id) if c.attribute == "invalid_at"][-1]
    revert = mem.revert(change.seq, reviewer=signed_in(mem, "alice"), reason="the $49 was only a quote")
    assert revert.status.value == "pending"
    at = open_console("alice", "facts")
    at.checkbox(key="facts_retired").check().run()
    page = plain(texts(at))
    assert page.count(":red[**Retired**]") == 2 and "Contested" not in page


def test_a_lead_limited_to_their_accounts_sees_them_first_and_can_read_the_rest(mem: Memory) -> None:
    """carol owns acme (reviewers.yaml scopes): her facts page opens on acme, her sidebar says so,
    and globex's facts can still be read (the limit is on deciding)."""
    said(mem, "Globex wants a pilot", scope="globex")
    said(mem, "Acme pays $49 per seat", scope="acme")
    said(mem, "Aardvark Corp asked for a demo", scope="aardvark")
    at = open_console("carol", "facts")
    scope = at.selectbox(key="facts_scope")
    assert scope.value == "acme" and scope.options == ["acme", "aardvark", "globex"]
    assert "carol · sales_lead · accounts acme" in plain(texts(at))
    scope.select("globex").run()
    assert "Globex wants a pilot" in plain(texts(at))


#: approval_ui/views/account_facts.py's PAGE_SIZE (importing a page runs it)
PAGE_SIZE = 25


def test_another_account_starts_at_its_first_page_and_a_page_past_the_end_shows_the_last(mem: Memory) -> None:
    notes = [said(mem, f"Acme fact {i}") for i in range(2 * PAGE_SIZE + 5)]
    for i in range(3):
        said(mem, f"Globex fact {i}", scope="globex")
    at = open_console("audrey", "facts")
    at.selectbox(key="facts_scope").select("acme").run()
    at.number_input(key="facts_page").set_value(3).run()
    assert plain(texts(at)).count("Acme fact") == 5
    at.selectbox(key="facts_scope").select("globex").run()  # its facts, not "3 current facts" and none
    shown = plain(texts(at))
    assert "3 current facts" in shown and shown.count("Globex fact") == 3
    at.selectbox(key="facts_scope").select("acme").run()
    assert plain(texts(at)).count("Acme fact") == PAGE_SIZE  # acme again: its first page
    at.number_input(key="facts_page").set_value(3).run()
    delete_notes(mem, notes[:10])  # meanwhile, by another reviewer: page 3 of acme is gone
    at.run()
    assert (
        plain(texts(at)).count("Acme fact") == PAGE_SIZE - 5 and at.number_input(key="facts_page").value == 2
    )
