"""hypd.operations.stages: stage_step bookkeeping and the recorded error."""

from __future__ import annotations

from functools import partial

import pytest

from hypd.aws.dynamodb import Table
from hypd.errors import AwsThrottled, InvalidTaskInput, OperationStateError
from hypd.operations import lifecycle
from hypd.operations.models import ErrorInfo, OperationStatus, StageStatus
from hypd.operations.stages import error_info, stage_step
from hypd.operations.store import OperationStore
from tests.unit.support import FakeClock, discover_operation

pytestmark = pytest.mark.usefixtures("fixed_clock")

attempt = partial(stage_step, start=True, complete=True)
"""A stage of one task: the task opens an attempt and ends the stage (discover's stages)."""


@pytest.fixture
def store(table: Table) -> OperationStore:
    return OperationStore(table)


def test_successful_stage_records_output_and_one_attempt(
    store: OperationStore, fixed_clock: FakeClock
) -> None:
    # Given a recorded operation
    operation = store.create(discover_operation())

    def work() -> list[str]:
        fixed_clock.advance(3)
        return ["train", "infer"]

    # When its stage runs work that succeeds
    result = attempt(
        store, operation.id, "eks-clusters", work, summarize=lambda r: {"found": len(r)}
    )
    # Then the work's result is returned and the stage SUCCEEDED with the summary
    assert result == ["train", "infer"]
    stored = store.get(operation.id)
    stage = stored.stage("eks-clusters")
    assert stage.status is StageStatus.SUCCEEDED
    assert stage.output == {"found": 2}
    assert stage.attempts == 1
    assert stage.started_at == "2026-01-15T10:00:00.000Z"
    assert stage.ended_at == "2026-01-15T10:00:03.000Z"
    assert stored.status is OperationStatus.RUNNING


def test_stage_without_summary_records_no_output(store: OperationStore) -> None:
    operation = store.create(discover_operation())
    assert attempt(store, operation.id, "record", lambda: 42) == 42
    assert store.get(operation.id).stage("record").output is None


def test_failing_stage_records_the_aws_error_code_and_reraises_the_same_exception(
    store: OperationStore,
) -> None:
    # Given work that AWS throttles
    operation = store.create(discover_operation())
    error = AwsThrottled(
        "listing EKS clusters: ThrottlingException: Rate exceeded",
        details={"awsErrorCode": "ThrottlingException"},
    )

    def work() -> None:
        raise error

    # When the stage runs
    with pytest.raises(AwsThrottled) as raised:
        attempt(store, operation.id, "eks-clusters", work)
    # Then the very same exception reaches the state machine
    assert raised.value is error
    # And the stage keeps RUNNING with the AWS code and message recorded
    stage = store.get(operation.id).stage("eks-clusters")
    assert stage.status is StageStatus.RUNNING
    assert stage.attempts == 1
    assert stage.error == ErrorInfo(
        code="ThrottlingException",
        message="listing EKS clusters: ThrottlingException: Rate exceeded",
    )


def test_failing_stage_with_a_plain_exception_records_its_class(store: OperationStore) -> None:
    operation = store.create(discover_operation())

    def work() -> None:
        raise KeyError("ClusterArn")

    with pytest.raises(KeyError):
        attempt(store, operation.id, "hyperpod-clusters", work)
    assert store.get(operation.id).stage("hyperpod-clusters").error == ErrorInfo(
        code="KeyError", message="'ClusterArn'"
    )


def test_retry_after_a_failed_attempt_counts_two_attempts(store: OperationStore) -> None:
    # Given a first attempt that was throttled
    operation = store.create(discover_operation())

    def throttled() -> None:
        raise AwsThrottled("slow down", details={"awsErrorCode": "ThrottlingException"})

    with pytest.raises(AwsThrottled):
        attempt(store, operation.id, "record", throttled)
    # When the state machine retries and the attempt succeeds
    attempt(store, operation.id, "record", lambda: {"recorded": []}, summarize=lambda r: r)
    # Then the stage SUCCEEDED after 2 attempts, without error
    stage = store.get(operation.id).stage("record")
    assert (stage.status, stage.attempts, stage.error) == (StageStatus.SUCCEEDED, 2, None)
    assert stage.output == {"recorded": []}


def test_stage_of_an_ended_operation_does_no_work(store: OperationStore) -> None:
    # Given an operation that has failed
    operation = store.create(discover_operation())
    store.update(operation.id, lambda op: lifecycle.fail(op, ErrorInfo(code="X", message="x")))
    calls: list[int] = []
    # When a late stage task runs
    with pytest.raises(OperationStateError):
        attempt(store, operation.id, "record", lambda: calls.append(1))
    # Then the work never ran
    assert calls == []


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            AwsThrottled("m", details={"awsErrorCode": "ThrottlingException"}),
            ErrorInfo(code="ThrottlingException", message="m"),
        ),
        (InvalidTaskInput("bad input"), ErrorInfo(code="InvalidTaskInput", message="bad input")),
        (ValueError(), ErrorInfo(code="ValueError", message="ValueError")),
        (RuntimeError("boom"), ErrorInfo(code="RuntimeError", message="boom")),
    ],
)
def test_error_info(exc: BaseException, expected: ErrorInfo) -> None:
    assert error_info(exc) == expected


def test_a_polling_step_ends_its_stage_only_once_its_result_says_ready(
    store: OperationStore,
) -> None:
    # Given a stage opened by a first look that finds its resource not ready
    operation = store.create(discover_operation())

    def ready(result: dict[str, int]) -> bool:
        return bool(result["ready"])

    def not_yet() -> dict[str, int]:
        return {"ready": 0}

    def now_ready() -> dict[str, int]:
        return {"ready": 1, "n": 1}

    stage_step(store, operation.id, "eks-clusters", not_yet, start=True, complete=ready)
    assert store.get(operation.id).stage("eks-clusters").status is StageStatus.RUNNING

    # When a later look finds it ready
    stage_step(store, operation.id, "eks-clusters", now_ready, complete=ready,
               summarize=lambda r: {"n": r["n"]})

    # Then that look ended the stage, with one attempt
    stage = store.get(operation.id).stage("eks-clusters")
    assert stage.status is StageStatus.SUCCEEDED
    assert stage.output == {"n": 1}
    assert stage.attempts == 1
