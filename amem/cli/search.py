"""Search commands: ``amem search`` (hybrid or agentic) and ``amem reindex``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from amem.cli.app import JsonOpt, app, emit, open_memory, out, parse_time, store_label
from amem.errors import InvalidInputError

#: The most hits a search answers: SearchService's MAX_K (amem/services/search.py), written out
#: here because the CLI starts without importing the search stack (numpy, chromadb).
MAX_K = 100


@app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    k: Annotated[int, typer.Option("-k", min=1, max=MAX_K, help="How many hits.")] = 10,
    scope: Annotated[
        str | None, typer.Option("--scope", help="Whose memory (optional when the store has one scope).")
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Only notes with this tag (repeatable: all of them).")
    ] = None,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="Search the notes as they stood then (ISO 8601).")
    ] = None,
    include_retired: Annotated[
        bool, typer.Option("--include-retired", help="Also notes whose invalid_at has passed.")
    ] = False,
    agentic: Annotated[
        bool, typer.Option("--agentic", help="Also return the notes the hits link to and from.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Hybrid search (meaning + words) over one scope's notes."""
    moment = parse_time(as_of, "--as-of")
    with open_memory(create=False) as memory:
        chosen = _known_scope(memory, scope) if scope else _only_scope(memory)
        find = memory.search_agentic if agentic else memory.search
        results = find(
            query, k, scope=chosen, tags=tag or None, as_of=moment, include_retired=include_retired
        )
        emit(results, as_json, _render)


@app.command("reindex")
def reindex(as_json: JsonOpt = False) -> None:
    """Rebuild the vector index from the ledger (the ledger is the source of truth)."""
    from amem.cli.progress import reporter

    with open_memory(create=False) as memory:
        with reporter(as_json) as progress:
            count = memory.reindex(progress=progress)
        emit(
            {"indexed": count}, as_json, lambda d: out.print(f"reindexed {d['indexed']} notes", markup=False)
        )


def _known_scope(memory: Any, scope: str) -> str:
    """``scope`` if it holds notes; a mistyped one is named, with the scopes that exist."""
    scopes = memory.scopes()
    if scope in scopes:
        return scope
    if not scopes:
        raise InvalidInputError(f"scope {scope!r} has no notes: the store {store_label()} has none yet")
    return _raise_unknown(scope, scopes)


def _raise_unknown(scope: str, scopes: list[str]) -> str:
    """Refuse ``scope``, pointing to the scopes it may mean (``services.scopes.suggestions``: the
    same name in another case first, then those spelled alike) and to those that exist."""
    from amem.services.scopes import suggestions

    return _refuse(scope, suggestions(scope, scopes), scopes)


def refuse_unknown_scope(memory: Any, scope: str) -> None:
    """Refuse (exit 2) a scope no input was ever kept under, as search and facts refuse one with no
    notes, with the scopes it may mean (``Memory.scope_check``, which reads the scopes kept, not the
    notes): a mistyped ``--scope`` is named, not answered with nothing. A scope that holds inputs
    passes, whatever it holds (a new account's inputs wait for review before its first note)."""
    check = memory.scope_check(scope)
    if not check.known:
        _refuse(scope, check.did_you_mean, check.kept, holds="inputs")


def _refuse(scope: str, close: list[str], scopes: list[str], *, holds: str = "notes") -> str:
    hint = f"did you mean {', '.join(close)}? " if close else ""
    known = f"known scopes: {_listed(scopes)}" if scopes else f"{store_label()} has none yet"
    raise InvalidInputError(f"scope {scope!r} has no {holds}; {hint}{known}")


def _listed(scopes: list[str]) -> str:
    return ", ".join(scopes[:10]) + (f" ... ({len(scopes)} in all)" if len(scopes) > 10 else "")


def _only_scope(memory: Any) -> str:
    scopes = memory.scopes()
    if len(scopes) == 1:
        return str(scopes[0])
    if not scopes:
        raise InvalidInputError(f"the store {store_label()} has no notes yet, so there is nothing to search")
    shown = ", ".join(scopes[:10]) + (" ..." if len(scopes) > 10 else "")
    raise InvalidInputError(f"the store has {len(scopes)} scopes ({shown}): say which with --scope")


def _render(results: list[Any]) -> None:
    """One block per note: rank, id, score, how it was found; its content, when it was said and
    whether it still holds (a retired note is marked and comes after the current ones)."""
    from amem.cli import blocks

    blocks.search_hits(out, results)


@app.command("facts")
def facts(
    scope: Annotated[
        str | None, typer.Option("--scope", help="Whose facts (optional when the store has one scope).")
    ] = None,
    include_retired: Annotated[
        bool, typer.Option("--include-retired", help="Also facts a newer one retired, marked.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many.")] = 50,
    offset: Annotated[int, typer.Option(min=0, help="Skip this many.")] = 0,
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="The facts as the ledger stood then (ISO 8601): what it said that day."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """An account's current facts, newest said first.

    Each with its validity dates, the decision rationale, the decisions people took and their
    comments, and the command that shows the history. With --as-of, as they stood then."""
    moment = parse_time(as_of, "--as-of")
    with open_memory(create=False) as memory:
        chosen = _known_scope(memory, scope) if scope else _only_scope(memory)
        page = memory.facts(chosen, limit=limit, offset=offset, include_retired=include_retired, as_of=moment)

    def render(p: Any) -> None:
        from amem.cli import blocks

        blocks.facts(out, p)

    emit(page, as_json, render)
