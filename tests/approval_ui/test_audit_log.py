"""Audit log page: verification up front, the filtered trail, its exports, review charts."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from streamlit.runtime.media_file_manager import MediaFileManager

from amem.memory import Memory
from tests.approval_ui.conftest import open_console, plain, texts
from tests.factories import llm_proposer, make_note, signed_in


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Callable[[], Any]]]:
    """The export callables the page registers with its download buttons, by file extension.

    Streamlit runs them when the browser asks for the file; AppTest has no browser, so the test
    runs them itself: exactly what a click would produce with the filters then on the page.
    """
    seen: dict[str, Callable[[], Any]] = {}
    original = MediaFileManager.add_deferred

    def record(
        self: MediaFileManager, data: Callable[[], Any], mimetype: str | None, *args: Any, **kw: Any
    ) -> str:
        seen[str(kw.get("file_name", "")).rsplit(".", 1)[-1]] = data
        return original(self, data, mimetype, *args, **kw)

    monkeypatch.setattr(MediaFileManager, "add_deferred", record)
    yield seen


def _history(mem: Memory) -> tuple[str, str]:
    note = make_note(mem, "Acme call", keywords=["sso"])
    approved = mem.propose(
        note.id, "decision_rationale", '=HYPERLINK("x")', reason="r1", proposer=llm_proposer(mem)
    )
    mem.approve(approved.id, reviewer=signed_in(mem, "alice"), comment="fine")
    rejected = mem.propose(note.id, "next_step", "call back", reason="r2", proposer=llm_proposer(mem))
    mem.reject(rejected.id, reviewer=signed_in(mem, "bob"), comment="no")
    return note.id, approved.id


def test_verification_is_shown_first(mem: Memory) -> None:
    _history(mem)
    at = open_console("audrey", "audit")
    assert "Ledger intact" in at.success[0].value
    assert "3 changes and 1 raw logs verified" in plain(at.success[0].value)


def test_the_trail_is_on_screen_before_the_verification_runs(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Verifying reads the whole ledger again (seconds in a large store): the page draws its charts
    and trail first, and the verification's result still leads the page."""
    _history(mem)
    order: list[str] = []
    for name in ("verify", "audit_events"):
        real = getattr(Memory, name)

        def traced(self: Memory, *args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            order.append(_name)
            return _real(self, *args, **kw)

        monkeypatch.setattr(Memory, name, traced)
    at = open_console("audrey", "audit")
    assert order == ["audit_events", "verify"]
    assert "Ledger intact" in at.success[0].value and not at.exception


def test_a_tampered_ledger_is_shown_prominently(mem: Memory) -> None:
    _history(mem)
    with mem.ledger.engine.begin() as conn:
        conn.execute(sa.text("DROP TRIGGER changes_no_update"))
        conn.execute(sa.text("UPDATE changes SET new_value = '\"forged\"' WHERE seq = 3"))
    at = open_console("audrey", "audit")
    assert not at.success
    assert "Ledger tampered" in at.error[0].value and "change 3" in plain(at.error[0].value)


def test_paging_reuses_the_verification_and_verify_again_runs_it(mem: Memory) -> None:
    _history(mem)
    at = open_console("audrey", "audit")
    assert "Ledger intact" in at.success[0].value
    with mem.ledger.engine.begin() as conn:  # tampered after the page verified it
        conn.execute(sa.text("DROP TRIGGER changes_no_update"))
        conn.execute(sa.text("UPDATE changes SET new_value = '\"forged\"' WHERE seq = 2"))
    at.multiselect(key="audit_kinds").select("proposals").run()  # a filter: no second full read
    assert "Ledger intact" in at.success[0].value and not at.error
    at.button(key="audit_verify_again").click().run()
    assert "Ledger tampered" in at.error[0].value and "change 2" in plain(at.error[0].value)


def test_the_page_writes_a_signed_checkpoint(mem: Memory) -> None:
    from amem.services import checkpoints

    _history(mem)
    at = open_console("audrey", "audit")
    at.button(key="audit_checkpoint").click().run()
    assert "no signing key" in plain(at.error[0].value)  # says what to run, writes nothing
    checkpoints.init_key(checkpoints.default_key_path(mem.home))
    at.button(key="audit_checkpoint").click().run()
    assert "Checkpoint signed" in plain(at.success[-1].value)
    log = checkpoints.default_log_path(mem.home)
    assert mem.verify(checkpoints=log).checkpoints[0].proven


def test_filters_narrow_the_trail(mem: Memory) -> None:
    _note_id, _approved_id = _history(mem)
    at = open_console("audrey", "audit")
    table = at.dataframe[-1].value
    assert {"created", "applied", "proposed", "approved", "rejected"} <= set(table["event"])
    at.selectbox(key="audit_actor").select("person:alice").run()
    table = at.dataframe[-1].value
    assert set(table["actor"]) == {"person:alice"}
    assert sorted(table["event"]) == ["applied", "approved"]
    at.selectbox(key="audit_actor").select("any")
    at.multiselect(key="audit_status").select("rejected").run()
    table = at.dataframe[-1].value
    assert set(table["attribute"]) == {"next_step"} and set(table["event"]) == {"proposed", "rejected"}
    at.multiselect(key="audit_status").unselect("rejected")
    at.multiselect(key="audit_kinds").select("changes")
    at.selectbox(key="audit_attribute").select("keywords").run()
    table = at.dataframe[-1].value
    assert list(table["event"]) == ["applied"] and list(table["value"]) == ["• sso"]
    assert "1 events match" in plain(texts(at))


def test_exports_hold_the_filtered_trail(mem: Memory, downloads: dict[str, Callable[[], Any]]) -> None:
    note_id, approved_id = _history(mem)
    at = open_console("audrey", "audit")
    at.selectbox(key="audit_actor").select("person:alice").run()
    assert set(downloads) == {"csv", "jsonl"}
    lines = downloads["jsonl"]().decode("utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    assert [(e["event"], e["actor"]) for e in events] == [
        ("applied", "person:alice"),
        ("approved", "person:alice"),
    ]
    assert events[0]["new_value"] == '=HYPERLINK("x")' and events[0]["change_seq"] == 3
    assert events[0]["hash"] and events[1]["comment"] == "fine"
    rows = list(csv.DictReader(io.StringIO(downloads["csv"]().decode("utf-8-sig"))))
    assert [r["event"] for r in rows] == ["applied", "approved"]
    assert {r["proposal_id"] for r in rows} == {approved_id} and {r["note_id"] for r in rows} == {note_id}
    assert rows[0]["new_value"] == '\'=HYPERLINK("x")'  # a spreadsheet will not run it


def test_charts_count_proposals_and_review_times(mem: Memory) -> None:
    _history(mem)
    at = open_console("audrey", "audit")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Decisions"] == "2"
    charts = at.get("vega_lite_chart")
    assert len(charts) == 2  # proposals per day, time to review
    for chart in charts:  # the page scrolls over them: the wheel zooms no scale
        spec = json.loads(chart.proto.spec)
        assert not [p for p in spec.get("params", []) if p.get("bind") == "scales"], spec["params"]
    statuses = json.loads(charts[0].proto.spec)["encoding"]["color"]["scale"]["domain"]
    assert {"approved", "rejected"} <= set(statuses)  # each status its own colour in the stack


def test_erasures_are_shown_to_the_auditor(mem: Memory) -> None:
    """An erasure is an event of the history: the auditor sees who erased what, when and why."""
    _history(mem)
    at = open_console("audrey", "audit")
    assert "No erasures" in texts(at)
    gone = mem.add_note("Mrs Quibblestone called from Acme", actor="agent:x", scope="acme")
    raw = mem.read(gone).raw_log_ids[0]
    report = mem.erase(by=signed_in(mem, "alice"), reason="GDPR art. 17 request", raw_log_id=raw)

    at = open_console("audrey", "audit")

    (row,) = at.dataframe[-1].value.to_dict("records")
    assert row["erasure"] == report.erasure_id and row["by"] == "alice"
    assert row["asked"] == f"raw log {raw}" and row["why"] == "GDPR art. 17 request"
    assert row["rows redacted"].startswith("1 raw log, ")
    assert "Quibblestone" not in texts(at)


def test_tokens_made_and_revoked_are_shown_to_the_auditor(mem: Memory) -> None:
    """Who could act as whom: alice's reviewer token and an agent's, revoked, newest first."""
    at = open_console("audrey", "audit")
    assert "No token has been made" in texts(at)
    mem.tokens.create("alice", "reviewer", by=signed_in(mem, "alice"))
    mem.tokens.create("crm-sync", "agent", scopes=["acme", "globex"])
    mem.tokens.revoke("crm-sync")

    at = open_console("audrey", "audit")

    rows = at.dataframe[-1].value.to_dict("records")
    assert [(r["what"], r["token of"], r["role"], r["scopes"]) for r in rows] == [
        ("revoked", "crm-sync", "agent", "acme, globex"),
        ("created", "crm-sync", "agent", "acme, globex"),
        ("created", "alice", "reviewer", "-"),  # a reviewer reaches what the policy lets them
    ]
    assert rows[-1]["by"] == "alice" and rows[-1]["expires"] != "never" and rows[0]["expires"] == "never"


def _verdict_tables(at: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    frames = [d.value for d in at.dataframe]
    (attribute,) = [f for f in frames if "attribute" in f.columns and "approved as proposed" in f.columns]
    (source,) = [f for f in frames if "proposed by" in f.columns]
    return attribute.to_dict("records"), source.to_dict("records")


def test_what_reviewers_decide_per_attribute_and_model_and_which_to_look_at(mem: Memory) -> None:
    """A lead sees which attributes and which models fill the queue with values people turn down,
    and is told when one crosses the line (fewer than 3 in 10 approved as proposed, over 20)."""
    _history(mem)
    at = open_console("audrey", "audit")
    by_attribute, by_source = _verdict_tables(at)
    rows = {r["attribute"]: (r["approved"], r["rejected"]) for r in by_attribute}
    assert rows == {"decision_rationale": (1, 0), "next_step": (0, 1)}
    (source,) = by_source
    assert source["proposed by"] == "llm:offline · test/1" and source["approved as proposed"] == 0.5
    assert not at.warning

    note = make_note(mem, "Globex call")
    for n in range(20):
        p = mem.propose(note.id, "next_step", f"call back {n}", reason="r", proposer=llm_proposer(mem))
        mem.reject(p.id, reviewer=signed_in(mem, "bob"), comment="not said")
    at = open_console("audrey", "audit")
    (warning,) = at.warning
    said = plain(warning.value)
    assert "next_step (0% of 21)" in said and "llm:offline · test/1 (5% of 22)" in said
