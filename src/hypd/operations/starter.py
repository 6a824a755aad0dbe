"""Starting, retrying and cancelling an operation: lock, record, start (or stop) its state
machine. One path for every kind (`Starter`).

A start is one DynamoDB transaction (the lock of the operation's scope, the operation record
and, for a create, the cluster record, each conditional) followed by StartExecution: of two
simultaneous starts in one scope exactly one is recorded, and a refused start leaves nothing
behind. A lock whose holder has ended is taken over (conditionally on that holder), so a crashed
pipeline never blocks a scope for ever.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from hypd import clock
from hypd.aws import stepfunctions
from hypd.aws.dynamodb import ConditionFailed, TransactionConflict, Write
from hypd.clusters.models import Cluster, ClusterStatus, require_not_deleted
from hypd.clusters.store import ClusterStore, cluster_exists
from hypd.errors import ConflictError, HypdError
from hypd.operations import lifecycle
from hypd.operations.kinds import describe_scope, lock_scope, spec_of
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation, OperationKind
from hypd.operations.stages import error_info
from hypd.operations.store import OperationStore

CANCEL_ERROR = "Cancelled"
"""The error name StopExecution records on an execution a client cancelled."""
TRANSACTION_ATTEMPTS = 3
"""How often a start's transaction runs when another transaction held one of its items."""


def new_operation(
    kind: OperationKind,
    input: BaseModel | Mapping[str, Any] | None,
    *,
    cluster_tag: str | None = None,
    workload: str | None = None,
) -> Operation:
    """A new (not yet recorded) operation of `kind`: its stages and lock from its spec (a
    workload's kinds lock `workload`, ``{namespace}/{name}``), its input as the operation
    records it (camelCase JSON)."""
    recorded = (
        input.model_dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(input, BaseModel)
        else dict(input or {})
    )
    return lifecycle.new_operation(
        kind,
        cluster_tag=cluster_tag,
        input=recorded,
        lock_scope=lock_scope(kind, cluster_tag, workload),
    )


