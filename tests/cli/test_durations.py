"""hypd_cli.durations: one syntax for a length of time and for --since, on every command."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

import pytest

from hypd_cli import durations
from hypd_cli.main import build_parser

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 90), ("0.5", 0.5), ("90s", 90), ("30m", 1800), ("1h", 3600), ("1h30m", 5400),
    ("2d", 172800), ("1H", 3600),
])
def test_a_duration_is_seconds_or_units(text: str, seconds: float) -> None:
    assert durations.duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "1x", "1h 30m", "-5m", "soon"])
def test_what_is_not_a_duration_is_refused_with_the_examples(text: str) -> None:
    assert durations.duration_seconds(text) is None
    with pytest.raises(argparse.ArgumentTypeError, match="1h30m"):
        durations.positive_duration(text)


def test_since_is_a_duration_ago_or_an_iso_time() -> None:
    assert durations.point_in_time("1h", NOW) == datetime(2026, 1, 15, 11, 0, tzinfo=UTC)
    assert durations.point_in_time("2026-01-15T10:00:00Z", NOW) == datetime(
        2026, 1, 15, 10, 0, tzinfo=UTC)
    assert durations.point_in_time("2026-01-15T12:00:00+02:00", NOW) == datetime(
        2026, 1, 15, 10, 0, tzinfo=UTC)
    with pytest.raises(ValueError, match="a duration ago"):
        durations.point_in_time("yesterday", NOW)


@pytest.mark.parametrize("argv", [
    ["ops", "watch", "op-1", "--interval", "2m", "--timeout", "1h"],
    ["events", "tail", "--since", "30m", "--interval", "10s"],
    ["jobs", "logs", "demo", "job", "--since", "1h"],
])
def test_every_command_that_takes_a_time_takes_the_one_syntax(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)

    assert getattr(args, "interval", 120.0) in (120.0, 10.0)
    assert getattr(args, "timeout", 3600.0) in (None, 3600.0)
    since = getattr(args, "since", None)
    if argv[0] == "jobs":
        assert since == 3600
    elif argv[0] == "events":
        assert isinstance(since, str)
        assert since.endswith("Z")
