"""The ``amem`` command. Thin: parse, call the facade, render. User mistakes print no traceback."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from amem.cli import demo, export, ledger, notes, search, store, ui  # noqa: F401  (registers the commands)
from amem.cli.app import app, err, store_label

__all__ = ["EXIT_ANALYSIS_PENDING", "EXIT_TAMPERED", "EXIT_USER_ERROR", "app", "main"]

#: Exit codes: 1 verify found tampering (or reprocess left raw logs unprocessed), 2 a user mistake,
#: 3 an approval ended in conflict, 4 the raw log was kept but could not be analysed yet.
EXIT_TAMPERED = 1
EXIT_USER_ERROR = 2
EXIT_ANALYSIS_PENDING = 4


def main(argv: list[str] | None = None) -> int:
    from typer import Abort, Exit
    from typer._click.exceptions import ClickException

    from amem.errors import AmemError, AnalysisPendingError, NotFoundError

    args = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in args
    try:
        rc = app(args=args, standalone_mode=False, prog_name="amem")
    except AnalysisPendingError as exc:  # not a user mistake: the input is kept, analysis comes later
        return _fail(f"pending: {exc}", EXIT_ANALYSIS_PENDING, as_json, raw_log_id=exc.raw_log_id)
    except NotFoundError as exc:  # say where it looked: another store may hold it
        return _fail(f"error: {exc} in {store_label()}", EXIT_USER_ERROR, as_json)
    except AmemError as exc:
        return _fail(f"error: {exc}", EXIT_USER_ERROR, as_json)
    except ClickException as exc:
        if not as_json:
            exc.show()
            return exc.exit_code
        return _fail(f"error: {exc.format_message()}", exc.exit_code, as_json)
    except Exit as exc:
        return exc.exit_code
    except Abort:
        err.print("aborted")
        return 130
    return rc if isinstance(rc, int) else 0


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
