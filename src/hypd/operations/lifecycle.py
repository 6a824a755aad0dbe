"""How an operation and its stages move: pure functions from one Operation to the next.

Each returns the changed operation, or None when the record already says so (so a retried
task, or a duplicate event, changes nothing). A transition the current state forbids raises
OperationStateError, which no state machine retries.
"""

from __future__ import annotations

import json
from typing import Any

from hypd import clock
from hypd.errors import OperationStateError
from hypd.operations.models import (
    STAGES,
    ErrorInfo,
    Operation,
    OperationKind,
    OperationStatus,
    Stage,
    StageStatus,
    new_operation_id,
)


def new_operation(
    kind: OperationKind,
    *,
    cluster_tag: str | None = None,
    input: dict[str, Any] | None = None,
    lock_scope: str | None = None,
) -> Operation:
    now = clock.now_iso()
    return Operation(
        id=new_operation_id(),
        kind=kind,
        cluster_tag=cluster_tag,
        status=OperationStatus.PENDING,
        stages=[Stage(name=name) for name in STAGES[kind]],
        lock_scope=lock_scope,
        input=input or {},
        created_at=now,
        updated_at=now,
        version=1,
    )


def _require_active(operation: Operation, action: str) -> None:
    if operation.status.terminal:
        raise OperationStateError(
            f"cannot {action}: operation {operation.id} is {operation.status.value}"
        )


def begin(operation: Operation, execution_arn: str | None = None) -> Operation | None:
    """PENDING -> RUNNING."""
    if operation.status is OperationStatus.RUNNING and (
        execution_arn is None or operation.execution_arn == execution_arn
    ):
        return None
    _require_active(operation, "begin")
    operation.status = OperationStatus.RUNNING
    if execution_arn:
        operation.execution_arn = execution_arn
    return operation


def start_stage(operation: Operation, name: str) -> Operation:
    """A stage attempt starts: RUNNING, attempts + 1 (every Retry is a new attempt)."""
    _require_active(operation, f"start stage {name}")
    stage = _stage(operation, name)
    if stage.status is StageStatus.SUCCEEDED:
        raise OperationStateError(f"stage {name} of operation {operation.id} has succeeded already")
    operation.status = OperationStatus.RUNNING
    stage.status = StageStatus.RUNNING
    stage.attempts += 1
    stage.started_at = stage.started_at or clock.now_iso()
    stage.ended_at = None
    stage.error = None  # the error of an earlier attempt no longer describes this one
    return operation


def complete_stage(
    operation: Operation, name: str, output: dict[str, Any] | None = None
) -> Operation | None:
    stage = _stage(operation, name)
    if stage.status is StageStatus.SUCCEEDED:
        return None
    _require_active(operation, f"complete stage {name}")
    stage.status = StageStatus.SUCCEEDED
    stage.ended_at = clock.now_iso()
    stage.error = None
    stage.output = output
    return operation


def record_stage_error(operation: Operation, name: str, error: ErrorInfo) -> Operation | None:
    """An attempt failed; the stage stays RUNNING until the state machine gives up on it."""
    stage = _stage(operation, name)
    if operation.status.terminal or stage.status is not StageStatus.RUNNING:
        return None
    stage.error = error
    return operation


def fail(operation: Operation, error: ErrorInfo) -> Operation | None:
    """The state machine gave up: the failing stage and the operation become FAILED.

    The failing stage is the running one whose last attempt recorded an error; if no running
    stage recorded one (a Lambda timeout, say), the first running stage takes `error`. Other
    running stages (parallel branches that Step Functions stopped) become CANCELLED.
    """
    if operation.status.terminal:
        return None
    now = clock.now_iso()
    running = [stage for stage in operation.stages if stage.status is StageStatus.RUNNING]
    failing = next((stage for stage in running if stage.error is not None), None)
    if failing is None and running:
        failing = running[0]
        failing.error = error
    for stage in running:
        stage.status = StageStatus.FAILED if stage is failing else StageStatus.CANCELLED
        stage.ended_at = now
    operation.status = OperationStatus.FAILED
    operation.error = failing.error if failing is not None and failing.error else error
    return operation


def succeed(operation: Operation, output: dict[str, Any] | None = None) -> Operation | None:
    if operation.status is OperationStatus.SUCCEEDED:
        return None
    _require_active(operation, "succeed")
    unfinished = [s.name for s in operation.stages if s.status is StageStatus.RUNNING]
    if unfinished:
        raise OperationStateError(
            f"operation {operation.id} cannot succeed while stages {unfinished} are running"
        )
    for stage in operation.stages:
        if stage.status is StageStatus.PENDING:
            stage.status = StageStatus.SKIPPED
    operation.status = OperationStatus.SUCCEEDED
    operation.output = output
    operation.error = None
    return operation


def execution_ended(
    operation: Operation, status: str, error: str | None, cause: str | None
) -> Operation | None:
    """Reconcile with a Step Functions execution that ended without recording its outcome.

    ABORTED -> CANCELLED; FAILED / TIMED_OUT -> FAILED with the execution's error.
    A SUCCEEDED execution records its own outcome, so it needs nothing here.
    """
    if operation.status.terminal or status == "SUCCEEDED":
        return None
    if status == "ABORTED":
        now = clock.now_iso()
        for stage in operation.stages:
            if stage.status is StageStatus.RUNNING:
                stage.status = StageStatus.CANCELLED
                stage.ended_at = now
        operation.status = OperationStatus.CANCELLED
        return operation
    code = error or ("States.Timeout" if status == "TIMED_OUT" else "States.Failed")
    return fail(operation, error_from_step_functions(code, cause))


def error_from_step_functions(error: str | None, cause: str | None) -> ErrorInfo:
    """The ErrorInfo for a Step Functions error and cause.

    A Lambda task's cause is the JSON error payload (`errorMessage`, `errorType`); other
    causes are plain text.
    """
    message = cause or ""
    code = error or "States.Failed"
    if cause:
        try:
            payload = json.loads(cause)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and payload.get("errorMessage") is not None:
            message = str(payload["errorMessage"])
            code = error or str(payload.get("errorType") or code)
    return ErrorInfo(code=code, message=message or code)


def _stage(operation: Operation, name: str) -> Stage:
    try:
        return operation.stage(name)
    except KeyError:
        raise OperationStateError(f"operation {operation.id} has no stage {name}") from None
