"""The ``amem`` command. Thin: parse, call the facade, render. User mistakes print no traceback."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from amem.cli import agents, demo, export, ledger, notes, search, store, trust, ui  # noqa: F401  (registers the commands)
from amem.cli.app import app, err, store_label

__all__ = [
    "EXIT_ANALYSIS_PENDING",
    "EXIT_INTERNAL_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_IO_ERROR",
    "EXIT_PIPE_CLOSED",
    "EXIT_TAMPERED",
    "EXIT_TERMINATED",
    "EXIT_UNAVAILABLE",
    "EXIT_USER_ERROR",
    "app",
    "main",
]

#: Exit codes: 1 verify found tampering (or reprocess left raw logs unprocessed), 2 a user mistake,
#: 3 an approval ended in conflict, 4 the raw log was kept but could not be analysed yet,
#: 70 an unexpected error (a bug in amem: never 1, which means tampering); 130, 143, 141 below.
EXIT_TAMPERED = 1
EXIT_USER_ERROR = 2
EXIT_ANALYSIS_PENDING = 4
EXIT_INTERNAL_ERROR = 70
#: The machine, not amem nor the user's command: the ledger database cannot be reached (a server
#: down, a database that does not exist: sysexits' EX_UNAVAILABLE), or the disk refused a write
#: (full, read-only, no permission: EX_IOERR). Said in words, never "a bug in amem".
EXIT_UNAVAILABLE = 69
EXIT_IO_ERROR = 74


#: The status a shell reports for a program stopped by a signal (128 + its number): Ctrl-C 130,
#: SIGTERM 143, and a reader that closed the pipe (``amem export | head``) 141, as for SIGPIPE.
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_PIPE_CLOSED = 141
#: The commands that take inputs in: interrupted, they say what became of them and how to finish.
IMPORT_COMMANDS = frozenset({"import"})
INPUT_COMMANDS = frozenset({"add", "reprocess"})


#: What the disk says when it refuses a write for a reason outside amem.
_DISK_REFUSALS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


def _environment_problem(exc: Exception) -> tuple[str, int] | None:
    """The message and exit status for a failure of the machine rather than of amem, or None.

    The ledger's server unreachable or its database missing (SQLAlchemy's error raised before any
    statement ran, or a connection the server dropped), a full or read-only disk: each is something
    the operator fixes, and "internal error ... a bug in amem" sent them to report it instead."""
    from amem.errors import ledger_unreachable

    reason = ledger_unreachable(exc)
    if reason is not None:
        return (
            f"error: the ledger database cannot be reached ({_printable(reason)}): {store_label()}; "
            "check that its server runs and the URL (--database-url or AMEM_DATABASE_URL)",
            EXIT_UNAVAILABLE,
        )
    if isinstance(exc, OSError) and exc.errno in _DISK_REFUSALS:
        where = f": {exc.filename}" if exc.filename else ""
        return f"error: {_printable(exc.strerror or exc)}{_printable(where)}", EXIT_IO_ERROR
    return None


class Terminated(KeyboardInterrupt):
    """SIGTERM (a supervisor, a container stop, a CI timeout), raised where Ctrl-C would be: every
    path that gives an interrupted input's claim back on Ctrl-C does so on SIGTERM too."""


