"""Domain objects and pure functions: no I/O, imports nothing from the layers above."""

from amem.domain.models import (
    Actor,
    ActorKind,
    Change,
    ChangeKind,
    Link,
    LlmCall,
    Note,
    Proposal,
    ProposalStatus,
    Proposer,
    RawLog,
    RawLogState,
    Usage,
)

__all__ = [
    "Actor",
    "ActorKind",
    "Change",
    "ChangeKind",
    "Link",
    "LlmCall",
    "Note",
    "Proposal",
    "ProposalStatus",
    "Proposer",
    "RawLog",
    "RawLogState",
    "Usage",
]
