"""Commands for agents' inputs: ``amem status`` (what became of an input) and ``amem worker``."""

from __future__ import annotations

import signal
import threading
from typing import Annotated, Any

import typer

from amem.cli.app import JsonOpt, app, emit, err, open_memory, out


@app.command("status")
def input_status(
    raw_log_id: Annotated[
        str, typer.Argument(help="The raw log id add_note(wait=False) or the API returned.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """What became of an input: queued, processing, done (with its note) or failed (with why)."""
    with open_memory(create=False) as memory:
        status = memory.input_status(raw_log_id)

    def render(s: Any) -> None:
        line = f"{s.raw_log_id}: {s.status}"
        if s.status == "done":
            line += f", note {s.note_id}"
        elif s.status == "processing":
            line += f" (a worker holds it until {s.lease_until:%Y-%m-%d %H:%M:%S} UTC)"
        elif s.status == "failed":
            line += f": {s.error}"
        out.print(line, markup=False)

    emit(status, as_json, render)


@app.command("worker")
def worker(
    once: Annotated[
        bool, typer.Option("--once", help="Process what is queued now, then exit (else run until stopped).")
    ] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Workers in this process.")] = 1,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Inputs a worker claims and analyses together.")
    ] = 16,
    as_json: JsonOpt = False,
) -> None:
    """Analyse queued inputs (add_note with wait=False, the HTTP API, the MCP server). Any number of
    workers, in any number of processes, share the queue; Ctrl-C or SIGTERM stops after the batch."""
    with open_memory() as memory:
        if once:
            memory.pipeline  # noqa: B018  (the heavy parts, built once before the threads start)
            workers = [memory.worker(batch_size=batch_size, name=f"worker{i}") for i in range(concurrency)]
            threads = [threading.Thread(target=w.drain, name=w.owner) for w in workers]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            processed = sum(w.stats.processed for w in workers)
            failed = sum(w.stats.failed for w in workers)
        else:
            pool = memory.start_workers(concurrency, batch_size=batch_size)
            stop = threading.Event()

            def stopping(*_: object) -> None:
                stop.set()
                for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal stops at once
                    signal.signal(sig, signal.SIG_DFL)

            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, stopping)
            err.print(f"{concurrency} worker(s) running; Ctrl-C to stop", markup=False)
            while not stop.wait(1.0):
                pass
            # each worker finishes its batch; one that cannot leaves leases that end (inputs kept)
            pool.stop(timeout=memory.settings.worker_lease_seconds)
            processed, failed = pool.stats.processed, pool.stats.failed
        depth = memory.queue_depth()
    emit(
        {"processed": processed, "failed": failed, "queue": depth},
        as_json,
        lambda d: out.print(
            f"processed {d['processed']} inputs ({d['failed']} failed); queued now: {d['queue']['queued']}",
            markup=False,
        ),
    )
