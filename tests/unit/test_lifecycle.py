"""hypd.operations.lifecycle: every transition, its idempotence and what it refuses."""

from __future__ import annotations

import json

import pytest

from hypd.errors import OperationStateError
from hypd.operations import lifecycle
from hypd.operations.models import (
    ErrorInfo,
    Operation,
    OperationKind,
    OperationStatus,
    StageStatus,
    is_operation_id,
)
from tests.unit.support import FakeClock, discover_operation

EXECUTION_ARN = "arn:aws:states:us-west-2:123456789012:execution:hypd-discover:op-1"
THROTTLED = ErrorInfo(code="ThrottlingException", message="Rate exceeded")
TIMEOUT = ErrorInfo(code="States.Timeout", message="Task timed out")

pytestmark = pytest.mark.usefixtures("fixed_clock")


def statuses(operation: Operation) -> dict[str, StageStatus]:
    return {stage.name: stage.status for stage in operation.stages}


def running_operation() -> Operation:
    operation = discover_operation()
    began = lifecycle.begin(operation, EXECUTION_ARN)
    assert began is not None
    return began


# ---------------------------------------------------------------------------- new_operation
def test_new_operation_is_pending_with_every_stage_pending(fixed_clock: FakeClock) -> None:
    # Given the clock at 2026-01-15T10:00:00Z
    # When a discover operation is created
    operation = lifecycle.new_operation(
        OperationKind.DISCOVER, input={"clusterNames": ["a"]}, lock_scope="discover"
    )
    # Then it is PENDING, version 1, with the discover stages in order, all PENDING
    assert is_operation_id(operation.id)
    assert operation.status is OperationStatus.PENDING
    assert operation.version == 1
    assert [s.name for s in operation.stages] == ["eks-clusters", "hyperpod-clusters", "record"]
    assert set(statuses(operation).values()) == {StageStatus.PENDING}
    assert operation.created_at == operation.updated_at == "2026-01-15T10:00:00.000Z"
    assert operation.input == {"clusterNames": ["a"]}
    assert operation.lock_scope == "discover"


def test_new_operations_get_distinct_ids() -> None:
    ids = {discover_operation().id for _ in range(50)}
    assert len(ids) == 50


# ---------------------------------------------------------------------------- begin
def test_begin_moves_pending_to_running_with_execution_arn() -> None:
    # Given a PENDING operation
    operation = discover_operation()
    # When it begins under an execution
    result = lifecycle.begin(operation, EXECUTION_ARN)
    # Then it is RUNNING and remembers the execution
    assert result is not None
    assert result.status is OperationStatus.RUNNING
    assert result.execution_arn == EXECUTION_ARN


def test_begin_twice_with_same_execution_changes_nothing() -> None:
    # Given a RUNNING operation that began under EXECUTION_ARN
    operation = running_operation()
    # When begin is repeated (a retried task), with the same ARN or without one
    # Then nothing changes
    assert lifecycle.begin(operation, EXECUTION_ARN) is None
    assert lifecycle.begin(operation) is None


def test_begin_of_running_operation_records_a_new_execution_arn() -> None:
    # Given an operation RUNNING with no execution ARN recorded yet
    operation = discover_operation()
    assert lifecycle.begin(operation) is not None
    assert operation.execution_arn is None
    # When begin names the execution
    result = lifecycle.begin(operation, EXECUTION_ARN)
    # Then the ARN is recorded
    assert result is not None
    assert result.execution_arn == EXECUTION_ARN


@pytest.mark.parametrize(
    "status", [OperationStatus.SUCCEEDED, OperationStatus.FAILED, OperationStatus.CANCELLED]
)
def test_begin_of_ended_operation_is_refused(status: OperationStatus) -> None:
    operation = discover_operation()
    operation.status = status
    with pytest.raises(OperationStateError, match=f"cannot begin.*{status.value}"):
        lifecycle.begin(operation, EXECUTION_ARN)


