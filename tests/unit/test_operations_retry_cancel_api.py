"""POST /operations/{id}/retry and /cancel through functions/api/app.py in-process (moto's
Step Functions: executions stay RUNNING until stopped), and the execution-ended reconciler
after a retry."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from hypd.aws.dynamodb import Table
from hypd.clusters.models import ClusterStatus
from hypd.clusters.store import ClusterStore
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import (
    ErrorInfo,
    Operation,
    OperationKind,
    OperationStatus,
    StageStatus,
)
from hypd.operations.store import OperationStore
from hypd.operations.tasks import OperationServices, execution_event_to_task
from hypd.operations.tasks import router as operation_tasks
from tests.support import create_body
from tests.unit.support import (
    REGION,
    FakeClock,
    FakeLambdaContext,
    load_event,
)
from tests.unit.test_api_handler import api_event, load_api, state_machine

pytestmark = pytest.mark.usefixtures("fresh_imports")

DENIED = ErrorInfo(code="AccessDeniedException", message="not authorized")
SAMPLE_OP = "op-3f9d2c7a1b8e4f60a5d4c3b2a1908f7e"


@dataclass
class Api:
    module: Any
    sfn: Any
    discover_arn: str
    create_arn: str
    operations: OperationStore
    clusters: ClusterStore
    locks: LockStore

    def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        raw = self.module.handler(api_event(method, path, **kwargs), FakeLambdaContext("hypd-api"))
        return raw["statusCode"], json.loads(raw["body"])

    def action(self, operation_id: str, action: str) -> tuple[int, Any]:
        return self.call(
            "POST",
            f"/operations/{operation_id}/{action}",
            resource=f"/operations/{{operationId}}/{action}",
            path_parameters={"operationId": operation_id},
        )

    def retry(self, operation_id: str) -> tuple[int, Any]:
        return self.action(operation_id, "retry")

    def cancel(self, operation_id: str) -> tuple[int, Any]:
        return self.action(operation_id, "cancel")

    def discover(self, body: str | None = None) -> str:
        status, answer = self.call("POST", "/clusters/discover", body=body)
        assert status == 202, answer
        return str(answer["operationId"])

    def create(self, tag: str = "train") -> str:
        status, body = self.call("POST", "/clusters", body=json.dumps(create_body(tag=tag)))
        assert status == 202, body
        return str(body["operationId"])

    def execution(self, state_machine_arn: str, name: str) -> dict[str, Any]:
        executions = self.sfn.list_executions(stateMachineArn=state_machine_arn)["executions"]
        (found,) = [e for e in executions if e["name"] == name]
        described: dict[str, Any] = self.sfn.describe_execution(executionArn=found["executionArn"])
        return described

    def fail_in(self, operation_id: str, stage: str) -> Operation:
        """The operation's execution ran `stage`, which failed (as the `fail` task records)."""

        def failed(op: Operation) -> Operation | None:
            lifecycle.begin(op, op.execution_arn)
            for earlier in op.stages:
                if earlier.name == stage:
                    break
                if earlier.status is not StageStatus.SUCCEEDED:
                    lifecycle.start_stage(op, earlier.name)
                    lifecycle.complete_stage(op, earlier.name, {"done": earlier.name})
            lifecycle.start_stage(op, stage)
            lifecycle.record_stage_error(op, stage, DENIED)
            return lifecycle.fail(op, DENIED)

        operation = self.operations.update(operation_id, failed)
        if operation.lock_scope:
            self.locks.release(operation.lock_scope, operation.id)
        return operation


@pytest.fixture
def api(
    monkeypatch: pytest.MonkeyPatch,
    template: dict[str, Any],
    table: Table,
    fixed_clock: FakeClock,
) -> Api:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    discover = state_machine(sfn, "DiscoverStateMachine-unit")
    create = state_machine(sfn, "CreateClusterStateMachine-unit")
    return Api(
        module=load_api(monkeypatch, template, table, discover, create),
        sfn=sfn,
        discover_arn=discover,
        create_arn=create,
        operations=OperationStore(table),
        clusters=ClusterStore(table),
        locks=LockStore(table),
    )


