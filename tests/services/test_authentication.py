"""Decisions need an authenticated reviewer; identities are canonical, in one namespace."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from amem.cli import app
from amem.domain.identity import canonical_identity, identity_key
from amem.domain.models import ProposalStatus, Proposer
from amem.errors import AuthenticationError, InvalidInputError, PermissionDeniedError, PolicyError
from amem.memory import Memory
from amem.policy import fingerprint, parse_policy
from amem.services.authentication import AuthenticatedReviewer, Authentication
from tests.factories import llm_proposer, make_note, signed_in


def _pending(memory: Memory, proposer: Proposer | str | None = None) -> str:
    """A held value on a new note, proposed by ``proposer`` (the model by default)."""
    note = make_note(memory, "Acme chose SSO because their auditor asked")
    by = proposer if proposer is not None else llm_proposer(memory)
    return memory.propose(note.id, "decision_rationale", "auditor", reason="stated", proposer=by).id


def test_a_bare_name_decides_nothing(memory: Memory) -> None:
    pid = _pending(memory)
    with pytest.raises(PermissionDeniedError, match="needs an authenticated reviewer"):
        memory.approve(pid, reviewer="alice")  # type: ignore[arg-type]
    with pytest.raises(PermissionDeniedError, match="needs an authenticated reviewer"):
        memory.reject(pid, reviewer="alice", comment="no")  # type: ignore[arg-type]
    change = memory.changes()[-1].seq
    with pytest.raises(PermissionDeniedError, match="needs an authenticated reviewer"):
        memory.revert(change, reviewer="alice")  # type: ignore[arg-type]
    with pytest.raises(PermissionDeniedError, match="never built directly"):
        AuthenticatedReviewer(
            id="alice",
            name="Alice",
            roles=("cs_lead",),
            method="password",
            policy_fingerprint="x",
            at=datetime.now(UTC),
        )
    assert memory.proposal(pid).status == ProposalStatus.PENDING


def test_password_sign_in(reviewer_passwords: dict[str, str], memory: Memory) -> None:
    pid = _pending(memory)
    with pytest.raises(AuthenticationError, match=r"^wrong reviewer name or password$"):
        memory.authenticate("alice", "guess")
    with pytest.raises(AuthenticationError, match=r"^wrong reviewer name or password$"):
        memory.authenticate("mallory", reviewer_passwords["alice"])
    with pytest.raises(PermissionDeniedError, match="can never approve"):
        memory.authenticate("agent:alice", reviewer_passwords["alice"])
    alice = memory.authenticate("ALICE", reviewer_passwords["alice"])
    assert (alice.id, alice.method, alice.roles) == ("alice", "password", ("cs_lead",))
    decided = memory.approve(pid, reviewer=alice, comment="ok")
    assert decided.status == ProposalStatus.APPROVED and decided.reviewer == "alice"


def test_failed_sign_ins_lock_the_name_for_a_window(
    reviewer_passwords: dict[str, str], memory: Memory
) -> None:
    """Guessing a password costs a window per few guesses: after five failures of one name the
    right password is refused too, until the window ends; a name nobody has is counted the same
    way (a lock says nothing about who exists), and another reviewer is not held up."""
    from datetime import timedelta

    from amem.errors import SignInsLockedError
    from amem.services.authentication import MAX_FAILED_SIGN_INS, SIGN_IN_WINDOW, FailedSignIns

    now = [datetime(2026, 12, 5, 9, 0, tzinfo=UTC)]
    failed = FailedSignIns(clock=lambda: now[0])
    auth = Authentication(memory.policy, fingerprint(memory.policy), failed)
    for name in ("alice", "mallory"):
        for _ in range(MAX_FAILED_SIGN_INS):
            with pytest.raises(AuthenticationError, match="wrong reviewer name or password"):
                auth.with_password(name, "not-the-password")
    locked = f"too many failed sign-ins for alice: try again in {SIGN_IN_WINDOW.seconds // 60} minutes"
    with pytest.raises(SignInsLockedError, match=locked):
        auth.with_password("alice", reviewer_passwords["alice"])
    with pytest.raises(SignInsLockedError, match="too many failed sign-ins for mallory"):
        auth.with_password("Mallory", "anything")  # the canonical name is what is counted
    assert auth.with_password("bob", reviewer_passwords["bob"]).id == "bob"

    now[0] += SIGN_IN_WINDOW - timedelta(minutes=1)
    with pytest.raises(SignInsLockedError, match=r"try again in 1 minute$"):
        auth.with_password("alice", reviewer_passwords["alice"])
    now[0] += timedelta(minutes=1)
    assert auth.with_password("alice", reviewer_passwords["alice"]).id == "alice"
    for _ in range(MAX_FAILED_SIGN_INS - 1):  # a success starts the count again
        with pytest.raises(AuthenticationError, match="wrong reviewer name or password"):
            auth.with_password("alice", "not-the-password")
    assert auth.with_password("alice", reviewer_passwords["alice"]).id == "alice"


def test_a_guesser_at_one_address_does_not_lock_the_reviewer_out_elsewhere(
    reviewer_passwords: dict[str, str], memory: Memory
) -> None:
    """Failures are counted by the address they come from: alice signs in from her own while a
    guesser's is locked. Guessers at many addresses together lock the name everywhere once they
    reach the cap for all addresses, for what is left of the window."""
    from datetime import timedelta

    from amem.errors import SignInsLockedError
    from amem.services.authentication import FailedSignIns

    now = [datetime(2026, 12, 5, 9, 0, tzinfo=UTC)]
    failed = FailedSignIns(limit=5, anywhere=12, clock=lambda: now[0])
    auth = Authentication(memory.policy, fingerprint(memory.policy), failed)
    for _ in range(5):
        with pytest.raises(AuthenticationError, match="wrong reviewer name or password"):
            auth.with_password("alice", "guess", source="203.0.113.7")
    with pytest.raises(SignInsLockedError, match="for alice from this address: try again in 15 minutes"):
        auth.with_password("alice", reviewer_passwords["alice"], source="203.0.113.7")
    assert auth.with_password("alice", reviewer_passwords["alice"], source="198.51.100.2").id == "alice"

    for n in range(7):  # seven more addresses: 12 failures in all
        now[0] += timedelta(seconds=10)
        with pytest.raises(AuthenticationError, match="wrong reviewer name or password"):
            auth.with_password("alice", "guess", source=f"192.0.2.{n}")
    with pytest.raises(SignInsLockedError, match=r"too many failed sign-ins for alice: try again"):
        auth.with_password("alice", reviewer_passwords["alice"], source="198.51.100.2")
    assert auth.with_password("bob", reviewer_passwords["bob"], source="198.51.100.2").id == "bob"
    now[0] += timedelta(minutes=15)  # the first address's five failures have passed: 7 left
    assert auth.with_password("alice", reviewer_passwords["alice"], source="198.51.100.2").id == "alice"


def test_a_memory_counts_failed_sign_ins_for_as_long_as_it_is_open(
    reviewer_passwords: dict[str, str], memory: Memory
) -> None:
    from amem.errors import SignInsLockedError
    from amem.services.authentication import MAX_FAILED_SIGN_INS

    for _ in range(MAX_FAILED_SIGN_INS):
        with pytest.raises(AuthenticationError):
            memory.authenticate("alice", "not-the-password")
    with pytest.raises(SignInsLockedError):
        memory.authenticate("alice", reviewer_passwords["alice"])


def test_a_reviewer_without_a_password_cannot_sign_in_with_one(memory: Memory) -> None:
    with pytest.raises(AuthenticationError, match="alice has no password_hash"):
        memory.authenticate("alice", "anything at all")


@pytest.mark.parametrize(
    "proposer",
    ["Alice", "agent:alice", "ALICE", "ａｌｉｃｅ", "person:Alice", Proposer(kind="agent", id="Alice")],
)
def test_name_variants_cannot_approve_their_own_proposal(memory: Memory, proposer: Proposer | str) -> None:
    pid = _pending(memory, proposer)
    for name in ("alice", "Alice", "ＡＬＩＣＥ", "person:alice"):
        with pytest.raises(PermissionDeniedError, match="self-approval"):
            memory.approve(pid, reviewer=signed_in(memory, name))
    assert memory.approve(pid, reviewer=signed_in(memory, "bob")).status == ProposalStatus.APPROVED


def test_invisible_characters_are_refused_in_identities(memory: Memory) -> None:
    note = make_note(memory, "x")
    for name in ("alice\u200b", "al\u200dice", "\u2066alice", "alice\x00", "\u00adalice"):
        with pytest.raises(InvalidInputError, match="invisible or a control character"):
            memory.propose(note.id, "decision_rationale", "r", reason="r", proposer=name)
        with pytest.raises(InvalidInputError, match="invisible or a control character"):
            signed_in(memory, name)
        with pytest.raises(InvalidInputError, match="invisible or a control character"):
            memory.add_note("Acme renewed", actor=f"agent:{name}", scope="acme")
    # stored values that predate canonical identities still compare as the name they show
    assert (
        identity_key("Alice\u200b") == identity_key("agent:alice") == canonical_identity("ALICE") == "alice"
    )


def test_a_reviewer_signed_in_under_another_policy_decides_nothing(memory: Memory, tmp_path) -> None:
    pid = _pending(memory)
    looser = memory.policy.model_copy(update={"self_approval": True})
    with Memory(memory.home, database_url=memory.settings.database_url, policy=looser) as other:
        # a process started with another file signs reviewers in under the ledger's policy, not its file
        assert signed_in(other, "alice").policy_fingerprint == signed_in(memory, "alice").policy_fingerprint
    elsewhere = Authentication(looser, fingerprint(looser)).signed_in("alice", method="test")
    with pytest.raises(PermissionDeniedError, match="signed in under another policy"):
        memory.approve(pid, reviewer=elsewhere)
    assert memory.proposal(pid).status == ProposalStatus.PENDING


def test_a_policy_cannot_name_one_identity_twice() -> None:
    base = "roles:\n  lead: {approves: ['*']}\n"
    with pytest.raises(PolicyError, match="same identity 'alice'"):
        parse_policy(base + "reviewers:\n  alice: {roles: [lead]}\n  Alice: {roles: [lead]}\n")
    with pytest.raises(PolicyError, match="listed as an agent"):
        parse_policy(base + "reviewers:\n  Bot: {roles: [lead]}\nagents: [agent:bot]\n")
    with pytest.raises(PolicyError, match="invisible"):
        parse_policy(base + 'reviewers:\n  "alice\\u200b": {roles: [lead]}\n')


def test_the_cli_asks_for_the_password_hidden(reviewer_passwords: dict[str, str], memory: Memory) -> None:
    pid = _pending(memory)
    args = ["--database-url", memory.settings.database_url, "--home", str(memory.home)]
    runner = CliRunner()
    wrong = runner.invoke(app, [*args, "approve", pid, "--reviewer", "bob"], input="wrong-password\n")
    assert wrong.exit_code != 0 and memory.proposal(pid).status == ProposalStatus.PENDING
    assert "wrong-password" not in wrong.output  # never echoed
    right = runner.invoke(
        app, [*args, "approve", pid, "--reviewer", "bob"], input=reviewer_passwords["bob"] + "\n"
    )
    assert right.exit_code == 0, right.output
    assert "Password for bob" in right.output and reviewer_passwords["bob"] not in right.output
    assert memory.proposal(pid).reviewer == "bob"


@pytest.mark.parametrize(
    ("peer", "forwarded", "trusted", "address"),
    [
        # no proxy configured: the connection's own address, whatever a client writes in the header
        ("198.51.100.2", ["1.2.3.4"], None, "198.51.100.2"),
        # a trusted proxy: the client it saw, not the proxy (every reviewer shared it before)
        ("10.0.0.5", ["203.0.113.7"], "10.0.0.0/8", "203.0.113.7"),
        # a client that writes its own header cannot pick its address: the proxy appends the real one
        ("10.0.0.5", ["1.2.3.4, 203.0.113.7"], "10.0.0.5", "203.0.113.7"),
        # two trusted hops (a load balancer, then nginx): the first untrusted from the right
        ("10.0.0.5", ["203.0.113.7, 10.0.0.9"], "10.0.0.0/8", "203.0.113.7"),
        # the header from a connection that is not a trusted proxy is not believed
        ("198.51.100.2", ["203.0.113.7"], "10.0.0.0/8", "198.51.100.2"),
        # several header lines, in order
        ("::1", ["203.0.113.7", "10.1.1.1"], "::1, 10.0.0.0/8", "203.0.113.7"),
        # a trusted proxy that sent no header: itself
        ("10.0.0.5", [], "10.0.0.0/8", "10.0.0.5"),
        (None, ["203.0.113.7"], "10.0.0.0/8", None),
    ],
)
def test_failed_sign_ins_are_counted_per_client_behind_a_trusted_proxy(
    peer: str | None, forwarded: list[str], trusted: str | None, address: str | None
) -> None:
    from amem.services.authentication import client_address

    assert client_address(peer, forwarded, trusted) == address


def test_a_trusted_proxies_setting_that_is_no_address_is_named() -> None:
    from amem.services.authentication import check_trusted_proxies

    check_trusted_proxies("10.0.0.0/8, ::1, 192.168.1.7")
    with pytest.raises(InvalidInputError, match=r"'proxy\.local' is no address or network"):
        check_trusted_proxies("10.0.0.0/8, proxy.local")


@pytest.mark.parametrize(
    "variant",
    [
        "person:person:alice",
        "person:person: alice",
        "person:person:       alice",
        "person:agent:alice",
        "person:llm:alice",
        "person:system:alice",
    ],
)
def test_a_name_with_two_kind_prefixes_neither_signs_in_nor_escapes_the_lockout(
    reviewer_passwords: dict[str, str], memory: Memory, variant: str
) -> None:
    """Before, each such variant had a failure count of its own (five more guesses each, past
    alice's lock), signed in with alice's password, and ``person:agent:alice`` decided as the
    reviewer ``agent:alice``."""
    from amem.errors import SignInsLockedError
    from amem.services.accounts import account_for
    from amem.services.authentication import MAX_FAILED_SIGN_INS

    auth = memory.authentication
    source = "203.0.113.9"
    for _ in range(MAX_FAILED_SIGN_INS):
        with pytest.raises(AuthenticationError):
            auth.with_password("alice", "guess", source=source)
    with pytest.raises(InvalidInputError, match="second kind prefix"):
        auth.with_password(variant, reviewer_passwords["alice"], source=source)
    with pytest.raises(InvalidInputError, match="second kind prefix"):
        auth.with_password(variant, reviewer_passwords["alice"], source="198.51.100.2")
    with pytest.raises(SignInsLockedError):
        auth.with_password("alice", reviewer_passwords["alice"], source=source)
    assert account_for(memory.policy, variant) is None  # the console finds no account either


def test_failed_sign_ins_of_any_variant_of_a_name_count_as_one() -> None:
    """Before, failures were counted under the name as passed in, so a caller passing
    ``person:alice`` and one passing ``ALICE`` kept two counts for one reviewer."""
    from amem.errors import SignInsLockedError
    from amem.services.authentication import FailedSignIns

    failed = FailedSignIns(limit=3)
    for name in ("person:alice", "ALICE", "ａｌｉｃｅ"):
        failed.failed(name, "203.0.113.9")
    with pytest.raises(SignInsLockedError, match="too many failed sign-ins for alice"):
        failed.refuse_if_locked("alice", "203.0.113.9")