# ---------------------------------------------------------------------------- stages
def test_start_stage_marks_it_running_and_counts_the_attempt(fixed_clock: FakeClock) -> None:
    # Given a PENDING operation
    operation = discover_operation()
    # When its first stage starts
    result = lifecycle.start_stage(operation, "eks-clusters")
    # Then the stage runs (attempt 1, started now) and so does the operation
    stage = result.stage("eks-clusters")
    assert stage.status is StageStatus.RUNNING
    assert stage.attempts == 1
    assert stage.started_at == "2026-01-15T10:00:00.000Z"
    assert stage.ended_at is None
    assert result.status is OperationStatus.RUNNING


def test_every_start_of_a_stage_is_a_new_attempt_keeping_the_first_start_time(
    fixed_clock: FakeClock,
) -> None:
    # Given a stage that started, failed an attempt, and is retried twice later
    operation = running_operation()
    lifecycle.start_stage(operation, "record")
    lifecycle.record_stage_error(operation, "record", THROTTLED)
    fixed_clock.advance(30)
    lifecycle.start_stage(operation, "record")
    fixed_clock.advance(30)
    lifecycle.start_stage(operation, "record")
    # Then three attempts are counted and the stage keeps its first start time
    stage = operation.stage("record")
    assert stage.attempts == 3
    assert stage.started_at == "2026-01-15T10:00:00.000Z"
    assert stage.status is StageStatus.RUNNING


def test_start_stage_of_a_succeeded_stage_is_refused() -> None:
    operation = running_operation()
    lifecycle.start_stage(operation, "record")
    lifecycle.complete_stage(operation, "record", {"recorded": []})
    with pytest.raises(OperationStateError, match="has succeeded already"):
        lifecycle.start_stage(operation, "record")


@pytest.mark.parametrize(
    "status", [OperationStatus.SUCCEEDED, OperationStatus.FAILED, OperationStatus.CANCELLED]
)
def test_start_stage_on_terminal_operation_raises(status: OperationStatus) -> None:
    # Given an operation that has ended
    operation = discover_operation()
    operation.status = status
    # When a stage tries to start
    # Then OperationStateError names the state, and the stage is untouched
    with pytest.raises(OperationStateError, match=f"start stage eks-clusters.*{status.value}"):
        lifecycle.start_stage(operation, "eks-clusters")
    assert operation.stage("eks-clusters").attempts == 0


def test_unknown_stage_is_refused() -> None:
    operation = running_operation()
    with pytest.raises(OperationStateError, match="has no stage nope"):
        lifecycle.start_stage(operation, "nope")
    with pytest.raises(OperationStateError, match="has no stage nope"):
        lifecycle.complete_stage(operation, "nope")
    with pytest.raises(OperationStateError, match="has no stage nope"):
        lifecycle.record_stage_error(operation, "nope", THROTTLED)


def test_complete_stage_records_output_and_end(fixed_clock: FakeClock) -> None:
    # Given a stage whose attempt recorded an error and then a retry started
    operation = running_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    lifecycle.record_stage_error(operation, "eks-clusters", THROTTLED)
    lifecycle.start_stage(operation, "eks-clusters")
    fixed_clock.advance(12)
    # When the stage completes
    result = lifecycle.complete_stage(operation, "eks-clusters", {"found": 2})
    # Then it SUCCEEDED, with its output, end time and no error
    assert result is not None
    stage = result.stage("eks-clusters")
    assert stage.status is StageStatus.SUCCEEDED
    assert stage.output == {"found": 2}
    assert stage.ended_at == "2026-01-15T10:00:12.000Z"
    assert stage.error is None
    assert stage.attempts == 2


def test_complete_stage_twice_changes_nothing() -> None:
    operation = running_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    assert lifecycle.complete_stage(operation, "eks-clusters", {"found": 1}) is not None
    # A retried completion (even with another output) leaves the first one
    assert lifecycle.complete_stage(operation, "eks-clusters", {"found": 99}) is None
    assert operation.stage("eks-clusters").output == {"found": 1}


def test_complete_stage_of_ended_operation_is_refused() -> None:
    operation = running_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    lifecycle.fail(operation, TIMEOUT)
    with pytest.raises(OperationStateError, match=r"complete stage eks-clusters.*FAILED"):
        lifecycle.complete_stage(operation, "eks-clusters", {})


