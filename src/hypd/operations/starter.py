"""Starting an operation: lock, record, start its state machine. One path for every kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypd.aws import stepfunctions
from hypd.errors import HypdError
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation
from hypd.operations.stages import error_info
from hypd.operations.store import OperationStore


def start_operation(
    operation: Operation,
    *,
    operations: OperationStore,
    locks: LockStore,
    sfn_client: Callable[[], Any],
    state_machine_arn: str,
    execution_input: dict[str, Any],
) -> Operation:
    """Record `operation` and start its execution (named after the operation id).

    The lock is taken before the record is written, so two concurrent requests for one scope
    cannot both start. If the execution cannot be started, the operation is kept, marked
    FAILED with AWS's error, and the error is raised to the caller.

    Raises:
        ConflictError: another operation holds the lock of this scope.
        TemporaryError, PermanentError: Step Functions refused to start the execution.
    """
    if operation.lock_scope:
        locks.acquire(operation.lock_scope, operation.id, holder_ended=_ended(operations))
    try:
        operations.create(operation)
    except HypdError:
        if operation.lock_scope:
            locks.release(operation.lock_scope, operation.id)
        raise
    try:
        execution_arn = stepfunctions.start_execution(
            sfn_client(),
            state_machine_arn,
            operation.id,
            {"operationId": operation.id, **execution_input},
        )
    except HypdError as exc:
        info = error_info(exc)
        operations.update(operation.id, lambda op: lifecycle.fail(op, info))
        if operation.lock_scope:
            locks.release(operation.lock_scope, operation.id)
        raise
    return operations.update(operation.id, lambda op: _with_execution(op, execution_arn))


def _with_execution(operation: Operation, execution_arn: str) -> Operation | None:
    if operation.execution_arn == execution_arn:
        return None
    operation.execution_arn = execution_arn
    return operation


def _ended(operations: OperationStore) -> Callable[[str], bool]:
    def holder_ended(operation_id: str) -> bool:
        holder = operations.find(operation_id)
        return holder is None or holder.status.terminal

    return holder_ended
