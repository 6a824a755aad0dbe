"""The one source of "now" for the domain.

On AWS it is the system clock. The local cloud swaps in its virtual clock with `set_source`, so
records written by handlers follow virtual time (an EKS creation that takes ten virtual minutes
shows ten minutes in its stage timestamps).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime


def _system_now() -> datetime:
    return datetime.now(UTC)


_source: Callable[[], datetime] = _system_now


def now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return _source().astimezone(UTC)


def set_source(source: Callable[[], datetime] | None) -> None:
    """Replace the time source (None restores the system clock)."""
    global _source
    _source = source or _system_now


def isoformat(value: datetime) -> str:
    """The wire format of every timestamp hypd writes: UTC, milliseconds, `Z` suffix."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_iso() -> str:
    return isoformat(now())
