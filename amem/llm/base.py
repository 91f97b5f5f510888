"""The analyst protocol and the envelope each task answer travels in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel

from amem.domain.models import LlmCall, Note, RawLog, Usage
from amem.llm.construct_note import ConstructedNote
from amem.llm.link_evolve import LinkEvolveAnswer
from amem.policy import AttributePolicy

A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True)
class TaskResult(Generic[A]):
    """A validated answer and the model call that produced it (recorded in the ledger).

    ``call`` is the attempt whose answer was accepted; ``attempts`` holds every attempt in order
    (failed ones included, ``call`` last) so the ledger records them all. ``usage`` is the total
    over all attempts: what the answer really cost.
    """

    answer: A
    call: LlmCall
    usage: Usage
    model: str
    prompt_version: str
    attempts: list[LlmCall] = field(default_factory=list)


class Analyst(Protocol):
    """What the write pipeline needs from a model. At most two calls per add_note."""

    @property
    def model(self) -> str: ...

    #: Whether several calls may run at once (threads): True for a remote model, whose calls mostly
    #: wait on the network; False for one that computes on this machine.
    concurrent: bool

    #: Whether the drafting step reads its rationales and dates again with the offline skills
    #: (amem/services/answer_checks.py): True for a remote model; False for the offline analyst,
    #: whose answers are those skills' own reading.
    checked: bool

    def construct(
        self, raw_log: RawLog, declared: Mapping[str, AttributePolicy]
    ) -> TaskResult[ConstructedNote]: ...

    def link_and_evolve(
        self,
        note: Note,
        raw_log: RawLog,
        neighbours: Sequence[Note],
        said: Mapping[str, datetime] | None = None,
    ) -> TaskResult[LinkEvolveAnswer]:
        """``said``: when each neighbour was said (its first raw log's time), by note id: a
        neighbour's "today" or "on the 23rd" is read against it, as the new note's against
        ``raw_log``'s."""
        ...


class AnalystError(Exception):
    """The model could not give a valid answer within the retry budget (or was unreachable)."""

    def __init__(self, message: str, calls: Sequence[LlmCall] = ()) -> None:
        super().__init__(message)
        self.calls = list(calls)
