"""Errors a user can act on. The CLI prints their message without a traceback."""

from __future__ import annotations

import sys
from datetime import datetime


class AmemError(Exception):
    """Base class: a mistake or a state the user can do something about."""


class ConfigError(AmemError):
    pass


class PolicyError(AmemError):
    pass


class SchemaMismatchError(AmemError):
    pass


class MigrationRefusedError(AmemError):
    """A migration refused to run because it would lose data (raw logs are never dropped)."""


class NotFoundError(AmemError):
    pass


class InvalidInputError(AmemError):
    pass


class InvalidBatchInputError(InvalidInputError):
    """Inputs of a batch are wrong; nothing of the batch was recorded. ``problems``: every wrong
    input's 1-based position and what is wrong with it, in order (so one run names them all);
    ``position`` and ``problem``: the first."""

    def __init__(self, problems: list[tuple[int, str]], *, what: str = "input") -> None:
        if not problems:
            raise ValueError("an InvalidBatchInputError needs at least one problem")
        super().__init__(f"{describe_problems(problems, what)}; nothing was recorded")
        self.problems = problems
        self.position, self.problem = problems[0]


#: Positions named for one problem at most, and problems named at most; the rest are counted.
SHOWN_POSITIONS = 5
SHOWN_PROBLEMS = 10


def describe_problems(problems: list[tuple[int, str]], what: str = "input") -> str:
    """Problems of a batch on one line, the same problem once with the positions that have it:
    "input 3: content is empty" or "4 inputs are wrong: inputs 2, 5 and 9: scope: Field required;
    input 4: content is empty" (at most ``SHOWN_POSITIONS`` positions a problem, then a count)."""
    where: dict[str, list[int]] = {}
    for position, problem in problems:
        where.setdefault(problem, []).append(position)
    parts = [f"{_positions(positions, what)}: {problem}" for problem, positions in where.items()]
    if len(problems) == 1:
        return parts[0]
    if len(parts) > SHOWN_PROBLEMS:
        rest = list(where.values())[SHOWN_PROBLEMS:]
        more = f"{len(rest):,} other problems on {sum(map(len, rest)):,} more {what}s"
        parts = [*parts[:SHOWN_PROBLEMS], more]
    return f"{len(problems):,} {what}s are wrong: " + "; ".join(parts)


def _positions(positions: list[int], what: str) -> str:
    if len(positions) == 1:
        return f"{what} {positions[0]}"
    shown = [str(p) for p in positions[:SHOWN_POSITIONS]]
    if len(positions) > SHOWN_POSITIONS:
        return f"{what}s {', '.join(shown)} and {len(positions) - SHOWN_POSITIONS:,} more"
    return f"{what}s {', '.join(shown[:-1])} and {shown[-1]}"


class InputKeyTakenError(AmemError):
    """An input's idempotency key was recorded by another request between add_notes' look-up and
    its commit (two retries racing): nothing of this commit was kept; add_notes reads the input
    that holds the key and answers with it."""


class PermissionDeniedError(AmemError):
    pass


class AuthenticationError(PermissionDeniedError):
    """A reviewer could not be authenticated (a wrong name or password, no password set)."""


class SignInsLockedError(AuthenticationError):
    """Too many failed password sign-ins for one reviewer name: refused, right password or not,
    until the window ends."""


class PolicyMismatchError(PermissionDeniedError):
    """This process's policy is not the one installed in the ledger: it reads, but decides nothing."""


class FrozenAttributeError(PermissionDeniedError):
    """An approval found the attribute frozen by the policy in force: the proposal was recorded as
    rejected (``proposal``, committed) and nothing was applied."""

    def __init__(self, message: str, *, proposal: object) -> None:
        super().__init__(message)
        self.proposal = proposal


class ProposalStateError(AmemError):
    """The proposal is not in a state that allows this decision (already decided, say)."""


class ReviewSetChangedError(ProposalStateError):
    """A decision on "all matching" was refused: the matching set changed since it was counted."""


class NoteDeletedError(ProposalStateError):
    """An approval (or correction) of an edit was refused: its note was deleted since (a `delete`, an
    erasure's tombstone), so the value would change a note nobody reads. Nothing was recorded: the
    proposal stays pending, to be rejected, or approved once the deletion is reverted.
    ``note_id``; ``change_seq``: the change that deleted it (None where none was found)."""

    def __init__(self, message: str, *, note_id: str, change_seq: int | None) -> None:
        super().__init__(message)
        self.note_id = note_id
        self.change_seq = change_seq


class AnalysisPendingError(AmemError):
    """The raw log is kept, but the model could not analyse it yet; `amem reprocess` retries."""

    def __init__(self, message: str, raw_log_id: str) -> None:
        super().__init__(message)
        self.raw_log_id = raw_log_id


class InputErasedError(AmemError):
    """An input was erased on a data subject's request (`amem erase`): a retry under its idempotency
    key records nothing again, and nothing of it is analysed; not pending (`amem reprocess` has
    nothing to do), so never reported as AnalysisPendingError is. ``raw_log_id``: the erased raw
    log; ``erased_at``, ``erased_by``, ``erasure_id``: the erasure's record, where it was found.
    ``retry``: it was sent again under its key (else it was erased while this call analysed it)."""

    def __init__(
        self,
        raw_log_id: str,
        *,
        retry: bool,
        erased_at: datetime | None = None,
        erased_by: str | None = None,
        erasure_id: str | None = None,
    ) -> None:
        when = f" on {erased_at:%Y-%m-%d %H:%M} UTC" if erased_at is not None else ""
        who = f" by {erased_by}" if erased_by else ""
        which = f" (erasure {erasure_id}, `amem erasures`)" if erasure_id else ""
        if retry:
            what = (
                f"input {raw_log_id}, which this idempotency key names, was erased on a data subject's "
                f"request{when}{who}{which}: nothing was recorded again (an erased input is never "
                "kept again under its key)"
            )
        else:
            what = (
                f"input {raw_log_id} was erased on a data subject's request{when}{who}{which} while it "
                "was analysed: nothing of it was applied"
            )
        super().__init__(what)
        self.raw_log_id = raw_log_id
        self.retry = retry
        self.erased_at = erased_at
        self.erased_by = erased_by
        self.erasure_id = erasure_id


class AnalysisStoppedError(AnalysisPendingError):
    """Analysis of kept inputs stopped on an error other than the model's, and even marking them
    failed could not be written (the ledger refused): the raw logs are kept, held until their lease
    ends, then taken again by a worker or `amem reprocess`. ``raw_log_ids``: every one of them."""

    def __init__(self, message: str, raw_log_ids: list[str]) -> None:
        super().__init__(message, raw_log_ids[0])
        self.raw_log_ids = list(raw_log_ids)


def ledger_unreachable(exc: BaseException) -> str | None:
    """The driver's reason, on one line, when ``exc`` says the ledger's database cannot be reached
    (no connection could be made: a server down, a database that does not exist; or the server
    dropped it), else None. SQLAlchemy raises these before any statement ran, or marks the
    connection invalidated; every interface answers them as the machine's state, not amem's bug.
    Looked up in ``sys.modules``: an error from SQLAlchemy means it is loaded, and the interfaces
    asking never import it."""
    sa_exc = sys.modules.get("sqlalchemy.exc")
    if sa_exc is None or not isinstance(exc, sa_exc.OperationalError):
        return None
    if exc.statement is not None and not exc.connection_invalidated:
        return None
    return " ".join(str(exc.orig if exc.orig is not None else exc).split())
