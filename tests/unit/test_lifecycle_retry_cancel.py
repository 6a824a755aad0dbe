"""hypd.operations.lifecycle: retry, cancel and which execution is an operation's current one."""

from __future__ import annotations

from datetime import timedelta

import pytest

from hypd.operations import lifecycle
from hypd.operations.kinds import spec_of
from hypd.operations.lifecycle import OperationNotCancellable, OperationNotRetryable
from hypd.operations.models import (
    ErrorInfo,
    Operation,
    OperationKind,
    OperationStatus,
    StageStatus,
)
from tests.unit.support import START, FakeClock

pytestmark = pytest.mark.usefixtures("fixed_clock")

MACHINE = "arn:aws:states:us-west-2:123456789012:execution:CreateClusterStateMachine"
DENIED = ErrorInfo(code="AccessDeniedException", message="not authorized to CreateCluster")


def statuses(operation: Operation) -> dict[str, StageStatus]:
    return {stage.name: stage.status for stage in operation.stages}


def failed_at_eks() -> Operation:
    """A create-cluster operation whose network stage succeeded and whose eks stage failed
    on its second attempt."""
    operation = lifecycle.new_operation(
        OperationKind.CREATE_CLUSTER, cluster_tag="demo", lock_scope="cluster#demo"
    )
    began = lifecycle.begin(operation, f"{MACHINE}:{operation.id}")
    assert began is not None
    lifecycle.start_stage(began, "network")
    lifecycle.complete_stage(began, "network", {"vpcId": "vpc-1"})
    lifecycle.start_stage(began, "eks")
    lifecycle.record_stage_error(began, "eks", ErrorInfo(code="Throttling", message="slow"))
    lifecycle.start_stage(began, "eks")
    lifecycle.record_stage_error(began, "eks", DENIED)
    failed = lifecycle.fail(began, DENIED)
    assert failed is not None
    return failed


# ---------------------------------------------------------------------------- retry
def test_retry_resumes_at_the_failed_stage_and_keeps_the_error_in_history(
    fixed_clock: FakeClock,
) -> None:
    # Given an operation that failed in its eks stage after network succeeded
    operation = failed_at_eks()
    first_execution = operation.execution_arn
    fixed_clock.advance(60)
    # When it is retried
    retried = lifecycle.retry(operation)
    # Then it is PENDING again, resuming at eks, with no error, output or execution yet
    assert retried.status is OperationStatus.PENDING
    assert lifecycle.resume_stage(retried) == "eks"
    assert (retried.error, retried.output, retried.execution_arn) == (None, None, None)
    # And network keeps its success and output; eks is PENDING with its attempts, no error
    assert statuses(retried) == {
        "network": StageStatus.SUCCEEDED,
        "eks": StageStatus.PENDING,
        "dependencies": StageStatus.PENDING,
        "hyperpod": StageStatus.PENDING,
        "storage": StageStatus.PENDING,
        "verify": StageStatus.PENDING,
        "features": StageStatus.PENDING,
    }
    assert retried.stage("network").output == {"vpcId": "vpc-1"}
    eks = retried.stage("eks")
    assert (eks.attempts, eks.error, eks.ended_at) == (2, None, None)
    # And the history says what ended the previous attempt, where, and under which execution
    (record,) = retried.retries
    assert record.number == 1
    assert record.requested_at == "2026-01-15T10:01:00.000Z"
    assert record.previous_status is OperationStatus.FAILED
    assert record.previous_error == DENIED
    assert record.failed_stage == "eks"
    assert record.previous_execution_arn == first_execution
    assert record.resume_from == "eks"
    # And the retry's execution is named {id}-r1
    assert lifecycle.execution_name(retried) == f"{retried.id}-r1"


