"""How an operation and its stages move: pure functions from one Operation to the next.

Each returns the changed operation, or None when the record already says so (so a retried
task, or a duplicate event, changes nothing). A transition the current state forbids raises
OperationStateError, which no state machine retries.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from hypd import clock
from hypd.errors import ConflictError, OperationStateError
from hypd.operations.kinds import spec_of
from hypd.operations.models import (
    MAX_KEPT_ATTEMPTS,
    Attempt,
    AttemptStatus,
    ErrorInfo,
    Operation,
    OperationKind,
    OperationStatus,
    RetryRecord,
    Stage,
    StageStatus,
    Wait,
    attempts_of,
    clip,
    new_operation_id,
)

RETRYABLE = frozenset({OperationStatus.FAILED, OperationStatus.CANCELLED})
"""The statuses a client may retry from (POST /operations/{id}/retry)."""

START_GRACE = timedelta(seconds=60)
"""How long an operation may take to get its execution started (the API function's timeout is
29 s). Within it, a missing execution or an unrecorded lock holder is a start in progress;
after it, a start that crashed."""

_RETRY_EXECUTION = re.compile(r"^(?P<operation>.+)-r(?P<number>[1-9][0-9]*)$")


class OperationNotRetryable(ConflictError):
    """Only a FAILED or CANCELLED operation can be retried."""

    code = "OperationNotRetryable"


class RetryLimitReached(ConflictError):
    """The operation was retried as many times as the request allows (``maxRetries``)."""

    code = "RetryLimitReached"


class OperationNotCancellable(ConflictError):
    """An operation that has ended cannot be cancelled."""

    code = "OperationNotCancellable"


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
        stages=[Stage(name=name) for name in spec_of(kind).stages],
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
    now = clock.now_iso()
    # A start while an attempt runs (the state machine retried the stage's first task): that
    # attempt ended with the error it recorded.
    _end_attempt(stage, AttemptStatus.FAILED, now)
    earlier = attempts_of(stage)
    stage.status = StageStatus.RUNNING
    stage.attempts += 1
    stage.started_at = stage.started_at or now
    stage.attempt_started_at = now
    stage.ended_at = None
    stage.error = None  # the error of an earlier attempt no longer describes this one
    stage.progress = None
    stage.history = [*earlier, Attempt(number=stage.attempts, started_at=now)][
        -MAX_KEPT_ATTEMPTS:
    ]
    return operation


def record_look(
    operation: Operation,
    name: str,
    wait: Wait | None = None,
    progress: dict[str, Any] | None = None,
) -> Operation | None:
    """A task of the running attempt looked: one look more, why it waits and when it looks
    next (`wait`), and what it has done and waits for (`progress`, when given: its last word
    counts)."""
    stage = _stage(operation, name)
    if operation.status.terminal or stage.status is not StageStatus.RUNNING:
        return None
    _count_look(stage, wait)
    if progress is not None:
        stage.progress = progress
    return operation


def _current_attempt(stage: Stage) -> Attempt:
    """The running attempt (one a record from before attempts were kept gets now)."""
    if not stage.history or stage.history[-1].status is not AttemptStatus.RUNNING:
        stage.history = [
            *stage.history,
            Attempt(
                number=max(stage.attempts, 1),
                started_at=stage.attempt_started_at or stage.started_at or clock.now_iso(),
            ),
        ][-MAX_KEPT_ATTEMPTS:]
    return stage.history[-1]


def _count_look(stage: Stage, wait: Wait | None) -> None:
    attempt = _current_attempt(stage)
    attempt.looks += 1
    if wait is None:
        attempt.next_look_at = None
        return
    attempt.waiting_for = clip(wait.reason) or attempt.waiting_for
    attempt.next_look_at = (
        clock.isoformat(clock.now() + timedelta(seconds=wait.seconds))
        if wait.seconds is not None
        else None
    )


def _end_attempt(stage: Stage, status: AttemptStatus, now: str) -> None:
    """The running attempt (if any) ended: `status` at `now`, with the stage's error when it
    failed."""
    if not stage.history or stage.history[-1].status is not AttemptStatus.RUNNING:
        return
    attempt = stage.history[-1]
    attempt.status = status
    attempt.ended_at = now
    attempt.next_look_at = None
    if status is AttemptStatus.FAILED and stage.error is not None:
        attempt.error = ErrorInfo(
            code=stage.error.code, message=clip(stage.error.message) or stage.error.code
        )


def complete_stage(
    operation: Operation, name: str, output: dict[str, Any] | None = None
) -> Operation | None:
    """The stage's last look found it done: SUCCEEDED with its output (that look counted)."""
    stage = _stage(operation, name)
    if stage.status is StageStatus.SUCCEEDED:
        return None
    _require_active(operation, f"complete stage {name}")
    now = clock.now_iso()
    if stage.status is StageStatus.RUNNING:
        _count_look(stage, None)
    stage.status = StageStatus.SUCCEEDED
    stage.ended_at = now
    stage.error = None
    stage.output = output
    stage.progress = None  # it described the running attempt
    _end_attempt(stage, AttemptStatus.SUCCEEDED, now)
    return operation