# ---------------------------------------------------------------------------- retry
def test_retry_resumes_a_failed_operation_as_a_new_execution(
    api: Api, fixed_clock: FakeClock
) -> None:
    # Given a create that failed in its eks stage after its network stage succeeded
    operation_id = api.create()
    first = api.fail_in(operation_id, "eks")
    fixed_clock.advance(30)
    # When it is retried
    status, view = api.retry(operation_id)
    # Then 202 with the operation: PENDING, resuming at the failed stage, the error in history
    assert status == 202, view
    assert view["status"] == "PENDING"
    assert view["error"] is None
    stages = {s["name"]: s for s in view["stages"]}
    assert stages["network"]["status"] == "SUCCEEDED"
    assert stages["network"]["output"] == {"done": "network"}
    assert {name: s["status"] for name, s in stages.items() if name != "network"} == {
        "eks": "PENDING",
        "dependencies": "PENDING",
        "hyperpod": "PENDING",
        "storage": "PENDING",
        "verify": "PENDING",
        "features": "PENDING",
    }
    assert (stages["eks"]["attempts"], stages["eks"]["error"]) == (1, None)
    assert view["retries"] == [
        {
            "number": 1,
            "requestedAt": "2026-01-15T10:00:30.000Z",
            "previousStatus": "FAILED",
            "previousError": {"code": "AccessDeniedException", "message": "not authorized"},
            "failedStage": "eks",
            "previousExecutionArn": first.execution_arn,
            "resumeFrom": "eks",
        }
    ]
    # And a new execution {id}-r1 of the same state machine got the operation id and the stage
    execution = api.execution(api.create_arn, f"{operation_id}-r1")
    given = json.loads(execution["input"])
    assert (given["operationId"], given["resumeFrom"]) == (operation_id, "eks")
    assert [stage for stage, done in given["done"].items() if done] == ["network"]
    assert view["executionArn"] == execution["executionArn"]
    # And the operation holds its lock again
    assert api.locks.holder("cluster#train") == operation_id


def test_a_discover_is_retried_from_its_first_stage_and_again_as_r2(api: Api) -> None:
    # Given a discover that failed in hyperpod-clusters (its state machine cannot resume)
    operation_id = api.discover('{"clusterNames": ["train"]}')
    api.fail_in(operation_id, "hyperpod-clusters")
    # When it is retried, it reruns every stage
    status, view = api.retry(operation_id)
    assert status == 202, view
    assert {s["status"] for s in view["stages"]} == {"PENDING"}
    assert view["retries"][0]["resumeFrom"] == "eks-clusters"
    assert view["retries"][0]["failedStage"] == "hyperpod-clusters"
    # And its execution gets the operation id, as on its first start (the names stay in the
    # operation's input), and where to resume
    execution = api.execution(api.discover_arn, f"{operation_id}-r1")
    assert json.loads(execution["input"]) == {
        "operationId": operation_id,
        "resumeFrom": "eks-clusters",
        "done": {"eks-clusters": False, "hyperpod-clusters": False, "record": False},
    }
    assert api.operations.get(operation_id).input == {"clusterNames": ["train"]}
    assert api.locks.holder("discover") == operation_id
    # And when that fails too, the next retry runs {id}-r2
    api.fail_in(operation_id, "record")
    status, view = api.retry(operation_id)
    assert status == 202, view
    assert [r["number"] for r in view["retries"]] == [1, 2]
    assert view["retries"][1]["failedStage"] == "record"
    assert view["executionArn"].endswith(f":{operation_id}-r2")


def test_retry_of_a_create_makes_its_cluster_creating_again(api: Api) -> None:
    # Given a create that failed in its eks stage (its cluster record said FAILED)
    operation_id = api.create()
    api.fail_in(operation_id, "eks")
    api.clusters.set_status("train", ClusterStatus.FAILED, operation_id)
    # When it is retried
    status, view = api.retry(operation_id)
    # Then the create state machine runs {id}-r1 from eks, and the cluster is CREATING
    assert status == 202, view
    execution = api.execution(api.create_arn, f"{operation_id}-r1")
    assert json.loads(execution["input"])["resumeFrom"] == "eks"
    cluster = api.clusters.get("train")
    assert cluster.status is ClusterStatus.CREATING
    assert cluster.last_operation_id == operation_id
    assert api.locks.holder("cluster#train") == operation_id


