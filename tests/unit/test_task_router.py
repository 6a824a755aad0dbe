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
    def greet(task: GreetInput, services: object) -> dict[str, Any]:
        return {"operationId": task.operation_id, "count": task.count}

    @router.task("other", TaskInput)
    def other(task: TaskInput) -> dict[str, Any]:
        return {}

    return router


def test_dispatch_runs_the_named_task_with_parsed_input(router: TaskRouter) -> None:
    result = router.dispatch({"task": "greet", "operationId": "op-1", "count": 3}, None)
    assert result == {"operationId": "op-1", "count": 3}
    assert router.names == ["greet", "other"]


@pytest.mark.parametrize("event", [{"task": "nope"}, {}, {"task": 7}])
def test_unknown_task_is_invalid_input_listing_known_tasks(
    router: TaskRouter, event: dict[str, Any]
) -> None:
    with pytest.raises(InvalidTaskInput, match=r"unknown task .*; known tasks: greet, other"):
        router.dispatch(event, None)


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
        router.dispatch(event, None)
    assert type(raised.value).__name__ == "InvalidTaskInput"


def test_registering_a_name_twice_is_refused(router: TaskRouter) -> None:
    with pytest.raises(ValueError, match="task greet is registered twice"):
        router.task("greet", GreetInput)(lambda task: {})


# A module-level router: its tasks take the services the function built, as their second argument.
shared = TaskRouter()


@shared.task("count", GreetInput)
def count(task: GreetInput, services: list[str]) -> dict[str, Any]:
    services.append(task.operation_id)
    return {"seen": list(services)}


def test_a_module_level_router_gives_each_dispatch_its_services() -> None:
    # Given two sets of services in one process (two local clouds' functions, say)
    first: list[str] = []
    second: list[str] = []
    # When the one router dispatches with each
    assert shared.dispatch({"task": "count", "operationId": "op-1"}, first) == {"seen": ["op-1"]}
    assert shared.dispatch({"task": "count", "operationId": "op-2"}, second) == {"seen": ["op-2"]}
    # Then each task saw the services it was given, and nothing else
    assert (first, second) == (["op-1"], ["op-2"])
