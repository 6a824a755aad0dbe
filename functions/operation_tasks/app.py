"""Operation tasks function: begin / succeed / fail an operation, and reconcile executions
that ended without recording their outcome (Step Functions status-change events)."""

from __future__ import annotations

from hypd.config import OperationTaskSettings
from hypd.observability import task_handler
from hypd.operations.tasks import execution_event_to_task, router
from hypd.wiring import operations as wiring

SETTINGS = OperationTaskSettings.from_env()

handler = task_handler(
    router.bind(wiring.services(SETTINGS)), route=execution_event_to_task
)
