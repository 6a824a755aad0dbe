"""The local cloud's virtual clock.

Nothing in the local cloud really sleeps: a Wait state of three hours, a retry back-off or a
task-token timeout advances this clock instead, so a pipeline that takes hours on AWS finishes
in milliseconds and its records still show the hours.

The clock starts at the real time. By default it also *ticks*: virtual time = real time at start
+ real time elapsed + every virtual advance, so two records written one after the other never
share a timestamp. A frozen clock (``ticking=False``) only moves when told to, which makes
assertions on exact times possible.

Threads that run at the same time on AWS share a timeline (`Cohort`): every running
execution is a member of the clock's `executions` cohort, and the branches of a Parallel state
form a cohort nested in the one of the thread that runs the Parallel (for as long as the
Parallel runs, the branches stand for that thread). A member that waits (a Wait state, a Retry
back-off, a task-token wait) blocks until the clock reaches its target; the clock moves only
once every member of the outermost cohort waits, to the earliest target, as timers on one time
line do. Without it each waiter would move the one clock by its own length: two branches' waits
would add up instead of overlapping, and fifty concurrent creates would each see the other
forty-nine's waits pass during their own (their budgets run out after a few looks).

A wait *for an event* with a deadline (a task token, `wait_until`) counts as waiting but never
moves the clock by itself: the clock jumps only when at least one member waits for a time (a
timer); then it goes to the earliest of all targets, deadlines included. With one execution
that is exactly what a lone thread does without a cohort.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from hypd_local.threadvalue import set_for_block

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
        self.executions = Cohort(self, 0)
        """The running executions' timeline: each execution thread is a member while it runs."""

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
        """Sleep in virtual time: returns with the clock at least ``seconds`` later. Outside a
        cohort it returns at once (the clock moved); inside one it waits for its turn."""
        if seconds <= 0:
            return
        with self._cond:
            target = self._now_locked() + timedelta(seconds=seconds)
        self.sleep_until(target)

    def sleep_until(self, target: datetime, done: Callable[[], bool] | None = None) -> bool:
        """Return once the clock is at ``target``: moved there at once outside a cohort, on the
        cohort's turn inside one (True if ``done()`` came first, only possible there)."""
        cohort = current_cohort()
        if cohort is not None and cohort.clock is self:
            return cohort.wait_until(target, done, timer=True)
        self.advance_to(target)
        return False

    def wait_until(
        self, deadline: datetime, done: Callable[[], bool] | None = None
    ) -> bool:
        """Block until ``done()`` is true or the clock reaches ``deadline``.

        Returns True when ``done()`` became true, False when the deadline passed. Whoever makes
        ``done()`` true must call `poke` so the waiter re-checks; the clock pokes waiters itself
        whenever it advances. A ticking clock also reaches the deadline as real time passes.
        Inside a cohort the thread counts as waiting for an event due by ``deadline``
        (`Cohort.wait_until` with ``timer=False``).
        """
        cohort = current_cohort()
        if cohort is not None and cohort.clock is self:
            return cohort.wait_until(deadline, done, timer=False)
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

    # ------------------------------------------------------------------ cohorts
    def _cohort_turn(self, cohort: Cohort, deadline: datetime,
                     done: Callable[[], bool] | None, timer: bool) -> bool | datetime:
        """One look of a cohort member waiting for ``deadline``: True (done), False (deadline
        reached), or the time to move the clock to (every member of the outermost cohort waits
        and one of them for a timer: the earliest target)."""
        me = threading.get_ident()
        with self._cond:
            cohort.targets[me] = (deadline, timer)
            if not timer:
                self._waiting += 1  # `wait_for_waiters` sees event waits, in a cohort or not
            self._cond.notify_all()  # the others may all be waiting now
            try:
                while True:
                    if done is not None and done():
                        del cohort.targets[me]
                        return True
                    now = self._now_locked()
                    if now >= deadline:
                        del cohort.targets[me]
                        return False
                    waiting = cohort.outermost().waiting()
                    if waiting is not None:
                        earliest, timed = waiting
                        if timed and earliest > now:
                            return earliest  # still counted as waiting while the clock moves
                    timeout = (deadline - now).total_seconds() if self._ticking else None
                    self._cond.wait(timeout)
            finally:
                if not timer:
                    self._waiting -= 1

    def _cohort_join(self, cohort: Cohort) -> None:
        with self._cond:
            cohort.members += 1

    def _cohort_leave(self, cohort: Cohort) -> None:
        with self._cond:
            cohort.members -= 1
            if cohort.members <= 0 and cohort.parent is not None:
                # The Parallel is over: the thread that ran it stands for itself again.
                siblings = cohort.parent.children
                if cohort in siblings:
                    siblings.remove(cohort)
            self._cond.notify_all()