def test_the_second_retry_is_r2_and_keeps_both_records() -> None:
    operation = lifecycle.retry(failed_at_eks())
    lifecycle.begin(operation, f"{MACHINE}:{operation.id}-r1")
    lifecycle.start_stage(operation, "eks")
    lifecycle.fail(operation, DENIED)
    retried = lifecycle.retry(operation)
    assert [r.number for r in retried.retries] == [1, 2]
    assert retried.retries[1].previous_execution_arn == f"{MACHINE}:{operation.id}-r1"
    assert lifecycle.execution_name(retried) == f"{retried.id}-r2"
    assert retried.stage("eks").attempts == 3


def test_a_cancelled_operation_is_retried_from_its_cancelled_stage() -> None:
    operation = lifecycle.new_operation(OperationKind.DISCOVER)
    lifecycle.begin(operation)
    lifecycle.start_stage(operation, "eks-clusters")
    cancelled = lifecycle.execution_ended(operation, "ABORTED", None, None)
    assert cancelled is not None
    assert cancelled.status is OperationStatus.CANCELLED
    retried = lifecycle.retry(cancelled)
    assert retried.retries[0].previous_status is OperationStatus.CANCELLED
    assert retried.retries[0].failed_stage is None
    assert retried.retries[0].resume_from == "eks-clusters"
    assert set(statuses(retried).values()) == {StageStatus.PENDING}


def test_an_operation_whose_stages_all_succeeded_resumes_nowhere() -> None:
    # Given every stage succeeded but the operation failed (its final task did)
    operation = lifecycle.new_operation(OperationKind.CREATE_CLUSTER)
    for stage in operation.stages:
        lifecycle.start_stage(operation, stage.name)
        lifecycle.complete_stage(operation, stage.name)
    lifecycle.fail(operation, DENIED)
    # Then a retry has no stage to resume from: the state machine starts at its top
    retried = lifecycle.retry(operation)
    assert retried.retries[0].resume_from is None
    assert lifecycle.resume_stage(retried) is None


def test_a_kind_that_cannot_resume_reruns_every_stage() -> None:
    # Given a discover (its state machine has no resume) that failed in its second stage
    operation = lifecycle.new_operation(OperationKind.DISCOVER)
    assert not spec_of(OperationKind.DISCOVER).resumes
    lifecycle.start_stage(operation, "eks-clusters")
    lifecycle.complete_stage(operation, "eks-clusters", {"clusters": []})
    lifecycle.start_stage(operation, "hyperpod-clusters")
    lifecycle.record_stage_error(operation, "hyperpod-clusters", DENIED)
    lifecycle.fail(operation, DENIED)
    # When it is retried
    retried = lifecycle.retry(operation)
    # Then every stage is PENDING again (outputs cleared, attempts kept), from the first
    assert set(statuses(retried).values()) == {StageStatus.PENDING}
    assert retried.stage("eks-clusters").output is None
    assert retried.stage("eks-clusters").attempts == 1
    assert retried.retries[0].resume_from == "eks-clusters"
    assert retried.retries[0].failed_stage == "hyperpod-clusters"


@pytest.mark.parametrize(
    "status", [OperationStatus.PENDING, OperationStatus.RUNNING, OperationStatus.SUCCEEDED]
)
def test_only_failed_or_cancelled_operations_are_retried(status: OperationStatus) -> None:
    operation = lifecycle.new_operation(OperationKind.DISCOVER)
    operation.status = status
    with pytest.raises(OperationNotRetryable) as raised:
        lifecycle.retry(operation)
    assert raised.value.status == 409
    assert raised.value.code == "OperationNotRetryable"
    assert raised.value.details == {"operationId": operation.id, "status": status.value}
    assert status.value in raised.value.message
    assert operation.retries == []


# ---------------------------------------------------------------------------- executions
@pytest.mark.parametrize(
    ("name", "operation_id"),
    [
        ("op-" + "a" * 32, "op-" + "a" * 32),
        ("op-" + "a" * 32 + "-r1", "op-" + "a" * 32),
        ("op-" + "a" * 32 + "-r12", "op-" + "a" * 32),
        ("op-" + "a" * 32 + "-r0", "op-" + "a" * 32 + "-r0"),
        ("manual-run-1", "manual-run-1"),
    ],
)
def test_execution_names_map_to_their_operation(name: str, operation_id: str) -> None:
    assert lifecycle.operation_id_of_execution(name) == operation_id


