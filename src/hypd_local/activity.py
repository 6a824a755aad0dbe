"""Bookkeeping of the local cloud's background work, so callers can wait for quiet.

State-machine executions, EventBridge deliveries and asynchronous Lambda invocations run on
threads. Each registers here while it runs; `Activity.wait_idle` blocks on a condition variable
(no polling) until nothing is left. Work that starts more work (an execution that ends and emits
an event whose target starts another execution) registers the follow-up before it unregisters
itself, so "idle" is never observed in between.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager


class IdleTimeout(TimeoutError):
    """Background work was still running when the wait timed out."""


class Activity:
    """Counts running work items by kind and lets callers wait until none are left."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running: Counter[str] = Counter()
        self._labels: dict[int, str] = {}
        self._next_token = 0

    def begin(self, kind: str, label: str = "") -> int:
        """Register one running item; returns the token to pass to `end`."""
        with self._cond:
            self._next_token += 1
            token = self._next_token
            self._running[kind] += 1
            self._labels[token] = f"{kind} {label}".strip()
            return token

    def end(self, kind: str, token: int) -> None:
        with self._cond:
            if token not in self._labels:
                return
            del self._labels[token]
            self._running[kind] -= 1
            if self._running[kind] <= 0:
                del self._running[kind]
            self._cond.notify_all()

    @contextmanager
    def track(self, kind: str, label: str = "") -> Iterator[None]:
        token = self.begin(kind, label)
        try:
            yield
        finally:
            self.end(kind, token)

    def running(self, kind: str | None = None) -> int:
        with self._cond:
            if kind is None:
                return sum(self._running.values())
            return self._running.get(kind, 0)

    def describe(self) -> list[str]:
        with self._cond:
            return sorted(self._labels.values())

    def wait_idle(self, timeout: float | None = None) -> None:
        """Block until no work item is running; raise IdleTimeout after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._running:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    running = "; ".join(sorted(self._labels.values()))
                    raise IdleTimeout(f"still running after {timeout} s: {running}")
                self._cond.wait(remaining)

    def wait_quiet(self, kinds: Iterable[str], timeout: float | None = None) -> bool:
        """Block until no work item of ``kinds`` is running; False if ``timeout`` seconds (real
        time) passed first. Items of other kinds may still run (e.g. the caller's own
        execution)."""
        wanted = tuple(kinds)
        with self._cond:
            return self._cond.wait_for(
                lambda: not any(self._running.get(kind, 0) for kind in wanted), timeout
            )
