"""What the services need from the derived index."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from amem.domain.models import Note


class NeighbourFinder(Protocol):
    """Nearest notes of one scope: the link-generation step's source of candidates."""

    def nearest(self, scope: str, text: str, k: int, *, exclude_ids: Sequence[str] = ()) -> list[Note]: ...
