"""A retry of an erased input with its idempotency key: ``add_note`` answered with the deleted note's
id (`amem add` printed it as a note kept); it now says the input was erased, as ``add_notes``, the
HTTP API and the MCP server report it, and records nothing."""

from __future__ import annotations

import pytest

from amem.errors import InputErasedError
from amem.memory import Memory
from tests.factories import signed_in

TEXT = "Globex chose the annual plan because Paul Smith from finance wants one invoice."


def test_retrying_an_erased_input_by_its_key_says_it_was_erased(memory: Memory) -> None:
    first = memory.add_note(TEXT, actor="agent:sales-agent", scope="globex", idempotency_key="msg-42")
    assert memory.add_note(TEXT, actor="agent:sales-agent", scope="globex", idempotency_key="msg-42") == first
    (raw_log_id,) = memory.read(first).raw_log_ids
    memory.erase(by=signed_in(memory, "alice"), reason="GDPR art. 17", raw_log_id=raw_log_id)
    with pytest.raises(InputErasedError, match=r"erased on a data subject's request") as retry:
        memory.add_note(TEXT, actor="agent:sales-agent", scope="globex", idempotency_key="msg-42")
    assert retry.value.raw_log_id == raw_log_id
    # as the others report it
    (outcome,) = memory.add_notes(
        [{"content": TEXT, "scope": "globex", "idempotency_key": "msg-42"}], actor="agent:sales-agent"
    )
    (erasure,) = memory.erasures()  # add_note names the erasure: who, when, which
    assert (retry.value.erasure_id, retry.value.erased_by) == (erasure.id, "alice")
    assert outcome.error is not None and raw_log_id in outcome.error and "erased" in outcome.error
    assert (outcome.raw_log_id, outcome.erasure_id) == (raw_log_id, erasure.id)  # which erasure, apart
    assert memory.input_status(raw_log_id).status == "erased"
    assert memory.count_raw_logs() == 1  # nothing kept again
