"""State-machine tasks that move an operation: begin, succeed, fail, and reconcile an
execution that ended without recording its outcome (from EventBridge)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.clusters.models import ClusterStatus
from hypd.clusters.store import ClusterStore
from hypd.operations import lifecycle
from hypd.operations.kinds import spec_of
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation, OperationStatus
from hypd.operations.store import OperationStore
from hypd.tasks import TaskInput, TaskRouter


class BeginInput(TaskInput):
    operation_id: str = Field(alias="operationId")
    execution_arn: str | None = Field(default=None, alias="executionArn")


class SucceedInput(TaskInput):
    operation_id: str = Field(alias="operationId")
    output: dict[str, Any] = Field(default_factory=dict)


class StepFunctionsError(BaseModel):
    """What a Catch puts at its ResultPath: `{"Error": ..., "Cause": ...}`."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    error: str | None = Field(default=None, alias="Error")
    cause: str | None = Field(default=None, alias="Cause")


class FailInput(TaskInput):
    operation_id: str = Field(alias="operationId")
    error: StepFunctionsError


class ExecutionEndedInput(TaskInput):
    operation_id: str = Field(alias="operationId")
    status: str
    error: str | None = None
    cause: str | None = None
    execution_name: str | None = Field(default=None, alias="executionName")
    execution_arn: str | None = Field(default=None, alias="executionArn")


def execution_event_to_task(event: dict[str, Any]) -> dict[str, Any]:
    """An EventBridge `Step Functions Execution Status Change` event as an execution-ended task.

    An execution is named after its operation (`{id}`, or `{id}-r{n}` for retry n); its name
    and ARN go along, so the end of an attempt before a retry changes nothing.
    """
    if event.get("detail-type") != "Step Functions Execution Status Change":
        return event
    detail = event.get("detail") or {}
    name = detail.get("name")
    return {
        "task": "execution-ended",
        "operationId": lifecycle.operation_id_of_execution(name) if name else name,
        "status": detail.get("status"),
        "error": detail.get("error"),
        "cause": detail.get("cause"),
        "executionName": name,
        "executionArn": detail.get("executionArn"),
    }


@dataclass(frozen=True)
class OperationServices:
    operations: OperationStore
    locks: LockStore
    clusters: ClusterStore | None = None
    """Where an operation whose kind marks its cluster on failure (a create) and that ended
    without recording it (stopped, timed out) marks the cluster FAILED."""

    def release(self, operation: Operation) -> None:
        if operation.status.terminal and operation.lock_scope:
            self.locks.release(operation.lock_scope, operation.id)


router = TaskRouter()


@router.task("begin", BeginInput)
def begin(task: BeginInput, services: OperationServices) -> dict[str, Any]:
    operation = services.operations.update(
        task.operation_id, lambda op: lifecycle.begin(op, task.execution_arn)
    )
    return {"operationId": operation.id, "status": operation.status.value}


@router.task("succeed", SucceedInput)
def succeed(task: SucceedInput, services: OperationServices) -> dict[str, Any]:
    operation = services.operations.update(
        task.operation_id, lambda op: lifecycle.succeed(op, task.output)
    )
    services.release(operation)
    return {"operationId": operation.id, "status": operation.status.value}


@router.task("fail", FailInput)
def fail(task: FailInput, services: OperationServices) -> dict[str, Any]:
    error = lifecycle.error_from_step_functions(task.error.error, task.error.cause)
    operation = services.operations.update(
        task.operation_id, lambda op: lifecycle.fail(op, error)
    )
    services.release(operation)
    return {
        "operationId": operation.id,
        "status": operation.status.value,
        "error": operation.error.model_dump() if operation.error else None,
    }


@router.task("execution-ended", ExecutionEndedInput)
def execution_ended(task: ExecutionEndedInput, services: OperationServices) -> dict[str, Any]:
    if services.operations.find(task.operation_id) is None:
        # An execution hypd did not start under an operation id: nothing to reconcile.
        return {"operationId": task.operation_id, "status": "UNKNOWN"}
    operation = services.operations.update(
        task.operation_id,
        lambda op: lifecycle.execution_ended(
            op,
            task.status,
            task.error,
            task.cause,
            execution_name=task.execution_name,
            execution_arn=task.execution_arn,
        ),
    )
    if (
        services.clusters is not None
        and spec_of(operation.kind).fails_cluster
        and operation.cluster_tag
        and operation.status in (OperationStatus.FAILED, OperationStatus.CANCELLED)
    ):
        services.clusters.set_status(operation.cluster_tag, ClusterStatus.FAILED, operation.id)
    services.release(operation)
    return {"operationId": operation.id, "status": operation.status.value}
