"""Migrations from empty, downgrade/upgrade with data kept, and the version check on open."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from amem.cli import main
from amem.errors import MigrationRefusedError, SchemaMismatchError
from amem.ledger import schema
from amem.ledger.store import create_engine
from amem.memory import Memory
from tests.factories import contradict, make_note, record_tokens_as_before_0022
from tests.ledger import older_ledgers


def test_upgrade_from_empty_creates_every_table(database_url: str) -> None:
    engine = create_engine(database_url)
    assert schema.current_revision(engine) is None
    schema.upgrade(engine)
    assert schema.current_revision(engine) == schema.head_revision()
    tables = set(sa.inspect(engine).get_table_names())
    assert {"raw_logs", "notes", "proposals", "changes", "llm_calls", "chain_head"} <= tables
    # every index the tables declare is made by the migrations (an import run again finds the
    # inputs it recorded before by their text's digest, without reading a scope's raw logs)
    from amem.ledger.tables import metadata

    inspector = sa.inspect(engine)
    for table in metadata.sorted_tables:
        made = {ix["name"] for ix in inspector.get_indexes(table.name)}
        assert {ix.name for ix in table.indexes} <= made, table.name
    assert "ix_raw_logs_sha256" in {ix["name"] for ix in inspector.get_indexes("raw_logs")}
    engine.dispose()


def test_cli_db_upgrade_then_open(database_url: str, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--database-url", database_url, "db", "upgrade"]) == 0
    assert f"-> {schema.head_revision()}" in capsys.readouterr().out
    with Memory(tmp_path / "h", database_url=database_url, create=False) as mem:
        assert mem.verify().ok


def test_downgrade_and_upgrade_keep_data(memory: Memory) -> None:
    note = make_note(memory, "Initech wants a pilot in Q3", tags=["pilot"])
    engine = memory.ledger.engine
    schema.downgrade(engine, "0008")  # as far as a ledger with history on its chain may go
    assert schema.current_revision(engine) == "0008"
    schema.upgrade(engine)
    assert schema.current_revision(engine) == schema.head_revision()
    assert memory.read(note.id).tags == ["pilot"]
    assert memory.verify().ok


def test_downgrade_to_nothing_refused_while_raw_logs_exist(memory: Memory) -> None:
    make_note(memory, "a raw log is never dropped")
    engine = memory.ledger.engine
    with pytest.raises(MigrationRefusedError, match="below 0008: the event chain"):
        schema.downgrade(engine, "base")
    assert memory.verify().raw_logs_checked == 1
    older_ledgers.back_to(engine, "0001")  # as an amem before the chain kept it
    with pytest.raises(MigrationRefusedError, match="raw logs"):
        schema.downgrade(engine, "base")
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM raw_logs")).scalar_one() == 1


def test_empty_ledger_downgrades_to_nothing(database_url: str) -> None:
    engine = create_engine(database_url)
    schema.upgrade(engine)
    schema.downgrade(engine, "base")
    assert schema.current_revision(engine) is None
    assert "raw_logs" not in sa.inspect(engine).get_table_names()
    engine.dispose()


def test_older_schema_is_refused_with_the_command_to_run(memory: Memory, tmp_path) -> None:
    schema.downgrade(memory.ledger.engine, schema.known_revisions()[-2])
    with pytest.raises(SchemaMismatchError, match=r"older.*amem db upgrade"):
        Memory(tmp_path / "h2", database_url=memory.settings.database_url)


def test_newer_schema_is_refused(memory: Memory, tmp_path) -> None:
    with memory.ledger.engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(SchemaMismatchError, match="newer than this amem"):
        Memory(tmp_path / "h2", database_url=memory.settings.database_url)


def test_missing_schema_is_refused_when_not_creating(database_url: str, tmp_path) -> None:
    """A database that exists without amem's schema: a SQLite file that does not exist at all is
    refused earlier, naming the file (tests/test_memory_require_store.py)."""
    if database_url.startswith("sqlite"):
        sa.create_engine(database_url).connect().close()  # an empty file, as SQLite makes one
    with pytest.raises(SchemaMismatchError, match="amem db upgrade"):
        Memory(tmp_path / "h", database_url=database_url, create=False)


def test_cli_names_the_command_without_a_traceback(
    memory: Memory, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema.downgrade(memory.ledger.engine, schema.known_revisions()[-2])
    assert main(["--database-url", memory.settings.database_url, "pending"]) == 2
    captured = capsys.readouterr()
    assert "amem db upgrade" in captured.err
    assert "Traceback" not in captured.err


def test_the_quick_schema_check_reads_the_same_head_as_alembic() -> None:
    """The check on open reads the head from the revision files without Alembic: it must agree."""
    assert schema.fast_head() == schema.head_revision()


def test_tokens_made_before_their_events_were_recorded_are_chained_by_the_upgrade(
    database_url: str, tmp_path: Path
) -> None:
    """A ledger at 0015 whose tokens exist only as api_tokens rows: migration 0016 records each as
    made (and revoked, where it was) and chains those records, so verify holds and would now find
    a token planted later."""
    from datetime import UTC, datetime

    from amem.ledger.tables import api_tokens

    engine = create_engine(database_url)
    schema.upgrade(engine, "0015")
    made = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    tokens = [("crm-sync", "agent", None), ("alice", "reviewer", made)]
    with engine.begin() as conn:
        conn.execute(
            sa.insert(api_tokens),
            [
                {"id": f"tok_{i}", "name": name, "role": role, "token_sha256": f"{i}" * 64,
                 "created_at": made, "created_by": None, "revoked_at": revoked}
                for i, (name, role, revoked) in enumerate(tokens)
            ],
        )  # fmt: skip
    schema.upgrade(engine)
    engine.dispose()
    with Memory(tmp_path / "home", database_url=database_url) as memory:
        history = [(e.token_id, e.action, e.name) for e in memory.tokens.history()]
        assert sorted(history) == [
            ("tok_0", "created", "crm-sync"),
            ("tok_1", "created", "alice"),
            ("tok_1", "revoked", "alice"),
        ]
        assert memory.verify().ok, memory.verify().problems


@pytest.fixture
def made_before_0022(monkeypatch: pytest.MonkeyPatch) -> None:
    record_tokens_as_before_0022(monkeypatch)


@pytest.mark.usefixtures("made_before_0022")
def test_a_downgrade_below_0016_is_refused_once_tokens_are_on_the_record(memory: Memory) -> None:
    """Dropping token_events would leave the chain's token events without the records they commit
    to: history is never rewritten, so the downgrade says why it will not run, and changes nothing."""
    memory.tokens.create("crm-sync", "agent")
    with pytest.raises(MigrationRefusedError, match="records 1 token"):
        schema.downgrade(memory.ledger.engine, "0015")
    assert schema.current_revision(memory.ledger.engine) == schema.head_revision()
    assert memory.verify().ok


def _back_to_0016_with_plain_keys(memory: Memory) -> None:
    """The ledger as 0016 kept it: the same rows, each key as sent (0017's downgrade refuses a
    ledger with keys, so the state is made by hand, the triggers lifted and set again)."""
    from amem.domain.hashing import sha256_text
    from amem.ledger.append_only import create_append_only_triggers, drop_append_only_triggers

    class Op:  # what the trigger helpers need of Alembic's op
        def __init__(self, conn: sa.Connection) -> None:
            self.conn = conn

        def get_bind(self) -> sa.Connection:
            return self.conn

        def execute(self, sql: str) -> None:
            self.conn.execute(sa.text(sql))

    schema.downgrade(memory.ledger.engine, "0017")  # the revisions after 0017 undone as they would be
    with memory.ledger.engine.begin() as conn:
        op = Op(conn)
        drop_append_only_triggers(op, "input_keys")
        conn.execute(sa.text("ALTER TABLE input_keys RENAME COLUMN key_sha256 TO idempotency_key"))
        for key in ("msg-1", "<j.doe@mail>"):
            conn.execute(
                sa.text("UPDATE input_keys SET idempotency_key = :key WHERE idempotency_key = :digest"),
                {"key": key, "digest": sha256_text(key)},
            )
        create_append_only_triggers(op, "input_keys")
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0016'"))


def test_keys_recorded_before_0017_are_digested_and_still_recognise_their_retries(
    memory: Memory, tmp_path: Path
) -> None:
    lines = [
        {"content": "Globex wants SSO", "scope": "globex", "idempotency_key": "msg-1"},
        {"content": "Mrs Doe asked us to call", "scope": "globex", "idempotency_key": "<j.doe@mail>"},
    ]
    first = memory.add_notes(lines, actor="agent:mail", wait=False)
    _back_to_0016_with_plain_keys(memory)
    with memory.ledger.engine.connect() as conn:
        plain = conn.execute(sa.text("SELECT idempotency_key FROM input_keys")).scalars().all()
    assert "<j.doe@mail>" in plain

    schema.upgrade(memory.ledger.engine)

    with memory.ledger.engine.connect() as conn:
        kept = conn.execute(sa.text("SELECT key_sha256 FROM input_keys")).scalars().all()
    assert len(kept) == 2 and not any("msg" in k or "doe" in k for k in kept)
    with Memory(tmp_path / "again", database_url=memory.settings.database_url) as reopened:
        again = reopened.add_notes(lines, actor="agent:mail", wait=False)
        assert [a.raw_log_id for a in again] == [f.raw_log_id for f in first]
        assert all(a.recorded_before for a in again) and reopened.count_raw_logs() == 2


def test_a_downgrade_below_0017_is_refused_once_keys_are_kept_as_digests(memory: Memory) -> None:
    line = {"content": "Globex wants SSO", "scope": "globex", "idempotency_key": "m"}
    memory.add_notes([line], actor="agent:crm", wait=False)
    with pytest.raises(MigrationRefusedError, match="1 idempotency key"):
        schema.downgrade(memory.ledger.engine, "0016")
    assert schema.current_revision(memory.ledger.engine) == schema.head_revision()


@pytest.mark.usefixtures("made_before_0022")
def test_a_downgrade_below_0019_is_refused_while_a_token_is_limited_to_some_scopes(memory: Memory) -> None:
    """0018 has no scopes: a limited token would reach every account, and its record not verify."""
    memory.tokens.create("acme-sync", "agent", scopes=["acme"])
    with pytest.raises(MigrationRefusedError, match="1 token record"):
        schema.downgrade(memory.ledger.engine, "0018")
    assert schema.current_revision(memory.ledger.engine) == schema.head_revision()
    assert memory.verify().ok


def test_0019_goes_down_and_up_with_token_records_still_append_only(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as before:
        record_tokens_as_before_0022(before)
        memory.tokens.create("crm-sync", "agent")
    schema.downgrade(memory.ledger.engine, "0018")
    # SQLite rebuilt the table: its guard must be back
    with memory.ledger.engine.connect() as conn, pytest.raises(sa.exc.DatabaseError):
        conn.execute(sa.text("UPDATE token_events SET name = 'mallory'"))
    schema.upgrade(memory.ledger.engine)
    assert memory.verify().ok, memory.verify().problems
    memory.tokens.create("acme-sync", "agent", scopes=["acme"])
    assert [t.scopes for t in memory.tokens.list()] == [None, ["acme"]]


def test_a_downgrade_below_0022_is_refused_once_a_token_creation_records_its_digest(memory: Memory) -> None:
    """0021 has no token_sha256 on the record: the creation's event would no longer verify."""
    memory.tokens.create("crm-sync", "agent")
    with pytest.raises(MigrationRefusedError, match="below 0022: 1 token creation"):
        schema.downgrade(memory.ledger.engine, "0021")
    assert schema.current_revision(memory.ledger.engine) == schema.head_revision()
    assert memory.verify().ok


