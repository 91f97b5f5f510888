"""The HTTP servers' access log, without query strings.

uvicorn logs each request's path with its query string: `GET /v1/search?q=Jane+Roe+cancelled`
put what a caller searched for (a customer's name, what they said) into the server's log, where an
erasure on a data subject's request never reaches. The path stays (which endpoint, which note or
input id); the query is logged as "?…".
"""

from __future__ import annotations

import copy
import logging
from typing import Any


class QueryFreeAccessLog(logging.Filter):
    """Replace the query string of uvicorn's access log lines with "?…"."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            path = args[2].split("?", 1)[0] + "?…"
            record.args = (*args[:2], path, *args[3:])
        return True


def logging_config() -> dict[str, Any]:
    """uvicorn's own logging configuration, its access log lines given to ``QueryFreeAccessLog``
    first: for ``uvicorn.run(..., log_config=logging_config())``."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["query_free"] = {"()": QueryFreeAccessLog}
    config["handlers"]["access"].setdefault("filters", []).append("query_free")
    return config


def without_queries() -> None:
    """Keep query strings out of uvicorn's access log in this process, whatever logging uvicorn then
    configures (a logger's own filters outlive it); once, however often called."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, QueryFreeAccessLog) for f in access.filters):
        access.addFilter(QueryFreeAccessLog())
