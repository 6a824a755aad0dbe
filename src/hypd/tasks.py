"""The task router of state-machine functions: `{"task": name, ...}` -> one validated call.

A task module declares `router = TaskRouter()` and module-level functions
`@router.task(name, Model) def step(task: Model, services: S) -> dict`; its function's
handler dispatches with that function's services (`router.bind(services).dispatch(event)`), so
the module holds no state and several local clouds in one process stay apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from hypd.errors import InvalidTaskInput

TaskFn = Callable[..., dict[str, Any]]
F = TypeVar("F", bound=TaskFn)


class TaskInput(BaseModel):
    """Base of task inputs: the state machine passes exactly these fields."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    task: str


class TaskRouter:
    def __init__(self) -> None:
        self._tasks: dict[str, tuple[type[BaseModel], TaskFn]] = {}

    def task(self, name: str, model: type[BaseModel]) -> Callable[[F], F]:
        def register(fn: F) -> F:
            if name in self._tasks:
                raise ValueError(f"task {name} is registered twice")
            self._tasks[name] = (model, fn)
            return fn

        return register

    @property
    def names(self) -> list[str]:
        return sorted(self._tasks)

    def dispatch(self, event: dict[str, Any], services: Any = None) -> dict[str, Any]:
        """Run the task the event names, with `services` (tasks of closure-built routers take
        only their input).

        Raises:
            InvalidTaskInput: unknown task, or input that does not match its model.
        """
        name = event.get("task")
        if not isinstance(name, str) or name not in self._tasks:
            raise InvalidTaskInput(f"unknown task {name!r}; known tasks: {', '.join(self.names)}")
        model, fn = self._tasks[name]
        try:
            parsed = model.model_validate(event)
        except PydanticValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
                for error in exc.errors()
            )
            raise InvalidTaskInput(f"task {name}: {problems}") from exc
        return fn(parsed) if services is None else fn(parsed, services)

    def bind(self, services: Any) -> BoundTasks:
        """The tasks with one function's services: what its handler dispatches to."""
        return BoundTasks(self, services)


@dataclass(frozen=True)
class BoundTasks:
    router: TaskRouter
    services: Any

    @property
    def names(self) -> list[str]:
        return self.router.names

    def dispatch(self, event: dict[str, Any]) -> dict[str, Any]:
        """Run the task the event names with the bound services (see `TaskRouter.dispatch`)."""
        return self.router.dispatch(event, self.services)
