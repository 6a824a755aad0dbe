"""Stage bookkeeping around a task's work: the one wrapper every stage task uses (through
`hypd.operations.steps.Steps.step`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from hypd.errors import HypdError
from hypd.operations import lifecycle
from hypd.operations.models import ErrorInfo, Wait
from hypd.operations.store import OperationStore

T = TypeVar("T")


def error_info(exc: BaseException) -> ErrorInfo:
    """The error a stage records: the AWS error code when AWS said no, else hypd's code."""
    if isinstance(exc, HypdError):
        code = str(exc.details.get("awsErrorCode") or exc.code)
        return ErrorInfo(code=code, message=exc.message)
    return ErrorInfo(code=type(exc).__name__, message=str(exc) or type(exc).__name__)


def waiting_of(result: object) -> Wait | None:
    """The wait a polling answer asks for (`steps.poll_result`): why (``waiting``) and for how
    long (``waitSeconds``); None for any other result, or a ready one."""
    if not isinstance(result, Mapping) or result.get("ready", True):
        return None
    seconds = result.get("waitSeconds")
    return Wait(
        reason=str(result["waiting"]) if result.get("waiting") else None,
        seconds=float(seconds) if isinstance(seconds, int | float) else None,
    )


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
    wait: Callable[[T], Wait | None] = waiting_of,
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

    Every call is one look of the attempt, recorded by the one write that follows the work
    (the error, the completion, or the look with `wait(result)`: why it waits and when it
    looks next, and its progress).
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
    else:
        waits = wait(result)
        note = progress(result) if progress is not None else None
        store.update(operation_id, lambda op: lifecycle.record_look(op, stage, waits, note))
    return result
