"""`amem --help` must not pay for the ledger stack: heavy modules are imported where they are used.

Timings live in bench/cli_startup.py; this checks what each command imports, which does not vary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