@pytest.mark.parametrize("status", ["PENDING", "RUNNING", "SUCCEEDED"])
def test_retry_of_an_operation_that_did_not_fail_is_409(api: Api, status: str) -> None:
    operation_id = api.discover()
    if status != "PENDING":
        api.operations.update(operation_id, lambda op: lifecycle.begin(op))
    if status == "SUCCEEDED":
        api.operations.update(operation_id, lambda op: lifecycle.succeed(op, {}))
    before = api.operations.get(operation_id)
    code, body = api.retry(operation_id)
    assert code == 409
    assert body["code"] == "OperationNotRetryable"
    assert body["details"] == {"operationId": operation_id, "status": status}
    assert api.operations.get(operation_id) == before


def test_retry_while_another_operation_holds_the_lock_is_409_naming_it(api: Api) -> None:
    # Given a failed discover and a newer discover in progress
    failed = api.discover()
    api.fail_in(failed, "record")
    newer = api.discover()
    # When the failed one is retried
    code, body = api.retry(failed)
    # Then 409 names the newer one; the failed operation is unchanged
    assert code == 409
    assert body["code"] == "Conflict"
    assert body["details"]["operationId"] == newer
    assert api.operations.get(failed).status is OperationStatus.FAILED
    assert api.operations.get(failed).retries == []


def test_retry_that_cannot_start_fails_the_operation_again(api: Api) -> None:
    # Given a failed create whose state machine has been deleted since
    operation_id = api.create()
    api.fail_in(operation_id, "network")
    api.sfn.delete_state_machine(stateMachineArn=api.create_arn)
    # When it is retried
    code, body = api.retry(operation_id)
    # Then AWS's error is answered and recorded; the retry is in the history; lock free
    assert code == 500
    assert body["details"] == {"awsErrorCode": "StateMachineDoesNotExist"}
    operation = api.operations.get(operation_id)
    assert operation.status is OperationStatus.FAILED
    assert operation.error is not None
    assert operation.error.code == "StateMachineDoesNotExist"
    assert len(operation.retries) == 1
    assert api.locks.holder("cluster#train") is None
    assert api.clusters.get("train").status is ClusterStatus.FAILED


@pytest.mark.parametrize("action", ["retry", "cancel"])
def test_unknown_or_malformed_operations(api: Api, action: str) -> None:
    code, body = api.action("op-" + "0" * 32, action)
    assert (code, body["code"]) == (404, "NotFound")
    code, body = api.action("op-123", action)
    assert (code, body["code"]) == (400, "ValidationError")
    assert "operationId" in body["message"]


def test_the_recorded_retry_event_is_served(api: Api) -> None:
    operation = lifecycle.new_operation(OperationKind.DISCOVER, lock_scope="discover")
    operation = operation.model_copy(update={"id": SAMPLE_OP})
    api.operations.create(operation)
    api.fail_in(SAMPLE_OP, "eks-clusters")
    raw = api.module.handler(load_event("api-retry-operation.json"), FakeLambdaContext("hypd-api"))
    assert raw["statusCode"] == 202, raw["body"]
    assert json.loads(raw["body"])["retries"][0]["resumeFrom"] == "eks-clusters"


# ---------------------------------------------------------------------------- cancel
def test_cancel_stops_the_execution_and_its_end_cancels_the_operation(
    api: Api, table: Table, fixed_clock: FakeClock
) -> None:
    # Given a running discover operation
    operation_id = api.discover()
    api.operations.update(operation_id, lambda op: lifecycle.begin(op, op.execution_arn))
    fixed_clock.advance(5)
    # When it is cancelled
    code, view = api.cancel(operation_id)
    # Then 202 with the operation, still RUNNING, the request recorded
    assert code == 202, view
    assert view["status"] == "RUNNING"
    assert view["cancelRequestedAt"] == "2026-01-15T10:00:05.000Z"
    # And its execution was stopped
    execution = api.execution(api.discover_arn, operation_id)
    assert execution["status"] == "ABORTED"
    # And when the execution-ended rule delivers the ABORTED event, it is CANCELLED, lock free
    event = load_event("sfn-execution-status-change.json")
    event["detail"].update(
        name=operation_id, executionArn=execution["executionArn"], status="ABORTED"
    )
    router = operation_tasks.bind(OperationServices(OperationStore(table), LockStore(table)))
    assert router.dispatch(execution_event_to_task(event))["status"] == "CANCELLED"
    assert api.locks.holder("discover") is None
    # And cancelling it again is a 409
    code, body = api.cancel(operation_id)
    assert code == 409
    assert body["code"] == "OperationNotCancellable"
    assert body["details"] == {"operationId": operation_id, "status": "CANCELLED"}


