"""The ``amem`` command. Thin: parse, call the facade, render. User mistakes print no traceback."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from amem.cli import ledger, notes, search, ui  # noqa: F401  (registers the commands)
from amem.cli.app import app, err

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> int:
    from typer import Abort, Exit
    from typer._click.exceptions import ClickException

    from amem.errors import AmemError

    try:
        rc = app(args=argv, standalone_mode=False, prog_name="amem")
    except AmemError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
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
