"""An erasure reaches the memory of the other processes open on the ledger (a server, a worker):
the texts they keep outside it go before their next search or analysis goes on.

The erasure runs as `amem erase` in a child process, as it does in production; this test's process
plays the long-lived one, with the offline analyst's and the searches' caches filled.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from amem.memory import Memory
from amem.services.text_caches import TEXT_CACHES
from tests.conftest import REVIEWER_PASSWORDS, deleted_files_held

REPO = Path(__file__).resolve().parents[2]
CLI = "import sys; from amem.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture(autouse=True)
def _passwords(reviewer_passwords: dict[str, str]) -> None:
    """Every reviewer has a password (AMEM_POLICY, which the child process inherits)."""


def erase_elsewhere(memory: Memory, raw_log_id: str) -> None:
    """`amem erase` of one raw log, by alice, in a process of its own."""
    argv = ["--database-url", memory.settings.database_url, "--home", str(memory.home), "erase"]
    argv += ["--raw-log", raw_log_id, "--reviewer", "alice", "--reason", "request", "--password-stdin"]
    child = subprocess.run(
        [sys.executable, "-c", CLI, *argv],
        input=REVIEWER_PASSWORDS["alice"] + "\n",
        env={**os.environ, "PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr


def cached_texts() -> int:
    return sum(getattr(importlib.import_module(m), f).cache_info().currsize for m, f in TEXT_CACHES)


def test_a_process_that_stayed_open_forgets_what_it_read_of_an_erased_input(memory: Memory) -> None:
    gone = memory.add_note("Mrs Quibblestone asked about the renewal price", actor="agent:x", scope="acme")
    kept = memory.add_note("Acme renewal in March with SSO", actor="agent:x", scope="acme")
    assert {h.note.id for h in memory.search("renewal price", scope="acme")} == {gone, kept}
    assert cached_texts() > 0 and len(memory.search_service.hit_rows) > 0

    erase_elsewhere(memory, memory.read(gone).raw_log_ids[0])

    assert [h.note.id for h in memory.search("renewal price", scope="acme")] == [kept]
    assert cached_texts() == 0
    assert len(memory.search_service.hit_rows) <= 1  # the kept note's row, read again


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads the open files from Linux's /proc")
def test_the_replaced_index_files_a_server_holds_open_keep_no_bytes(memory: Memory) -> None:
    """A process open on the store kept the index files it read until it ended. The erasure's
    rebuild removed the replaced build's files, which freed nothing while a server held them: the
    erased entry's vector stayed on disk, with a copy of every other one, until a restart. They are
    emptied at once, and let go of when the server adopts the new build."""
    gone = memory.add_note("Mrs Quibblestone asked about the renewal price", actor="agent:x", scope="acme")
    kept = memory.add_note("Acme renewal in March with SSO", actor="agent:x", scope="acme")
    memory.search("renewal price", scope="acme")  # this process reads, so holds, the build's files

    erase_elsewhere(memory, memory.read(gone).raw_log_ids[0])

    held = deleted_files_held(memory.home)
    assert held, "this process holds no removed index file: nothing here would show the bytes"
    assert {f: size for f, size in held.items() if size} == {}
    assert [h.note.id for h in memory.search("renewal price", scope="acme")] == [kept]
    assert deleted_files_held(memory.home) == {}  # adopting the new build, it let go of them


def test_a_worker_notices_the_erasure_once_before_its_next_analysis(memory: Memory) -> None:
    gone = memory.add_note("Mrs Quibblestone asked about the renewal price", actor="agent:x", scope="acme")
    memory.add_note("Acme renewal in March with SSO", actor="agent:x", scope="acme")
    noticed: list[int] = []
    memory.search_service.sync.on_erasure.append(lambda: noticed.append(cached_texts()))

    erase_elsewhere(memory, memory.read(gone).raw_log_ids[0])
    memory.add_note("Acme asked for a quote on 40 more seats", actor="agent:x", scope="acme")
    memory.add_note("Acme signed the quote for 40 more seats", actor="agent:x", scope="acme")

    # called once, after the other hooks emptied the caches (the new note's reading comes after)
    assert noticed == [0]


def test_what_a_search_staged_before_an_erasure_never_reaches_the_index_files(memory: Memory) -> None:
    """A server's searches stage the notes workers wrote, beside the index, and a later recording
    catch-up writes them in. One staged before an erasure held the erased text: written after it,
    it put the text back into Chroma's files. The catch-up now asks the ledger first, drops what it
    staged, and reads those notes again as they stand."""
    from tests.factories import said

    said(memory, "Acme call about SSO", scope="acme")
    memory.search("sso", scope="acme")  # this process's view of the index is at the head
    writer = Memory(memory.home, database_url=memory.settings.database_url)  # a worker, elsewhere
    gone = said(writer, "Acme's new champion is Zqxwvbrek Oyelaran", scope="acme")
    writer.close()
    memory.search("champion", scope="acme")  # a search's catch-up stages the worker's note
    assert gone.id in memory.search_service.sync.staged()

    erase_elsewhere(memory, gone.raw_log_ids[0])
    memory.search_service.catch_up()  # a recording catch-up: what was staged is written now

    holding = [
        str(f) for f in (memory.home / "index").rglob("*") if f.is_file() and b"Zqxwvbrek" in f.read_bytes()
    ]
    assert holding == []
    assert gone.id not in memory.search_service.sync.staged()
    assert [h.note.id for h in memory.search("Zqxwvbrek Oyelaran champion", scope="acme")] != [gone.id]


@pytest.mark.parametrize("taken", ["eraser role", "account"])
def test_a_process_opened_before_a_policy_install_erases_nothing_the_new_policy_forbids(
    memory: Memory, taken: str
) -> None:
    """Another process installs a policy that takes alice's eraser role, or the account, away: this
    process, opened before, erases nothing for her, as it approves and reverts nothing, until it is
    started again under the policy in force."""
    from amem.errors import PolicyMismatchError
    from tests.factories import said, signed_in

    gone = said(memory, "Mrs Quibblestone of Acme asked about the renewal price")
    alice = signed_in(memory, "alice")
    if taken == "eraser role":
        newer = memory.policy.model_copy(update={"erasers": ["sales_lead"]})
    else:  # carol, a cs_lead of every account, stays the policy admin who can install the next
        before = memory.policy.reviewers["alice"]
        reviewers = {**memory.policy.reviewers, "alice": before.model_copy(update={"scopes": ["globex"]})}
        newer = memory.policy.model_copy(update={"reviewers": {**reviewers, "carol": before}})
    with Memory(memory.home, database_url=memory.settings.database_url) as admin:
        assert admin.install_policy(newer, by=signed_in(admin, "alice"))[1]

    with pytest.raises(PolicyMismatchError, match="policy changed since this process started"):
        memory.erase(by=alice, reason="request", raw_log_id=gone.raw_log_ids[0])

    assert memory.raw_logs(gone.raw_log_ids)[0].text == gone.content and memory.erasures() == []