def test_the_end_of_an_execution_before_a_retry_changes_nothing() -> None:
    # Given an operation retried and running its execution -r1
    retried = lifecycle.retry(failed_at_eks())
    old_arn = retried.retries[0].previous_execution_arn
    assert old_arn is not None
    # When the first execution's end arrives late (by name, before the new ARN is recorded)
    assert (
        lifecycle.execution_ended(
            retried, "FAILED", "States.Runtime", "x", execution_name=retried.id
        )
        is None
    )
    lifecycle.begin(retried, f"{MACHINE}:{retried.id}-r1")
    # Or by ARN
    assert (
        lifecycle.execution_ended(
            retried,
            "ABORTED",
            None,
            None,
            execution_name=f"{retried.id}-r1",
            execution_arn=old_arn,
        )
        is None
    )
    assert retried.status is OperationStatus.RUNNING
    # Then only the current execution's end counts
    ended = lifecycle.execution_ended(
        retried,
        "ABORTED",
        None,
        None,
        execution_name=f"{retried.id}-r1",
        execution_arn=f"{MACHINE}:{retried.id}-r1",
    )
    assert ended is not None
    assert ended.status is OperationStatus.CANCELLED


def test_started_recently_counts_from_creation_or_the_last_retry(fixed_clock: FakeClock) -> None:
    operation = lifecycle.new_operation(OperationKind.DISCOVER)
    assert lifecycle.started_recently(operation)
    later = START + lifecycle.START_GRACE
    assert not lifecycle.started_recently(operation, later)
    lifecycle.fail(operation, DENIED)
    fixed_clock.advance(lifecycle.START_GRACE.total_seconds())
    retried = lifecycle.retry(operation)
    assert lifecycle.started_recently(retried, later)
    assert not lifecycle.started_recently(retried, later + timedelta(seconds=60))


# ---------------------------------------------------------------------------- cancel
@pytest.mark.parametrize(
    "status", [OperationStatus.SUCCEEDED, OperationStatus.FAILED, OperationStatus.CANCELLED]
)
def test_an_ended_operation_is_not_cancellable(status: OperationStatus) -> None:
    operation = lifecycle.new_operation(OperationKind.DISCOVER)
    operation.status = status
    with pytest.raises(OperationNotCancellable) as raised:
        lifecycle.check_cancellable(operation)
    assert raised.value.status == 409
    assert raised.value.details == {"operationId": operation.id, "status": status.value}


def test_a_cancel_request_is_recorded_once(fixed_clock: FakeClock) -> None:
    operation = lifecycle.new_operation(OperationKind.DISCOVER)
    lifecycle.check_cancellable(operation)
    requested = lifecycle.request_cancel(operation)
    assert requested is not None
    assert requested.cancel_requested_at == "2026-01-15T10:00:00.000Z"
    assert requested.status is OperationStatus.PENDING  # the execution's end cancels it
    fixed_clock.advance(5)
    assert lifecycle.request_cancel(requested) is None
    # And a retry clears it (it belonged to the attempt before)
    cancelled = lifecycle.execution_ended(requested, "ABORTED", None, None)
    assert cancelled is not None
    assert lifecycle.retry(cancelled).cancel_requested_at is None


def test_an_operation_whose_execution_never_started_is_cancelled_at_once() -> None:
    operation = lifecycle.new_operation(OperationKind.DISCOVER)
    cancelled = lifecycle.cancel_unstarted(operation)
    assert cancelled is not None
    assert cancelled.status is OperationStatus.CANCELLED
    assert cancelled.cancel_requested_at is not None
    assert lifecycle.cancel_unstarted(cancelled) is None
