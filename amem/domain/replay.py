"""Rebuilding a note as it stood at some moment, by folding its changes in order."""

from __future__ import annotations

from collections.abc import Sequence

from amem.domain.models import CORE_TYPES, Change, Note
from amem.domain.values import with_value


def replay(current: Note, changes: Sequence[Change]) -> Note | None:
    """The note after ``changes`` (its first ``changes``, in sequence order); None if there are none.

    ``current`` supplies what never changes (id, scope, raw logs). Declared attributes land in
    ``extra`` as stored; only core attributes need their type to be rebuilt (datetimes, links).
    """
    if not changes:
        return None
    first = changes[0]
    note = Note(
        id=current.id,
        scope=current.scope,
        content=first.new_value,
        raw_log_ids=current.raw_log_ids,
        created_at=first.applied_at,
        updated_at=first.applied_at,
        version=first.note_version,
    )
    for c in changes[1:]:
        note = with_value(note, c.attribute, CORE_TYPES.get(c.attribute, "text"), c.new_value)
        note = note.model_copy(update={"version": c.note_version, "updated_at": c.applied_at})
    return note