def test_a_token_made_before_0022_still_verifies_beside_one_made_since(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A creation recorded without its token's digest has nothing to compare the row's with: verify
    holds, and still tells a digest swapped on a token made since."""
    from amem.ledger.tables import api_tokens

    with monkeypatch.context() as before:
        record_tokens_as_before_0022(before)
        memory.tokens.create("crm-sync", "agent")
    made = memory.tokens.create("acme-sync", "agent")[1]
    result = memory.verify()
    assert result.ok, result.problems
    with memory.ledger.engine.begin() as conn:
        conn.execute(sa.update(api_tokens).where(api_tokens.c.id == made.id).values(token_sha256="0" * 64))
    assert memory.verify().bad_row == f"api_tokens {made.id}"


def test_a_downgrade_below_0008_is_refused_while_the_chain_holds_events(
    memory: Memory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`amem db downgrade 0006` then `upgrade` would chain the ledger again without its policy
    history: the signed checkpoints no longer held. Before, both commands exited 0, the policy
    version was gone, and verify said TAMPERED; now the downgrade refuses and changes nothing."""
    from amem.services import checkpoints

    make_note(memory, "Acme pays $42 per seat", tags=["pricing"])
    key, log = tmp_path / "key.pem", tmp_path / "checkpoints.jsonl"
    checkpoints.init_key(key)
    memory.checkpoint(key=key, log=log)
    engine = memory.ledger.engine  # the engine outlives the Memory: it reads the ledger afterwards
    memory.close()
    store = ["--home", str(memory.home), "--database-url", memory.settings.database_url]

    assert main([*store, "db", "downgrade", "0006"]) == 2
    assert "refusing to downgrade below 0008: the event chain holds" in capsys.readouterr().err

    assert schema.current_revision(engine) == schema.head_revision()
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM policy_versions")).scalar_one() == 1
    assert main([*store, "verify", "--checkpoints", str(log), "--public-key", str(key)]) == 0
    assert capsys.readouterr().out.startswith("OK")


def test_a_downgrade_below_0007_is_refused_while_a_policy_is_on_the_record(memory: Memory) -> None:
    """A ledger at 0007 (no chain yet) keeps each installed policy version and the version behind
    each proposal. Before, 0007's downgrade dropped both."""
    make_note(memory, "Acme pays $42 per seat")
    engine = memory.ledger.engine
    older_ledgers.back_to(engine, "0007")
    with pytest.raises(
        MigrationRefusedError, match=r"below 0007: 1 policy version\(s\) installed and \d+ proposal"
    ):
        schema.downgrade(engine, "0006")
    assert schema.current_revision(engine) == "0007"
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM policy_versions")).scalar_one() == 1


def test_a_downgrade_below_0005_is_refused_while_a_proposal_names_its_evidence(memory: Memory) -> None:
    """The span of the raw log a reviewer decided on is part of the proposal's record. Before,
    0005's downgrade dropped it."""
    old = make_note(memory, "Acme's contract runs to March")
    new = make_note(memory, "Acme ended the contract in January")
    contradict(memory, old, new, "2026-01-31")
    engine = memory.ledger.engine
    older_ledgers.back_to(engine, "0006")
    with pytest.raises(MigrationRefusedError, match=r"below 0005: 1 proposal\(s\) name their evidence"):
        schema.downgrade(engine, "0004")
    assert schema.current_revision(engine) == "0006"
