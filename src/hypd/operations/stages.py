"""Stage bookkeeping around a task's work: the one wrapper every stage task uses (through
`hypd.operations.steps.Steps.step`)."""

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


def stage_step(
    store: OperationStore,
    operation_id: str,
    stage: str,
    work: Callable[[], T],
    *,
    start: bool = False,
    complete: bool | Callable[[T], bool] = False,
    summarize: Callable[[T], dict[str, Any]] | None = None,
    progress: Callable[[T], dict[str, Any] | None] | None = None,
) -> T:
    """One task of a stage: the only one (`start` and `complete`: discover's stages), or one
    of several (create, wait, check, ...).

    `start`: this task opens an attempt of the stage (RUNNING, attempts + 1); the polling
    tasks after it leave the attempt count alone. `complete`: this task ends the stage
    (SUCCEEDED, with `summarize(result)` as its output); a predicate decides from the result
    (a poll that ends the stage once its resource is ready). `progress`: what a task that does
    not end the stage records as the attempt's progress (None: nothing new). A raised error is
    recorded on the stage (which stays RUNNING) and re-raised unchanged, so the state
    machine's Retry and Catch see its class name.
    """
    if start:
        store.update(operation_id, lambda op: lifecycle.start_stage(op, stage))
    try:
        result = work()
    except Exception as exc:
        info = error_info(exc)
        store.update(operation_id, lambda op: lifecycle.record_stage_error(op, stage, info))
        raise
    if complete(result) if callable(complete) else complete:
        summary = summarize(result) if summarize else None
        store.update(operation_id, lambda op: lifecycle.complete_stage(op, stage, summary))
    elif progress is not None:
        note = progress(result)
        if note is not None:
            store.update(
                operation_id, lambda op: lifecycle.record_stage_progress(op, stage, note)
            )
    return result
