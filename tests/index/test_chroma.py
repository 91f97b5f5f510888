"""Chroma as amem uses it: a persistent collection that reopens offline, and a Chroma server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from amem.index.chroma import collection_name
from amem.memory import Memory
from tests.factories import llm_proposer, make_note, signed_in

CHROMA = str(Path(sys.executable).with_name("chroma"))
STARTUP_SECONDS = 60


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to a host other than loopback fails, as on a machine with no network."""
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: object) -> None:
        host = address[0] if isinstance(address, tuple) else address
        if (
            isinstance(host, str)
            and host not in ("127.0.0.1", "::1", "localhost")
            and self.family != socket.AF_UNIX
        ):
            raise OSError(f"network is off in this test (tried {address})")
        real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", _refuse_dns(socket.getaddrinfo))


def _refuse_dns(real: object) -> object:
    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if host not in ("127.0.0.1", "::1", "localhost", None):
            raise OSError(f"network is off in this test (looked up {host})")
        return real(host, *args, **kwargs)  # type: ignore[operator]

    return getaddrinfo


def test_a_reopened_collection_embeds_offline_with_amems_own_function(tmp_path: Path, offline: None) -> None:
    with Memory(tmp_path / "home") as memory:
        note = make_note(memory, "Acme's procurement needs a W-9 form", tags=["billing"])
        memory.search("tax form", k=1, scope="acme")
        index_path = memory.settings.chroma_path
        build = memory.search_service.index.build

    import chromadb
    from chromadb.config import Settings

    # A bare client reopens the collection without being told the function: Chroma rebuilds it from
    # the stored config under amem's registered name, not its own default (which would download).
    client = chromadb.PersistentClient(path=str(index_path), settings=Settings(anonymized_telemetry=False))
    try:
        collection = client.get_collection(collection_name("amem_notes", build, "acme"))
        assert collection.configuration["embedding_function"].name() == "amem-embedder"
        found = collection.query(query_texts=["which tax form does procurement need"], n_results=1)
        assert found["ids"] == [[note.id]]
    finally:
        client.close()

    with Memory(tmp_path / "home") as memory:
        assert [r.note_id for r in memory.search("tax form", k=1, scope="acme")] == [note.id]


def test_the_index_files_never_hold_what_was_said(tmp_path: Path) -> None:
    """The index keeps vectors and the metadata queries filter on; the text stays in the ledger,
    so nothing said (a phone number, a name) is copied into Chroma's files."""
    said = f"Priya's direct line is {uuid.uuid4().int % 10**10:010d}"
    with Memory(tmp_path / "home") as memory:
        memory.add_note(f"Call notes: {said}, call after 3pm", actor="agent:crm", scope="acme")
        make_note(memory, f"Contract note: {said}", tags=["contract"])
        index_path = memory.settings.chroma_path
    with Memory(tmp_path / "home") as memory:  # what a new process finds in the files
        assert memory.search_service.index.count() == 2
        assert len(memory.search("Priya's direct line", k=2, scope="acme")) == 2
    files = [p for p in index_path.rglob("*") if p.is_file()]
    assert any(p.name == "chroma.sqlite3" for p in files)
    assert not [p for p in files if said.encode() in p.read_bytes()]


