"""A PostgreSQL restore pointed at a ledger in service is refused without advice to drop it: only
what a restore killed while verifying left (marked, and still the backup's own ledger) is named as
something to drop."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from amem.errors import InvalidInputError
from amem.memory import Memory
from amem.services.restore import restore
from tests.factories import make_note
from tests.services.restore_setups import killed_restore, tables, team_dump


@pytest.mark.postgres
def test_a_restore_into_the_team_ledger_in_service_says_what_it_holds_and_never_to_drop_it(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    """Before, the refusal went on "If they are what a restore killed while verifying left ... drop it
    (DROP SCHEMA "public" CASCADE ...)": an admin skimming it could drop the team's only ledger."""
    team = new_database()
    dump = team_dump(team, tmp_path / "team", "Initech renewed for two years")
    with Memory(tmp_path / "team", database_url=team) as mem:
        make_note(mem, "Initech moved to Austin", scope="initech")  # kept after the backup

    for url in (team, new_database()):  # the team's own, and one a finished restore put into service
        if url != team:
            assert restore(dump, url).restored
        with pytest.raises(InvalidInputError, match=r"holds \d+ table\(s\) already") as refused:
            restore(dump, url)
        said = str(refused.value)
        assert "DROP SCHEMA" not in said and "drop" not in said, said
        assert re.search(r"holds \d+ change\(s\), the last at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", said), said
        assert "restore into an empty database instead" in said
        assert tables(url, "public") > 0


@pytest.mark.postgres
def test_only_what_a_killed_restore_left_is_named_as_something_to_drop(
    new_database: Callable[[], str], tmp_path: Path
) -> None:
    """The mark a restore leaves until it has verified, with the backup's own chain heads, tells a
    killed restore's leftovers; once a store has kept anything there, dropping is no longer named."""
    target = new_database()
    dump = team_dump(new_database(), tmp_path / "team", "Initech renewed for two years")
    killed_restore(dump, target)

    with pytest.raises(InvalidInputError) as refused:
        restore(dump, target)
    assert 'DROP SCHEMA "public" CASCADE' in str(refused.value)
    assert "the backup's own ledger (1 change(s)" in str(refused.value)

    with Memory(tmp_path / "put-into-service", database_url=target, create=False) as mem:
        make_note(mem, "Initech moved to Austin", scope="initech")
    with pytest.raises(InvalidInputError) as refused:
        restore(dump, target)
    said = str(refused.value)
    assert "DROP SCHEMA" not in said and "which the backup does not hold" in said, said
