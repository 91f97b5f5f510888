"""``amem where`` (which store, ledger, index and policy are in force, and why) and ``amem init``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from amem.cli.app import JsonOpt, app, emit, out, print_policy_warnings, settings, state


def where_data() -> dict[str, Any]:
    """What a command would use here, read without opening (or creating) anything."""
    from amem.policy import resolve_policy_path

    cfg = settings()
    return {
        "store": str(cfg.home.resolve()),
        "chosen_by": cfg.home_source,
        "exists": cfg.home.is_dir(),
        "ledger": cfg.shown_database_url,
        "index": cfg.chroma_url or str(cfg.chroma_path.resolve()),
        "policy": str(resolve_policy_path(cfg.policy_path).resolve()),
    }


@app.command()
def where(as_json: JsonOpt = False) -> None:
    """The store, ledger, index and policy in force here, and which rule chose the store."""

    def render(d: dict[str, Any]) -> None:
        missing = "" if d["exists"] else "  (not created yet)"
        out.print(f"store   {d['store']}  ({d['chosen_by']}){missing}", markup=False)
        out.print(f"ledger  {d['ledger']}", markup=False)
        out.print(f"index   {d['index']}", markup=False)
        out.print(f"policy  {d['policy']}", markup=False)

    emit(where_data(), as_json, render)


@app.command()
def init(
    directory: Annotated[
        Path | None,
        typer.Argument(
            help="Where to put the .amem store (default: --home or $AMEM_HOME as given, else here).",
            file_okay=False,
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a .amem store in DIRECTORY: commands run there or below will use it (as git finds .git).

    With --home (or $AMEM_HOME) and no DIRECTORY, the store is made there; --database-url and
    --policy are honoured as by every command (the policy becomes the ledger's version 1)."""
    import os

    from amem.config import STORE_DIR_NAME, home_path
    from amem.errors import InvalidInputError
    from amem.memory import Memory

    if directory is not None and state.home is not None:
        raise InvalidInputError(
            f"init {directory} --home {state.home}: give the store's place once (DIRECTORY makes "
            f"{Path(directory) / STORE_DIR_NAME}, --home makes the directory itself)"
        )
    chosen = state.home or (None if directory is not None else os.environ.get("AMEM_HOME") or None)
    home = home_path(chosen) if chosen else ((directory or Path(".")) / STORE_DIR_NAME).resolve()
    with Memory(home, database_url=state.database_url, policy=state.policy, llm=state.llm) as mem:
        print_policy_warnings(mem)
        data = {"store": str(home), "ledger": mem.settings.shown_database_url}
    emit(data, as_json, lambda d: out.print(f"store {d['store']} ready", markup=False))