def test_cancel_twice_keeps_the_first_request(api: Api, fixed_clock: FakeClock) -> None:
    operation_id = api.discover()
    api.cancel(operation_id)
    fixed_clock.advance(3)
    code, view = api.cancel(operation_id)
    assert code == 202
    assert view["cancelRequestedAt"] == "2026-01-15T10:00:00.000Z"


@pytest.mark.parametrize("stage", ["eks-clusters", None])
def test_cancel_of_an_ended_operation_is_409(api: Api, stage: str | None) -> None:
    operation_id = api.discover()
    if stage:
        api.fail_in(operation_id, stage)
    else:
        api.operations.update(operation_id, lambda op: lifecycle.succeed(op, {}))
    code, body = api.cancel(operation_id)
    assert (code, body["code"]) == (409, "OperationNotCancellable")


def test_cancel_of_an_operation_whose_execution_never_started(
    api: Api, fixed_clock: FakeClock
) -> None:
    # Given an operation recorded with its lock, whose execution was never started
    operation = lifecycle.new_operation(OperationKind.DISCOVER, lock_scope="discover")
    api.locks.acquire("discover", operation.id, holder_ended=lambda _: False)
    api.operations.create(operation)
    # When it is cancelled while its start may still be under way, it is a 409 (try again)
    code, body = api.cancel(operation.id)
    assert (code, body["code"]) == (409, "Conflict")
    assert "try again" in body["message"]
    # And after the grace it is CANCELLED at once, its lock released
    fixed_clock.advance(lifecycle.START_GRACE.total_seconds())
    code, view = api.cancel(operation.id)
    assert code == 202, view
    assert view["status"] == "CANCELLED"
    assert api.locks.holder("discover") is None


def test_the_recorded_cancel_event_is_served(api: Api) -> None:
    operation = lifecycle.new_operation(OperationKind.DISCOVER)
    operation = operation.model_copy(update={"id": SAMPLE_OP})
    arn = api.sfn.start_execution(stateMachineArn=api.discover_arn, name=SAMPLE_OP)
    api.operations.create(operation.model_copy(update={"execution_arn": arn["executionArn"]}))
    raw = api.module.handler(load_event("api-cancel-operation.json"), FakeLambdaContext("hypd-api"))
    assert raw["statusCode"] == 202, raw["body"]
    assert api.execution(api.discover_arn, SAMPLE_OP)["status"] == "ABORTED"


# ---------------------------------------------------------------------------- reconciler
def test_a_late_end_of_the_execution_before_a_retry_leaves_the_retry_alone(
    api: Api, table: Table
) -> None:
    # Given a failed operation that was retried and is running {id}-r1
    operation_id = api.discover()
    first = api.fail_in(operation_id, "record")
    api.retry(operation_id)
    retried = api.operations.update(operation_id, lambda op: lifecycle.begin(op, op.execution_arn))
    router = operation_tasks.bind(OperationServices(OperationStore(table), LockStore(table)))
    # When the first execution's FAILED event arrives late
    event = load_event("sfn-execution-status-change.json")
    event["detail"].update(name=operation_id, executionArn=first.execution_arn)
    result = router.dispatch(execution_event_to_task(event))
    # Then the retried operation keeps running with its lock
    assert result == {"operationId": operation_id, "status": "RUNNING"}
    assert api.operations.get(operation_id) == retried
    assert api.locks.holder("discover") == operation_id
    # And the end of its own execution {id}-r1 is reconciled
    event["detail"].update(name=f"{operation_id}-r1", executionArn=retried.execution_arn)
    result = router.dispatch(execution_event_to_task(event))
    assert result == {"operationId": operation_id, "status": "FAILED"}
    assert api.locks.holder("discover") is None
