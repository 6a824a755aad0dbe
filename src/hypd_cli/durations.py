"""The one duration syntax of the CLI: ``90`` (seconds), ``90s``, ``30m``, ``1h``, ``1h30m``,
``2d``, for every flag that takes a length of time (``--interval``, ``--timeout``) or a point
in time (``--since``: a duration ago, or an ISO time such as ``2026-01-15T10:00:00Z``)."""

from __future__ import annotations

import argparse
import math
import re
from datetime import UTC, datetime, timedelta

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)([dhms]))", re.IGNORECASE)
EXAMPLES = "90, 90s, 30m, 1h, 1h30m or 2d"


def duration_seconds(text: str) -> float | None:
    """`text` as seconds (``1h30m`` -> 5400), or None when it is not a duration."""
    value = text.strip()
    try:
        return float(value)
    except ValueError:
        pass
    parts = _DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts).lower() != value.lower():
        return None
    return sum(float(number) * _UNITS[unit.lower()] for number, unit in parts)


def positive_duration(text: str) -> float:
    """An argparse type: a duration of more than 0, in seconds."""
    seconds = duration_seconds(text)
    if seconds is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (use {EXAMPLES})")
    if seconds <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return seconds


def point_in_time(text: str, now: datetime | None = None) -> datetime:
    """`text` as an aware UTC time: a duration ago (``1h``), or an ISO time (``Z`` or an
    offset; none is UTC). Raises ValueError naming both forms."""
    seconds = duration_seconds(text)
    if seconds is not None:
        return (now or datetime.now(UTC)) - timedelta(seconds=seconds)
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a time: {text!r} (a duration ago, {EXAMPLES}, or an ISO time "
                         "such as 2026-01-15T10:00:00Z)") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)


def since_iso(text: str) -> str:
    """An argparse type for ``--since`` sent as an ISO time (``2026-01-15T10:00:00Z``)."""
    try:
        return point_in_time(text).strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def since_seconds(text: str) -> int:
    """An argparse type for ``--since`` sent as seconds ago (at least 1): a duration as it
    is, an ISO time as the seconds from it to now (rounded up)."""
    seconds = duration_seconds(text)
    if seconds is None:
        try:
            when = point_in_time(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        seconds = (datetime.now(UTC) - when).total_seconds()
    return max(1, math.ceil(seconds))
