"""The task router of state-machine functions: `{"task": name, ...}` -> one validated call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from hypd.errors import InvalidTaskInput

M = TypeVar("M", bound=BaseModel)
TaskFn = Callable[[Any], dict[str, Any]]


class TaskInput(BaseModel):
    """Base of task inputs: the state machine passes exactly these fields."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    task: str


class TaskRouter:
    def __init__(self) -> None:
        self._tasks: dict[str, tuple[type[BaseModel], TaskFn]] = {}

    def task(self, name: str, model: type[M]) -> Callable[[Callable[[M], dict[str, Any]]], TaskFn]:
        def register(fn: Callable[[M], dict[str, Any]]) -> TaskFn:
            if name in self._tasks:
                raise ValueError(f"task {name} is registered twice")
            self._tasks[name] = (model, fn)
            return fn

        return register

    @property
    def names(self) -> list[str]:
        return sorted(self._tasks)

    def dispatch(self, event: dict[str, Any]) -> dict[str, Any]:
        """Run the task the event names.

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
        return fn(parsed)
