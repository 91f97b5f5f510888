"""The HTTP servers' access log keeps no query string: `GET /v1/search?q=<a customer's words>`
put what was searched for into a log no erasure reaches. Each line is logged as uvicorn logs it."""

from __future__ import annotations

import logging
import logging.config
from collections.abc import Iterator

import pytest
from uvicorn.protocols.utils import get_path_with_query_string

from amem.api.access_log import QueryFreeAccessLog, logging_config, without_queries

SCOPE = {"raw_path": b"/v1/search", "query_string": b"q=Jane+Roe+cancelled&scope=acme"}


def log_request() -> None:
    """One access log line, as uvicorn's HTTP protocols write it."""
    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5555", "GET", get_path_with_query_string(SCOPE), "1.1", 200
    )


@pytest.fixture
def access_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("uvicorn.access")
    saved = (logger.handlers[:], logger.filters[:], logger.level, logger.propagate)
    yield logger
    logger.handlers[:], logger.filters[:] = saved[0], saved[1]
    logger.setLevel(saved[2])
    logger.propagate = saved[3]


def test_amem_serve_s_log_configuration_logs_the_path_without_its_query(
    access_logger: logging.Logger, capsys: pytest.CaptureFixture[str]
) -> None:
    logging.config.dictConfig(logging_config())  # what `amem serve` gives uvicorn.run
    log_request()
    said = capsys.readouterr().out
    assert '"GET /v1/search?… HTTP/1.1" 200' in said, said
    assert "Jane" not in said


def test_the_mcp_server_s_access_logger_drops_queries_whatever_uvicorn_configures(
    access_logger: logging.Logger,
) -> None:
    without_queries()
    without_queries()  # once, however often called
    from uvicorn.config import LOGGING_CONFIG

    logging.config.dictConfig(LOGGING_CONFIG)  # as the MCP server's uvicorn configures its logging
    assert sum(isinstance(f, QueryFreeAccessLog) for f in access_logger.filters) == 1
    lines: list[str] = []
    seen = logging.Handler()
    seen.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    access_logger.addHandler(seen)
    log_request()
    assert lines == ['127.0.0.1:5555 - "GET /v1/search?… HTTP/1.1" 200']
