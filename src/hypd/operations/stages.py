"""Stage bookkeeping around a task's work: the one wrapper every stage task uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hypd.errors import HypdError
from hypd.operations import lifecycle
from hypd.operations.models import ErrorInfo
from hypd.operations.store import OperationStore

T = TypeVar("T")


def error_info(exc: BaseException) -> ErrorInfo:
    """The error a stage records: the AWS error code when AWS said no, else hypd's code."""
    if isinstance(exc, HypdError):
        code = str(exc.details.get("awsErrorCode") or exc.code)
        return ErrorInfo(code=code, message=exc.message)
    return ErrorInfo(code=type(exc).__name__, message=str(exc) or type(exc).__name__)


def run_stage(
    store: OperationStore,
    operation_id: str,
    stage: str,
    work: Callable[[], T],
    summarize: Callable[[T], dict[str, Any]] | None = None,
) -> T:
    """Run one attempt of `stage`: RUNNING (attempts + 1) -> work -> SUCCEEDED.

    When the work raises, the error is recorded on the stage (which stays RUNNING) and
    re-raised unchanged, so the state machine's Retry and Catch see its class name.
    """
    store.update(operation_id, lambda op: lifecycle.start_stage(op, stage))
    try:
        result = work()
    except Exception as exc:
        info = error_info(exc)
        store.update(operation_id, lambda op: lifecycle.record_stage_error(op, stage, info))
        raise
    summary = summarize(result) if summarize else None
    store.update(operation_id, lambda op: lifecycle.complete_stage(op, stage, summary))
    return result