def test_record_stage_error_keeps_the_stage_running() -> None:
    operation = running_operation()
    lifecycle.start_stage(operation, "hyperpod-clusters")
    result = lifecycle.record_stage_error(operation, "hyperpod-clusters", THROTTLED)
    assert result is not None
    stage = result.stage("hyperpod-clusters")
    assert stage.status is StageStatus.RUNNING
    assert stage.error == THROTTLED


def test_record_stage_error_on_a_stage_not_running_changes_nothing() -> None:
    operation = running_operation()
    # PENDING stage
    assert lifecycle.record_stage_error(operation, "record", THROTTLED) is None
    # SUCCEEDED stage
    lifecycle.start_stage(operation, "record")
    lifecycle.complete_stage(operation, "record", {})
    assert lifecycle.record_stage_error(operation, "record", THROTTLED) is None
    assert operation.stage("record").error is None


def test_record_stage_error_on_ended_operation_changes_nothing() -> None:
    operation = running_operation()
    lifecycle.start_stage(operation, "record")
    operation.status = OperationStatus.CANCELLED
    assert lifecycle.record_stage_error(operation, "record", THROTTLED) is None


# ---------------------------------------------------------------------------- fail
def test_fail_picks_the_running_stage_that_recorded_an_error(fixed_clock: FakeClock) -> None:
    # Given two parallel stages running; only the second recorded an error
    operation = running_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    lifecycle.start_stage(operation, "hyperpod-clusters")
    denied = ErrorInfo(code="AccessDeniedException", message="not authorized")
    lifecycle.record_stage_error(operation, "hyperpod-clusters", denied)
    fixed_clock.advance(5)
    # When the state machine gives up with the Step Functions error
    result = lifecycle.fail(operation, ErrorInfo(code="AwsAccessDenied", message="x"))
    # Then the stage that recorded the error FAILED with it, the other is CANCELLED,
    # the untouched stage stays PENDING, and the operation carries the recorded error
    assert result is not None
    assert statuses(result) == {
        "eks-clusters": StageStatus.CANCELLED,
        "hyperpod-clusters": StageStatus.FAILED,
        "record": StageStatus.PENDING,
    }
    assert result.stage("hyperpod-clusters").ended_at == "2026-01-15T10:00:05.000Z"
    assert result.stage("eks-clusters").ended_at == "2026-01-15T10:00:05.000Z"
    assert result.stage("eks-clusters").error is None
    assert result.status is OperationStatus.FAILED
    assert result.error == denied


def test_fail_without_recorded_error_blames_the_first_running_stage() -> None:
    # Given two running stages, neither recorded an error (a Lambda timeout, say)
    operation = running_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    lifecycle.start_stage(operation, "hyperpod-clusters")
    # When the state machine gives up with States.Timeout
    result = lifecycle.fail(operation, TIMEOUT)
    # Then the first running stage takes that error and the other is CANCELLED
    assert result is not None
    assert result.stage("eks-clusters").status is StageStatus.FAILED
    assert result.stage("eks-clusters").error == TIMEOUT
    assert result.stage("hyperpod-clusters").status is StageStatus.CANCELLED
    assert result.error == TIMEOUT


def test_fail_with_no_running_stage_records_the_error_on_the_operation() -> None:
    # Given a PENDING operation whose first state failed before any stage started
    operation = discover_operation()
    # When it fails
    result = lifecycle.fail(operation, TIMEOUT)
    # Then the operation FAILED with the error, every stage stays PENDING
    assert result is not None
    assert result.status is OperationStatus.FAILED
    assert result.error == TIMEOUT
    assert set(statuses(result).values()) == {StageStatus.PENDING}


def test_fail_leaves_succeeded_stages_alone() -> None:
    operation = running_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    lifecycle.complete_stage(operation, "eks-clusters", {"found": 0})
    lifecycle.start_stage(operation, "record")
    result = lifecycle.fail(operation, TIMEOUT)
    assert result is not None
    assert statuses(result) == {
        "eks-clusters": StageStatus.SUCCEEDED,
        "hyperpod-clusters": StageStatus.PENDING,
        "record": StageStatus.FAILED,
    }