def main(argv: list[str] | None = None) -> int:
    from typer import Abort, Exit
    from typer._click.exceptions import ClickException

    from amem.errors import AmemError, AnalysisPendingError, InputErasedError, NotFoundError

    args = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in args
    previous_term = _terminate_as_interrupt()
    try:
        rc = _run(args)
    except AnalysisPendingError as exc:  # not a user mistake: the input is kept, analysis comes later
        message = f"pending: {_printable(exc)}"
        return _fail(message, EXIT_ANALYSIS_PENDING, as_json, raw_log_id=exc.raw_log_id)
    except InputErasedError as exc:  # a user mistake (exit 2), with the erasure's record for a script
        erasure = {"erasure_id": exc.erasure_id, "erased_by": exc.erased_by}
        erasure["erased_at"] = exc.erased_at.isoformat() if exc.erased_at else None
        return _fail(
            f"error: {_printable(exc)}", EXIT_USER_ERROR, as_json, raw_log_id=exc.raw_log_id, **erasure
        )
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
    except KeyboardInterrupt as exc:
        advice = getattr(exc, "how_to_finish", None)  # set by a command that knows better
        return _interrupted(args, terminated=isinstance(exc, Terminated), advice=advice)
    except (Abort, EOFError):  # a prompt given Ctrl-C, or no answer at all
        err.print("aborted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _pipe_closed()
    except Exception as exc:  # a bug: one line (the traceback with AMEM_DEBUG=1), never exit 1
        if os.environ.get("AMEM_DEBUG"):
            import traceback

            traceback.print_exc()
        environment = _environment_problem(exc)
        if environment is not None:
            return _fail(environment[0], environment[1], as_json)
        return _fail(
            f"internal error ({type(exc).__name__}): {_printable(exc)}; this is a bug in amem, please "
            "report it with the command that caused it (AMEM_DEBUG=1 shows the traceback)",
            EXIT_INTERNAL_ERROR,
            as_json,
        )
    finally:
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
    return rc if isinstance(rc, int) else 0


def _run(args: list[str]) -> Any:
    """The command, as ``app(standalone_mode=False)`` runs it, but with its exceptions as raised:
    typer turns Ctrl-C into ``Exit(130)`` and a closed pipe into ``sys.exit(1)`` before ``main``
    sees them, and exit 1 means tampering here."""
    from typer.main import get_command

    command = get_command(app)
    with command.make_context("amem", args) as ctx:
        return command.invoke(ctx)


def _terminate_as_interrupt() -> Any:
    """Make SIGTERM raise ``Terminated`` in this (main) thread; returns the handler it replaces, to
    put back, or None where none was replaced (not the main thread). A second SIGTERM stops at once."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def terminate(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise Terminated

    return signal.signal(signal.SIGTERM, terminate)


def _interrupted(args: list[str], *, terminated: bool, advice: str | None = None) -> int:
    """Say what an interruption left: a command that takes inputs in kept every raw log it recorded
    and gave the ones not yet analysed back to the queue, so the caller learns how to finish them.
    ``advice``: how to finish, where the command knows better (an import whose lines without a time
    or a key a re-run would record again: the advice to run it again doubled them)."""
    how = "terminated (SIGTERM)" if terminated else "interrupted"
    name = _command_name(args)
    if name in IMPORT_COMMANDS and advice is not None:
        message = f"{how}: {advice}"
    elif name in IMPORT_COMMANDS:
        message = (
            f"{how}: the lines recorded so far are kept as raw logs and those not analysed yet are "
            "queued again; run the same `amem import` again to finish: it skips the lines it "
            "recorded and analyses what was left"
        )
    elif name in INPUT_COMMANDS:
        message = (
            f"{how}: the raw logs recorded so far are kept and those not analysed yet are queued "
            "again; `amem reprocess` analyses them (`amem status RAW_LOG_ID` says what became of one)"
        )
    else:
        message = how
    with contextlib.suppress(OSError):  # stderr may be gone too (a closed terminal)
        err.print(message, markup=False)
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED


def _command_name(args: list[str]) -> str | None:
    """The command ``args`` run: the first of them that names one (global options come before it)."""
    from typer.main import get_command

    commands = getattr(get_command(app), "commands", {})
    return next((arg for arg in args if arg in commands), None)


def _pipe_closed() -> int:
    """The reader of standard output went away (``amem export | head``): stop quietly, as a program
    stopped by SIGPIPE does, and keep Python from complaining when it flushes stdout at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):  # stdout may not be a real file
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_PIPE_CLOSED


def _printable(exc: object) -> str:
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
