"""Idempotency keys: an input its sender names with a key is kept once, whatever the retries (the
answer lost to a timeout, a retry racing the first request), on both backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from amem import AddOutcome
from amem.errors import AnalysisPendingError, InvalidBatchInputError, InvalidInputError
from amem.memory import Memory
from tests.agents.test_load_paths import _hold_first_commit
from tests.services.test_pipeline import _raw_log_count, construct, link


def keyed(text: str, key: str, scope: str = "globex", **extra: Any) -> dict[str, Any]:
    return {"content": text, "scope": scope, "idempotency_key": key, **extra}


def test_an_input_sent_again_with_its_key_is_kept_once(mem: Memory) -> None:
    """No ``at``, so nothing but the key tells the retry from a new input."""
    (first,) = mem.add_notes([keyed("Globex wants SSO", "msg-1")], actor="agent:crm", wait=False)
    (again,) = mem.add_notes([keyed("Globex wants SSO", "msg-1")], actor="agent:crm", wait=False)
    assert not first.recorded_before
    assert again.recorded_before and again.raw_log_id == first.raw_log_id
    assert _raw_log_count(mem) == 1 and mem.queue_depth()["queued"] == 1


def test_a_retry_after_the_note_was_built_answers_with_that_note(mem: Memory, scripted_llm) -> None:
    scripted_llm.push(construct(keywords=["Globex"]), link())
    (first,) = mem.add_notes([keyed("Globex renewed for two years", "crm-7")], actor="agent:crm")
    (again,) = mem.add_notes([keyed("Globex renewed for two years", "crm-7")], actor="agent:crm")
    assert first.note_id is not None
    assert (again.recorded_before, again.raw_log_id, again.note_id) == (True, first.raw_log_id, first.note_id)
    assert mem.count_notes("globex") == 1 and _raw_log_count(mem) == 1


def test_keys_belong_to_their_author(mem: Memory) -> None:
    """Two agents that both number their messages from 1 never meet."""
    one = mem.add_notes([keyed("Globex wants SSO", "1")], actor="agent:crm", wait=False)
    two = mem.add_notes([keyed("Globex wants SSO", "1")], actor="agent:mail", wait=False)
    assert not one[0].recorded_before and not two[0].recorded_before
    assert one[0].raw_log_id != two[0].raw_log_id and _raw_log_count(mem) == 2


def test_a_key_given_to_another_input_is_refused_and_nothing_of_the_batch_is_kept(mem: Memory) -> None:
    (first,) = mem.add_notes([keyed("Globex wants SSO", "msg-1")], actor="agent:crm", wait=False)
    batch = [keyed("Globex signed", "msg-2"), keyed("Globex wants SAML", "msg-1")]
    with pytest.raises(InvalidBatchInputError) as caught:
        mem.add_notes(batch, actor="agent:crm", wait=False)
    assert [position for position, _ in caught.value.problems] == [2]
    assert "names another input" in caught.value.problem and first.raw_log_id in caught.value.problem
    assert _raw_log_count(mem) == 1


def test_a_key_names_one_input_in_each_scope(mem: Memory) -> None:
    """Two tokens of one name (one author, agent:crm-sync), limited to different accounts, number
    their inputs alike: each scope keeps its own input, a retry in either answers with its own,
    and a refusal names the input of the scope the sender is adding to, never another's."""
    initech = keyed("Initech: CFO is leaving in May", "ticket-42", scope="initech")
    acme = keyed("Acme asked for an invoice copy", "ticket-42", scope="acme")
    (theirs,) = mem.add_notes([initech], actor="agent:crm-sync", wait=False)
    (ours,) = mem.add_notes([acme], actor="agent:crm-sync", wait=False)
    assert not ours.recorded_before and ours.raw_log_id != theirs.raw_log_id
    again = mem.add_notes([acme, initech], actor="agent:crm-sync", wait=False)
    assert [(a.recorded_before, a.raw_log_id) for a in again] == [
        (True, ours.raw_log_id),
        (True, theirs.raw_log_id),
    ]
    guessed = initech | {"scope": "acme"}  # the other scope's text under the key, in acme
    with pytest.raises(InvalidBatchInputError) as caught:
        mem.add_notes([guessed], actor="agent:crm-sync", wait=False)
    assert ours.raw_log_id in caught.value.problem and theirs.raw_log_id not in caught.value.problem
    assert "initech" not in caught.value.problem
    both = [keyed("Globex signed", "k", scope="globex"), keyed("Umbrella signed", "k", scope="umbrella")]
    assert not any(o.recorded_before for o in mem.add_notes(both, actor="agent:crm-sync", wait=False))
    assert _raw_log_count(mem) == 4