def record_stage_error(operation: Operation, name: str, error: ErrorInfo) -> Operation | None:
    """A look of the attempt failed (that look counted); the stage stays RUNNING until the
    state machine gives up on it."""
    stage = _stage(operation, name)
    if operation.status.terminal or stage.status is not StageStatus.RUNNING:
        return None
    _count_look(stage, None)
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
        _end_attempt(stage, AttemptStatus(stage.status.value), now)
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
    operation: Operation,
    status: str,
    error: str | None,
    cause: str | None,
    *,
    execution_name: str | None = None,
    execution_arn: str | None = None,
) -> Operation | None:
    """Reconcile with a Step Functions execution that ended without recording its outcome.

    ABORTED -> CANCELLED; FAILED / TIMED_OUT -> FAILED with the execution's error.
    A SUCCEEDED execution records its own outcome, so it needs nothing here. The end of an
    execution that is not the operation's current one (an attempt before a retry) changes
    nothing.
    """
    if operation.status.terminal or status == "SUCCEEDED":
        return None
    if not is_current_execution(operation, name=execution_name, arn=execution_arn):
        return None
    if status == "ABORTED":
        now = clock.now_iso()
        for stage in operation.stages:
            if stage.status is StageStatus.RUNNING:
                stage.status = StageStatus.CANCELLED
                stage.ended_at = now
                _end_attempt(stage, AttemptStatus.CANCELLED, now)
        operation.status = OperationStatus.CANCELLED
        return operation
    code = error or ("States.Timeout" if status == "TIMED_OUT" else "States.Failed")
    return fail(operation, error_from_step_functions(code, cause))


# ---------------------------------------------------------------------------- executions
def execution_name(operation: Operation) -> str:
    """The name of the operation's current execution: its id, `{id}-r{n}` after retry n."""
    if not operation.retries:
        return operation.id
    return f"{operation.id}-r{operation.retries[-1].number}"


def operation_id_of_execution(name: str) -> str:
    """The operation an execution name belongs to: `{id}` and `{id}-r{n}` -> `{id}`.

    Other names (an execution hypd did not start) come back unchanged.
    """
    match = _RETRY_EXECUTION.match(name)
    return match.group("operation") if match else name


def is_current_execution(
    operation: Operation, *, name: str | None = None, arn: str | None = None
) -> bool:
    """Whether the execution named `name` (with ARN `arn`) is the operation's current one.

    The name decides (it is known before the execution's ARN is recorded); the ARN is compared
    too once the operation has recorded one.
    """
    if name is not None and name != execution_name(operation):
        return False
    return arn is None or operation.execution_arn is None or arn == operation.execution_arn


def with_execution(operation: Operation, execution_arn: str) -> Operation | None:
    """Record the ARN of the execution that was just started for the operation."""
    if operation.execution_arn == execution_arn:
        return None
    operation.execution_arn = execution_arn
    return operation


def started_recently(operation: Operation, now: datetime | None = None) -> bool:
    """Whether the operation was created or last reset less than START_GRACE ago."""
    since = operation.retries[-1].requested_at if operation.retries else operation.created_at
    return (now or clock.now()) - parse_time(since) < START_GRACE


