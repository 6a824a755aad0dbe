"""The operation's timeline in the CLI, against scripted answers: ``ops watch`` shows each
stage's attempts and what the running one waits for and when it looks next (redrawn on a
terminal, one line per change otherwise); ``ops get`` adds the timeline in start order;
``-o json`` prints it as the API answered."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hypd_cli.cli import EXIT_OK, EXIT_TIMEOUT, run_command
from hypd_cli.operations import get_operation
from tests.cli.conftest import OPERATION_ID
from tests.cli.test_cli_commands import (
    ScriptedClient,
    Terminal,
    context,
    operation,
    run_watch,
    stage,
)

NOW = "2099-01-01T00:10:00Z"
"""The answers' updatedAt: later than this machine's clock, so it is the CLI's "now" (as the
local cloud's virtual clock is): elapsed times and the next look are exact."""


def attempt(name: str, number: int, status: str, started: str, **fields: Any) -> dict[str, Any]:
    return {"stage": name, "attempt": number, "status": status, "startedAt": started, **fields}


def t(minutes: int, seconds: int = 0) -> str:
    return f"2099-01-01T00:{minutes:02d}:{seconds:02d}Z"


def running() -> dict[str, Any]:
    """eks waits for EKS; storage failed once (no bucket), its second attempt waits for FSx."""
    answer = operation(
        "RUNNING",
        stage("network", "SUCCEEDED", 1, attemptStartedAt=t(0), endedAt=t(0, 1)),
        stage("eks", "RUNNING", 1, attemptStartedAt=t(0, 1)),
        stage("storage", "RUNNING", 2, attemptStartedAt=t(3)),
        stage("verify"),
    )
    answer["createdAt"], answer["updatedAt"] = t(0), NOW
    answer["timeline"] = [
        attempt("network", 1, "SUCCEEDED", t(0), endedAt=t(0, 1), looks=2),
        attempt("eks", 1, "RUNNING", t(0, 1), looks=2,
                waitingFor="EKS cluster hypd-demo is CREATING", nextLookAt=t(10, 30)),
        attempt("storage", 1, "FAILED", t(0, 1), endedAt=t(0, 2), looks=1,
                error={"code": "NoSuchBucket", "message": "bucket my-data does not exist"}),
        attempt("storage", 2, "RUNNING", t(3), looks=4,
                waitingFor="FSx file system fs-0123 is CREATING", nextLookAt=t(11)),
    ]
    return answer


def succeeded() -> dict[str, Any]:
    answer = running()
    answer["status"] = "SUCCEEDED"
    for row, ended in zip(answer["stages"][1:3], (t(9), t(10)), strict=True):
        row.update(status="SUCCEEDED", endedAt=ended)
    answer["stages"][3].update(status="SUCCEEDED", attempts=1, attemptStartedAt=t(10),
                               endedAt=t(10))
    timeline = answer["timeline"]
    for entry, ended in ((timeline[1], t(9)), (timeline[3], t(10))):
        entry.update(status="SUCCEEDED", endedAt=ended, looks=entry["looks"] + 1)
        del entry["nextLookAt"]
    timeline.append(attempt("verify", 1, "SUCCEEDED", t(10), endedAt=t(10), looks=1))
    return answer


def test_watch_on_a_terminal_shows_each_stages_attempts_and_what_the_running_ones_wait_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    terminal = Terminal()
    ctx = context(["ops", "watch", OPERATION_ID, "--timeout", "1"],
                  ScriptedClient(running()), out=terminal)
    ctx.clock = iter([0.0, 2.0]).__next__

    assert run_watch(ctx) == EXIT_TIMEOUT

    screen = terminal.getvalue().rsplit("\x1b[J", 1)[-1]
    lines = screen.splitlines()
    assert lines[0] == f"Operation {OPERATION_ID} (create-cluster, cluster demo): RUNNING, 10m00s"
    assert re.split(r"\s{2,}", lines[1]) == ["STAGE", "STATUS", "ATTEMPTS", "ELAPSED", "LOOKS",
                                             "NOTE"]
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[3:]]
    assert rows == [
        ["network", "SUCCEEDED", "1", "1.0s", "2"],
        ["eks", "RUNNING", "1", "9m59s", "2",
         "waiting for: EKS cluster hypd-demo is CREATING; next look in 30s"],
        ["storage", "RUNNING", "2", "7m00s", "4",
         "waiting for: FSx file system fs-0123 is CREATING; next look in 1m00s"],
        ["attempt 1", "FAILED", "1.0s", "1", "NoSuchBucket: bucket my-data does not exist"],
        ["verify", "PENDING", "0"],
    ]
    assert lines[6].startswith("  attempt 1")  # under its stage