class Cohort:
    """Threads that share one timeline on a clock: the running executions, or the branches of
    one Parallel state (nested in the cohort of the thread that runs the Parallel).

    A member waiting for a time (`wait_until`) blocks until the clock reaches it; the clock
    moves only while every member of the outermost cohort waits, to the earliest time any of
    them waits for. A member that is running (a task, in real time) holds the clock for the
    others, as on AWS a branch waiting 5 minutes does not make the other branch's 1 minute
    wait any longer, and one execution's 20 minutes for EKS do not pass during another's
    one-minute look.
    """

    def __init__(self, clock: VirtualClock, members: int, parent: Cohort | None = None) -> None:
        self.clock = clock
        self.members = members
        """Members that have not left (a branch counts from the Parallel's start)."""
        self.parent = parent
        """The cohort of the thread that started this one, which this one stands for."""
        self.targets: dict[int, tuple[datetime, bool]] = {}
        """Thread id -> (the time the member waits for, whether a timer), while it waits (under
        the clock's lock)."""
        self.children: list[Cohort] = []
        """Nested cohorts still running (each stands for the member thread that started it)."""
        if parent is not None:
            with clock._cond:
                parent.children.append(self)

    def outermost(self) -> Cohort:
        cohort = self
        while cohort.parent is not None:
            cohort = cohort.parent
        return cohort

    def waiting(self) -> tuple[datetime, bool] | None:
        """(the earliest target, whether any member waits for a timer) when every member waits
        (a nested cohort counts as its starting member, waiting when all of its members do),
        else None. Called under the clock's lock."""
        waits = list(self.targets.values())
        waits.extend(w for w in (child.waiting() for child in self.children) if w is not None)
        if not waits or len(waits) < self.members:
            return None
        return min(target for target, _ in waits), any(timed for _, timed in waits)

    def wait_until(self, deadline: datetime, done: Callable[[], bool] | None = None,
                   *, timer: bool = True) -> bool:
        """`VirtualClock.wait_until` on the cohort's timeline: True when ``done()`` became true,
        False when the clock reached ``deadline``. ``timer``: the member waits for the time
        itself (a Wait state, a back-off), which lets the clock move; else for an event with a
        deadline, which lets it move only when another member waits for a timer."""
        while True:
            turn = self.clock._cohort_turn(self, deadline, done, timer)
            if isinstance(turn, bool):
                return turn
            self.clock.advance_to(turn)

    def leave(self) -> None:
        """The member's thread ends (its branch finished, failed or was stopped)."""
        self.clock._cohort_leave(self)

    @contextmanager
    def member(self) -> Iterator[None]:
        """Run the calling thread as a member until the block ends, then leave."""
        try:
            with bound(self):
                yield
        finally:
            self.leave()

    def join(self) -> None:
        """Count one more member (an execution that starts: called before its thread runs, so
        the others cannot move the clock in between); its thread then runs in `member`."""
        self.clock._cohort_join(self)


@contextmanager
def bound(cohort: Cohort | None) -> Iterator[None]:
    """Let the calling thread wait in ``cohort`` (None: in none) until the block ends: a thread
    a member started to do its waiting (the member itself is not counted twice)."""
    with set_for_block(_local, "cohort", cohort):
        yield


_local = threading.local()


def current_cohort() -> Cohort | None:
    """The cohort the calling thread waits in, or None."""
    cohort: Cohort | None = getattr(_local, "cohort", None)
    return cohort
