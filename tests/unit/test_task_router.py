"""hypd.tasks.TaskRouter: named tasks with validated input."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from hypd.errors import InvalidTaskInput
from hypd.tasks import TaskInput, TaskRouter


class GreetInput(TaskInput):
    operation_id: str = Field(alias="operationId")
    count: int = 1


@pytest.fixture
def router() -> TaskRouter:
    router = TaskRouter()

    @router.task("greet", GreetInput)
    def greet(task: GreetInput) -> dict[str, Any]:
        return {"operationId": task.operation_id, "count": task.count}

    @router.task("other", TaskInput)
    def other(task: TaskInput) -> dict[str, Any]:
        return {}

    return router


def test_dispatch_runs_the_named_task_with_parsed_input(router: TaskRouter) -> None:
    result = router.dispatch({"task": "greet", "operationId": "op-1", "count": 3})
    assert result == {"operationId": "op-1", "count": 3}
    assert router.names == ["greet", "other"]


@pytest.mark.parametrize("event", [{"task": "nope"}, {}, {"task": 7}])
def test_unknown_task_is_invalid_input_listing_known_tasks(
    router: TaskRouter, event: dict[str, Any]
) -> None:
    with pytest.raises(InvalidTaskInput, match=r"unknown task .*; known tasks: greet, other"):
        router.dispatch(event)


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"task": "greet"}, "operationId"),
        ({"task": "greet", "operationId": "op-1", "count": "many"}, "count"),
        ({"task": "greet", "operationId": "op-1", "surprise": True}, "surprise"),
        ({"task": "greet", "operationId": ["op-1"]}, "operationId"),
    ],
)
def test_invalid_input_names_the_field(
    router: TaskRouter, event: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidTaskInput, match=f"task greet: {field}: ") as raised:
        router.dispatch(event)
    assert type(raised.value).__name__ == "InvalidTaskInput"


def test_registering_a_name_twice_is_refused(router: TaskRouter) -> None:
    with pytest.raises(ValueError, match="task greet is registered twice"):
        router.task("greet", GreetInput)(lambda task: {})
