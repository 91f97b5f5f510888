"""``amem search`` and ``amem reindex`` from the command line."""

from __future__ import annotations

import json

import pytest

from amem.cli import main
from amem.memory import Memory
from tests.factories import llm_proposer, make_note


def run(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_search_options_and_json(memory: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    hit = make_note(memory, "Acme asked for a discount on the renewal", tags=["pricing"])
    other = make_note(memory, "Acme's SSO login broke after the upgrade", tags=["support"])
    memory.propose(
        hit.id,
        "links",
        [{"note_id": other.id, "reason": "same renewal risk"}],
        reason="t",
        proposer=llm_proposer(memory),
    )
    make_note(memory, "A discount note of another account", scope="globex")

    code, out, err = run(memory, capsys, "search", "discount", "--scope", "acme", "-k", "1", "--json")
    assert code == 0, err
    results = json.loads(out)
    assert [r["note_id"] for r in results] == [hit.id]
    assert results[0]["note"]["content"] == hit.content and "keyword" in results[0]["matched_by"]

    code, out, _ = run(
        memory, capsys, "search", "discount", "--scope", "acme", "-k", "1", "--agentic", "--json"
    )
    linked = json.loads(out)
    assert [r["note_id"] for r in linked] == [hit.id, other.id]
    assert linked[1]["linked_from"] == hit.id and linked[1]["link_reason"] == "same renewal risk"

    code, out, _ = run(memory, capsys, "search", "login", "--scope", "acme", "--tag", "pricing", "--json")
    assert [r["note_id"] for r in json.loads(out)] == [hit.id]

    code, out, _ = run(
        memory, capsys, "search", "discount", "--scope", "acme", "--as-of", "2001-01-01T00:00:00Z", "--json"
    )
    assert code == 0 and json.loads(out) == []

    code, out, _ = run(memory, capsys, "search", "discount", "--scope", "acme", "-k", "1", "--agentic")
    assert code == 0 and f"linked from {hit.id}: same renewal risk" in out
    assert out.index(hit.content) < out.index(other.content)


def test_search_without_scope_needs_one_scope(memory: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    only = make_note(memory, "The only account so far")
    code, out, _ = run(memory, capsys, "search", "account", "--json")
    assert code == 0 and [r["note_id"] for r in json.loads(out)] == [only.id]
    make_note(memory, "A second account", scope="globex")
    code, _, err = run(memory, capsys, "search", "account")
    assert code == 2 and "--scope" in err and "acme, globex" in err and "Traceback" not in err


def test_bad_input_is_an_error_message(memory: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    make_note(memory, "Something")
    code, _, err = run(memory, capsys, "search", "x", "--scope", "acme", "--as-of", "yesterday-ish")
    assert code == 2 and "--as-of" in err
    code, _, err = run(memory, capsys, "search", "   ", "--scope", "acme")
    assert code == 2 and "empty" in err


@pytest.mark.parametrize("k", ["101", "9999999999999999999"])
def test_a_k_beyond_the_maximum_is_an_error_message(
    memory: Memory, capsys: pytest.CaptureFixture[str], k: str
) -> None:
    make_note(memory, "Acme pays 100 dollars per seat")
    code, _, err = run(memory, capsys, "search", "seat", "--scope", "acme", "-k", k)
    assert code == 2 and "-k" in err and "100" in err
    assert "internal error" not in err and "Traceback" not in err
    code, out, _ = run(memory, capsys, "search", "seat", "--scope", "acme", "-k", "100", "--json")
    assert code == 0 and len(json.loads(out)) == 1


def test_the_commands_maximum_k_is_the_services() -> None:
    from amem.cli import search as command
    from amem.services import search as service

    assert command.MAX_K == service.MAX_K


def test_reindex(memory: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("one renewal", "two renewals", "three renewals"):
        make_note(memory, text)
    code, out, _ = run(memory, capsys, "reindex", "--json")
    assert code == 0 and json.loads(out) == {"indexed": 3}
    code, out, _ = run(memory, capsys, "reindex")
    assert code == 0 and "reindexed 3 notes" in out


def test_terminal_escapes_in_a_note_are_shown_not_obeyed(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """A note's text reached the terminal as written: ESC[8m hid what followed, a lone CSI (U+009B)
    or an OSC could act on the terminal. Shown as escapes; --json keeps the text exact."""
    content = "Acme asked for a discount.\x1b[8m Ignore the discount.\x1b[0m\x9b2J\x1b]0;owned\x07"
    note = make_note(memory, content, tags=["pricing\x1b[8m"])
    code, out, err = run(memory, capsys, "search", "discount", "--scope", "acme")
    assert code == 0, err
    assert not any(c in out for c in "\x1b\x07\x9b"), out
    flat = " ".join(out.split())  # wrapped at the console's width
    assert "discount.\\x1b[8m Ignore the discount.\\x1b[0m\\x9b2J\\x1b]0;owned\\x07" in flat
    assert "pricing\\x1b[8m" in out  # the tags too
    code, out, _ = run(memory, capsys, "search", "discount", "--scope", "acme", "--json")
    assert code == 0 and json.loads(out)[0]["note"]["content"] == content == memory.read(note.id).content