def test_fail_after_a_retried_attempt_times_out_records_the_timeout() -> None:
    # Given a stage whose first attempt was throttled (recorded) and whose retry started
    operation = running_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    lifecycle.record_stage_error(operation, "eks-clusters", THROTTLED)
    lifecycle.start_stage(operation, "eks-clusters")
    # When the retry times out (no error recorded by that attempt) and the machine gives up
    result = lifecycle.fail(operation, TIMEOUT)
    # Then the stage and the operation carry the timeout: the last attempt's failure
    assert result is not None
    assert result.stage("eks-clusters").error == TIMEOUT
    assert result.error == TIMEOUT


def test_fail_blames_the_branch_whose_last_attempt_failed_not_one_retrying() -> None:
    # Given branch A throttled once and now retrying, and branch B failing permanently
    operation = running_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    lifecycle.record_stage_error(operation, "eks-clusters", THROTTLED)
    lifecycle.start_stage(operation, "eks-clusters")
    lifecycle.start_stage(operation, "hyperpod-clusters")
    denied = ErrorInfo(code="AccessDeniedException", message="not authorized")
    lifecycle.record_stage_error(operation, "hyperpod-clusters", denied)
    # When the Parallel's Catch records the failure
    result = lifecycle.fail(operation, ErrorInfo(code="AwsAccessDenied", message="x"))
    # Then B failed and A (stopped by Step Functions mid-retry) was cancelled
    assert result is not None
    assert result.stage("hyperpod-clusters").status is StageStatus.FAILED
    assert result.stage("eks-clusters").status is StageStatus.CANCELLED
    assert result.error == denied


@pytest.mark.parametrize(
    "status", [OperationStatus.SUCCEEDED, OperationStatus.FAILED, OperationStatus.CANCELLED]
)
def test_fail_of_ended_operation_changes_nothing(status: OperationStatus) -> None:
    operation = discover_operation()
    operation.status = status
    assert lifecycle.fail(operation, TIMEOUT) is None
    assert operation.error is None


# ---------------------------------------------------------------------------- succeed
def test_succeed_skips_pending_stages_and_records_output() -> None:
    # Given a running operation with one stage done and the others never started
    operation = running_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    lifecycle.complete_stage(operation, "eks-clusters", {"found": 1})
    # When it succeeds
    result = lifecycle.succeed(operation, {"recorded": ["a"]})
    # Then the unstarted stages are SKIPPED and the output is kept
    assert result is not None
    assert result.status is OperationStatus.SUCCEEDED
    assert result.output == {"recorded": ["a"]}
    assert result.error is None
    assert statuses(result) == {
        "eks-clusters": StageStatus.SUCCEEDED,
        "hyperpod-clusters": StageStatus.SKIPPED,
        "record": StageStatus.SKIPPED,
    }


def test_succeed_while_a_stage_runs_is_refused() -> None:
    operation = running_operation()
    lifecycle.start_stage(operation, "record")
    with pytest.raises(OperationStateError, match=r"while stages \['record'\] are running"):
        lifecycle.succeed(operation, {})
    assert operation.status is OperationStatus.RUNNING


def test_succeed_twice_changes_nothing() -> None:
    operation = running_operation()
    assert lifecycle.succeed(operation, {"n": 1}) is not None
    assert lifecycle.succeed(operation, {"n": 2}) is None
    assert operation.output == {"n": 1}


@pytest.mark.parametrize("status", [OperationStatus.FAILED, OperationStatus.CANCELLED])
def test_succeed_of_failed_or_cancelled_operation_is_refused(status: OperationStatus) -> None:
    operation = discover_operation()
    operation.status = status
    with pytest.raises(OperationStateError, match=f"cannot succeed.*{status.value}"):
        lifecycle.succeed(operation, {})


# ---------------------------------------------------------------------------- execution_ended
def test_aborted_execution_cancels_the_operation_and_running_stages(
    fixed_clock: FakeClock,
) -> None:
    # Given a running stage
    operation = running_operation()
    lifecycle.start_stage(operation, "eks-clusters")
    fixed_clock.advance(60)
    # When the execution is aborted
    result = lifecycle.execution_ended(operation, "ABORTED", None, None)
    # Then the operation and its running stage are CANCELLED
    assert result is not None
    assert result.status is OperationStatus.CANCELLED
    assert statuses(result) == {
        "eks-clusters": StageStatus.CANCELLED,
        "hyperpod-clusters": StageStatus.PENDING,
        "record": StageStatus.PENDING,
    }
    assert result.stage("eks-clusters").ended_at == "2026-01-15T10:01:00.000Z"
    assert result.error is None


