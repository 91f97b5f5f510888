"""Bad input gets the same answer everywhere (API, CLI, import files) and on both backends: a clear
one-line refusal with exit 2 before anything is written, or success. Never a traceback, never exit
1 (which means tampering). Property-based tests (hypothesis) look for inputs that break that."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amem.cli import main
from amem.domain.models import RawLogState
from amem.errors import AnalysisPendingError, InvalidInputError
from amem.ledger.tables import llm_calls, raw_logs
from amem.memory import Memory
from tests.factories import llm_proposer, make_note, signed_in

MODEL = "scripted/test-model"
#: What a property test may draw from besides ordinary text: NUL, surrogates, invisible characters.
NASTY = ["\x00", "\ud800", "\udc80", "\udfff", "\u200b", "\u200d", "\u2066", "\ufeff", "\u00ad", " ", "\n"]
PROPERTY = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

nasty_text = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.sampled_from([*NASTY, "a", "é", "漢"]), max_size=12),
    st.builds(lambda a, b, c: a + b + c, st.text(max_size=10), st.sampled_from(NASTY), st.text(max_size=10)),
)
edge_times = st.one_of(
    st.none(),
    st.builds(
        lambda d, h: d.replace(tzinfo=timezone(timedelta(hours=h))).isoformat(),
        st.datetimes(),
        st.integers(-23, 23),
    ),
    st.sampled_from(["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00Z"]),
    st.text(max_size=12),
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), nasty_text),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(nasty_text, inner, max_size=3)),
    max_leaves=6,
)


def _raw_logs(mem: Memory) -> list[tuple[str, str]]:
    with mem.ledger.engine.connect() as conn:
        return [(r.id, r.text) for r in conn.execute(sa.select(raw_logs.c.id, raw_logs.c.text))]


def _cli(mem: Memory, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with patch("sys.stdin", io.StringIO("")):
        code = main(["--database-url", mem.settings.database_url, "--home", str(mem.home), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


BAD_INPUTS: list[tuple[dict[str, Any], str]] = [
    ({"content": "hello \udc80 world"}, r"content: character 7 is a lone surrogate \(U\+DC80\)"),
    ({"content": "hello \x00 world"}, r"content: character 7 is a NUL \(U\+0000\)"),
    ({"content": "\u200b\u200d\ufeff"}, "content shows nothing"),
    ({"scope": "ac\x00me"}, "scope: character 3 is a NUL"),
    ({"scope": "\u200b"}, "scope shows nothing"),
    ({"metadata": {"k": "v\x00"}}, r"metadata\.k: character 2 is a NUL"),
    ({"metadata": {"k": float("nan")}}, r"metadata\.k: nan is not a finite number"),
    ({"metadata": {"k\udc80": 1}}, "metadata: key .* lone surrogate"),
    ({"at": "0001-01-01T00:00:00+05:00"}, "at: 0001-01-01T00:00:00\\+05:00 is out of range"),
    ({"at": "9999-12-31T23:00:00-05:00"}, "at: 9999-12-31T23:00:00-05:00 is out of range"),
    ({"actor": "agent:bot\u200b"}, "invisible or a control character"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_INPUTS)
def test_the_api_refuses_bad_input_alike_on_both_backends(
    memory: Memory, bad: dict[str, Any], message: str
) -> None:
    item = {"content": "Acme renewed", "scope": "acme", **bad}
    actor = item.pop("actor", "agent:sales-agent")
    with pytest.raises(InvalidInputError, match=message):
        memory.add_note(actor=actor, **item)
    with pytest.raises(InvalidInputError, match=message):
        memory.add_notes([item], actor=actor)
    assert _raw_logs(memory) == []  # refused before anything was written


def test_the_edges_of_the_calendar_in_utc_are_accepted(memory: Memory) -> None:
    """The calendar's first moment is a time; its last is one in the future, refused as that (an
    input's `at` is when it was said), not as out of range."""
    note_id = memory.add_note(
        "Acme renewed two weeks ago", at="0001-01-01T00:00:00Z", scope="acme", actor="agent:x"
    )
    assert memory.read(note_id).content == "Acme renewed two weeks ago"
    with pytest.raises(InvalidInputError, match=r"^at: '9999-12-31T23:59:59\+00:00' is in the future"):
        memory.add_note("Acme renewed", at="9999-12-31T23:59:59+00:00", scope="acme", actor="agent:x")


