"""Each stage's attempts (hypd.operations: lifecycle, stage_step, Steps.step): start, end,
status, looks and the last wait; bounded; records written before attempts were kept; the
operation's timeline; and what a look costs in DynamoDB calls."""

from __future__ import annotations

from typing import Any

import pytest

from hypd.api.models import OperationView
from hypd.aws.dynamodb import Table
from hypd.errors import AwsThrottled, PermanentError
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import (
    MAX_KEPT_ATTEMPTS,
    MAX_NOTE_CHARS,
    AttemptStatus,
    ErrorInfo,
    Operation,
    StageStatus,
    Wait,
    timeline,
)
from hypd.operations.stages import stage_step, waiting_of
from hypd.operations.steps import OperationInput, Steps, poll_result
from hypd.operations.store import OperationStore
from tests.unit.support import FakeClock, discover_operation

pytestmark = pytest.mark.usefixtures("fixed_clock")

T0 = "2026-01-15T10:00:00.000Z"


def waiting(reason: str, seconds: int) -> dict[str, Any]:
    return poll_result(False, seconds, waiting=reason)


def ready(result: dict[str, Any]) -> bool:
    return bool(result["ready"])


def entries(operation: Operation) -> list[tuple[str, int, AttemptStatus]]:
    return [(e.stage, e.attempt.number, e.attempt.status) for e in timeline(operation)]


# ---------------------------------------------------------------------------- one attempt
def test_a_polled_attempt_counts_its_looks_and_records_why_it_waits_and_when_it_looks_next(
    operation_store: OperationStore, fixed_clock: FakeClock
) -> None:
    store = operation_store
    operation = store.create(discover_operation())
    # The first look opens the attempt and waits
    stage_step(store, operation.id, "eks-clusters",
               lambda: waiting("EKS cluster hypd-demo is CREATING", 480),
               start=True, complete=ready)
    (attempt,) = store.get(operation.id).stage("eks-clusters").history
    assert (attempt.number, attempt.status, attempt.started_at) == (1, AttemptStatus.RUNNING, T0)
    assert attempt.looks == 1
    assert attempt.waiting_for == "EKS cluster hypd-demo is CREATING"
    assert attempt.next_look_at == "2026-01-15T10:08:00.000Z"
    assert attempt.ended_at is None

    # A later look waits again, for a shorter time
    fixed_clock.advance(480)
    stage_step(store, operation.id, "eks-clusters",
               lambda: waiting("EKS cluster hypd-demo is CREATING", 30), complete=ready)
    (attempt,) = store.get(operation.id).stage("eks-clusters").history
    assert attempt.looks == 2
    assert attempt.next_look_at == "2026-01-15T10:08:30.000Z"

    # The look that finds it ready ends the attempt: its last wait is kept, the next look gone
    fixed_clock.advance(30)
    stage_step(store, operation.id, "eks-clusters", lambda: poll_result(True), complete=ready)
    stage = store.get(operation.id).stage("eks-clusters")
    (attempt,) = stage.history
    assert (stage.status, attempt.status) == (StageStatus.SUCCEEDED, AttemptStatus.SUCCEEDED)
    assert attempt.looks == 3
    assert attempt.ended_at == stage.ended_at == "2026-01-15T10:08:30.000Z"
    assert attempt.waiting_for == "EKS cluster hypd-demo is CREATING"
    assert attempt.next_look_at is None


def test_a_look_without_a_reason_keeps_the_last_one_and_progress_is_recorded_with_it(
    operation_store: OperationStore,
) -> None:
    store = operation_store
    operation = store.create(discover_operation())
    stage_step(store, operation.id, "record", lambda: waiting("3 of 4 nodes Ready", 30),
               start=True, complete=ready, progress=lambda r: {"n": 1})
    stage_step(store, operation.id, "record", lambda: poll_result(False, 15),
               complete=ready, progress=lambda r: None)
    stage = store.get(operation.id).stage("record")
    assert stage.progress == {"n": 1}  # None: nothing new
    assert stage.history[0].waiting_for == "3 of 4 nodes Ready"
    assert stage.history[0].looks == 2


def test_what_a_look_waits_for_comes_from_a_polling_answer_only() -> None:
    assert waiting_of(waiting("FSx file system fs-1 is CREATING", 60)) == Wait(
        "FSx file system fs-1 is CREATING", 60)
    assert waiting_of(poll_result(False, 15)) == Wait(None, 15)
    assert waiting_of(poll_result(True)) is None
    assert waiting_of({"status": "Creating"}) is None  # not a polling answer
    assert waiting_of(["not", "a", "mapping"]) is None


def test_a_long_reason_is_clipped(operation_store: OperationStore) -> None:
    store = operation_store
    operation = store.create(discover_operation())
    stage_step(store, operation.id, "record", lambda: waiting("x" * 5000, 30), start=True,
               complete=ready)
    reason = store.get(operation.id).stage("record").history[0].waiting_for
    assert reason is not None
    assert len(reason) == MAX_NOTE_CHARS
    assert reason.endswith("\u2026")


