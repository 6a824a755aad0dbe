"""Patches of moto's Step Functions interpreter that are hard to reach through a whole cloud."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker import (
    BranchWorker,
)
from moto.stepfunctions.parser.asl.eval.program_state import ProgramRunning, ProgramStopped

from hypd_local import patches


class _Program:
    def eval(self, env: Any) -> None:
        raise RuntimeError("Could not set NextState value when in state ProgramStopped")


class _Env:
    def __init__(self, state: Any) -> None:
        self._state = state

    def program_state(self) -> Any:
        return self._state


class _Comm:
    def __init__(self) -> None:
        self.terminated: list[Any] = []

    def on_terminated(self, env: Any) -> None:
        self.terminated.append(env)


def _worker(state: Any) -> tuple[BranchWorker, _Comm]:
    comm = _Comm()
    worker = BranchWorker(comm, _Program(), _Env(state))  # type: ignore[arg-type]
    return worker, comm


def test_a_branch_stopped_before_it_began_still_reports_its_end() -> None:
    # A Parallel state waits for every branch's on_terminated; a branch whose execution was
    # stopped while it started must report, or the execution never ends.
    patches.install()
    worker, comm = _worker(ProgramStopped(datetime.now(UTC), None, None))

    worker._thread_routine()

    assert comm.terminated == [worker.env]


def test_a_branch_that_fails_while_running_still_raises() -> None:
    patches.install()
    worker, comm = _worker(ProgramRunning())  # type: ignore[no-untyped-call]

    with pytest.raises(RuntimeError):
        worker._thread_routine()
    assert comm.terminated == []
