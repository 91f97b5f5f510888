"""Errors a user can act on. The CLI prints their message without a traceback."""


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
    """One input of a batch is wrong (``position``: 1-based); nothing of the batch was recorded."""

    def __init__(self, position: int, problem: str) -> None:
        super().__init__(f"input {position}: {problem}; nothing was recorded")
        self.position = position
        self.problem = problem


class PermissionDeniedError(AmemError):
    pass


class AuthenticationError(PermissionDeniedError):
    """A reviewer could not be authenticated (a wrong name or password, no password set)."""


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


class AnalysisPendingError(AmemError):
    """The raw log is kept, but the model could not analyse it yet; `amem reprocess` retries."""

    def __init__(self, message: str, raw_log_id: str) -> None:
        super().__init__(message)
        self.raw_log_id = raw_log_id