def test_a_key_given_twice_in_one_batch_is_refused_naming_both(mem: Memory) -> None:
    batch = [keyed("Globex signed", "k"), keyed("Globex wants SSO", "other"), keyed("Globex churned", "k")]
    with pytest.raises(InvalidBatchInputError) as caught:
        mem.add_notes(batch, actor="agent:crm", wait=False)
    ((position, problem),) = caught.value.problems
    assert position == 3 and "given to input 1 too" in problem
    assert _raw_log_count(mem) == 0


@pytest.mark.parametrize("key", ["line\nbreak", "   ", "\u200b"])
def test_a_key_that_is_not_one_visible_line_is_refused(mem: Memory, key: str) -> None:
    with pytest.raises(InvalidBatchInputError, match="idempotency_key"):
        mem.add_notes([keyed("Globex signed", key)], actor="agent:crm", wait=False)
    assert _raw_log_count(mem) == 0


def test_keys_hold_without_skip_recorded_and_beside_timed_inputs(mem: Memory) -> None:
    """skip_recorded is about inputs matched by their time; a key is honoured either way."""
    timed = {"content": "Globex pays $42 a seat", "scope": "globex", "at": "2026-03-01T10:00:00Z"}
    first = mem.add_notes([keyed("Globex wants SSO", "a"), timed], actor="agent:crm", wait=False)
    second = mem.add_notes([keyed("Globex wants SSO", "a"), timed], actor="agent:crm", wait=False)
    assert [o.recorded_before for o in second] == [True, False]  # the timed one is kept again
    third = mem.add_notes([timed], actor="agent:crm", wait=False, skip_recorded=True)
    assert third[0].recorded_before and third[0].raw_log_id == first[1].raw_log_id
    assert _raw_log_count(mem) == 3


def test_a_retry_racing_the_first_request_is_kept_once(mem: Memory) -> None:
    """The first request's commit is held open; the retry looks its key up then (nothing yet),
    and reaches the database after the first commits: the key is taken, nothing of the retry's
    commit is kept, and it answers with the first request's raw log. The retry's other input,
    unkeyed, is kept once."""
    group = mem.queue._group
    release = _hold_first_commit(group)
    answers: dict[str, list[AddOutcome]] = {}

    def send(name: str, batch: list[dict[str, Any]]) -> None:
        answers[name] = mem.add_notes(batch, actor="agent:crm", wait=False)

    first = threading.Thread(target=send, args=("first", [keyed("Globex wants SSO", "msg-1")]))
    first.start()
    with group._cond:
        assert group._cond.wait_for(lambda: group._leading, timeout=60)
    retry_batch = [
        keyed("Globex wants SSO", "msg-1"),
        {"content": "Globex asked for a demo", "scope": "globex"},
    ]
    retry = threading.Thread(target=send, args=("retry", retry_batch))
    retry.start()
    with group._cond:  # the retry looked its key up and waits to commit
        assert group._cond.wait_for(lambda: len(group._waiting) == 1, timeout=60)
    release.set()
    first.join(60)
    retry.join(60)

    (kept,) = answers["first"]
    again, other = answers["retry"]
    assert not kept.recorded_before
    assert again.recorded_before and again.raw_log_id == kept.raw_log_id
    assert not other.recorded_before
    assert _raw_log_count(mem) == 2 and mem.queue_depth()["queued"] == 2


