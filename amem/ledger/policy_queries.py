"""The ledger's side of installing a policy: which team attributes the ledger holds values of.

A policy that drops a team attribute, or changes its declared type, while notes or pending
proposals hold values of it would leave those values unreadable under it (the review queue and
every change to that attribute fail). Two statements answer for every attribute at once: one pass
over the notes' ``extra`` column in SQL, and the pending proposals found by their status index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from amem.domain.models import ProposalStatus
from amem.ledger.store import LedgerTx
from amem.ledger.tables import notes, proposals


@dataclass(frozen=True)
class Held:
    """How many notes hold a value of an attribute, and how many pending proposals propose one."""

    notes: int
    pending: int


def values_held(tx: LedgerTx, attributes: Sequence[str]) -> dict[str, Held]:
    """For each of ``attributes`` (team attributes, kept in ``notes.extra``) that the ledger holds
    values of, the counts; the attributes it holds none of are left out."""
    names = sorted(set(attributes))
    if not names:
        return {}
    # JSON null and a missing key both read as SQL NULL, on SQLite (json_extract) and PostgreSQL (->>)
    counts = [
        sa.func.coalesce(sa.func.sum(sa.case((notes.c.extra[name].as_string().is_not(None), 1), else_=0)), 0)
        for name in names
    ]
    in_notes = tx.conn.execute(sa.select(*counts).select_from(notes)).one()
    pending = dict(
        tx.conn.execute(
            sa.select(proposals.c.attribute, sa.func.count())
            .where(proposals.c.status == ProposalStatus.PENDING.value, proposals.c.attribute.in_(names))
            .group_by(proposals.c.attribute)
        ).all()
    )
    held = {name: Held(int(n), int(pending.get(name, 0))) for name, n in zip(names, in_notes, strict=True)}
    return {name: h for name, h in held.items() if h.notes or h.pending}
