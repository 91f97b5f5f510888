"""`amem --help` must not pay for the ledger stack: heavy modules are imported where they are used.

Timings live in bench/cli_startup.py; this checks what each command imports, which does not vary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("sqlalchemy", "alembic", "chromadb", "litellm", "onnxruntime", "streamlit", "yake", "numpy")


def _imported_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return {name.split(".")[0] for name in json.loads(done.stdout.strip().splitlines()[-1])}


def test_help_imports_nothing_heavy() -> None:
    loaded = _imported_after(
        "import contextlib, io\nfrom amem.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    main(['--help'])"
    )
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_a_read_command_on_an_existing_store_imports_neither_alembic_nor_the_index(tmp_path: Path) -> None:
    env = {**os.environ, "AMEM_HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "amem", "db", "upgrade"], env=env, check=True, capture_output=True)
    loaded = _imported_after(
        "import contextlib, io, os\nfrom amem.cli import main\n"
        f"os.environ['AMEM_HOME'] = {str(tmp_path)!r}\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['pending']) == 0"
    )
    assert "sqlalchemy" in loaded  # the ledger is read
    assert not loaded & {"alembic", "chromadb", "litellm", "onnxruntime", "streamlit", "yake"}


def test_help_shows_each_paragraph_unbroken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Docstrings are wrapped at 100 columns; help must reflow them, not keep those breaks (on an
    80-column terminal a kept break leaves ragged half lines). At 250 columns each short paragraph
    of every command's help, summaries in the command lists included, is one line."""
    import contextlib
    import inspect
    import io

    from typer.main import get_command

    from amem.cli import app, main

    monkeypatch.setenv("COLUMNS", "250")

    def shown(*path: str) -> set[str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main([*path, "--help"])
        return {" ".join(line.strip(" │").split()) for line in out.getvalue().splitlines()}

    def paragraphs(command: object) -> list[str]:
        text = inspect.cleandoc(getattr(command, "help", None) or "").replace("`", "")
        return [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]

    groups: list[tuple[tuple[str, ...], object]] = [((), get_command(app))]
    while groups:
        path, group = groups.pop()
        listing = " ".join(shown(*path))
        for name, command in group.commands.items():  # type: ignore[attr-defined]
            where = " ".join(["amem", *path, name])
            summary, *rest = paragraphs(command) or [""]
            assert summary in listing, f"{where}: {summary!r} in the list"
            lines = shown(*path, name)
            for paragraph in [summary, *rest]:
                if len(paragraph) < 200:
                    assert any(paragraph in line for line in lines), f"{where}: {paragraph!r}"
            if hasattr(command, "commands"):
                groups.append(((*path, name), command))
