"""Fixtures of the emulator tests."""

from __future__ import annotations

import time

import pytest

from tests.emulator.test_eks import Events, FakeClock


@pytest.fixture
def no_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real wait or a wall-clock read fails the test: virtual hours must take neither."""

    def forbidden(*args: object) -> None:
        raise AssertionError("the emulator waited or read the wall clock")

    for name in ("sleep", "time", "monotonic"):
        monkeypatch.setattr(time, name, forbidden)


@pytest.fixture
def clock() -> FakeClock:
    """The EKS tests' clock (tests move it; nothing sleeps)."""
    return FakeClock()


@pytest.fixture
def events() -> Events:
    """What the EKS emulator emitted."""
    return Events()
