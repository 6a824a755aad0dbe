"""Operation tasks function: begin / succeed / fail an operation, and reconcile executions
that ended without recording their outcome (Step Functions status-change events)."""

from __future__ import annotations

from hypd.aws.clients import client
from hypd.aws.dynamodb import Table
from hypd.clusters.store import ClusterStore
from hypd.config import Settings
from hypd.observability import task_handler
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.operations.tasks import build_router, execution_event_to_task

SETTINGS = Settings.from_env()
_table = Table(client("dynamodb", SETTINGS.region), SETTINGS.table_name)

handler = task_handler(
    build_router(OperationStore(_table), LockStore(_table), ClusterStore(_table)),
    route=execution_event_to_task,
)
