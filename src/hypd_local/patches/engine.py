"""The running local cloud that every patch delegates to, and the helpers patches share.

moto's classes are process-wide, so the patches are installed once and stay installed; each one
asks `active()` for the *active engine* (the running `LocalCloud`) and falls back to moto's
original behaviour when there is none. Only one local cloud can be active in a process at a
time (moto's backends are global too).
"""

from __future__ import annotations

import datetime
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from hypd_local.activity import Activity
from hypd_local.clock import VirtualClock
from hypd_local.credentials import Session
from hypd_local.eventbus import EventDelivery
from hypd_local.eventlog import EventLog
from hypd_local.iam.stacks import StackResource
from hypd_local.lambdas import LambdaRuntime

if TYPE_CHECKING:
    from hypd_local.emulation import Emulation


class Engine(Protocol):
    """What the patches need from the running local cloud."""

    @property
    def clock(self) -> VirtualClock: ...

    @property
    def lambdas(self) -> LambdaRuntime: ...

    @property
    def activity(self) -> Activity: ...

    @property
    def delivery(self) -> EventDelivery: ...

    @property
    def event_log(self) -> EventLog: ...

    @property
    def emulation(self) -> Emulation | None: ...

    def invoke_async(self, function_name: str, event: Any) -> None: ...

    def stream_written(self, table_name: str) -> None: ...

    def execution_started(self, execution: Any) -> None: ...

    def execution_ended(self, execution: Any) -> None: ...

    def execution_crashed(self, execution: Any, error: BaseException) -> None: ...

    def role_session(self, role_arn: str, service: str, session_name: str) -> Session: ...

    def schedules_changed(self) -> None: ...

    def stack_refusal(self, stack_role_arn: str | None, resources: list[StackResource],
                      stack_tags: dict[str, str]) -> tuple[str, str] | None: ...


state_lock = threading.Lock()
"""Held while patches are installed and while the active engine changes."""

_engine: Engine | None = None


def active() -> Engine | None:
    """The running local cloud, or None (then every patch behaves as moto shipped)."""
    return _engine


def set_active(engine: Engine | None) -> None:
    """Make ``engine`` (or nobody) the target of every patch; the caller holds `state_lock`."""
    global _engine
    _engine = engine


def replace(owner: Any, name: str, value: Any) -> None:
    """Install one patch (moto's attribute ``owner.name`` becomes ``value``)."""
    setattr(owner, name, value)


class VirtualTime:
    """Stands in for the ``time`` module of a module that sleeps: its sleeps become virtual."""

    def sleep(self, seconds: float) -> None:
        engine = active()
        if engine is None:
            time.sleep(seconds)
        else:
            engine.clock.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def elapsed(since: Any, seconds: float) -> bool:
    """Whether ``seconds`` of virtual time have passed since ``since`` (an aware datetime, or
    None: never), on the active engine's clock (False without one)."""
    engine = active()
    if since is None or engine is None:
        return False
    return bool(engine.clock.now() >= since + datetime.timedelta(seconds=seconds))


def poke() -> None:
    """Wake whatever waits on the active engine's clock (a task token came back...)."""
    engine = active()
    if engine is not None:
        engine.clock.poke()
