"""The ``amem`` command. Thin: parse, call the facade, render. User mistakes print no traceback."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from amem.cli import agents, ledger, notes, search, ui  # noqa: F401  (registers the commands)
from amem.cli.app import app, err

__all__ = ["EXIT_ANALYSIS_PENDING", "EXIT_TAMPERED", "EXIT_USER_ERROR", "app", "main"]

#: Exit codes: 1 verify found tampering (or reprocess left raw logs unprocessed), 2 a user mistake,
#: 3 an approval ended in conflict, 4 the raw log was kept but could not be analysed yet.
EXIT_TAMPERED = 1
EXIT_USER_ERROR = 2
EXIT_ANALYSIS_PENDING = 4


def main(argv: list[str] | None = None) -> int:
    from typer import Abort, Exit
    from typer._click.exceptions import ClickException

    from amem.errors import AmemError, AnalysisPendingError

    try:
        rc = app(args=argv, standalone_mode=False, prog_name="amem")
    except AnalysisPendingError as exc:  # not a user mistake: the input is kept, analysis comes later
        err.print(f"pending: {exc}", markup=False)
        return EXIT_ANALYSIS_PENDING
    except AmemError as exc:
        err.print(f"error: {exc}", markup=False)
        return EXIT_USER_ERROR
    except ClickException as exc:
        exc.show()
        return exc.exit_code
    except Exit as exc:
        return exc.exit_code
    except Abort:
        err.print("aborted")
        return 130
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