def test_watch_without_a_terminal_prints_what_an_attempt_waits_for_when_it_changes() -> None:
    later = running()
    later["timeline"][1].update(looks=3, nextLookAt=t(11))  # another look, the same wait
    changed = running()
    changed["timeline"][1]["waitingFor"] = "EKS cluster hypd-demo is UPDATING"
    ctx = context(["ops", "watch", OPERATION_ID],
                  ScriptedClient(running(), later, changed, succeeded()))

    assert run_watch(ctx) == EXIT_OK

    out = ctx.out.getvalue()  # type: ignore[attr-defined]
    assert out.split("\n\n")[0].splitlines() == [
        f"{OPERATION_ID}  RUNNING",
        "  network  SUCCEEDED  attempt 1, took 1.0s, 2 looks",
        "  eks      RUNNING    attempt 1, waiting for: EKS cluster hypd-demo is CREATING; "
        "next look in 30s",
        "  storage  RUNNING    attempt 2, waiting for: FSx file system fs-0123 is CREATING; "
        "next look in 1m00s",
        "  eks      RUNNING    attempt 1, waiting for: EKS cluster hypd-demo is UPDATING; "
        "next look in 30s",
        "  eks      SUCCEEDED  attempt 1, took 8m59s, 3 looks",
        "  storage  SUCCEEDED  attempt 2, took 7m00s, 5 looks",
        "  verify   SUCCEEDED  attempt 1, took 0.0s, 1 look",
        f"{OPERATION_ID}  SUCCEEDED",
    ]
    final = out.split("\n\n", 1)[1]
    assert re.search(r"^storage\s+SUCCEEDED\s+2\s+7m00s\s+5\s*$", final, re.M)
    assert re.search(r"^  attempt 1\s+FAILED\s+1\.0s\s+1\s+NoSuchBucket: bucket my-data",
                     final, re.M)


def test_ops_get_adds_the_timeline_in_start_order_and_json_prints_it_as_answered() -> None:
    ctx = context(["ops", "get", OPERATION_ID], ScriptedClient(running()))

    assert run_command(ctx, "ops get", get_operation) == EXIT_OK

    out = ctx.out.getvalue()  # type: ignore[attr-defined]
    table = out.split("Timeline (UTC):\n", 1)[1].split("\n\n")[0].splitlines()
    assert re.split(r"\s{2,}", table[0]) == ["STARTED", "ENDED", "STAGE", "ATTEMPT", "STATUS",
                                             "TOOK", "LOOKS", "NOTE"]
    assert [re.split(r"\s{2,}", line) for line in table[2:]] == [
        ["2099-01-01 00:00:00", "00:00:01", "network", "1", "SUCCEEDED", "1.0s", "2"],
        ["2099-01-01 00:00:01", "-", "eks", "1", "RUNNING", "9m59s", "2",
         "waiting for: EKS cluster hypd-demo is CREATING; next look in 30s"],
        ["2099-01-01 00:00:01", "00:00:02", "storage", "1", "FAILED", "1.0s", "1",
         "NoSuchBucket: bucket my-data does not exist"],
        ["2099-01-01 00:03:00", "-", "storage", "2", "RUNNING", "7m00s", "4",
         "waiting for: FSx file system fs-0123 is CREATING; next look in 1m00s"],
    ]
    # the stage table above it says the same of the running stages
    assert re.search(r"^eks\s+RUNNING\s+1\s+9m59s\s+waiting for: EKS cluster hypd-demo is "
                     r"CREATING; next look in 30s$", out, re.M)

    done = context(["ops", "get", OPERATION_ID], ScriptedClient(succeeded()))
    run_command(done, "ops get", get_operation)
    assert re.search(r"^2099-01-01 00:00:01\s+00:09:00\s+eks\s+1\s+SUCCEEDED\s+8m59s\s+3\s+"
                     r"waited for: EKS cluster hypd-demo is CREATING$",
                     done.out.getvalue(), re.M)  # type: ignore[attr-defined]

    as_json = context(["ops", "get", OPERATION_ID, "-o", "json"], ScriptedClient(running()))
    run_command(as_json, "ops get", get_operation)
    assert json.loads(as_json.out.getvalue()) == running()  # type: ignore[attr-defined]


def test_a_look_already_due_and_an_answer_without_a_timeline() -> None:
    overdue = running()
    overdue["timeline"][1]["nextLookAt"] = t(9)
    ctx = context(["ops", "get", OPERATION_ID], ScriptedClient(overdue))
    run_command(ctx, "ops get", get_operation)
    assert "waiting for: EKS cluster hypd-demo is CREATING; next look due" in \
        ctx.out.getvalue()  # type: ignore[attr-defined]

    older = running()  # an API from before the timeline
    del older["timeline"]
    old = context(["ops", "get", OPERATION_ID], ScriptedClient(older))
    assert run_command(old, "ops get", get_operation) == EXIT_OK
    assert "Timeline" not in old.out.getvalue()  # type: ignore[attr-defined]
