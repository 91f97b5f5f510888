"""Signed checkpoints of the ledger, kept outside it.

``amem keys init`` writes an Ed25519 key (0600) the database never holds; ``amem checkpoint`` signs
the heads of the event chain and the change chain with it and appends the statement, one JSON
object a line, to a checkpoint log outside the ledger. ``amem verify --checkpoints FILE`` then
proves the ledger still extends every statement (amem.services.integrity). The bytes signed are
defined in amem.domain.hashing, with the rest of the hash contract.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from amem.domain.hashing import (
    CHECKPOINT_VERSION,
    checkpoint_signature_ok,
    public_key_id,
    sign_checkpoint,
)
from amem.domain.models import utcnow
from amem.errors import ConfigError, InvalidInputError
from amem.ledger.store import Ledger

KEY_FILE = "checkpoint-ed25519.pem"
LOG_FILE = "checkpoints.jsonl"


def default_key_path(home: Path) -> Path:
    """AMEM_SIGNING_KEY, else ``keys/checkpoint-ed25519.pem`` under the store directory."""
    named = os.environ.get("AMEM_SIGNING_KEY")
    return Path(named).expanduser() if named else home / "keys" / KEY_FILE


def default_log_path(home: Path) -> Path:
    """AMEM_CHECKPOINT_LOG, else ``checkpoints.jsonl`` under the store directory."""
    named = os.environ.get("AMEM_CHECKPOINT_LOG")
    return Path(named).expanduser() if named else home / LOG_FILE


def public_key_path(key_path: Path) -> Path:
    return key_path.with_name(key_path.name + ".pub")


def init_key(path: Path) -> str:
    """Write a new Ed25519 private key (0600) and its public key beside it; returns the key id.

    Refuses to overwrite a key: checkpoints signed with it would no longer verify."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if path.exists():
        raise InvalidInputError(f"{path} already exists; a new key would orphan the checkpoints it signed")
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    os.chmod(path, 0o600)  # whatever the umask
    public = key.public_key()
    public_key_path(path).write_bytes(
        public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return _key_id(public)


def load_private_key(path: Path) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if not path.is_file():
        raise ConfigError(f"no signing key at {path}: run `amem keys init` (or set AMEM_SIGNING_KEY)")
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise ConfigError(f"{path} is readable by others (mode {mode:o}); `chmod 600 {path}` first")
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except ValueError as exc:
        raise ConfigError(f"{path} is not a PEM private key: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(f"{path} is not an Ed25519 key")
    return key


def load_public_key(path: Path) -> Any:
    """The public key to check signatures with: a public key PEM, or the one of a private key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if path.is_file() and not public_key_path(path).is_file() and b"PUBLIC KEY" in path.read_bytes()[:64]:
        candidate = path
    elif public_key_path(path).is_file():
        candidate = public_key_path(path)
    elif path.is_file():
        return load_private_key(path).public_key()
    else:
        raise ConfigError(f"no public key at {path} or {public_key_path(path)}: name one with --public-key")
    try:
        key = serialization.load_pem_public_key(candidate.read_bytes())
    except ValueError as exc:
        raise ConfigError(f"{candidate} is not a PEM public key: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise ConfigError(f"{candidate} is not an Ed25519 public key")
    return key


def _key_id(public_key: Any) -> str:
    from cryptography.hazmat.primitives import serialization

    return public_key_id(public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def write_checkpoint(ledger: Ledger, key_path: Path, log_path: Path) -> dict[str, Any]:
    """Sign the ledger's heads now and append the statement to ``log_path``; returns it."""
    key = load_private_key(key_path)
    with ledger.read(snapshot=True) as tx:
        state = tx.chain_state()
        first = _first_event_hash(tx)
    statement: dict[str, Any] = {
        "v": CHECKPOINT_VERSION,
        "at": utcnow().isoformat(),
        **state,
        # which ledger it signs, inside what is signed: another store's log is then told from tampering
        **({"ledger": first} if first else {}),
        "key_id": _key_id(key.public_key()),
    }
    statement["signature"] = sign_checkpoint(key, statement)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(statement, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return statement


def read_checkpoints(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, statement) for each line of a checkpoint log; a malformed line is named. A log
    with no statement is refused: proving "every statement" of it would prove nothing, and an
    emptied log must not pass for a ledger proven against it."""
    if not path.is_file():
        raise InvalidInputError(f"no checkpoint log at {path}")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            statement = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path}, line {number}: not JSON ({exc.msg})") from exc
        if not isinstance(statement, dict):
            raise InvalidInputError(f"{path}, line {number}: not a checkpoint statement")
        out.append((number, statement))
    if not out:
        raise InvalidInputError(
            f"{path} holds no checkpoint statement: nothing is proven (the log is empty). Name the log "
            "`amem checkpoint` appends to, or restore it from where it is kept"
        )
    return out


_FIELDS = {"event_seq": int, "event_hash": str, "change_seq": int, "change_hash": str, "at": str}


def check_key(statements: Sequence[tuple[int, dict[str, Any]]], public_key: Any) -> None:
    """Refuse a key the log was not signed with (InvalidInputError): the caller named the wrong key,
    which says nothing about the ledger, so it is a usage error, not a checkpoint that fails."""
    if public_key is None:
        return
    given = _key_id(public_key)
    for line, statement in statements:
        signed_with = statement.get("key_id")
        if isinstance(signed_with, str) and signed_with != given:
            raise InvalidInputError(
                f"wrong key for this log: line {line} was signed with key {signed_with}, the key "
                f"given is {given}; name the key the log was signed with (--public-key). If the key "
                "given is the right one, this log is not one it signed: another store's, or replaced"
            )


def _first_event_hash(tx: Any) -> str | None:
    """What names a ledger in a statement: the hash of its first event, which every ledger's own
    history begins with and a copy of it (a backup restored) keeps; None before any event."""
    first = tx.get_event(1)
    return str(first.hash) if first is not None else None


def other_ledger(statement: dict[str, Any], first_event_hash: str | None) -> str | None:
    """Why a statement that does not extend this ledger may be another store's: it names another
    ledger than this one (the hash of its first event), said beside the proof's failure. It stays a
    failure: this ledger rewritten from its first event reads the same, and checkpoints exist to
    catch that. None when it names this ledger, or none (a statement from before they did)."""
    named = statement.get("ledger")
    if not isinstance(named, str) or first_event_hash is None or named == first_event_hash:
        return None
    return (
        f"it signs another ledger (first event {named[:16]}; this one's is {first_event_hash[:16]}): "
        "another store's checkpoint log, or this ledger rewritten from its first event"
    )


def statement_problem(statement: dict[str, Any], public_key: Any) -> str | None:
    """Why a statement cannot be trusted as is (malformed, another key, a bad signature), or None."""
    for name, kind in _FIELDS.items():
        if not isinstance(statement.get(name), kind):
            return f"malformed statement: {name} missing or not {kind.__name__}"
    if public_key is None:
        return "no public key to check its signature with"
    if statement.get("key_id") != _key_id(public_key):
        return f"signed with key {statement.get('key_id')}, not the key given ({_key_id(public_key)})"
    if not checkpoint_signature_ok(public_key, statement):
        return "its signature does not match its content: the statement was altered or forged"
    return None
