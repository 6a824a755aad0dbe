"""Optimistic read-modify-write: attempts, and the jittered back-off between them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from hypd.aws.dynamodb import BACKOFF_BASE_SECONDS, BACKOFF_CAP_SECONDS, ConditionFailed, optimistic
from hypd.errors import ConcurrentUpdate


def losing(times: int) -> tuple[list[int], Callable[[], str]]:
    """An attempt whose write loses `times` times, then wins; and the list of its calls."""
    calls: list[int] = []

    def attempt() -> str:
        calls.append(len(calls))
        if len(calls) <= times:
            raise ConditionFailed("someone wrote")
        return "won"

    return calls, attempt


def test_a_write_that_wins_at_once_does_not_wait() -> None:
    waits: list[float] = []
    calls, attempt = losing(0)
    assert optimistic(attempt, attempts=5, what="x", sleep=waits.append) == "won"
    assert calls == [0]
    assert waits == []


def test_lost_attempts_wait_a_random_time_under_a_doubling_bound() -> None:
    waits: list[float] = []
    calls, attempt = losing(6)
    assert optimistic(attempt, attempts=10, what="x", sleep=waits.append) == "won"
    assert len(calls) == 7
    assert len(waits) == 6
    for number, wait in enumerate(waits):
        assert 0 <= wait <= min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**number)


def test_every_attempt_lost_is_a_concurrent_update_and_the_last_is_not_waited_after() -> None:
    waits: list[float] = []
    calls, attempt = losing(100)
    with pytest.raises(ConcurrentUpdate, match="operation op-1 changed 4 times"):
        optimistic(attempt, attempts=4, what="operation op-1", sleep=waits.append)
    assert len(calls) == 4
    assert len(waits) == 3
    assert max(waits) <= BACKOFF_CAP_SECONDS
