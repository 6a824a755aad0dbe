"""Starting a capacity operation: the one path for the API and for automatic repair."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from hypd.capacity.inputs import record
from hypd.operations import lifecycle
from hypd.operations.kinds import lock_scope, spec_of
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation, OperationKind
from hypd.operations.starter import start_operation
from hypd.operations.store import OperationStore


def capacity_operation(kind: OperationKind, tag: str, request: BaseModel) -> Operation:
    """A new (not yet recorded) capacity operation of `kind` on cluster `tag`."""
    return lifecycle.new_operation(
        kind, cluster_tag=tag, input=record(request), lock_scope=lock_scope(kind, tag)
    )


def start_capacity(
    operation: Operation,
    *,
    operations: OperationStore,
    locks: LockStore,
    sfn_client: Callable[[], Any],
    state_machine_arn: str,
) -> Operation:
    """Record `operation` under its cluster's lock and start its execution at its first stage.

    Raises:
        ConflictError: another operation of the cluster is in progress (409 naming it).
        TemporaryError, PermanentError: Step Functions refused to start the execution.
    """
    return start_operation(
        operation,
        operations=operations,
        locks=locks,
        sfn_client=sfn_client,
        state_machine_arn=state_machine_arn,
        execution_input={"resumeFrom": spec_of(operation.kind).stages[0]},
    )
