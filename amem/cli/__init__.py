"""The ``amem`` command. Thin: parse, call the facade, render. User mistakes print no traceback."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from amem.cli import agents, demo, export, ledger, notes, search, store, trust, ui  # noqa: F401  (registers the commands)
from amem.cli.app import app, err, store_label

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

    from amem.errors import AmemError, AnalysisPendingError, NotFoundError

    args = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in args
    try:
        rc = app(args=args, standalone_mode=False, prog_name="amem")
    except AnalysisPendingError as exc:  # not a user mistake: the input is kept, analysis comes later
        message = f"pending: {_printable(exc)}"
        return _fail(message, EXIT_ANALYSIS_PENDING, as_json, raw_log_id=exc.raw_log_id)
    except NotFoundError as exc:  # say where it looked: another store may hold it
        return _fail(f"error: {_printable(exc)} in {store_label()}", EXIT_USER_ERROR, as_json)
    except AmemError as exc:
        return _fail(f"error: {_printable(exc)}", EXIT_USER_ERROR, as_json)
    except ClickException as exc:
        if not as_json:
            exc.show()
            return exc.exit_code
        return _fail(f"error: {exc.format_message()}", exc.exit_code, as_json)
    except Exit as exc:
        return exc.exit_code
    except (Abort, KeyboardInterrupt):
        err.print("aborted")
        return 130
    except Exception as exc:  # a bug: one line (the traceback with AMEM_DEBUG=1), never exit 1
        if os.environ.get("AMEM_DEBUG"):
            import traceback

            traceback.print_exc()
        return _fail(
            f"internal error ({type(exc).__name__}): {_printable(exc)}; this is a bug in amem, please "
            "report it with the command that caused it (AMEM_DEBUG=1 shows the traceback)",
            EXIT_INTERNAL_ERROR,
            as_json,
        )
    return rc if isinstance(rc, int) else 0


def _printable(exc: BaseException) -> str:
    """The message on one line, with anything a terminal cannot show escaped."""
    text = " ".join(str(exc).splitlines())
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def _fail(message: str, code: int, as_json: bool, **fields: object) -> int:
    """One line on stderr: text, or under --json a JSON object ({"error": ..., "exit_code": ...}).

    Standard output carries results only, so a script reading it never mistakes an error for one.
    """
    if as_json:
        import json

        key = "pending" if code == EXIT_ANALYSIS_PENDING else "error"
        text = message.split(": ", 1)[1] if message.startswith(f"{key}: ") else message
        body = {key: text, "exit_code": code, **fields}
        sys.stderr.write(json.dumps(body, ensure_ascii=False) + "\n")
    else:
        err.print(message, markup=False)
    return code


if __name__ == "__main__":
    sys.exit(main())