def test_timed_out_execution_fails_with_states_timeout() -> None:
    # Given a running stage and an execution that timed out without error fields
    operation = running_operation()
    lifecycle.start_stage(operation, "record")
    # When the status change arrives
    result = lifecycle.execution_ended(operation, "TIMED_OUT", None, None)
    # Then the operation FAILED with States.Timeout, blamed on the running stage
    assert result is not None
    assert result.status is OperationStatus.FAILED
    assert result.error == ErrorInfo(code="States.Timeout", message="States.Timeout")
    assert result.stage("record").status is StageStatus.FAILED


def test_failed_execution_fails_with_its_error_and_cause() -> None:
    operation = running_operation()
    result = lifecycle.execution_ended(
        operation, "FAILED", "States.Runtime", "An error occurred while executing the state"
    )
    assert result is not None
    assert result.status is OperationStatus.FAILED
    assert result.error == ErrorInfo(
        code="States.Runtime", message="An error occurred while executing the state"
    )


def test_failed_execution_without_error_is_states_failed() -> None:
    operation = running_operation()
    result = lifecycle.execution_ended(operation, "FAILED", None, None)
    assert result is not None
    assert result.error == ErrorInfo(code="States.Failed", message="States.Failed")


def test_succeeded_execution_needs_no_reconciliation() -> None:
    operation = running_operation()
    assert lifecycle.execution_ended(operation, "SUCCEEDED", None, None) is None
    assert operation.status is OperationStatus.RUNNING


@pytest.mark.parametrize("status", ["ABORTED", "TIMED_OUT", "FAILED"])
def test_execution_ended_after_the_operation_recorded_its_outcome_changes_nothing(
    status: str,
) -> None:
    # Given an operation that already recorded its failure through the state machine
    operation = running_operation()
    lifecycle.fail(operation, TIMEOUT)
    # When the execution's status change arrives afterwards
    # Then nothing changes
    assert lifecycle.execution_ended(operation, status, "X", "y") is None
    assert operation.status is OperationStatus.FAILED
    assert operation.error == TIMEOUT


# ---------------------------------------------------------------------------- errors
def test_error_from_a_lambda_cause_uses_its_error_message() -> None:
    # Given a Catch result of a Lambda task: Error is the exception class, Cause its JSON payload
    cause = json.dumps(
        {
            "errorMessage": "listing EKS clusters: AccessDeniedException: not authorized",
            "errorType": "AwsAccessDenied",
            "requestId": "5f3c1b9e-2f0a-4a57-9c0e-0b7d7c2a1d11",
            "stackTrace": ['  File "/var/task/app.py", line 1, in handler\n'],
        }
    )
    # When it is converted
    info = lifecycle.error_from_step_functions("AwsAccessDenied", cause)
    # Then the message is the exception's message and the code the Step Functions error
    assert info == ErrorInfo(
        code="AwsAccessDenied",
        message="listing EKS clusters: AccessDeniedException: not authorized",
    )


def test_error_from_a_lambda_cause_without_error_uses_its_error_type() -> None:
    cause = json.dumps({"errorMessage": "boom", "errorType": "KeyError"})
    assert lifecycle.error_from_step_functions(None, cause) == ErrorInfo(
        code="KeyError", message="boom"
    )


def test_error_from_a_plain_cause_keeps_the_text() -> None:
    info = lifecycle.error_from_step_functions(
        "States.TaskFailed", "Task timed out after 30.00 seconds"
    )
    assert info == ErrorInfo(code="States.TaskFailed", message="Task timed out after 30.00 seconds")


def test_error_from_json_that_is_not_a_lambda_payload_keeps_the_text() -> None:
    assert lifecycle.error_from_step_functions("E", '["a"]') == ErrorInfo(code="E", message='["a"]')
    assert lifecycle.error_from_step_functions("E", '{"x": 1}') == ErrorInfo(
        code="E", message='{"x": 1}'
    )


def test_error_without_error_or_cause() -> None:
    assert lifecycle.error_from_step_functions(None, None) == ErrorInfo(
        code="States.Failed", message="States.Failed"
    )