# ---------------------------------------------------------------------------- several attempts
def test_a_first_task_retried_after_an_error_ends_the_attempt_failed_with_that_error(
    operation_store: OperationStore, fixed_clock: FakeClock
) -> None:
    store = operation_store
    operation = store.create(discover_operation())

    def throttled() -> None:
        raise AwsThrottled("slow down", details={"awsErrorCode": "ThrottlingException"})

    with pytest.raises(AwsThrottled):
        stage_step(store, operation.id, "record", throttled, start=True, complete=True)
    fixed_clock.advance(2)
    stage_step(store, operation.id, "record", lambda: {}, start=True, complete=True)

    stage = store.get(operation.id).stage("record")
    first, second = stage.history
    assert (first.number, first.status, first.looks) == (1, AttemptStatus.FAILED, 1)
    assert first.error == ErrorInfo(code="ThrottlingException", message="slow down")
    assert (first.started_at, first.ended_at) == (T0, "2026-01-15T10:00:02.000Z")
    assert (second.number, second.status, second.error) == (2, AttemptStatus.SUCCEEDED, None)
    assert stage.attempts == 2


def test_a_failed_operation_retried_shows_the_failed_attempt_then_the_new_one(
    operation_store: OperationStore, fixed_clock: FakeClock
) -> None:
    store = operation_store
    operation = store.create(discover_operation())
    stage_step(store, operation.id, "eks-clusters", lambda: 1, start=True, complete=True)

    def missing() -> None:
        raise PermanentError("bucket my-data does not exist")

    with pytest.raises(PermanentError):
        stage_step(store, operation.id, "hyperpod-clusters", missing, start=True)
    fixed_clock.advance(5)
    error = ErrorInfo(code="PermanentError", message="bucket my-data does not exist")
    store.update(operation.id, lambda op: lifecycle.fail(op, error))
    failed = store.get(operation.id).stage("hyperpod-clusters").history[0]
    assert (failed.status, failed.error, failed.ended_at) == (
        AttemptStatus.FAILED, error, "2026-01-15T10:00:05.000Z")

    # The retry resumes at the failed stage: a second attempt beside the first
    store.update(operation.id, lifecycle.retry)
    fixed_clock.advance(60)
    stage_step(store, operation.id, "hyperpod-clusters", lambda: 2, start=True, complete=True)

    recorded = store.get(operation.id)
    assert entries(recorded) == [
        ("eks-clusters", 1, AttemptStatus.SUCCEEDED),
        ("hyperpod-clusters", 1, AttemptStatus.FAILED),
        ("hyperpod-clusters", 2, AttemptStatus.SUCCEEDED),
    ]
    assert recorded.stage("hyperpod-clusters").attempts == 2


def test_running_attempts_of_a_failed_or_stopped_operation_end_with_it() -> None:
    # Two stages running side by side (a Parallel): the one with the error FAILED, the other
    # CANCELLED
    operation = discover_operation()
    for name in ("eks-clusters", "hyperpod-clusters"):
        lifecycle.start_stage(operation, name)
    lifecycle.record_stage_error(operation, "hyperpod-clusters", ErrorInfo(code="E", message="m"))
    failed = lifecycle.fail(operation, ErrorInfo(code="States.TaskFailed", message="x"))
    assert failed is not None
    assert [a.status for a in failed.stage("eks-clusters").history] == [AttemptStatus.CANCELLED]
    (attempt,) = failed.stage("hyperpod-clusters").history
    assert (attempt.status, attempt.error) == (AttemptStatus.FAILED,
                                               ErrorInfo(code="E", message="m"))

    stopped = discover_operation()
    lifecycle.start_stage(stopped, "eks-clusters")
    cancelled = lifecycle.execution_ended(stopped, "ABORTED", None, None)
    assert cancelled is not None
    (attempt,) = cancelled.stage("eks-clusters").history
    assert (attempt.status, attempt.ended_at) == (AttemptStatus.CANCELLED, T0)


def test_a_stage_keeps_its_latest_attempts_and_counts_them_all() -> None:
    operation = discover_operation()
    for _ in range(MAX_KEPT_ATTEMPTS + 5):
        lifecycle.start_stage(operation, "record")
    stage = operation.stage("record")
    assert stage.attempts == MAX_KEPT_ATTEMPTS + 5
    assert len(stage.history) == MAX_KEPT_ATTEMPTS
    assert [a.number for a in stage.history] == list(range(6, MAX_KEPT_ATTEMPTS + 6))
    assert {a.status for a in stage.history[:-1]} == {AttemptStatus.FAILED}


