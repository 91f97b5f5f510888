"""What the index holds for a note: the enriched text it embeds and the metadata it filters on.

As in the A-MEM paper, a note is embedded with its keywords, tags and context beside its content,
so a query can match what the analyst understood, not only the words that were said.
"""

from __future__ import annotations

from datetime import datetime

from amem.domain.models import Note, as_utc
from amem.index.base import IndexEntry

#: Bump when the document text, the metadata or the collection layout changes: an index built with
#: another format is then refused (IndexModelChangedError) until `amem reindex` rebuilds it, as for
#: a change of embedding model, since its vectors are of other texts.
DOCUMENT_FORMAT = "doc2"
#: invalid_at of a note that was never retired (9999-12-31T23:59:59Z), so "alive at t" is one range test.
NEVER = 253402300799.0

#: Attributes whose change alters the embedded text (or whether the note is indexed at all).
EMBEDDED_ATTRIBUTES = frozenset({"content", "keywords", "tags", "context", "deleted"})
#: Attributes kept only in the metadata: a change updates the entry without embedding again.
METADATA_ATTRIBUTES = frozenset({"valid_at", "invalid_at"})


def document_text(note: Note) -> str:
    parts = [note.content.strip()]
    if note.keywords:
        parts.append("Keywords: " + ", ".join(note.keywords))
    if note.tags:
        parts.append("Tags: " + ", ".join(note.tags))
    if note.context and note.context.strip():
        parts.append("Context: " + note.context.strip())
    return "\n".join(parts)


def timestamp(value: datetime | None, default: float) -> float:
    return as_utc(value).timestamp() if value is not None else default


def index_entry(note: Note) -> IndexEntry:
    metadata: dict[str, str | int | float | bool | list[str]] = {
        "scope": note.scope,
        "valid_at": timestamp(note.valid_at, 0.0),
        "invalid_at": timestamp(note.invalid_at, NEVER),
        "created_at": timestamp(note.created_at, 0.0),
        "version": note.version,
    }
    if note.tags:  # Chroma refuses empty lists; a note without tags simply has no "tags" key
        metadata["tags"] = list(note.tags)
    return IndexEntry(note_id=note.id, metadata=metadata)