def test_a_note_written_again_drops_the_text_an_older_amem_left_in_the_index(tmp_path: Path) -> None:
    """An index written by amem before its entries stopped carrying text still holds each note's
    document; the next write of the note leaves none."""
    with Memory(tmp_path / "home") as memory:
        note = make_note(memory, "Wayne Corp master agreement", tags=["contract"])
        memory.search("master agreement", k=1, scope="acme")
        collection = memory.search_service.index._collection("acme", create=True)
        # a retirement changes the entry's metadata only, a new context its vector: each clears it
        for attribute, value in (("invalid_at", "2030-01-01T00:00:00Z"), ("context", "escrow agreed")):
            held = collection.get(ids=[note.id], include=["embeddings", "metadatas"])
            collection.upsert(  # as an older amem wrote it
                ids=[note.id],
                embeddings=held["embeddings"],
                metadatas=held["metadatas"],
                documents=["Wayne Corp master agreement"],
            )
            p = memory.propose(note.id, attribute, value, reason="t", proposer=llm_proposer(memory))
            memory.approve(p.id, reviewer=signed_in(memory, "alice"))
            memory.search_service.catch_up()
            assert collection.get(ids=[note.id], include=["documents"])["documents"] == [""], attribute


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromaServer:
    """``chroma run`` on loopback, with its own data directory."""

    def __init__(self, path: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = path.with_suffix(".log").open("wb")
        self.process = subprocess.Popen(
            [CHROMA, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        self._wait_until_up()

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.1)  # polling an external process's readiness, bounded by the deadline
        self.stop()
        raise RuntimeError(f"chroma run did not answer within {STARTUP_SECONDS} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()


@pytest.fixture
def chroma_servers(tmp_path: Path) -> Iterator[list[ChromaServer]]:
    started: list[ChromaServer] = []
    try:
        yield started
    finally:
        for server in started:
            server.stop()


@pytest.mark.slow
def test_a_chroma_server_holds_the_index_and_an_empty_one_is_refilled(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chroma_servers: list[ChromaServer]
) -> None:
    if not Path(CHROMA).exists() or shutil.which(CHROMA) is None:
        pytest.skip("the chroma command is not installed beside this Python")
    first = ChromaServer(tmp_path / "server-a")
    chroma_servers.append(first)
    monkeypatch.setenv("AMEM_CHROMA_URL", f"{first.url}/acme_store")

    with Memory(tmp_path / "home", database_url=database_url) as memory:
        mine = make_note(memory, "Acme wants the audit log exported nightly", tags=["data-export"])
        make_note(memory, "Globex wants the audit log exported nightly", scope="globex")
        found = memory.search("export of audit logs", k=5, scope="acme")
        assert [r.note_id for r in found] == [mine.id]
        assert memory.search_service.index.store == "acme_store"
        assert not (memory.home / "index").exists()  # nothing written locally
    first.stop()

    second = ChromaServer(tmp_path / "server-b")  # an empty server: the next open rebuilds there
    chroma_servers.append(second)
    monkeypatch.setenv("AMEM_CHROMA_URL", f"{second.url}/acme_store")
    with Memory(tmp_path / "home", database_url=database_url) as memory:
        assert memory.search_service.index.count() == 2
        assert [r.note_id for r in memory.search("export of audit logs", k=5, scope="acme")] == [mine.id]


def test_every_scope_gets_its_own_valid_collection_name() -> None:
    scopes = ("a/b", "a b", "a-b", "Ümlaut é", "x" * 200, "-")
    names = {collection_name("amem_notes", "0123456789abcdef", s) for s in scopes}
    assert len(names) == 6
    for name in names:
        assert 3 <= len(name) <= 512 and name[0].isalnum() and name[-1].isalnum()
        assert all(ch.isascii() and (ch.isalnum() or ch in "._-") for ch in name)


def test_scopes_whose_names_look_alike_stay_apart(tmp_path: Path) -> None:
    with Memory(tmp_path / "home") as memory:
        one = make_note(memory, "Quarterly review with the CFO", scope="team/a b")
        two = make_note(memory, "Quarterly review with the CFO", scope="team/a-b")
        assert [r.note_id for r in memory.search("quarterly review", k=5, scope="team/a b")] == [one.id]
        assert [r.note_id for r in memory.search("quarterly review", k=5, scope="team/a-b")] == [two.id]
        assert memory.search("quarterly review", k=5, scope="team") == []


OPEN_AT_ONCE = """
import sys
from pathlib import Path
from amem.config import Settings
from amem.index.chroma import open_chroma
from amem.index.embedders import MiniLMEmbedder

settings = Settings(home=Path(sys.argv[1]))
print("ready", flush=True)
sys.stdin.readline()  # released together with the others
index = open_chroma(settings, MiniLMEmbedder())
print(index.count(), flush=True)
"""


def test_processes_opening_a_fresh_local_index_together_all_succeed(tmp_path: Path) -> None:
    """Two `amem worker`s started together on a new store: Chroma's first open creates its tables,
    and an unguarded second open failed ("table collections already exists")."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for attempt in range(4):  # the race is not lost every time: several fresh stores
        home = tmp_path / f"home-{attempt}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AT_ONCE, str(home)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for _ in range(4)
        ]
        try:
            for p in procs:
                assert p.stdout is not None and p.stdout.readline().strip() == "ready"
            for p in procs:
                assert p.stdin is not None
                p.stdin.write("go\n")
                p.stdin.flush()
            results = [p.communicate(timeout=120) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        assert [p.returncode for p in procs] == [0, 0, 0, 0], [err[-600:] for _, err in results]