def test_many_racing_retries_keep_one_input(mem: Memory) -> None:
    """Eight threads send the same keyed input at once: one raw log, and every answer names it."""
    answers: list[AddOutcome] = []
    start = threading.Barrier(8)

    def send() -> None:
        start.wait(60)
        answers.extend(mem.add_notes([keyed("Globex wants SSO", "msg-1")], actor="agent:crm", wait=False))

    threads = [threading.Thread(target=send) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(answers) == 8 and len({o.raw_log_id for o in answers}) == 1
    assert sum(not o.recorded_before for o in answers) == 1
    assert _raw_log_count(mem) == 1


def test_add_note_with_a_key_answers_a_retry_with_the_note_kept_before(mem: Memory, scripted_llm) -> None:
    scripted_llm.push(construct(keywords=["Globex"]), link())
    note_id = mem.add_note("Globex renewed", actor="agent:crm", scope="globex", idempotency_key="m-1")
    assert mem.add_note("Globex renewed", actor="agent:crm", scope="globex", idempotency_key="m-1") == note_id
    assert mem.count_notes("globex") == 1 and _raw_log_count(mem) == 1

    raw_log_id = mem.add_note(
        "Globex churned", actor="agent:crm", scope="globex", wait=False, idempotency_key="m-2"
    )
    with pytest.raises(AnalysisPendingError) as pending:  # kept before, waiting for a worker
        mem.add_note("Globex churned", actor="agent:crm", scope="globex", idempotency_key="m-2")
    assert pending.value.raw_log_id == raw_log_id
    with pytest.raises(InvalidInputError, match="names another input"):
        mem.add_note("Globex signed", actor="agent:crm", scope="globex", idempotency_key="m-1")
    assert _raw_log_count(mem) == 2


def test_keeping_inputs_for_the_workers_loads_neither_a_model_nor_the_index(tmp_path: Path) -> None:
    """An API server keeps keyed and timed inputs (add_notes without waiting) with the ledger alone:
    before, the first such input built the whole pipeline and loaded Chroma (about a second)."""
    probe = (
        "import json, os, sys\n"
        "from amem.memory import Memory\n"
        f"m = Memory({str(tmp_path / 'home')!r})\n"
        "items = [{'content': 'Acme wants SSO', 'scope': 'acme', 'idempotency_key': 'k'},\n"
        "         {'content': 'Acme signed', 'scope': 'acme', 'at': '2026-03-01T10:00:00Z'}]\n"
        "first = m.add_notes(items, actor='agent:crm', wait=False, skip_recorded=True)\n"
        "again = m.add_notes(items, actor='agent:crm', wait=False, skip_recorded=True)\n"
        "assert [o.recorded_before for o in again] == [True, True], again\n"
        "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules})))\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert not loaded & {"chromadb", "litellm", "onnxruntime", "yake"}, sorted(loaded)


def test_one_timed_input_given_twice_in_a_batch_is_kept_once_and_its_retry_names_the_same_raw_log(
    mem: Memory, scripted_llm
) -> None:
    """The same text, scope and metadata at one time is one input, in a batch as across requests.
    Before: the batch kept two raw logs, and its retry named the first for both."""
    same = {"content": "Globex called about SSO", "scope": "globex", "at": "2025-05-01T10:00:00Z"}
    other_metadata = {**same, "metadata": {"activity": "A-2"}}
    batch = [same, dict(same), other_metadata]
    first = mem.add_notes(batch, actor="agent:crm", wait=False, skip_recorded=True)
    assert [o.recorded_before for o in first] == [False, True, False]
    assert first[1].raw_log_id == first[0].raw_log_id != first[2].raw_log_id
    assert _raw_log_count(mem) == 2 and mem.queue_depth()["queued"] == 2

    retry = mem.add_notes(batch, actor="agent:crm", wait=False, skip_recorded=True)
    assert [o.raw_log_id for o in retry] == [o.raw_log_id for o in first]
    assert all(o.recorded_before for o in retry) and _raw_log_count(mem) == 2


def test_a_repeated_input_of_an_analysed_batch_answers_with_the_one_note(mem: Memory, scripted_llm) -> None:
    scripted_llm.default = lambda messages: link()
    scripted_llm.push(construct(keywords=["Initech"]))
    same = {"content": "Initech signed the pilot", "scope": "initech", "at": "2025-06-02T09:00:00Z"}
    outcomes = mem.add_notes([same, dict(same)], actor="agent:crm", skip_recorded=True)
    assert outcomes[0].note_id is not None
    assert [(o.raw_log_id, o.note_id) for o in outcomes[1:]] == [
        (outcomes[0].raw_log_id, outcomes[0].note_id)
    ]
    assert mem.count_notes("initech") == 1 and _raw_log_count(mem) == 1
    assert mem.queue_depth() == {"queued": 0, "processing": 0, "failed": 0}