def parse_time(value: str) -> datetime:
    """A timestamp as hypd writes it (`clock.isoformat`) back as a datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# ---------------------------------------------------------------------------- retry
def succeeded_stages(operation: Operation) -> dict[str, bool]:
    """Every stage, true if it succeeded (a retry never repeats those)."""
    return {s.name: s.status is StageStatus.SUCCEEDED for s in operation.stages}


def resume_stage(operation: Operation) -> str | None:
    """The first stage that has not succeeded (where a retry resumes), or None."""
    return next((s.name for s in operation.stages if s.status is not StageStatus.SUCCEEDED), None)


def check_retryable(operation: Operation, max_retries: int | None = None) -> None:
    """Raises OperationNotRetryable (409) unless the operation is FAILED or CANCELLED, and
    RetryLimitReached (409) when it has been retried ``max_retries`` times already."""
    if operation.status not in RETRYABLE:
        raise OperationNotRetryable(
            f"operation {operation.id} is {operation.status.value}; only a FAILED or CANCELLED "
            "operation can be retried",
            details={"operationId": operation.id, "status": operation.status.value},
        )
    if max_retries is not None and len(operation.retries) >= max_retries:
        raise RetryLimitReached(
            f"operation {operation.id} was retried {len(operation.retries)} time(s); the "
            f"request allows at most {max_retries}",
            details={"operationId": operation.id, "retries": len(operation.retries),
                     "maxRetries": max_retries},
        )


def retry(operation: Operation, max_retries: int | None = None) -> Operation:
    """FAILED / CANCELLED -> PENDING, resuming at the first stage that has not succeeded.

    Stages that succeeded keep their status and output (a retry never repeats them); every
    other stage goes back to PENDING with its error cleared and its attempts kept. A kind that
    cannot resume (its spec's `resumes` is false) reruns from its first stage: every stage goes back
    to PENDING (outputs cleared, attempts kept). The error that ended the previous attempt,
    the stage that failed and the previous execution move to a new `retries` entry; the
    operation's error, output, execution ARN and cancel request are cleared. The new
    execution is `execution_name(operation)` = `{id}-r{n}`.

    Raises:
        OperationNotRetryable: the operation is not FAILED or CANCELLED.
        RetryLimitReached: it was retried ``max_retries`` times already.
    """
    check_retryable(operation, max_retries)
    failed = next((s.name for s in operation.stages if s.status is StageStatus.FAILED), None)
    resumable = spec_of(operation.kind).resumes
    now = clock.now_iso()
    for stage in operation.stages:
        if stage.status is not StageStatus.SUCCEEDED or not resumable:
            _end_attempt(stage, AttemptStatus.CANCELLED, now)  # none runs: a safeguard
            if stage.status is StageStatus.SUCCEEDED:
                stage.output = None
            stage.status = StageStatus.PENDING
            stage.ended_at = None
            stage.error = None
    resume_from = resume_stage(operation)
    operation.retries.append(
        RetryRecord(
            number=len(operation.retries) + 1,
            requested_at=now,
            previous_status=operation.status,
            previous_error=operation.error,
            failed_stage=failed,
            previous_execution_arn=operation.execution_arn,
            resume_from=resume_from,
        )
    )
    operation.status = OperationStatus.PENDING
    operation.error = None
    operation.output = None
    operation.execution_arn = None
    operation.cancel_requested_at = None
    return operation


# ---------------------------------------------------------------------------- cancel
def check_cancellable(operation: Operation) -> None:
    """Raises OperationNotCancellable (409) when the operation has ended."""
    if operation.status.terminal:
        raise OperationNotCancellable(
            f"operation {operation.id} is {operation.status.value}; only a PENDING or RUNNING "
            "operation can be cancelled",
            details={"operationId": operation.id, "status": operation.status.value},
        )


def request_cancel(operation: Operation) -> Operation | None:
    """Record that a client asked to stop the current execution (the first request counts).

    The operation stays as it is: the execution's end (ABORTED) makes it CANCELLED.
    """
    if operation.cancel_requested_at is not None:
        return None
    operation.cancel_requested_at = clock.now_iso()
    return operation


def cancel_unstarted(operation: Operation) -> Operation | None:
    """An operation whose execution never started (its start crashed) -> CANCELLED."""
    if operation.status.terminal:
        return None
    operation.cancel_requested_at = operation.cancel_requested_at or clock.now_iso()
    return execution_ended(operation, "ABORTED", None, None) or operation


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