# ---------------------------------------------------------------------------- old records
def old_record(operation_status: str, **stage: Any) -> dict[str, Any]:
    """An operation as written before stages kept their attempts."""
    return {
        "id": "op-" + "a" * 32, "kind": "discover", "status": operation_status, "input": {},
        "createdAt": T0, "updatedAt": T0, "version": 3,
        "stages": [
            {"name": "eks-clusters", "status": "SUCCEEDED", "attempts": 1, "startedAt": T0,
             "attemptStartedAt": T0, "endedAt": "2026-01-15T10:00:01.000Z"},
            {"name": "hyperpod-clusters", **stage},
            {"name": "record", "status": "PENDING", "attempts": 0},
        ],
    }


def test_a_record_without_attempts_loads_and_its_timeline_shows_each_stages_latest_attempt(
) -> None:
    operation = Operation.model_validate(old_record(
        "FAILED", status="FAILED", attempts=2, startedAt=T0,
        attemptStartedAt="2026-01-15T10:00:01.000Z", endedAt="2026-01-15T10:00:09.000Z",
        error={"code": "E", "message": "m"}))
    assert all(stage.history == [] for stage in operation.stages)

    assert entries(operation) == [
        ("eks-clusters", 1, AttemptStatus.SUCCEEDED),
        ("hyperpod-clusters", 2, AttemptStatus.FAILED),
    ]
    last = timeline(operation)[-1].attempt
    assert (last.started_at, last.ended_at, last.looks) == (
        "2026-01-15T10:00:01.000Z", "2026-01-15T10:00:09.000Z", 0)
    assert last.error == ErrorInfo(code="E", message="m")
    # what GET /operations/{id} answers is valid
    OperationView.model_validate(operation.to_api())


def test_an_attempt_running_when_attempts_began_to_be_kept_is_picked_up_by_its_next_look(
    fixed_clock: FakeClock,
) -> None:
    operation = Operation.model_validate(old_record(
        "RUNNING", status="RUNNING", attempts=1, startedAt=T0, attemptStartedAt=T0))
    fixed_clock.advance(60)
    looked = lifecycle.record_look(operation, "hyperpod-clusters", Wait("Creating", 60))
    assert looked is not None
    (attempt,) = looked.stage("hyperpod-clusters").history
    assert (attempt.number, attempt.started_at, attempt.looks) == (1, T0, 1)
    assert attempt.next_look_at == "2026-01-15T10:02:00.000Z"

    # and its retry keeps it
    lifecycle.start_stage(looked, "hyperpod-clusters")
    assert [a.number for a in looked.stage("hyperpod-clusters").history] == [1, 2]


# ---------------------------------------------------------------------------- the API
def test_the_api_answers_the_timeline_in_start_order_and_no_history_in_the_stages(
    fixed_clock: FakeClock,
) -> None:
    operation = discover_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    fixed_clock.advance(1)
    lifecycle.start_stage(operation, "record")  # side by side with eks-clusters
    lifecycle.record_look(operation, "record", Wait("waiting for the clusters", 30))
    fixed_clock.advance(1)
    lifecycle.complete_stage(operation, "eks-clusters", {"found": 0})

    body = operation.to_api()

    assert all("history" not in stage for stage in body["stages"])
    assert body["timeline"] == [
        {"stage": "eks-clusters", "attempt": 1, "status": "SUCCEEDED", "startedAt": T0,
         "endedAt": "2026-01-15T10:00:02.000Z", "looks": 1},
        {"stage": "record", "attempt": 1, "status": "RUNNING",
         "startedAt": "2026-01-15T10:00:01.000Z", "looks": 1,
         "waitingFor": "waiting for the clusters", "nextLookAt": "2026-01-15T10:00:31.000Z"},
    ]
    view = OperationView.model_validate(body)
    assert [entry.stage for entry in view.timeline] == ["eks-clusters", "record"]


# ---------------------------------------------------------------------------- the cost
class CountingTable(Table):
    """The table, counting its calls by kind."""

    def __init__(self, table: Table) -> None:
        super().__init__(table._client, table.name)
        self.calls: list[str] = []

    def get(self, key: dict[str, str]) -> dict[str, Any] | None:
        self.calls.append("GetItem")
        return super().get(key)

    def put(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append("PutItem")
        super().put(*args, **kwargs)


def test_a_look_costs_one_read_and_one_write(table: Table) -> None:
    counting = CountingTable(table)
    operations = OperationStore(counting)
    steps = Steps(operations, LockStore(counting))
    operation = operations.create(discover_operation())
    task = OperationInput.model_validate({"task": "look", "operationId": operation.id})

    def look() -> dict[str, Any]:
        operations.get(operation.id)  # the work reads its operation (input, earlier outputs)
        return waiting("EKS cluster hypd-demo is CREATING", 30)

    counting.calls.clear()
    steps.step(task, "eks-clusters", look, complete=ready, start=True)
    assert counting.calls == ["GetItem", "PutItem", "PutItem"]  # read; attempt opened; look

    counting.calls.clear()
    steps.step(task, "eks-clusters", look, complete=ready)
    assert counting.calls == ["GetItem", "PutItem"]
    assert operations.get(operation.id).stage("eks-clusters").history[0].looks == 2
