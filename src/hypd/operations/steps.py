"""What every operation's state-machine tasks share: inputs, the stale-execution guard, stage
bookkeeping, polling answers, timing, and the end of an operation.

The create pipeline (`hypd.create.tasks`) and the capacity operations (`hypd.capacity.tasks`)
register their tasks on a `TaskRouter` (a stage's polling work through `polled`) and run each
stage's work through `Steps.step`, which refuses a task of an execution the operation has
moved on from and records the stage.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, Field

from hypd import clock
from hypd.errors import OperationStateError, PermanentError
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import ErrorInfo, Operation, OperationStatus, Wait
from hypd.operations.stages import stage_step, waiting_of
from hypd.operations.store import OperationStore
from hypd.operations.tasks import StepFunctionsError
from hypd.tasks import TaskInput, TaskRouter

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class OperationInput(TaskInput):
    operation_id: str = Field(alias="operationId")
    execution_name: str | None = Field(default=None, alias="executionName")
    """The calling execution (`$$.Execution.Name`): a task of an execution that is no longer
    the operation's current one (stopped, then retried) changes nothing."""


class AwaitInput(OperationInput):
    task_token: str = Field(alias="taskToken")


class FailInput(OperationInput):
    error: StepFunctionsError


class StaleExecution(PermanentError):
    """The task belongs to an execution the operation has moved on from (a retry started)."""

    code = "StaleExecution"


class ServicePoll(Protocol):
    """A module-level task module's polling work: its input, the function's services."""

    def __call__(self, task: OperationInput, services: Any, *, start: bool) -> dict[str, Any]: ...


SP = TypeVar("SP", bound=ServicePoll)


def polled(router: TaskRouter, first: str, then: str) -> Callable[[SP], SP]:
    """Register a stage's polling work on a module-level router as two tasks: `first` opens
    the stage's attempt, `then` (after each Wait) looks again."""

    def register(poll: SP) -> SP:
        router.task(first, OperationInput)(
            lambda task, services: poll(task, services, start=True)
        )
        router.task(then, OperationInput)(
            lambda task, services: poll(task, services, start=False)
        )
        return poll

    return register


def poll_result(ready: bool, wait_seconds: int = 0, waiting: str | None = None) -> dict[str, Any]:
    """A polling task's answer: the Wait after it uses `waitSeconds`; `waiting`, what it waits
    for in words (the stage's attempt records it with the time of the next look)."""
    if ready:
        return {"ready": True, "waitSeconds": 0}
    answer: dict[str, Any] = {"ready": False, "waitSeconds": max(1, int(wait_seconds))}
    if waiting:
        answer["waiting"] = waiting
    return answer


def ready(result: dict[str, Any]) -> bool:
    """A poll's answer ends its stage once its resource is ready."""
    return bool(result["ready"])


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """A poll's answer without the polling fields: the stage's recorded output."""
    return {
        k: v for k, v in result.items() if k not in ("ready", "waitSeconds", "waitFor", "waiting")
    }


def dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True)


def answer(operation: Operation) -> dict[str, Any]:
    """What a task that ends an operation answers the state machine."""
    return {"operationId": operation.id, "status": operation.status.value}


class Steps:
    """The stage bookkeeping of one operation store, for task functions."""

    def __init__(self, operations: OperationStore, locks: LockStore) -> None:
        self.operations = operations
        self.locks = locks

    def is_current(self, task: OperationInput) -> Callable[[Operation], bool]:
        def current(operation: Operation) -> bool:
            return task.execution_name is None or lifecycle.is_current_execution(
                operation, name=task.execution_name
            )

        return current

    def step(
        self,
        task: OperationInput,
        stage: str,
        work: Callable[[], T],
        *,
        start: bool = False,
        complete: bool | Callable[[T], bool] = False,
        summarize: Callable[[T], dict[str, Any]] | None = None,
        progress: Callable[[T], dict[str, Any] | None] | None = None,
        wait: Callable[[T], Wait | None] = waiting_of,
    ) -> T:
        """`stage_step` for the task's operation, unless the task's execution is stale.

        The operation read for that check is the one the task's work reads and its writes
        start from (`OperationStore.reading`): a look costs one read and one write.

        Raises:
            StaleExecution: the operation has moved on to another execution.
        """
        operation = self.operations.get(task.operation_id)
        if not self.is_current(task)(operation):
            raise StaleExecution(
                f"execution {task.execution_name} is not the current execution of operation "
                f"{operation.id} ({lifecycle.execution_name(operation)}); it changes nothing",
                details={"operationId": operation.id},
            )
        with self.operations.reading(operation):
            return stage_step(
                self.operations,
                task.operation_id,
                stage,
                work,
                start=start,
                complete=complete,
                summarize=summarize,
                progress=progress,
                wait=wait,
            )

    @staticmethod
    def output_of(operation: Operation, stage: str, model: type[M]) -> M:
        """What an earlier stage made, as it recorded it."""
        recorded = operation.stage(stage).output
        if recorded is None:
            raise OperationStateError(
                f"operation {operation.id}: stage {stage} has no recorded output",
                details={"stage": stage},
            )
        return model.model_validate(recorded)

    @staticmethod
    def elapsed(operation: Operation, stage: str) -> float:
        """Seconds since the stage's current attempt started."""
        recorded = operation.stage(stage)
        started = recorded.attempt_started_at or recorded.started_at
        if not started:
            return 0.0
        return (clock.now() - datetime.fromisoformat(started)).total_seconds()

    def release(self, operation: Operation) -> None:
        """Free the operation's lock once it has ended."""
        if operation.status.terminal and operation.lock_scope:
            self.locks.release(operation.lock_scope, operation.id)

    def succeed(
        self, task: OperationInput, output: Callable[[Operation], dict[str, Any]]
    ) -> Operation:
        """Mark the operation SUCCEEDED with `output(operation)` and release its lock (a
        stale execution changes nothing)."""
        operation = self.operations.get(task.operation_id)
        if not self.is_current(task)(operation):
            return operation
        result = output(operation)
        operation = self.operations.update(
            task.operation_id,
            lambda op: lifecycle.succeed(op, result) if self.is_current(task)(op) else None,
        )
        self.release(operation)
        return operation

    def finish(
        self, task: OperationInput, output: Callable[[Operation], dict[str, Any]]
    ) -> dict[str, Any]:
        """`succeed`, as the machine's last task answers it."""
        return answer(self.succeed(task, output))

    def fail_answer(self, task: FailInput) -> dict[str, Any]:
        """`fail`, as the machine's failure recorder answers it (a stale execution's:
        ``stale``, the operation belongs to its successor)."""
        operation, _error = self.fail(task)
        if operation is None:
            return {"operationId": task.operation_id, "stale": True}
        return answer(operation)

    def fail(self, task: FailInput) -> tuple[Operation | None, ErrorInfo]:
        """Record the error the state machine caught on the operation and release its lock.

        Returns (None, error) for a stale execution's failure: the operation belongs to its
        successor and is left alone.
        """
        error = lifecycle.error_from_step_functions(task.error.error, task.error.cause)
        if error.code == StaleExecution.code:
            return None, error
        current = self.is_current(task)
        operation = self.operations.update(
            task.operation_id, lambda op: lifecycle.fail(op, error) if current(op) else None
        )
        self.release(operation)
        if operation.status is not OperationStatus.FAILED or not current(operation):
            return None, error
        return operation, error
