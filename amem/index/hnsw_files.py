"""The unused capacity of a local Chroma's HNSW segment files, cleared after an erasure.

Chroma's HNSW index (hnswlib) allocates its per-element arrays for a capacity (100 elements at
first, more as it grows) without zeroing them, and a segment's first write puts them on disk at
that capacity: ``length.bin`` (4 bytes an element) and ``data_level0.bin`` (one row an element)
hold, past the elements in use, whatever the process's heap held before (later writes may end at
the elements in use, leaving nothing past them). In a process that read an input which is then
erased, that can be the input's own bytes (an erased phone number was found in a rebuilt
segment's ``length.bin``). Clearing the unused rows after the rebuild removes them; hnswlib writes
a row in full before it counts the element, so a cleared row is never read.

The layout read here is hnswlib's header as Chroma writes it (a format version, then hnswlib's
``size_t`` fields). A segment in any other layout is left alone and counted, so an erasure report
can say that its files were not checked, rather than clear bytes it does not understand.

The same reading tells an open whether a segment's files look whole (``looks_whole``), so only a
segment that does not is loaded and asked a query: a file zeroed or removed (a disk fault, a
half-copied AMEM_HOME) kept its size, or left the header alone, and Chroma then failed every query
of that scope, or silently answered the wrong neighbours.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

#: The format version Chroma writes first in header.bin, and what follows it: hnswlib's
#: offsetLevel0, max_elements, cur_element_count and size_data_per_element.
KNOWN_VERSION = 1
_HEADER = struct.Struct("<I4Q")
_CHUNK = 1 << 20
#: Chroma's own map of the segment's ids to hnswlib's labels: a pickle (protocol 2 or later, so
#: its first byte is PROTO, its last STOP), without which no id is found.
_ID_MAP = "index_metadata.pickle"


@dataclass(frozen=True)
class SegmentLayout:
    """How much of a segment's arrays is in use: ``elements`` of ``capacity`` rows."""

    capacity: int
    elements: int
    row_bytes: int

    def arrays(self) -> tuple[tuple[str, int], ...]:
        """Each array file with the bytes one element takes in it."""
        return (("data_level0.bin", self.row_bytes), ("length.bin", 4))


def is_segment(directory: Path) -> bool:
    return (directory / "header.bin").is_file()


def read_layout(directory: Path) -> SegmentLayout | None:
    """The segment's layout, or None when its files are not in the layout this module knows (a
    version, sizes that do not match the header, a file missing)."""
    try:
        header = (directory / "header.bin").read_bytes()
        if len(header) < _HEADER.size:
            return None
        version, _offset, capacity, elements, row_bytes = _HEADER.unpack_from(header)
        if version != KNOWN_VERSION or row_bytes <= 0 or not 0 <= elements <= capacity:
            return None
        layout = SegmentLayout(capacity=capacity, elements=elements, row_bytes=row_bytes)
        for name, width in layout.arrays():  # a first write covers the capacity, a later one may stop
            if not elements * width <= (directory / name).stat().st_size <= capacity * width:
                return None
    except OSError:
        return None
    return layout


def looks_whole(directory: Path) -> bool:
    """Whether the segment's files look as Chroma leaves them: the layout known (``read_layout``),
    the id map there and framed as a pickle, and the first and last elements in use written (a
    row of data that is not all zero bytes, a vector length that is not zero: amem's vectors are
    of unit length). A few small reads, no load: a segment that fails is for the caller to load
    and query (it may be whole, in a layout this module does not know)."""
    layout = read_layout(directory)
    if layout is None:
        return False
    try:
        with open(directory / _ID_MAP, "rb") as id_map:
            first = id_map.read(1)
            if id_map.seek(0, 2) < 2:
                return False
            id_map.seek(-1, 2)
            if first != b"\x80" or id_map.read(1) != b".":
                return False
        if layout.elements == 0:
            return True
        with (
            open(directory / "data_level0.bin", "rb") as data,
            open(directory / "length.bin", "rb") as lengths,
        ):
            for element in {0, layout.elements - 1}:
                data.seek(element * layout.row_bytes)
                lengths.seek(element * 4)
                if not data.read(layout.row_bytes).strip(b"\0") or not lengths.read(4).strip(b"\0"):
                    return False
    except OSError:
        return False
    return True


def clear_unused_capacity(directory: Path) -> int | None:
    """Zero the rows past the elements in use in the segment's array files. Returns the bytes that
    were not zero and now are, or None when the layout is not known (nothing is written then)."""
    layout = read_layout(directory)
    if layout is None:
        return None
    cleared = 0
    for name, width in layout.arrays():
        with open(directory / name, "r+b") as file:
            position = layout.elements * width
            end = min(layout.capacity * width, file.seek(0, 2))
            while position < end:
                file.seek(position)
                chunk = file.read(min(_CHUNK, end - position))
                if not chunk:
                    break
                dirty = len(chunk) - chunk.count(0)
                if dirty:
                    file.seek(position)
                    file.write(bytes(len(chunk)))
                    cleared += dirty
                position += len(chunk)
    return cleared
