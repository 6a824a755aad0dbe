"""hypd.operations.tasks: the operation-moving tasks, dispatched as the state machine does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hypd.aws.dynamodb import Table
from hypd.errors import AwsAccessDenied, InvalidTaskInput, OperationStateError
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import ErrorInfo, Operation, OperationStatus, StageStatus
from hypd.operations.stages import stage_step
from hypd.operations.store import OperationStore
from hypd.operations.tasks import OperationServices, execution_event_to_task
from hypd.operations.tasks import router as operation_tasks
from hypd.tasks import BoundTasks
from tests.unit.support import (
    TABLE_NAME,
    FakeLambdaContext,
    discover_operation,
    function_environment,
    load_event,
    load_function_module,
)

pytestmark = pytest.mark.usefixtures("fixed_clock")

EXECUTION_ARN = "arn:aws:states:us-west-2:123456789012:execution:DiscoverStateMachine:x"


@pytest.fixture
def operations(table: Table) -> OperationStore:
    return OperationStore(table)


@pytest.fixture
def locks(table: Table) -> LockStore:
    return LockStore(table)


@pytest.fixture
def router(operations: OperationStore, locks: LockStore) -> BoundTasks:
    return operation_tasks.bind(OperationServices(operations, locks))


@pytest.fixture
def locked(operations: OperationStore, locks: LockStore) -> Operation:
    """A recorded PENDING discover operation holding the "discover" lock."""
    operation = discover_operation(lock_scope="discover")
    locks.acquire("discover", operation.id, holder_ended=lambda _: False)
    return operations.create(operation)


def test_begin_marks_the_operation_running(
    router: BoundTasks, operations: OperationStore, locks: LockStore, locked: Operation
) -> None:
    # When the first state runs the begin task
    result = router.dispatch(
        {"task": "begin", "operationId": locked.id, "executionArn": EXECUTION_ARN}
    )
    # Then the operation is RUNNING under the execution and keeps its lock
    assert result == {"operationId": locked.id, "status": "RUNNING"}
    stored = operations.get(locked.id)
    assert (stored.status, stored.execution_arn, stored.version) == (
        OperationStatus.RUNNING,
        EXECUTION_ARN,
        2,
    )
    assert locks.holder("discover") == locked.id
    # And a retried begin writes nothing
    router.dispatch({"task": "begin", "operationId": locked.id, "executionArn": EXECUTION_ARN})
    assert operations.get(locked.id).version == 2


def test_succeed_records_output_and_releases_the_lock(
    router: BoundTasks, operations: OperationStore, locks: LockStore, locked: Operation
) -> None:
    router.dispatch({"task": "begin", "operationId": locked.id})
    output = {"recorded": ["train"], "conflicts": [], "missing": []}
    # When the final state runs succeed
    result = router.dispatch({"task": "succeed", "operationId": locked.id, "output": output})
    # Then the operation SUCCEEDED with the output and the lock is free
    assert result == {"operationId": locked.id, "status": "SUCCEEDED"}
    stored = operations.get(locked.id)
    assert stored.status is OperationStatus.SUCCEEDED
    assert stored.output == output
    assert {s.status for s in stored.stages} == {StageStatus.SKIPPED}
    assert locks.holder("discover") is None


def test_fail_with_a_lambda_error_records_it_and_releases_the_lock(
    router: BoundTasks, operations: OperationStore, locks: LockStore, locked: Operation
) -> None:
    # Given the Catch result of a Lambda task that failed before any stage started
    caught = load_event("lambda-error-cause.json")
    message = json.loads(caught["Cause"])["errorMessage"]
    # When Record failure runs
    result = router.dispatch({"task": "fail", "operationId": locked.id, "error": caught})
    # Then the operation FAILED with the error name and the Lambda's message; the lock is free
    assert result == {
        "operationId": locked.id,
        "status": "FAILED",
        "error": {"code": "AwsAccessDenied", "message": message},
    }
    assert operations.get(locked.id).error == ErrorInfo(code="AwsAccessDenied", message=message)
    assert locks.holder("discover") is None


def test_fail_blames_the_stage_that_recorded_the_aws_error(
    router: BoundTasks, operations: OperationStore, locked: Operation
) -> None:
    # Given the HyperPod stage failed with AccessDeniedException (recorded by its stage step)
    denied = AwsAccessDenied(
        "listing HyperPod clusters: AccessDeniedException: not authorized",
        details={"awsErrorCode": "AccessDeniedException"},
    )

    def work() -> None:
        raise denied

    router.dispatch({"task": "begin", "operationId": locked.id})
    with pytest.raises(AwsAccessDenied):
        stage_step(operations, locked.id, "hyperpod-clusters", work, start=True, complete=True)
    # When Record failure runs with the Catch result
    result = router.dispatch(
        {"task": "fail", "operationId": locked.id, "error": load_event("lambda-error-cause.json")}
    )
    # Then the stage and the operation carry AWS's code
    expected = {"code": "AccessDeniedException", "message": denied.message}
    assert result["error"] == expected
    stored = operations.get(locked.id)
    assert stored.stage("hyperpod-clusters").status is StageStatus.FAILED
    assert stored.error == ErrorInfo(**expected)


def test_execution_status_change_event_maps_to_an_execution_ended_task() -> None:
    event = load_event("sfn-execution-status-change.json")
    assert execution_event_to_task(event) == {
        "task": "execution-ended",
        "operationId": "op-3f9d2c7a1b8e4f60a5d4c3b2a1908f7e",
        "status": "FAILED",
        "error": "States.Runtime",
        "cause": event["detail"]["cause"],
        "executionName": "op-3f9d2c7a1b8e4f60a5d4c3b2a1908f7e",
        "executionArn": event["detail"]["executionArn"],
    }


def test_task_inputs_pass_through_the_event_mapping() -> None:
    task = {"task": "begin", "operationId": "op-1"}
    assert execution_event_to_task(task) is task


def event_for(operation_id: str, status: str, **detail: Any) -> dict[str, Any]:
    event = load_event("sfn-execution-status-change.json")
    event["detail"].update(name=operation_id, status=status, **detail)
    return event


def test_failed_execution_event_fails_the_operation_and_releases_the_lock(
    router: BoundTasks, operations: OperationStore, locks: LockStore, locked: Operation
) -> None:
    # Given a running stage when the execution fails outside any Catch
    router.dispatch({"task": "begin", "operationId": locked.id})
    operations.update(locked.id, lambda op: lifecycle.start_stage(op, "record"))
    event = event_for(locked.id, "FAILED")
    # When the EventBridge event is dispatched
    result = router.dispatch(execution_event_to_task(event))
    # Then the operation and its stage FAILED with the execution's error; the lock is free
    assert result == {"operationId": locked.id, "status": "FAILED"}
    stored = operations.get(locked.id)
    assert stored.error == ErrorInfo(code="States.Runtime", message=event["detail"]["cause"])
    assert stored.stage("record").status is StageStatus.FAILED
    assert locks.holder("discover") is None


def test_aborted_execution_event_cancels_the_operation(
    router: BoundTasks, operations: OperationStore, locks: LockStore, locked: Operation
) -> None:
    router.dispatch({"task": "begin", "operationId": locked.id})
    event = event_for(locked.id, "ABORTED", error=None, cause=None)
    result = router.dispatch(execution_event_to_task(event))
    assert result == {"operationId": locked.id, "status": "CANCELLED"}
    assert operations.get(locked.id).status is OperationStatus.CANCELLED
    assert locks.holder("discover") is None


def test_timed_out_execution_event_fails_with_states_timeout(
    router: BoundTasks, operations: OperationStore, locked: Operation
) -> None:
    event = event_for(locked.id, "TIMED_OUT", error=None, cause=None)
    router.dispatch(execution_event_to_task(event))
    assert operations.get(locked.id).error == ErrorInfo(
        code="States.Timeout", message="States.Timeout"
    )


def test_execution_event_after_the_outcome_was_recorded_changes_nothing(
    router: BoundTasks, operations: OperationStore, locked: Operation
) -> None:
    router.dispatch(
        {"task": "fail", "operationId": locked.id, "error": load_event("lambda-error-cause.json")}
    )
    before = operations.get(locked.id)
    result = router.dispatch(execution_event_to_task(event_for(locked.id, "FAILED")))
    assert result == {"operationId": locked.id, "status": "FAILED"}
    assert operations.get(locked.id) == before


def test_execution_event_of_an_unknown_execution_is_ignored(
    router: BoundTasks, operations: OperationStore
) -> None:
    result = router.dispatch(execution_event_to_task(event_for("manual-run-1", "FAILED")))
    assert result == {"operationId": "manual-run-1", "status": "UNKNOWN"}
    assert operations.list().operations == []


def test_lock_taken_over_by_a_newer_operation_survives_the_old_ones_end(
    router: BoundTasks, operations: OperationStore, locks: LockStore, locked: Operation
) -> None:
    # Given a newer operation took over the lock
    newer = discover_operation(lock_scope="discover")
    locks.acquire("discover", newer.id, holder_ended=lambda _: True)
    # When the old one ends
    router.dispatch(execution_event_to_task(event_for(locked.id, "ABORTED")))
    # Then the newer one keeps the lock
    assert locks.holder("discover") == newer.id


def test_succeed_while_a_stage_runs_is_refused(
    router: BoundTasks, operations: OperationStore, locks: LockStore, locked: Operation
) -> None:
    operations.update(locked.id, lambda op: lifecycle.start_stage(op, "record"))
    with pytest.raises(OperationStateError):
        router.dispatch({"task": "succeed", "operationId": locked.id, "output": {}})
    assert locks.holder("discover") == locked.id


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"task": "begin"}, "operationId"),
        ({"task": "fail", "operationId": "op-1"}, "error"),
        ({"task": "succeed", "operationId": "op-1", "output": []}, "output"),
        ({"task": "execution-ended", "operationId": "op-1"}, "status"),
    ],
)
def test_invalid_task_input_names_the_field(
    router: BoundTasks, event: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidTaskInput, match=f"{field}: "):
        router.dispatch(event)


@pytest.mark.usefixtures("fresh_imports")
def test_operation_tasks_function_handles_the_eventbridge_event(
    monkeypatch: pytest.MonkeyPatch,
    template: dict[str, Any],
    operations: OperationStore,
    locks: LockStore,
    locked: Operation,
) -> None:
    # Given the function loaded with the environment template.yaml gives it
    env = function_environment(template, "OperationTasksFunction", {"HypdTable": TABLE_NAME})
    for name, value in {**env, "POWERTOOLS_TRACE_DISABLED": "true"}.items():
        monkeypatch.setenv(name, value)
    module = load_function_module("operation_tasks")
    # When EventBridge delivers an ABORTED status change of the operation's execution
    event = event_for(locked.id, "ABORTED", error=None, cause=None)
    result = module.handler(event, FakeLambdaContext("hypd-OperationTasksFunction"))
    # Then the operation is CANCELLED and its lock released
    assert result == {"operationId": locked.id, "status": "CANCELLED"}
    assert operations.get(locked.id).status is OperationStatus.CANCELLED
    assert locks.holder("discover") is None
