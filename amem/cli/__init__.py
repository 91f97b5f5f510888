"""The ``amem`` command. Thin: parse, call the facade, render. User mistakes print no traceback."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from amem.cli import ledger, notes, search, ui  # noqa: F401  (registers the commands)
from amem.cli.app import app, err

__all__ = [
    "EXIT_ANALYSIS_PENDING",
    "EXIT_INTERNAL_ERROR",
    "EXIT_TAMPERED",
    "EXIT_USER_ERROR",
    "app",
    "main",
]

#: Exit codes: 1 verify found tampering (or reprocess left raw logs unprocessed), 2 a user mistake,
#: 3 an approval ended in conflict, 4 the raw log was kept but could not be analysed yet,
#: 70 an unexpected error (a bug in amem: never 1, which means tampering).
EXIT_TAMPERED = 1
EXIT_USER_ERROR = 2
EXIT_ANALYSIS_PENDING = 4
EXIT_INTERNAL_ERROR = 70


def main(argv: list[str] | None = None) -> int:
    from typer import Abort, Exit
    from typer._click.exceptions import ClickException

    from amem.errors import AmemError, AnalysisPendingError

    try:
        rc = app(args=argv, standalone_mode=False, prog_name="amem")
    except AnalysisPendingError as exc:  # not a user mistake: the input is kept, analysis comes later
        err.print(f"pending: {_printable(exc)}", markup=False)
        return EXIT_ANALYSIS_PENDING
    except AmemError as exc:
        err.print(f"error: {_printable(exc)}", markup=False)
        return EXIT_USER_ERROR
    except ClickException as exc:
        exc.show()
        return exc.exit_code
    except Exit as exc:
        return exc.exit_code
    except (Abort, KeyboardInterrupt):
        err.print("aborted")
        return 130
    except Exception as exc:  # a bug: one line (the traceback with AMEM_DEBUG=1), never exit 1
        if os.environ.get("AMEM_DEBUG"):
            import traceback

            traceback.print_exc()
        err.print(
            f"internal error ({type(exc).__name__}): {_printable(exc)}; this is a bug in amem, please "
            "report it with the command that caused it (AMEM_DEBUG=1 shows the traceback)",
            markup=False,
        )
        return EXIT_INTERNAL_ERROR
    return rc if isinstance(rc, int) else 0


def _printable(exc: BaseException) -> str:
    """The message on one line, with anything a terminal cannot show escaped."""
    text = " ".join(str(exc).splitlines())
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


if __name__ == "__main__":
    sys.exit(main())
