"""Following an operation to its end: repeated ``GET /operations/{id}`` (getOperation).

On a terminal the stage table is redrawn in place (status, attempts, elapsed time of each
stage); otherwise one line is printed per change, so logs and pipes stay readable. With
``--output json`` the progress goes to stderr and stdout gets the final operation only.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from typing import Any, TextIO

from hypd_cli.api_client import ApiError, ApiUnreachable
from hypd_cli.cli import EXIT_FAILED, EXIT_OK, EXIT_TIMEOUT, Context
from hypd_cli.output import (
    TERMINAL,
    attempt_note,
    format_duration,
    operation_title,
    outcome_lines,
    print_json,
    stage_attempts,
    stage_elapsed,
    stage_table,
)

DEFAULT_INTERVAL = 2.0
MAX_TEMPORARY_FAILURES = 5  # polls in a row that may fail (unreachable, 429, 5xx) before giving up
MAX_BACKOFF = 30.0


def watch_operation(
    ctx: Context,
    operation_id: str,
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: float | None = None,
) -> int:
    """Poll the operation until it ends. 0 when it SUCCEEDED, 1 when it FAILED or was
    CANCELLED, 4 when ``timeout`` seconds ran out first."""
    sleep, clock = ctx.sleep, ctx.clock
    stream = ctx.err if ctx.structured else ctx.out
    live = _LiveView(stream) if stream.isatty() else None
    lines = _ChangeLines(stream)
    deadline = None if timeout is None else clock() + timeout
    operation: dict[str, Any] = {}
    try:
        while True:
            operation = _poll(ctx, operation_id, interval, sleep)
            if live is not None:
                live.draw(operation)
            else:
                lines.update(operation)
            if operation["status"] in TERMINAL:
                break
            if deadline is not None and clock() >= deadline:
                print(f"Still {operation['status']} after {format_duration(timeout)}; keep "
                      f"watching: {ctx.command_line('ops watch ' + operation_id)}",
                      file=ctx.err, flush=True)
                return EXIT_TIMEOUT
            sleep(interval)
    except KeyboardInterrupt:
        print(f"\nStopped watching; the operation goes on. Watch again: "
              f"{ctx.command_line('ops watch ' + operation_id)}", file=ctx.err, flush=True)
        raise
    if ctx.structured:
        print_json(ctx, operation)
    elif live is None:
        print(file=stream)
        print(operation_title(operation), file=stream)
        print(stage_table(operation, attempts=True), file=stream, flush=True)
    outcome = outcome_lines(ctx, operation)
    if outcome:
        print("\n" + "\n".join(outcome), file=stream, flush=True)
    return EXIT_OK if operation["status"] == "SUCCEEDED" else EXIT_FAILED


def _poll(
    ctx: Context, operation_id: str, interval: float, sleep: Callable[[float], None]
) -> dict[str, Any]:
    """getOperation, riding out a few temporary failures in a row (with back-off)."""
    return ride_out(ctx, lambda: ctx.client.get_operation(operation_id), interval, sleep)


def ride_out(
    ctx: Context, call: Callable[[], dict[str, Any]], interval: float,
    sleep: Callable[[float], None],
) -> dict[str, Any]:
    """One poll of a follow (``ops watch``, ``events tail --follow``): ``call``, tried again
    after a temporary failure (unreachable, 429, 5xx), with back-off, a few times in a row."""
    failures = 0
    while True:
        try:
            return call()
        except (ApiUnreachable, ApiError) as exc:
            if isinstance(exc, ApiError) and not exc.temporary:
                raise
            failures += 1
            if failures > MAX_TEMPORARY_FAILURES:
                raise
            pause = min(MAX_BACKOFF, max(interval, 1.0) * 2 ** (failures - 1))
            print(f"(poll failed: {exc}; trying again in {pause:.0f}s)", file=ctx.err,
                  flush=True)
            sleep(pause)


class _ChangeLines:
    """One line per change of the operation's status, of a stage's status or attempts, or of
    what its running attempt waits for."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.seen: dict[str, tuple[Any, ...]] = {}

    def update(self, operation: dict[str, Any]) -> None:
        ended = operation["status"] in TERMINAL
        if not ended:
            self._operation(operation)
        stages = operation.get("stages") or []
        attempts = stage_attempts(operation)
        width = max((len(s["name"]) for s in stages), default=0) + 2
        for stage in stages:
            latest = (attempts.get(stage["name"]) or [{}])[-1]
            running = stage["status"] == "RUNNING"
            state = (stage["status"], stage.get("attempts", 0),
                     latest.get("waitingFor") if running else None)
            if self.seen.get(stage["name"], ("PENDING", 0, None)) == state:
                continue
            self.seen[stage["name"]] = state
            parts = [f"  {stage['name']:<{width}}{stage['status']:<10} attempt {state[1]}"]
            if stage.get("endedAt"):
                took = f"took {format_duration(stage_elapsed(stage, operation))}"
                looks = latest.get("looks")
                parts.append(took + (f", {looks} look{'s' if looks != 1 else ''}"
                                     if looks else ""))
            if stage.get("error"):
                parts.append(f"{stage['error'].get('code')}: {stage['error'].get('message')}")
            elif running and latest.get("waitingFor"):
                parts.append(attempt_note(latest, operation))
            self._say(", ".join(parts))
        if ended:
            self._operation(operation)

    def _operation(self, operation: dict[str, Any]) -> None:
        key = ("operation", operation["status"], len(operation.get("retries") or []))
        if self.seen.get("") != key:
            self.seen[""] = key
            self._say(f"{operation['id']}  {operation['status']}")

    def _say(self, line: str) -> None:
        print(line, file=self.stream, flush=True)


def terminal_columns(stream: TextIO) -> int:
    """The width of the terminal `stream` writes to; else $COLUMNS, else 120."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):  # no descriptor, or not a terminal
        return shutil.get_terminal_size((120, 24)).columns


class _LiveView:
    """The title and stage table, redrawn in place (ANSI: cursor up, clear to the end)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.height = 0

    def draw(self, operation: dict[str, Any]) -> None:
        width = terminal_columns(self.stream)
        text = operation_title(operation) + "\n" + stage_table(operation, attempts=True)
        lines = [line[: width - 1] for line in text.splitlines()]
        if self.height:
            self.stream.write(f"\x1b[{self.height}F\x1b[J")
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()
        self.height = len(lines)
