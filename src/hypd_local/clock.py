"""The local cloud's virtual clock.

Nothing in the local cloud really sleeps: a Wait state of three hours, a retry back-off or a
task-token timeout advances this clock instead, so a pipeline that takes hours on AWS finishes
in milliseconds and its records still show the hours.

The clock starts at the real time. By default it also *ticks*: virtual time = real time at start
+ real time elapsed + every virtual advance, so two records written one after the other never
share a timestamp. A frozen clock (``ticking=False``) only moves when told to, which makes
assertions on exact times possible.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Listener = Callable[[datetime], None]


class VirtualClock:
    """A thread-safe clock whose time moves on ``advance``/``sleep`` instead of waiting.

    ``sleep(s)`` from several threads at once behaves like concurrent timers on one time line:
    each sleeper's wake-up time is ``now + s`` when it starts sleeping, and the clock moves to
    the latest wake-up time reached so far (``clock = max(clock, target)``), never backwards.
    """

    def __init__(self, start: datetime | None = None, *, ticking: bool = True) -> None:
        if start is not None and start.tzinfo is None:
            raise ValueError("VirtualClock start must be timezone-aware")
        self._start = (start or datetime.now(UTC)).astimezone(UTC)
        self._ticking = ticking
        self._mono_start = time.monotonic()
        self._offset = timedelta(0)
        self._cond = threading.Condition(threading.Lock())
        self._listeners: list[Listener] = []
        self._waiting = 0

    @property
    def ticking(self) -> bool:
        return self._ticking

    def _now_locked(self) -> datetime:
        now = self._start + self._offset
        if self._ticking:
            now += timedelta(seconds=time.monotonic() - self._mono_start)
        return now

    def now(self) -> datetime:
        """The current virtual time (timezone-aware, UTC)."""
        with self._cond:
            return self._now_locked()

    def timestamp(self) -> float:
        """The current virtual time as seconds since the epoch."""
        return self.now().timestamp()

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward by ``seconds`` (>= 0); returns the new time."""
        if seconds < 0:
            raise ValueError("the virtual clock never goes backwards")
        with self._cond:
            self._offset += timedelta(seconds=seconds)
            now = self._now_locked()
            self._cond.notify_all()
        self._notify(now)
        return now

    def advance_to(self, target: datetime) -> datetime:
        """Move the clock to ``target`` if it is in the future; returns the new time."""
        if target.tzinfo is None:
            raise ValueError("target must be timezone-aware")
        with self._cond:
            now = self._now_locked()
            if target > now:
                self._offset += target - now
                now = self._now_locked()
            self._cond.notify_all()
        self._notify(now)
        return now

    def sleep(self, seconds: float) -> None:
        """Sleep in virtual time: returns at once with the clock at least ``seconds`` later."""
        if seconds <= 0:
            return
        with self._cond:
            target = self._now_locked() + timedelta(seconds=seconds)
        self.advance_to(target)

    def wait_until(
        self, deadline: datetime, done: Callable[[], bool] | None = None
    ) -> bool:
        """Block until ``done()`` is true or the clock reaches ``deadline``.

        Returns True when ``done()`` became true, False when the deadline passed. Whoever makes
        ``done()`` true must call `poke` so the waiter re-checks; the clock pokes waiters itself
        whenever it advances. A ticking clock also reaches the deadline as real time passes.
        """
        with self._cond:
            self._waiting += 1
            self._cond.notify_all()
            try:
                while True:
                    if done is not None and done():
                        return True
                    now = self._now_locked()
                    if now >= deadline:
                        return False
                    timeout = (deadline - now).total_seconds() if self._ticking else None
                    self._cond.wait(timeout)
            finally:
                self._waiting -= 1

    @property
    def waiters(self) -> int:
        """How many threads are blocked in `wait_until` (e.g. task-token timeouts)."""
        with self._cond:
            return self._waiting

    def wait_for_waiters(self, count: int = 1, timeout: float | None = 30.0) -> None:
        """Block (in real time) until at least ``count`` threads wait on this clock.

        Lets a test advance the clock only once an execution is really waiting on it.
        Raises TimeoutError after ``timeout`` real seconds.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: self._waiting >= count, timeout):
                raise TimeoutError(f"{self._waiting} of {count} clock waiters after {timeout} s")

    def poke(self) -> None:
        """Wake every `wait_until` caller so it re-checks its condition."""
        with self._cond:
            self._cond.notify_all()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(now)`` after every advance; returns an unsubscribe function."""
        with self._cond:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._cond:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _notify(self, now: datetime) -> None:
        with self._cond:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(now)

    def __repr__(self) -> str:
        mode = "ticking" if self._ticking else "frozen"
        return f"VirtualClock({self.now().isoformat()}, {mode})"
