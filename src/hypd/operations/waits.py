"""When a polled stage looks again at a resource it waits for (the design: first look near the
expected end, then short intervals; never a fixed loop from the start)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class WaitPolicy:
    """When to look again at a resource that takes about `expected_seconds` to be ready.

    The first look is at `first_look_seconds` (near the expected end: looking earlier only costs
    calls); after it, every `interval_seconds`, and every `late_interval_seconds` once the
    resource is well past its expected time (`late_after_seconds`), where a few seconds of
    latency no longer matter. `overdue` says when to give up.
    """

    expected_seconds: int
    first_look_seconds: int
    interval_seconds: int
    late_after_seconds: int
    late_interval_seconds: int
    give_up_after_seconds: int

    def __post_init__(self) -> None:
        if not (
            0 < self.interval_seconds <= self.late_interval_seconds
            and 0 < self.first_look_seconds <= self.late_after_seconds < self.give_up_after_seconds
        ):
            raise ValueError(f"inconsistent wait policy: {self}")

    def next_check(self, elapsed_seconds: float) -> int:
        """Seconds to wait before the next look, `elapsed_seconds` after the resource's start
        (a whole number >= 1, as a Step Functions Wait state's ``SecondsPath`` needs)."""
        elapsed = max(0.0, elapsed_seconds)
        if elapsed < self.first_look_seconds:
            return max(1, math.ceil(self.first_look_seconds - elapsed))
        if elapsed < self.late_after_seconds:
            return self.interval_seconds
        return self.late_interval_seconds

    def overdue(self, elapsed_seconds: float) -> bool:
        return elapsed_seconds >= self.give_up_after_seconds
