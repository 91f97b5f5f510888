"""`amem status` and `amem worker --once`: what a shell user sees of the queue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import litellm
import pytest

from amem.cli import main
from amem.memory import Memory
from tests.agents.scripted_answers import answer
from tests.factories import make_note


def run(capsys: pytest.CaptureFixture[str], memory: Memory, *args: str) -> tuple[int, str, str]:
    code = main(["--home", str(memory.home), "--database-url", memory.settings.database_url, *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_status_says_queued_then_done_with_the_note_after_a_worker_ran(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    raw_id = memory.add_note("Acme wants a security review", actor="agent:sales", scope="acme", wait=False)
    code, out, _ = run(capsys, memory, "status", raw_id)
    assert code == 0 and out.strip() == f"{raw_id}: queued"

    code, out, _ = run(capsys, memory, "worker", "--once", "--json")
    assert code == 0 and json.loads(out)["processed"] == 1 and json.loads(out)["queue"]["queued"] == 0

    code, out, _ = run(capsys, memory, "status", raw_id, "--json")
    data = json.loads(out)
    assert code == 0 and data["status"] == "done" and data["note_id"]
    assert memory.read(data["note_id"]).raw_log_ids == [raw_id]


def test_status_of_a_failed_input_says_why(
    tmp_path: Path, database_url: str, scripted_llm, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = Memory(tmp_path / "h", database_url=database_url, llm="scripted/test-model")
    try:
        raw_id = memory.add_note("Acme asked for SAML", actor="agent:sales", scope="acme", wait=False)
        scripted_llm.push(litellm.AuthenticationError(message="bad key", llm_provider="scripted", model="m"))
        scripted_llm.default = answer
        memory.worker().run_once()
        code, out, _ = run(capsys, memory, "status", raw_id)
        assert code == 0 and out.startswith(f"{raw_id}: failed: ") and "bad key" in out
    finally:
        memory.close()


def test_status_of_an_unknown_id_is_a_one_line_error(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, memory, "status", "r_unknown")
    assert (
        code == 2
        and out == ""
        and err.strip().startswith("error: input r_unknown does not exist (no raw log has that id) in ")
        and len(err.strip().splitlines()) == 1
    )


def test_tokens_are_shown_once_listed_without_the_secret_and_revoked(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, memory, "tokens", "create", "sales-agent", "--role", "agent", "--json")
    created = json.loads(out)
    assert code == 0 and created["token"].startswith("amem_") and created["identity"] == "agent:sales-agent"
    assert memory.tokens.authenticate_token(created["token"]) == ("agent:sales-agent", "agent")

    code, out, _ = run(capsys, memory, "tokens", "list", "--json")
    assert code == 0 and created["token"] not in out and json.loads(out)[0]["name"] == "sales-agent"

    code, out, _ = run(capsys, memory, "tokens", "revoke", "sales-agent")
    assert code == 0 and out.strip() == "revoked 1 token(s)"
    code, _, err = run(capsys, memory, "tokens", "revoke", "sales-agent")
    assert code == 2 and "no active token" in err

    code, _, err = run(capsys, memory, "tokens", "create", "bob", "--role", "admin")
    assert code == 2 and err.strip() == "error: role 'admin': use agent or reviewer"


def test_token_history_lists_each_rotation_in_the_order_it_happened(memory: Memory) -> None:
    """A rotation revokes and creates at one instant; the history must still say which came first."""
    memory.tokens.create("crm-agent", role="agent", created_by="ops")
    for _ in range(8):
        memory.tokens.create("crm-agent", role="agent", created_by="ops", replace=True)
    actions = [event.action for event in memory.tokens.history()]
    assert actions == ["created"] + ["revoked", "created"] * 8


def test_an_agent_token_made_and_revoked_at_the_shell_names_the_account_that_did_it(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No reviewer signs for an agent token; the auditor still learns which account made and
    revoked it, instead of nobody."""
    monkeypatch.setenv("USER", "ops-oncall")
    monkeypatch.setenv("LOGNAME", "ops-oncall")
    run(capsys, memory, "tokens", "create", "crm-sync", "--role", "agent")
    run(capsys, memory, "tokens", "revoke", "crm-sync")
    code, out, _ = run(capsys, memory, "tokens", "history", "--json")
    events = json.loads(out)
    assert code == 0 and [e["action"] for e in events] == ["created", "revoked"]
    assert all(e["by"].startswith("os:ops-oncall@") for e in events)
    assert memory.tokens.list()[0].created_by.startswith("os:ops-oncall@")


