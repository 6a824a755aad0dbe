"""The virtual clock: time moves by advance/sleep, never by waiting."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from hypd_local.clock import Cohort, VirtualClock

START = datetime(2030, 1, 1, tzinfo=UTC)


def test_a_frozen_clock_moves_only_when_told() -> None:
    clock = VirtualClock(START, ticking=False)

    assert clock.now() == START
    clock.advance(90)
    assert clock.now() == START + timedelta(seconds=90)
    clock.sleep(3600)
    assert clock.now() == START + timedelta(seconds=3690)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)


def test_a_ticking_clock_starts_at_the_real_time_and_adds_advances() -> None:
    before = datetime.now(UTC)
    clock = VirtualClock()
    clock.advance(7200)

    assert clock.now() >= before + timedelta(hours=2)
    assert clock.now().tzinfo is not None


def test_sleeps_overlap_like_timers_on_one_time_line() -> None:
    # Given two sleepers that started at the same virtual time
    clock = VirtualClock(START, ticking=False)
    target_long = clock.now() + timedelta(seconds=300)
    clock.advance_to(target_long)            # the long sleeper finished first
    # When the short sleeper's wake-up time (START + 60) is already in the past
    clock.advance_to(START + timedelta(seconds=60))
    # Then the clock does not go back
    assert clock.now() == START + timedelta(seconds=300)


def test_concurrent_sleeps_never_lose_time() -> None:
    clock = VirtualClock(START, ticking=False)
    threads = [threading.Thread(target=clock.sleep, args=(100,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Each sleeper advanced to (its start + 100); starts differ, so 100 <= total <= 800.
    elapsed = (clock.now() - START).total_seconds()
    assert 100 <= elapsed <= 800


def test_wait_until_returns_when_the_condition_is_met() -> None:
    clock = VirtualClock(START, ticking=False)
    done = threading.Event()
    result: list[bool] = []
    waiter = threading.Thread(
        target=lambda: result.append(clock.wait_until(START + timedelta(hours=1), done.is_set))
    )
    waiter.start()

    done.set()
    clock.poke()
    waiter.join(timeout=10)

    assert result == [True]


def test_wait_until_returns_false_when_virtual_time_passes_the_deadline() -> None:
    clock = VirtualClock(START, ticking=False)
    started = threading.Event()
    result: list[bool] = []

    def wait() -> None:
        started.set()
        result.append(clock.wait_until(START + timedelta(hours=1), lambda: False))

    waiter = threading.Thread(target=wait)
    waiter.start()
    started.wait()
    clock.advance(3600)
    waiter.join(timeout=10)

    assert result == [False]


def test_listeners_hear_every_advance() -> None:
    clock = VirtualClock(START, ticking=False)
    heard: list[datetime] = []
    unsubscribe = clock.subscribe(heard.append)

    clock.advance(10)
    clock.sleep(5)
    unsubscribe()
    clock.advance(1)

    assert heard == [START + timedelta(seconds=10), START + timedelta(seconds=15)]


def test_activity_wait_quiet_waits_for_the_given_kinds_only() -> None:
    from hypd_local.activity import Activity

    activity = Activity()
    execution = activity.begin("execution", "the waiting one")
    delivery = activity.begin("delivery", "an event")
    assert not activity.wait_quiet(("delivery", "invoke"), timeout=0)  # a delivery runs

    # A waiter with no timeout returns only once the delivery has ended, whether it ends
    # before the waiter waits or while it does (no real time is waited for either).
    quiet: list[bool] = []
    waiter = threading.Thread(
        target=lambda: quiet.append(activity.wait_quiet(("delivery", "invoke"))), daemon=True)
    waiter.start()
    activity.end("delivery", delivery)
    waiter.join(timeout=60)
    assert quiet == [True]
    assert activity.running("execution") == 1  # still running: not waited for
    activity.end("execution", execution)


def _branches(clock: VirtualClock, plans: list[list[tuple[str, float]]]) -> list[list[str]]:
    """Run each plan in its own thread as a member of one cohort (a Parallel's branches): a
    step ("sleep", s) sleeps s virtual seconds; ("mark", 0) records the time it runs at."""
    cohort = Cohort(clock, len(plans))
    seen: list[list[str]] = [[] for _ in plans]

    def run(index: int) -> None:
        with cohort.member():
            for step, seconds in plans[index]:
                if step == "sleep":
                    clock.sleep(seconds)
                else:
                    seen[index].append(f"{(clock.now() - START).total_seconds():.0f}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive(), "a cohort member never woke"
    return seen


def test_the_waits_of_a_cohort_overlap_instead_of_adding_up() -> None:
    clock = VirtualClock(START, ticking=False)

    seen = _branches(clock, [
        [("sleep", 300), ("mark", 0)],
        [("sleep", 60), ("mark", 0), ("sleep", 60), ("mark", 0)],
    ])

    assert seen == [["300"], ["60", "120"]]
    assert clock.now() == START + timedelta(seconds=300)  # not 420


def test_a_member_that_left_no_longer_holds_the_clock() -> None:
    clock = VirtualClock(START, ticking=False)

    seen = _branches(clock, [[("mark", 0)], [("sleep", 600), ("mark", 0)]])

    assert seen == [["0"], ["600"]]


def test_a_cohort_wait_ends_when_its_condition_comes_first() -> None:
    clock = VirtualClock(START, ticking=False)
    cohort = Cohort(clock, 2)
    came = threading.Event()
    results: list[bool] = []

    def waiter() -> None:
        with cohort.member():
            results.append(clock.wait_until(START + timedelta(hours=1), came.is_set))

    def other() -> None:
        with cohort.member():
            clock.sleep(120)
            came.set()
            clock.poke()

    threads = [threading.Thread(target=waiter), threading.Thread(target=other)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert results == [True]
    assert clock.now() == START + timedelta(seconds=120)


def test_outside_a_cohort_a_sleep_moves_the_clock_at_once() -> None:
    clock = VirtualClock(START, ticking=False)
    clock.sleep(60)
    assert clock.sleep_until(START + timedelta(seconds=90)) is False
    assert clock.now() == START + timedelta(seconds=90)


def _run_all(targets: list[Callable[[], None]]) -> None:
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive(), "a cohort member never woke"


def test_executions_running_at_once_overlap_their_waits() -> None:
    # Two executions: one waits 20 minutes (EKS), the other looks every minute three times.
    # Without the shared timeline the 20 minutes would pass during the other's first look.
    clock = VirtualClock(START, ticking=False)
    executions = clock.executions
    seen: dict[str, list[str]] = {"long": [], "looks": []}

    def execution(name: str, waits: list[float]) -> Callable[[], None]:
        executions.join()  # counted from its start, before its thread runs

        def run() -> None:
            with executions.member():
                for seconds in waits:
                    clock.sleep(seconds)
                    seen[name].append(f"{(clock.now() - START).total_seconds():.0f}")
        return run

    _run_all([execution("long", [1200]), execution("looks", [60, 60, 60])])

    assert seen == {"long": ["1200"], "looks": ["60", "120", "180"]}
    assert executions.members == 0


def test_a_parallel_nested_in_an_execution_stands_for_its_thread() -> None:
    # Execution A runs a Parallel of two branches (5 and 8 minutes) while execution B waits
    # 6 minutes: every wait overlaps, and A's thread resumes at 8 minutes.
    clock = VirtualClock(START, ticking=False)
    executions = clock.executions
    marks: list[tuple[str, float]] = []

    def mark(name: str) -> None:
        marks.append((name, (clock.now() - START).total_seconds()))

    executions.join()
    executions.join()

    def a() -> None:
        with executions.member():
            branches = Cohort(clock, 2, parent=executions)

            def branch(seconds: float) -> Callable[[], None]:
                def run() -> None:
                    with branches.member():
                        clock.sleep(seconds)
                        mark(f"branch {seconds:.0f}")
                return run

            _run_all([branch(300), branch(480)])
            mark("a resumes")
            clock.sleep(60)
            mark("a ends")

    def b() -> None:
        with executions.member():
            clock.sleep(360)
            mark("b")

    _run_all([a, b])

    assert sorted(marks, key=lambda m: m[1]) == [
        ("branch 300", 300), ("b", 360), ("branch 480", 480), ("a resumes", 480),
        ("a ends", 540)]
    assert executions.children == []


def test_an_event_wait_alone_never_moves_the_clock_but_a_timer_beside_it_does() -> None:
    clock = VirtualClock(START, ticking=False)
    cohort = Cohort(clock, 1)
    results: list[bool] = []

    def token_wait() -> None:
        with cohort.member():
            results.append(clock.wait_until(START + timedelta(hours=1)))

    waiter = threading.Thread(target=token_wait, daemon=True)
    waiter.start()
    clock.wait_for_waiters(1)  # counted as a waiter, as outside a cohort
    assert clock.now() == START  # alone, an event wait does not jump to its deadline

    # A timer beside it: the clock moves to the earliest target, the timer's, then (the
    # timer's member gone) stays until the test moves it.
    cohort.join()
    _run_all([lambda: _sleep_as_member(cohort, 600)])
    assert clock.now() == START + timedelta(seconds=600)
    assert results == []
    clock.advance(3000)
    waiter.join(timeout=30)
    assert results == [False]


def _sleep_as_member(cohort: Cohort, seconds: float) -> None:
    with cohort.member():
        cohort.clock.sleep(seconds)
