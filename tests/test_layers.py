"""Layers: the interfaces (the CLI, the console, the HTTP and MCP APIs) read and write through the
Memory facade and the services, never through the ledger (docs/architecture.md).

Read from the source with ``ast``, so an offence is caught whether or not a test runs its line:
no module under amem/cli, amem/api or approval_ui may touch a ``.ledger`` attribute (the facade's
``Memory.ledger``, or a service's), or import amem.ledger, SQLAlchemy or Alembic, statically or by
name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INTERFACES = ("amem/cli", "amem/api", "approval_ui")
FORBIDDEN_MODULES = ("amem.ledger", "sqlalchemy", "alembic")
DYNAMIC_IMPORTS = {"import_module", "__import__"}


def _forbidden(module: str) -> bool:
    return any(module == f or module.startswith(f + ".") for f in FORBIDDEN_MODULES)


def offences(source: str, filename: str = "<source>") -> list[str]:
    """Every way ``source`` reaches below the facade to the ledger, as ``file:line: what``."""
    found: list[tuple[int, str]] = []

    def say(node: ast.AST, what: str) -> None:
        found.append((getattr(node, "lineno", 0), what))

    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Attribute) and node.attr == "ledger":
            say(node, "reaches .ledger (read through Memory's read models instead)")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _forbidden(alias.name):
                    say(node, f"imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            bad = next((n for n in names if _forbidden(n)), None)
            if bad:
                say(node, f"imports {bad}")
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            first = node.args[0]
            if (
                name in DYNAMIC_IMPORTS
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and _forbidden(first.value)
            ):
                say(node, f"imports {first.value} by name")
    return [f"{filename}:{line}: {what}" for line, what in sorted(found)]


def interface_modules() -> list[Path]:
    return sorted(p for d in INTERFACES for p in (ROOT / d).rglob("*.py"))


@pytest.mark.parametrize(
    "source",
    [
        "with mem.ledger.read() as tx:\n    tx.get_proposal('p')",
        "url = mem.ledger.engine.url",
        "audit.scopes(memory.governance.ledger)",
        "from amem.ledger.store import ProposalFilter",
        "from amem.ledger import schema",
        "from amem import ledger",
        "import amem.ledger.store",
        "from sqlalchemy.engine import make_url",
        "import sqlalchemy as sa",
        "import alembic.command",
        "importlib.import_module('amem.ledger.store')",
        "__import__('sqlalchemy')",
    ],
)
def test_each_way_to_the_ledger_is_caught(source: str) -> None:
    assert offences(source)


@pytest.mark.parametrize(
    "source",
    [
        "with open_memory() as mem:\n    mem.proposal('p')",
        "from amem.services.audit import AuditQuery",
        "from amem.memory import Memory",
        "ledger = settings.shown_database_url",
        "data = {'ledger': url}",
        "importlib.util.find_spec('amem.services.search')",
        "from amem.ledgers_elsewhere import x",
    ],
)
def test_the_facade_and_services_are_allowed(source: str) -> None:
    assert offences(source) == []


def test_interfaces_never_reach_into_the_ledger() -> None:
    modules = interface_modules()
    # Every interface package is scanned (a moved directory must not make this pass on nothing).
    for d in INTERFACES:
        assert any(p.is_relative_to(ROOT / d) for p in modules), d
    found = [o for p in modules for o in offences(p.read_text("utf-8"), str(p.relative_to(ROOT)))]
    assert found == [], "interfaces must go through amem.memory.Memory or a service:\n" + "\n".join(found)
