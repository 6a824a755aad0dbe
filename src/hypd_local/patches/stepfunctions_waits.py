"""Step Functions in virtual time: Wait states, Retry back-off, task-token and heartbeat waits.

- ``WaitFunction._wait_interval`` and ``Timestamp._get_wait_seconds``: Wait states advance the
  virtual clock (timestamps compared in UTC, moto compares with local time).
- ``retrier_decl.time``: Retry back-off sleeps advance the virtual clock on the cohort's turn
  (`hypd_local.clock.Cohort`): a Parallel branch's (``RetrierDecl._eval_body``,
  ``_eval_wait_for_task_token`` and Wait states find it on the branch's environment), else the
  running executions' (bound to the execution's thread).
- ``CallbackEndpoint.wait/notify/interrupt_all`` and ``HeartbeatEndpoint.clear_and_wait/notify``:
  task-token and heartbeat timeouts run in virtual time. A wait behaves like a sleep interrupted
  by callbacks: while an emulator change is scheduled before its deadline, it moves the clock to
  that change and lets the events it causes be delivered before looking again; with nothing
  scheduled it blocks until notified or until the clock reaches the deadline by other means
  (see `virtual_wait`).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hypd_local.clock import Cohort, bound, current_cohort
from hypd_local.patches.engine import Engine, VirtualTime, active, poke, replace

if TYPE_CHECKING:
    from hypd_local.emulation import Emulation

LOG = logging.getLogger(__name__)

# What a task-token wait lets finish after it moved the clock to an emulator change: the event
# deliveries and asynchronous invocations that change caused (not executions: the waiting
# execution is one). Bounded in real time.
QUIET_KINDS = ("delivery", "invoke")
QUIET_TIMEOUT_SECONDS = 30.0


def patch_waits() -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.asl.component.common.retry.retrier_decl import RetrierDecl
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import (
        Timestamp,
    )
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import (
        WaitFunction,
    )

    original_wait_interval: Any = WaitFunction._wait_interval
    original_timestamp_seconds: Any = Timestamp._get_wait_seconds

    def _wait_interval(self: Any, env: Any, wait_seconds: int) -> None:
        engine = active()
        if engine is None:
            original_wait_interval(self, env, wait_seconds)
            return
        if wait_seconds <= 0 or not env.is_running():
            return
        cohort: Cohort | None = _cohort(env)
        if cohort is None:
            engine.clock.sleep(wait_seconds)
            return
        # Wait for the cohort's turn (a branch's, or the running executions'), or until the
        # execution stops.
        deadline = engine.clock.now() + datetime.timedelta(seconds=wait_seconds)
        cohort.wait_until(deadline, lambda: not env.is_running())

    def _get_wait_seconds(self: Any, env: Any) -> int:
        engine = active()
        if engine is None:
            seconds: int = original_timestamp_seconds(self, env)
            return seconds
        self.string.eval(env=env)
        timestamp_str: str = env.stack.pop()
        timestamp = self._from_timestamp_string(timestamp=timestamp_str)
        if timestamp is None:
            raise FailureEventException(self._create_failure_event(env, timestamp_str))
        # moto compares with the local wall time; timestamps in ASL are UTC.
        now = engine.clock.now().replace(tzinfo=None)
        return int((timestamp - now).total_seconds())

    original_retry: Any = RetrierDecl._eval_body

    def retry_eval_body(self: Any, env: Any) -> None:
        with bound(_cohort(env)):  # its back-off sleeps on the cohort's turn
            original_retry(self, env)

    replace(WaitFunction, "_wait_interval", _wait_interval)
    replace(RetrierDecl, "_eval_body", retry_eval_body)
    replace(Timestamp, "_get_wait_seconds", _get_wait_seconds)
    replace(retrier_decl, "time", VirtualTime())


def _cohort(env: Any) -> Cohort | None:
    """The timeline a state of ``env`` waits on: its Parallel branch's, else the one the thread
    is bound to (the running executions')."""
    cohort: Cohort | None = getattr(env, "hypd_cohort", None)
    return cohort if cohort is not None else current_cohort()


def virtual_wait(engine: Engine, seconds: float, done: Callable[[], bool]) -> bool:
    """Wait up to ``seconds`` of virtual time for ``done()``; True if it came, False on timeout.

    Like a sleep interrupted by callbacks. While ``done()`` is false: if the emulators have a
    change scheduled before the deadline, move the clock to it (the tick emits its events, rules
    deliver them, Lambda targets run), wait in real time (at most `QUIET_TIMEOUT_SECONDS`) until
    those deliveries and invocations are over, and look again. With nothing scheduled before the
    deadline, block until ``done()`` (the notifier pokes the clock), until the clock reaches the
    deadline by other means, or until the emulators' schedule changes (then look again).
    """
    clock = engine.clock
    deadline = clock.now() + datetime.timedelta(seconds=seconds)
    emulation = engine.emulation
    while True:
        if done():
            return True
        # Read before next_due: a change scheduled in between then wakes the wait below.
        version = emulation.schedule_version if emulation is not None else 0
        due = emulation.next_due() if emulation is not None else None
        if emulation is not None and due is not None and due < deadline:
            if clock.sleep_until(due, done):  # in a Parallel branch: on the cohort's turn
                return True
            # The ticker thread may have been mid-tick at `due`: what was due by then is out
            # once a tick that began at `due` or later has finished.
            emulation.tick(wait=True, through=due)
            if not engine.activity.wait_quiet(QUIET_KINDS, QUIET_TIMEOUT_SECONDS):
                LOG.warning(
                    "task-token wait: event deliveries still running after %s s: %s",
                    QUIET_TIMEOUT_SECONDS,
                    "; ".join(engine.activity.describe()),
                )
            continue
        clock.wait_until(deadline, _done_or_rescheduled(done, emulation, version))
        if done():
            return True
        if clock.now() >= deadline:
            return False


def _done_or_rescheduled(
    done: Callable[[], bool], emulation: Emulation | None, version: int
) -> Callable[[], bool]:
    """``done()``, or the emulators' schedule is no longer ``version``. It runs under the
    clock's lock, so it reads plain attributes only and takes no emulator lock."""
    if emulation is None:
        return done
    return lambda: done() or emulation.schedule_version != version


def patch_callbacks() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_callback,
    )
    from moto.stepfunctions.parser.asl.eval.callback.callback import (
        CallbackEndpoint,
        HeartbeatEndpoint,
    )

    StateTaskServiceCallback = state_task_service_callback.StateTaskServiceCallback  # noqa: N806

    original_wait: Any = CallbackEndpoint.wait
    original_notify: Any = CallbackEndpoint.notify
    original_interrupt: Any = CallbackEndpoint.interrupt_all
    original_clear_and_wait: Any = HeartbeatEndpoint.clear_and_wait
    original_heartbeat_notify: Any = HeartbeatEndpoint.notify

    def wait(self: Any, timeout: Any = None) -> Any:
        engine = active()
        if engine is None or timeout is None:
            return original_wait(self, timeout)
        if not isinstance(timeout, (int, float)):
            # moto evaluates nothing once an execution is stopped, so the task's timeout was
            # never pushed and something else was popped: the execution is ending anyway.
            return self._outcome
        virtual_wait(engine, timeout, self._notify_event.is_set)
        return self._outcome

    def notify(self: Any, outcome: Any) -> None:
        original_notify(self, outcome)
        poke()

    def interrupt_all(self: Any) -> None:
        original_interrupt(self)
        poke()

    def clear_and_wait(self: Any) -> bool:
        engine = active()
        if engine is None:
            received: bool = original_clear_and_wait(self)
            return received
        with self._mutex:
            if self._next_heartbeat_event.is_set():
                self._next_heartbeat_event.clear()
                return True
        return virtual_wait(engine, self._heartbeat_seconds, self._next_heartbeat_event.is_set)

    def heartbeat_notify(self: Any) -> None:
        original_heartbeat_notify(self)
        poke()

    original_token_wait: Any = StateTaskServiceCallback._eval_wait_for_task_token

    def wait_for_task_token(self: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
        with bound(_cohort(env)):  # a task-token wait on the cohort's turn
            return original_token_wait(self, env, *args, **kwargs)

    replace(StateTaskServiceCallback, "_eval_wait_for_task_token", wait_for_task_token)
    replace(CallbackEndpoint, "wait", wait)
    replace(CallbackEndpoint, "notify", notify)
    replace(CallbackEndpoint, "interrupt_all", interrupt_all)
    replace(HeartbeatEndpoint, "clear_and_wait", clear_and_wait)
    replace(HeartbeatEndpoint, "notify", heartbeat_notify)
