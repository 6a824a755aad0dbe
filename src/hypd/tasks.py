"""The task router of state-machine functions: `{"task": name, ...}` -> one validated call.

A task module declares `router = TaskRouter()` and module-level functions
`@router.task(name, Model) def step(task: Model, services: S) -> dict`; its function's
handler dispatches with that function's services (`router.bind(services).dispatch(event)`), so
the module holds no state and several local clouds in one process stay apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from hypd.errors import InvalidTaskInput

M = TypeVar("M", bound=BaseModel)
P = ParamSpec("P")
TaskFn = Callable[..., dict[str, Any]]


class TaskInput(BaseModel):
    """Base of task inputs: the state machine passes exactly these fields."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    task: str


class TaskRouter:
    """Tasks by name, each with the model its input is validated against.

    A task takes its validated input and the function's services: a module-level router's
    tasks are plain functions `fn(task, services)`, dispatched through `bind(services)`, so one
    process may serve several sets of services (the local cloud runs one function per cloud).
    """

    def __init__(self) -> None:
        self._tasks: dict[str, tuple[type[BaseModel], TaskFn]] = {}

    def task(
        self, name: str, model: type[M]
    ) -> Callable[
        [Callable[Concatenate[M, P], dict[str, Any]]], Callable[Concatenate[M, P], dict[str, Any]]
    ]:
        def register(
            fn: Callable[Concatenate[M, P], dict[str, Any]],
        ) -> Callable[Concatenate[M, P], dict[str, Any]]:
            if name in self._tasks:
                raise ValueError(f"task {name} is registered twice")
            self._tasks[name] = (model, fn)
            return fn

        return register

    @property
    def names(self) -> list[str]:
        return sorted(self._tasks)

    @classmethod
    def union(cls, *routers: TaskRouter) -> TaskRouter:
        """One router with the tasks of `routers` (one function serving several modules'
        tasks with the same services).

        Raises:
            ValueError: two routers register the same task name.
        """
        merged = cls()
        for router in routers:
            for name, (model, fn) in router._tasks.items():
                if name in merged._tasks:
                    raise ValueError(f"task {name} is registered twice")
                merged._tasks[name] = (model, fn)
        return merged

    def dispatch(self, event: dict[str, Any], services: object) -> dict[str, Any]:
        """Run the task the event names: `fn(input, services)`.

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
        return fn(parsed, services)

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
