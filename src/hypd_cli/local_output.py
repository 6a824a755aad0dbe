"""What ``hypd local up`` and ``hypd local demo`` print, and where the rest goes.

The functions write their logs and EMF metrics to stdout, as on Lambda, and moto's Step
Functions interpreter logs a failed state whole (tens of kilobytes). On a terminal a user wants
the endpoints and a line per operation: `function_output` sends the functions' stdout and the
Python logging of the process to a log file it names (``--verbose``: to the terminal, as
before), and every log record is cut to `MAX_RECORD` characters wherever it goes;
`operation_lines` prints one line per transition of a hypd operation, from the events the
local cloud's buses received.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

MAX_RECORD = 2000
"""The longest log record kept, in characters (the rest is counted, not written)."""
OPERATION_STATE_CHANGE = "hypd Operation State Change"


class ShortRecords(logging.Filter):
    """Cuts a record's message to `MAX_RECORD` characters (moto logs a failed state's whole
    evaluation context)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if len(message) > MAX_RECORD:
            record.msg = (f"{message[:MAX_RECORD]}... ({len(message) - MAX_RECORD} characters "
                          "more)")
            record.args = None
        return True


def new_log_file(prefix: str) -> Path:
    """A new log file in the temporary directory (``hypd-local-XXXX.log``)."""
    with tempfile.NamedTemporaryFile("w", prefix=prefix, suffix=".log", delete=False) as log:
        return Path(log.name)


@contextlib.contextmanager
def function_output(log_path: Path | None, level: str) -> Iterator[None]:
    """Within: the process's stdout (the functions' logs and metrics) and its logging go to
    `log_path`; with None (``--verbose``), logging goes to stderr and stdout stays. Either
    way, no record longer than `MAX_RECORD` characters."""
    root = logging.getLogger()
    if log_path is None:
        handler: logging.Handler = logging.StreamHandler()
        stream: TextIO | None = None
    else:
        stream = log_path.open("a", encoding="utf-8")
        handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(ShortRecords())
    previous = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        if stream is None:
            yield
        else:
            with contextlib.redirect_stdout(stream):
                yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
        if stream is not None:
            stream.close()


def operation_line(event: dict[str, Any]) -> str | None:
    """``12:00:03  op-1a2b  create-cluster  demo  RUNNING`` for an operation's transition
    (an ERROR adds its code and message), else None."""
    if event.get("detail-type") != OPERATION_STATE_CHANGE:
        return None
    detail = event.get("detail") or {}
    when = str(event.get("time") or "")
    try:
        clock = datetime.fromisoformat(when.replace("Z", "+00:00")).astimezone(UTC)
        when = clock.strftime("%H:%M:%S")
    except ValueError:
        pass
    parts = [when, str(detail.get("operationId")), str(detail.get("kind")),
             str(detail.get("clusterTag") or "-"), str(detail.get("status"))]
    error = detail.get("error") or {}
    if error:
        parts.append(f"{error.get('code')}: {error.get('message')}")
    return "  ".join(parts)


@contextlib.contextmanager
def operation_lines(cloud: Any, out: TextIO) -> Iterator[None]:
    """Within: a line on `out` for each transition of a hypd operation (virtual time, UTC)."""

    def listener(event: dict[str, Any]) -> None:
        line = operation_line(event)
        if line is not None:
            print(line, file=out, flush=True)

    unsubscribe = cloud.event_log.subscribe(listener)
    try:
        yield
    finally:
        unsubscribe()