@dataclass(frozen=True)
class Starter:
    """What starting an operation needs: its stores, Step Functions and the machines."""

    operations: OperationStore
    locks: LockStore
    clusters: ClusterStore
    sfn_client: Callable[[], Any]
    state_machine_arn: Callable[[OperationKind], str]
    """The state machine of a kind (raises when the function's environment lacks it)."""

    def start(
        self,
        kind: OperationKind,
        input: BaseModel | Mapping[str, Any] | None,
        *,
        cluster_tag: str | None = None,
        new_cluster: Cluster | None = None,
        replaces_orphan_of: str | None = None,
    ) -> Operation:
        """Start a new operation of `kind` with `input` (see `launch`)."""
        return self.launch(
            new_operation(kind, input, cluster_tag=cluster_tag),
            new_cluster=new_cluster,
            replaces_orphan_of=replaces_orphan_of,
        )

    def launch(
        self,
        operation: Operation,
        *,
        new_cluster: Cluster | None = None,
        replaces_orphan_of: str | None = None,
    ) -> Operation:
        """Record `operation` (made by `new_operation`) and start its execution, named after
        the operation id, at its first stage (`resumeFrom`: a machine may serve kinds whose
        first stages differ).

        One transaction writes the lock, the operation and `new_cluster` (the record of the
        cluster a create makes: only a new tag, or the orphaned record of
        `replaces_orphan_of`). If the execution cannot be started, the operation is kept,
        marked FAILED with AWS's error (a create's cluster too), its lock is released and the
        error is raised.

        Raises:
            ClusterDeleting, ClusterDeleted: the operation's cluster is being, or was, torn
                down (a teardown itself excepted).
            ConflictError: another operation that has not ended holds the lock of this scope
                (`details.operationId` names it), or the operation id is taken.
            ClusterExists: `new_cluster`'s tag is a cluster already.
            TemporaryError, PermanentError: Step Functions refused to start the execution.
        """
        machine = self.state_machine_arn(operation.kind)
        if (operation.cluster_tag and new_cluster is None
                and operation.kind is not OperationKind.DELETE_CLUSTER):
            require_not_deleted(self.clusters.find(operation.cluster_tag))
        self._record(operation, new_cluster, replaces_orphan_of)
        return self._execute(
            operation, name=operation.id, machine=machine, resume_from=operation.stages[0].name
        )

    def restart(self, operation_id: str, max_retries: int | None = None) -> Operation:
        """Retry a FAILED or CANCELLED operation as a new execution of its kind's machine.

        The operation's lock is taken again, the operation is reset (`lifecycle.retry`:
        PENDING, resuming at the first stage that has not succeeded; a create's cluster goes
        back to CREATING) and the execution `{id}-r{n}` starts with `{"operationId",
        "resumeFrom"}`. If it cannot start, the operation is FAILED again with AWS's error and
        its lock released, as for a first start.

        Raises:
            NotFoundError: no such operation.
            OperationNotRetryable: it is not FAILED or CANCELLED (also when a concurrent retry
                reset it first).
            RetryLimitReached: it was retried ``max_retries`` times already (an automation's
                bound: EventBridge's retry rule names it).
            ConflictError: another operation holds its lock.
            TemporaryError, PermanentError: Step Functions refused to start the execution.
        """
        current = self.operations.get(operation_id)
        lifecycle.check_retryable(current, max_retries)
        machine = self.state_machine_arn(current.kind)
        scope = current.lock_scope
        if scope:
            # The lock may still name this operation (it ended without releasing it): taking
            # it over is fine, the holder has ended. A failed reset below leaves the lock
            # alone: a concurrent retry of the same operation may hold it under the same id,
            # and a lock whose holder has ended is free anyway.
            self.locks.acquire(scope, current.id, holder_ended=self._ended(scope))
        retried = self.operations.update(
            current.id, lambda op: lifecycle.retry(op, max_retries))
        return self._execute(
            retried,
            name=lifecycle.execution_name(retried),
            machine=machine,
            resume_from=lifecycle.resume_stage(retried),
            cluster_status=ClusterStatus.CREATING,
        )

    def cancel(self, operation_id: str, now: datetime | None = None) -> Operation:
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
        current = self.operations.get(operation_id)
        lifecycle.check_cancellable(current)
        name = lifecycle.execution_name(current)
        arn = current.execution_arn or stepfunctions.execution_arn(
            self.state_machine_arn(current.kind), name
        )
        stopped = stepfunctions.stop_execution(
            self.sfn_client(),
            arn,
            error=CANCEL_ERROR,
            cause=(
                f"operation {current.id} was cancelled through "
                f"POST /operations/{current.id}/cancel"
            ),
        )
        if stopped:
            return self.operations.update(current.id, lifecycle.request_cancel)
        if lifecycle.started_recently(current, now):
            raise ConflictError(
                f"operation {current.id} is starting its execution {name}; try again in a moment",
                details={"operationId": current.id, "status": current.status.value},
            )
        cancelled = self.operations.update(current.id, lifecycle.cancel_unstarted)
        if cancelled.status.terminal and cancelled.lock_scope:
            self.locks.release(cancelled.lock_scope, cancelled.id)
        return cancelled

    def _record(
        self, operation: Operation, new_cluster: Cluster | None, replaces_orphan_of: str | None
    ) -> None:
        scope = operation.lock_scope
        lock: Write | None = self.locks.take(scope, operation.id) if scope else None
        writes: list[Write] = [self.operations.new(operation)]
        if new_cluster is not None:
            writes.append(self.clusters.new(new_cluster, replacing_orphan_of=replaces_orphan_of))
        took_over = False
        for _attempt in range(TRANSACTION_ATTEMPTS):
            try:
                self.operations.table.transact_put([*writes, *([lock] if lock else [])])
                return
            except TransactionConflict as conflict:
                failed = set(conflict.failed)
            except ConditionFailed:
                continue  # another transaction held an item: run again
            if scope and len(writes) in failed:
                # The lock is held: by an operation that has not ended (409 naming it), or
                # by one that has, taken over conditionally on that holder.
                holder = self.locks.lock(scope)
                if holder is not None and not self._ended(scope)(holder.operation_id):
                    raise ConflictError(
                        f"operation {holder.operation_id} is already in progress for "
                        f"{describe_scope(scope)}",
                        details={"operationId": holder.operation_id, "scope": scope},
                    )
                if took_over:
                    break
                took_over = True
                lock = self.locks.take(
                    scope, operation.id, over=holder.operation_id if holder else None
                )
                continue
            if new_cluster is not None and 1 in failed:
                raise cluster_exists(new_cluster.tag, self.clusters.find(new_cluster.tag))
            raise ConflictError(f"operation {operation.id} exists already")
        # Other transactions held these items on every attempt: a start of the same scope.
        raise ConflictError(
            f"another operation started for {scope or operation.id} at the same moment; "
            "try again",
            details={"scope": scope} if scope else {"operationId": operation.id},
        )

    def _execute(
        self,
        operation: Operation,
        *,
        name: str,
        machine: str,
        resume_from: str | None,
        cluster_status: ClusterStatus | None = None,
    ) -> Operation:
        """Start the recorded `operation`'s execution `name` at stage `resume_from` (every
        execution's input is `{"operationId", "resumeFrom", "done"}`: a first start names the
        first stage; `done` says which stages succeeded); on a refusal record it FAILED (with
        its cluster when its kind fails the cluster) and release its lock.

        `cluster_status`: what a cluster-failing kind's cluster record becomes first (a
        retried create is CREATING again)."""
        marks_cluster = spec_of(operation.kind).fails_cluster and operation.cluster_tag
        try:
            if marks_cluster and cluster_status is not None:
                assert operation.cluster_tag is not None
                self.clusters.set_status(operation.cluster_tag, cluster_status, operation.id)
            execution_arn = stepfunctions.start_execution(
                self.sfn_client(),
                machine,
                name,
                # `done`: every stage, true if it succeeded (a retry skips those inside a
                # Parallel's branches; a Choice cannot test a key that may be missing).
                {"operationId": operation.id, "resumeFrom": resume_from,
                 "done": lifecycle.succeeded_stages(operation)},
            )
        except HypdError as exc:
            info = error_info(exc)
            try:
                self.operations.update(operation.id, lambda op: lifecycle.fail(op, info))
                if marks_cluster:
                    assert operation.cluster_tag is not None
                    self.clusters.set_status(
                        operation.cluster_tag, ClusterStatus.FAILED, operation.id
                    )
            finally:
                if operation.lock_scope:
                    self.locks.release(operation.lock_scope, operation.id)
            raise
        return self.operations.update(
            operation.id, lambda op: lifecycle.with_execution(op, execution_arn)
        )

    def _ended(self, scope: str) -> Callable[[str], bool]:
        def holder_ended(operation_id: str) -> bool:
            holder = self.operations.find(operation_id)
            if holder is not None:
                return holder.status.terminal
            # Not recorded: a start still under way (the lock is taken before the operation is
            # written), or one that crashed. Only a lock older than any start is taken over.
            lock = self.locks.lock(scope)
            if lock is None or lock.operation_id != operation_id:
                return True  # it changed meanwhile: the conditional takeover decides
            return clock.now() - lifecycle.parse_time(lock.acquired_at) >= lifecycle.START_GRACE

        return holder_ended
