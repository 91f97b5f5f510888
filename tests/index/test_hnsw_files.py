"""Clearing the unused capacity of Chroma's HNSW segment files (amem.index.hnsw_files).

Synthetic segments pin the rules; one real segment, written by Chroma through add_note, pins that
the layout read is the one the installed Chroma writes (a release that changes it fails here)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from amem.index import hnsw_files
from amem.memory import Memory

ROW = 24  # bytes of one element's row in data_level0.bin (hnswlib's size_data_per_element)


def _segment(tmp_path: Path, *, capacity: int, elements: int, version: int = 1) -> Path:
    """A segment as Chroma writes one: used rows of data, then capacity it never zeroed."""
    directory = tmp_path / "segment"
    directory.mkdir()
    header = struct.pack("<I4Q", version, 0, capacity, elements, ROW) + bytes(48)
    (directory / "header.bin").write_bytes(header)
    used, stale = b"\x01" * ROW, b"06123456" * (ROW // 8)
    (directory / "data_level0.bin").write_bytes(used * elements + stale * (capacity - elements))
    (directory / "length.bin").write_bytes(b"\x00\x00\x80\x3f" * elements + b"0612" * (capacity - elements))
    (directory / "link_lists.bin").write_bytes(b"")
    return directory


def test_rows_past_the_elements_in_use_are_zeroed_and_the_used_rows_kept(tmp_path: Path) -> None:
    directory = _segment(tmp_path, capacity=10, elements=3)
    assert hnsw_files.read_layout(directory) == hnsw_files.SegmentLayout(
        capacity=10, elements=3, row_bytes=ROW
    )

    cleared = hnsw_files.clear_unused_capacity(directory)

    data = (directory / "data_level0.bin").read_bytes()
    lengths = (directory / "length.bin").read_bytes()
    assert data == b"\x01" * ROW * 3 + bytes(ROW * 7)
    assert lengths == b"\x00\x00\x80\x3f" * 3 + bytes(4 * 7)
    assert cleared == ROW * 7 + 4 * 7  # every stale byte was non-zero
    assert b"0612" not in data + lengths
    assert hnsw_files.clear_unused_capacity(directory) == 0  # a clean segment is left as it is


def test_a_file_written_only_up_to_the_elements_in_use_has_nothing_to_clear(tmp_path: Path) -> None:
    """After its index grew, Chroma writes the arrays up to the elements in use."""
    directory = _segment(tmp_path, capacity=10, elements=3)
    for name, width in (("data_level0.bin", ROW), ("length.bin", 4)):
        path = directory / name
        path.write_bytes(path.read_bytes()[: 3 * width])
    assert hnsw_files.read_layout(directory) is not None
    assert hnsw_files.clear_unused_capacity(directory) == 0
    assert (directory / "length.bin").read_bytes() == b"\x00\x00\x80\x3f" * 3


def test_a_full_segment_has_nothing_to_clear(tmp_path: Path) -> None:
    directory = _segment(tmp_path, capacity=4, elements=4)
    before = (directory / "data_level0.bin").read_bytes()
    assert hnsw_files.clear_unused_capacity(directory) == 0
    assert (directory / "data_level0.bin").read_bytes() == before


@pytest.mark.parametrize(
    "damage",
    [
        "another version",
        "a file shorter than the header says",
        "more elements than capacity",
        "no length file",
    ],
)
def test_a_layout_it_does_not_know_is_left_untouched(tmp_path: Path, damage: str) -> None:
    directory = _segment(tmp_path, capacity=10, elements=3, version=2 if damage == "another version" else 1)
    if damage == "a file shorter than the header says":
        (directory / "length.bin").write_bytes(b"0612" * 2)
    if damage == "more elements than capacity":
        header = bytearray((directory / "header.bin").read_bytes())
        struct.pack_into("<Q", header, 20, 11)
        (directory / "header.bin").write_bytes(bytes(header))
    if damage == "no length file":
        (directory / "length.bin").unlink()
    files = {p.name: p.read_bytes() for p in directory.iterdir()}

    assert hnsw_files.read_layout(directory) is None
    assert hnsw_files.clear_unused_capacity(directory) is None
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == files


@pytest.mark.parametrize("damage", ["rows zeroed", "lengths zeroed", "id map zeroed", "no id map"])
def test_a_segment_whose_files_were_zeroed_or_removed_does_not_look_whole(
    tmp_path: Path, damage: str
) -> None:
    """Such a segment kept its header and its sizes, and an open trusted it: Chroma then failed every
    query of its scope ("Error finding id"), or (its vector lengths zeroed) answered every query with
    other entries, all at distance 1."""
    directory = _segment(tmp_path, capacity=10, elements=3)
    (directory / "index_metadata.pickle").write_bytes(b"\x80\x04}\x94.")
    assert hnsw_files.looks_whole(directory)
    if damage == "rows zeroed":
        (directory / "data_level0.bin").write_bytes(bytes(10 * ROW))
    if damage == "lengths zeroed":
        (directory / "length.bin").write_bytes(bytes(10 * 4))
    if damage == "id map zeroed":
        (directory / "index_metadata.pickle").write_bytes(bytes(5))
    if damage == "no id map":
        (directory / "index_metadata.pickle").unlink()

    assert not hnsw_files.looks_whole(directory)


def test_the_layout_is_the_one_the_installed_chroma_writes(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "home", database_url=f"sqlite:///{tmp_path / 'ledger.db'}")
    try:
        for text in ("Acme renewal in March", "Acme wants SSO", "Acme asked for a discount"):
            memory.add_note(text, actor="agent:sales-agent", scope="acme")
        memory.add_note("Globex signed", actor="agent:sales-agent", scope="globex")
        # past its first capacity (100) the index grows, and Chroma writes the arrays otherwise
        grown = [{"content": f"Initech call {i}: {i + 10} seats", "scope": "initech"} for i in range(120)]
        memory.add_notes(grown, actor="agent:import")
    finally:
        memory.close()
    segments = [p for p in memory.settings.chroma_path.iterdir() if hnsw_files.is_segment(p)]
    layouts = sorted(
        (layout.elements, layout.capacity)
        for layout in (hnsw_files.read_layout(p) for p in segments)
        if layout is not None
    )
    assert len(layouts) == len(segments) == 3
    assert [elements for elements, _ in layouts] == [1, 3, 120]
    assert all(capacity > elements for elements, capacity in layouts)