def test_a_nul_in_a_search_is_refused_alike(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match="query: character 2 is a NUL"):
        memory.search("a\x00", scope="acme")


def test_a_bad_time_is_refused_naming_the_parameter_that_held_it(memory: Memory) -> None:
    note = make_note(memory, "Acme renewed")
    for parameter in ("since", "until"):
        with pytest.raises(InvalidInputError, match=rf"^{parameter}: 'last week' is not an ISO 8601"):
            list(memory.export("changes", **{parameter: "last week"}))
    with pytest.raises(InvalidInputError, match=r"^at: 'yesterday' is not an ISO 8601"):
        memory.as_of(note.id, "yesterday")
    with pytest.raises(InvalidInputError, match=r"^as_of: 'yesterday' is not an ISO 8601"):
        memory.search("renewed", scope="acme", as_of="yesterday")


@pytest.mark.parametrize(("bad", "message"), BAD_INPUTS[:3] + BAD_INPUTS[8:10])
def test_the_cli_refuses_bad_input_in_one_line_with_exit_2(
    memory: Memory, capsys: pytest.CaptureFixture[str], bad: dict[str, Any], message: str
) -> None:
    args = ["add", bad.get("content", "Acme renewed"), "--scope", "acme"]
    if "at" in bad:
        args += ["--at", bad["at"]]
    code, _out, err = _cli(memory, capsys, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert _raw_logs(memory) == []


def test_import_files_name_the_bad_line(memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    good = json.dumps({"content": "Acme renewed", "scope": "acme"})
    for bad, message in (
        ('{"content": "x\\udc80", "scope": "a"}', "line 2: content: character 2 is a lone surrogate"),
        ('{"content": "x\\u0000", "scope": "a"}', "line 2: content: character 2 is a NUL"),
        ('{"content": "x", "scope": "a", "metadata": {"n": NaN}}', "line 2: metadata.n: nan is not"),
        ('{"content": "\\u200b", "scope": "a"}', "line 2: content shows nothing"),
        ('{"content": "x", "scope": "a", "at": "9999-12-31T23:00:00-05:00"}', "line 2: at: .* out of range"),
    ):
        path = tmp_path / "calls.jsonl"
        path.write_text(f"{good}\n{bad}\n", "utf-8")
        code, _out, err = _cli(memory, capsys, "import", str(path))
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert re.search(message, err), err
    assert _raw_logs(memory) == []


def test_an_unexpected_error_is_one_line_and_never_exit_1(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("something nobody expected")

    monkeypatch.setattr(Memory, "verify", broken)
    code, _out, err = _cli(memory, capsys, "verify")
    assert code == 70 and "internal error (RuntimeError): something nobody expected" in err
    assert len(err.strip().splitlines()) == 1


def test_processes_opening_an_empty_ledger_at_once_all_succeed(database_url: str, tmp_path: Path) -> None:
    env = {**os.environ, "AMEM_DATABASE_URL": database_url, "AMEM_HOME": str(tmp_path / "home")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "amem", "init", str(tmp_path / f"project-{i}"), "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]
    for p in procs:
        for stream in (p.stdout, p.stderr):
            if stream:
                stream.close()
    assert [code for code, _ in results] == [0, 0, 0, 0], results


# -- properties ------------------------------------------------------------------------------------


@PROPERTY
@given(content=nasty_text, scope=nasty_text, at=edge_times, metadata=st.dictionaries(nasty_text, json_values))
def test_add_note_either_keeps_the_input_exactly_or_refuses_it(
    memory: Memory, content: str, scope: str, at: str | None, metadata: dict[str, Any]
) -> None:
    before = len(_raw_logs(memory))
    try:
        note_id = memory.add_note(content, at=at, scope=scope, metadata=metadata, actor="agent:prop")
    except InvalidInputError:
        assert len(_raw_logs(memory)) == before  # nothing written
        return
    (raw_log_id,) = memory.read(note_id).raw_log_ids
    assert dict(_raw_logs(memory))[raw_log_id] == content  # kept exactly as given


@PROPERTY
@given(content=nasty_text, at=edge_times)
def test_the_cli_add_exits_0_or_2(
    memory: Memory, capsys: pytest.CaptureFixture[str], content: str, at: str | None
) -> None:
    args = ["add", "--scope", "acme", *(["--at", at] if at is not None else []), "--", content]
    code, _out, err = _cli(memory, capsys, *args)
    assert code in (0, 2), err
    assert "Traceback" not in err and (code == 0 or len(err.strip().splitlines()) == 1)


@PROPERTY
@given(lines=st.lists(st.dictionaries(st.sampled_from(["content", "scope", "at", "metadata"]), json_values)))
def test_import_files_exit_0_2_or_4(
    memory: Memory, capsys: pytest.CaptureFixture[str], tmp_path: Path, lines: list[dict[str, Any]]
) -> None:
    path = tmp_path / "prop.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")  # NaN as NaN
    code, _out, err = _cli(memory, capsys, "import", str(path), "--scope", "acme")
    assert code in (0, 2, 4), err
    assert "Traceback" not in err


@pytest.fixture
def scripted_memory(database_url: str, tmp_path: Path, scripted_llm) -> Iterator[Memory]:
    mem = Memory(tmp_path / "scripted-home", database_url=database_url, llm=MODEL)
    try:
        yield mem
    finally:
        mem.close()


def _answers() -> st.SearchStrategy[str]:
    field = st.sampled_from(["keywords", "tags", "context", "category", "decision_rationale", "valid_at"])
    weird = st.one_of(
        json_values, st.sampled_from(["9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+05:00"])
    )
    near_valid = st.builds(
        lambda f, v, nan: json.dumps(
            {
                "keywords": ["a"],
                "tags": ["b"],
                "context": "c",
                "category": "renewal",
                "decision_rationale": None,
                "valid_at": None,
                "extra": {},
                "links": [],
                "updates": [],
                "contradictions": [],
                f: v,
            },
            allow_nan=nan,
        ),
        field,
        weird,
        st.booleans(),
    )
    return st.one_of(nasty_text, near_valid)


@PROPERTY
@given(answer=_answers())
def test_any_model_answer_leaves_the_raw_log_kept(scripted_memory: Memory, scripted_llm, answer: str) -> None:
    scripted_llm.queue.clear()
    scripted_llm.default = lambda _messages: answer
    try:
        note_id = scripted_memory.add_note("Acme renewed with SSO", scope="acme", actor="agent:prop")
    except AnalysisPendingError as exc:
        with scripted_memory.ledger.read() as tx:
            state = tx.raw_log_state(exc.raw_log_id)
        assert state is not None and state["state"] == RawLogState.FAILED.value
        assert ("Acme renewed with SSO") in [t for i, t in _raw_logs(scripted_memory) if i == exc.raw_log_id]
    else:
        assert scripted_memory.read(note_id).content == "Acme renewed with SSO"
    with scripted_memory.ledger.engine.connect() as conn:  # every attempt recorded, storably
        assert conn.execute(sa.select(sa.func.count()).select_from(llm_calls)).scalar_one() > 0


def test_proposals_and_decisions_refuse_text_the_ledger_cannot_hold(memory: Memory) -> None:
    note = make_note(memory, "Acme renewed")
    for value, reason in (("a\x00b", "r"), ("ok", "why\x00"), ("x\udc80", "r"), (["t\x00"], "r")):
        attribute = "tags" if isinstance(value, list) else "decision_rationale"
        with pytest.raises(InvalidInputError, match=r"NUL|lone surrogate"):
            memory.propose(note.id, attribute, value, reason=reason, proposer=llm_proposer(memory))
    p = memory.propose(note.id, "decision_rationale", "renewal", reason="r", proposer=llm_proposer(memory))
    alice = signed_in(memory, "alice")
    with pytest.raises(InvalidInputError, match="comment: character 3 is a NUL"):
        memory.reject(p.id, reviewer=alice, comment="no\x00")
    with pytest.raises(InvalidInputError, match="comment: character 3 is a NUL"):
        memory.approve(p.id, reviewer=alice, comment="ok\x00")
    assert memory.pending()[0].id == p.id