def test_an_agent_token_is_made_for_some_scopes_and_listed_with_them(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, memory, "tokens", "create", "acme-sync", "--scope", "acme", "--scope", "initech"
    )
    assert code == 0, err
    assert "scopes acme, initech" in out
    token = out.split()[0]
    assert memory.tokens.authenticate(token).scopes == ["acme", "initech"]
    code, out, _ = run(capsys, memory, "tokens", "list", "--json")
    assert json.loads(out)[0]["scopes"] == ["acme", "initech"]
    code, out, _ = run(capsys, memory, "tokens", "history", "--json")
    assert [(e["action"], e["scopes"]) for e in json.loads(out)] == [("created", ["acme", "initech"])]

    code, _, err = run(capsys, memory, "mcp", "--transport", "http", "--scope", "acme")
    assert code == 2 and "each token carries its own scopes" in err


@pytest.mark.parametrize("decisions", [False, True])
def test_serve_lets_reviewers_decide_only_when_told(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, decisions: bool
) -> None:
    import uvicorn

    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda api, **_: served.append(api))
    code, _, err = run(capsys, memory, "serve", *(["--decisions"] if decisions else []))
    assert code == 0, err
    paths = {route.path for route in served[0].routes}
    assert ("/v1/review/items/{key}/approve" in paths) is decisions
    assert "/v1/inputs" in paths


def test_an_mcp_server_for_a_scope_with_a_stray_space_is_refused_before_it_serves(
    memory: Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`amem mcp --scope " acme"` served, and then refused acme, the account it was started for: its
    scopes are checked as `amem tokens create --scope` checks them, before anything is served."""
    from mcp.server.mcpserver import MCPServer

    served: list[Any] = []
    monkeypatch.setattr(MCPServer, "run", lambda server, *args, **kwargs: served.append(server))
    for wrong in (" acme", "acme ", "\u200b"):
        code, _, err = run(capsys, memory, "mcp", "--scope", "acme", "--scope", wrong)
        assert code == 2 and f"scope {wrong!r}" in err and "no space at either end" in err, err
    assert served == []
    code, _, err = run(capsys, memory, "mcp", "--workers", "0", "--scope", "acme")
    assert code == 0 and len(served) == 1, err


def test_a_worker_once_refuses_to_start_on_a_damaged_index_and_leaves_the_queue_as_it_was(
    memory: Memory, capsys: pytest.CaptureFixture[str]
) -> None:
    """`amem worker --once` built only the pipeline before its threads started, so the first batch
    opened the damaged index and every queued input was marked failed, left to `amem reprocess`."""
    make_note(memory, "Acme renewed for three years")
    memory.search("renewal", k=1, scope="acme")
    for text in ("Hooli asked for SSO", "Pied Piper's renewal slipped to May"):
        memory.add_note(text, actor="agent:bot", scope="acme", wait=False)
    before = memory.queue_depth()
    memory.close()
    database = memory.settings.chroma_path / "chroma.sqlite3"
    database.write_bytes(bytes(database.stat().st_size))

    code, out, err = run(capsys, memory, "worker", "--once", "--json")

    assert code != 0 and out == ""
    assert "amem reindex" in err
    with Memory(memory.home, database_url=memory.settings.database_url) as again:
        depth = again.queue_depth()
    assert depth == before and before["queued"] >= 2 and before["failed"] == 0
