"""Starting, retrying and cancelling an operation: lock, record, start (or stop) its state
machine. One path for every kind."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from hypd import clock
from hypd.aws import stepfunctions
from hypd.errors import ConflictError, HypdError
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import ErrorInfo, Operation, OperationKind
from hypd.operations.stages import error_info
from hypd.operations.store import OperationStore

CANCEL_ERROR = "Cancelled"
"""The error name StopExecution records on an execution a client cancelled."""


class StartRecord(Protocol):
    """A record written together with a new operation (e.g. the cluster a create makes)."""

    def create(self) -> None:
        """Write it, conditionally; raise a ConflictError when it cannot be (e.g. tag taken)."""

    def discard(self) -> None:
        """Remove it again: the operation could not be recorded."""

    def start_failed(self, error: ErrorInfo) -> None:
        """The operation is recorded but its execution could not start (it is FAILED)."""


class RestartRecord(Protocol):
    """A record that follows an operation through a retry (e.g. its cluster's status)."""

    def reset(self) -> None:
        """The operation was reset for a retry and its execution is about to start."""

    def start_failed(self, error: ErrorInfo) -> None:
        """The retry's execution could not start (the operation is FAILED again)."""


def start_operation(
    operation: Operation,
    *,
    operations: OperationStore,
    locks: LockStore,
    sfn_client: Callable[[], Any],
    state_machine_arn: str,
    execution_input: dict[str, Any],
    record: StartRecord | None = None,
) -> Operation:
    """Record `operation` and start its execution (named after the operation id).

    Order: the lock, then `record` (a conditional write), then the operation, then the
    execution. The lock is taken first, so two concurrent requests for one scope cannot both
    start; whatever a failed step leaves behind is undone (the record discarded, the lock
    released). If the execution cannot be started, the operation is kept, marked FAILED with
    AWS's error, `record.start_failed` is told, and the error is raised to the caller.

    Raises:
        ConflictError: another operation holds the lock of this scope, or `record` could not
            be written.
        TemporaryError, PermanentError: Step Functions refused to start the execution.
    """
    scope = operation.lock_scope
    if scope:
        locks.acquire(scope, operation.id, holder_ended=_ended(operations, locks, scope))
    try:
        if record is not None:
            record.create()
        try:
            operations.create(operation)
        except HypdError:
            if record is not None:
                record.discard()
            raise
    except HypdError:
        if scope:
            locks.release(scope, operation.id)
        raise
    return _start_execution(
        operation,
        name=operation.id,
        operations=operations,
        locks=locks,
        sfn_client=sfn_client,
        state_machine_arn=state_machine_arn,
        execution_input=execution_input,
        start_failed=record.start_failed if record is not None else None,
    )


def restart_operation(
    operation_id: str,
    *,
    operations: OperationStore,
    locks: LockStore,
    sfn_client: Callable[[], Any],
    state_machine_arn: Callable[[OperationKind], str],
    execution_input: Callable[[Operation], dict[str, Any]] | None = None,
    record: Callable[[Operation], RestartRecord | None] | None = None,
) -> Operation:
    """Retry a FAILED or CANCELLED operation as a new execution of its kind's state machine.

    The operation's lock is taken again, the operation is reset (`lifecycle.retry`: PENDING,
    resuming at the first stage that has not succeeded) and the execution `{id}-r{n}` starts
    with `{"operationId", "resumeFrom"}` plus `execution_input(operation)` (what the kind's
    state machine reads from its input, as on its first start). If it cannot start, the
    operation is FAILED again with AWS's error and its lock released, as for a first start.

    Raises:
        NotFoundError: no such operation.
        OperationNotRetryable: it is not FAILED or CANCELLED (also when a concurrent retry
            reset it first).
        ConflictError: another operation holds its lock.
        TemporaryError, PermanentError: Step Functions refused to start the execution.
    """
    current = operations.get(operation_id)
    lifecycle.check_retryable(current)
    machine = state_machine_arn(current.kind)
    scope = current.lock_scope
    if scope:
        # The lock may still name this operation (it ended without releasing it): taking it
        # over is fine, the holder has ended. A failed reset below leaves the lock alone: a
        # concurrent retry of the same operation may hold it under the same id, and a lock
        # whose holder has ended is free anyway.
        locks.acquire(scope, current.id, holder_ended=_ended(operations, locks, scope))
    retried = operations.update(current.id, lifecycle.retry)
    follower = record(retried) if record is not None else None
    return _start_execution(
        retried,
        name=lifecycle.execution_name(retried),
        operations=operations,
        locks=locks,
        sfn_client=sfn_client,
        state_machine_arn=machine,
        execution_input={
            **(execution_input(retried) if execution_input is not None else {}),
            "resumeFrom": lifecycle.resume_stage(retried),
        },
        before_start=follower.reset if follower is not None else None,
        start_failed=follower.start_failed if follower is not None else None,
    )


def cancel_operation(
    operation_id: str,
    *,
    operations: OperationStore,
    locks: LockStore,
    sfn_client: Callable[[], Any],
    state_machine_arn: Callable[[OperationKind], str],
    now: datetime | None = None,
) -> Operation:
    """Stop the current execution of a PENDING or RUNNING operation.

    The operation records `cancelRequestedAt`; the execution's end (ABORTED, reported by the
    execution-ended rule) makes it CANCELLED and releases its lock. An execution that does not
    exist is one whose start is still under way (409, try again) or crashed (older than
    START_GRACE: the operation is CANCELLED at once and its lock released).

    Raises:
        NotFoundError: no such operation.
        OperationNotCancellable: the operation has ended.
        ConflictError: its execution is being started; try again.
        TemporaryError, PermanentError: Step Functions refused to stop the execution.
    """
    current = operations.get(operation_id)
    lifecycle.check_cancellable(current)
    name = lifecycle.execution_name(current)
    arn = current.execution_arn or stepfunctions.execution_arn(
        state_machine_arn(current.kind), name
    )
    stopped = stepfunctions.stop_execution(
        sfn_client(),
        arn,
        error=CANCEL_ERROR,
        cause=f"operation {current.id} was cancelled through POST /operations/{current.id}/cancel",
    )
    if stopped:
        return operations.update(current.id, lifecycle.request_cancel)
    if lifecycle.started_recently(current, now):
        raise ConflictError(
            f"operation {current.id} is starting its execution {name}; try again in a moment",
            details={"operationId": current.id, "status": current.status.value},
        )
    cancelled = operations.update(current.id, lifecycle.cancel_unstarted)
    if cancelled.status.terminal and cancelled.lock_scope:
        locks.release(cancelled.lock_scope, cancelled.id)
    return cancelled


def _start_execution(
    operation: Operation,
    *,
    name: str,
    operations: OperationStore,
    locks: LockStore,
    sfn_client: Callable[[], Any],
    state_machine_arn: str,
    execution_input: dict[str, Any],
    start_failed: Callable[[ErrorInfo], None] | None,
    before_start: Callable[[], None] | None = None,
) -> Operation:
    try:
        if before_start is not None:
            before_start()
        execution_arn = stepfunctions.start_execution(
            sfn_client(),
            state_machine_arn,
            name,
            {"operationId": operation.id, **execution_input},
        )
    except HypdError as exc:
        info = error_info(exc)
        try:
            operations.update(operation.id, lambda op: lifecycle.fail(op, info))
            if start_failed is not None:
                start_failed(info)
        finally:
            if operation.lock_scope:
                locks.release(operation.lock_scope, operation.id)
        raise
    return operations.update(operation.id, lambda op: lifecycle.with_execution(op, execution_arn))


def _ended(operations: OperationStore, locks: LockStore, scope: str) -> Callable[[str], bool]:
    def holder_ended(operation_id: str) -> bool:
        holder = operations.find(operation_id)
        if holder is not None:
            return holder.status.terminal
        # Not recorded: a start still under way (the lock is taken before the operation is
        # written), or one that crashed. Only a lock older than any start is taken over.
        lock = locks.lock(scope)
        if lock is None or lock.operation_id != operation_id:
            return True  # it changed meanwhile: the conditional takeover decides
        return clock.now() - lifecycle.parse_time(lock.acquired_at) >= lifecycle.START_GRACE

    return holder_ended
