"""Lint of every statemachines/*.asl.json against hypd's conventions and template.yaml."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import hypd
from hypd import errors
from hypd.capacity.tasks import router as capacity_tasks_router
from hypd.create.tasks import router as create_router
from hypd.discovery.tasks import router as discover_router
from hypd.operations.tasks import router as operation_tasks_router
from hypd.tasks import TaskRouter
from hypd.wiring.features import router as feature_tasks_router
from hypd.wiring.teardown import router as teardown_tasks_router
from tests.unit.support import ROOT, load_template

ASL_FILES = sorted((ROOT / "statemachines").glob("*.asl.json"))
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
def _temporary_errors() -> set[str]:
    """Every TemporaryError subclass a task of the hypd package can raise (the names the ASL
    may retry, and must): the API's and the event handler's, which no task runs, are not."""
    not_tasks = ("hypd.api", "hypd.health.handler")
    for module in pkgutil.walk_packages(hypd.__path__, "hypd."):
        if not module.name.startswith(not_tasks):
            importlib.import_module(module.name)

    def subclasses(cls: type) -> set[type]:
        found: set[type] = set(cls.__subclasses__())
        for sub in list(found):
            found |= subclasses(sub)
        return found

    return {
        cls.__name__
        for cls in subclasses(errors.TemporaryError)
        if not cls.__module__.startswith(not_tasks)
    }


RETRIED_EXCEPTIONS = _temporary_errors()


@dataclass(frozen=True)
class State:
    path: str
    name: str
    body: dict[str, Any]
    enclosing: tuple[dict[str, Any], ...]
    """The Parallel/Map states this state runs inside, outermost first."""


def walk(
    states: dict[str, Any], path: str = "", enclosing: tuple[dict[str, Any], ...] = ()
) -> Iterator[State]:
    for name, body in states.items():
        yield State(f"{path}{name}", name, body, enclosing)
        for index, branch in enumerate(body.get("Branches", [])):
            yield from walk(branch["States"], f"{path}{name}[{index}]/", (*enclosing, body))
        processor = body.get("ItemProcessor") or body.get("Iterator")
        if processor:
            yield from walk(processor["States"], f"{path}{name}/", (*enclosing, body))


def definition(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def task_name(state: State) -> str | None:
    """The task a Lambda Task state runs: its Parameters' `task`, or its Payload's for a
    `lambda:invoke.waitForTaskToken` state."""
    parameters = state.body.get("Parameters", {})
    task = parameters.get("task") or (parameters.get("Payload") or {}).get("task")
    return task if isinstance(task, str) else None


def function_placeholder(state: State) -> str:
    """The `${...Arn}` of the function a Lambda Task state invokes."""
    where = str(state.body["Resource"])
    if ":states:::lambda:invoke" in where:
        where = str(state.body["Parameters"]["FunctionName"])
    (placeholder,) = PLACEHOLDER.findall(where)
    return str(placeholder)


def recorders(asl: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Top-level Task states that run a `fail` task (`fail`, or a kind's own `fail-...`): the
    failure recorders."""
    return {
        name: body
        for name, body in asl["States"].items()
        if body.get("Type") == "Task"
        and str(body.get("Parameters", {}).get("task", "")).split("-")[0] == "fail"
    }


def state_machines_using(template: dict[str, Any], asl_path: Path) -> list[dict[str, Any]]:
    relative = asl_path.relative_to(ROOT).as_posix()
    return [
        resource["Properties"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Serverless::StateMachine"
        and resource["Properties"].get("DefinitionUri") == relative
    ]


def test_there_are_state_machines_to_lint() -> None:
    assert [p.name for p in ASL_FILES] == sorted(p.name for p in ASL_FILES)
    assert "discover.asl.json" in {p.name for p in ASL_FILES}


@pytest.fixture(params=ASL_FILES, ids=lambda p: p.name)
def asl_path(request: pytest.FixtureRequest) -> Path:
    path: Path = request.param
    return path


def test_every_task_has_a_timeout(asl_path: Path) -> None:
    missing = [
        state.path
        for state in walk(definition(asl_path)["States"])
        if state.body["Type"] == "Task"
        and not (
            isinstance(state.body.get("TimeoutSeconds"), int) and state.body["TimeoutSeconds"] > 0
        )
        and "TimeoutSecondsPath" not in state.body
    ]
    assert missing == []


def test_no_retry_matches_every_error(asl_path: Path) -> None:
    offending = [
        state.path
        for state in walk(definition(asl_path)["States"])
        for retrier in state.body.get("Retry", [])
        if "States.ALL" in retrier["ErrorEquals"]
    ]
    assert offending == []


def test_retries_name_only_step_functions_lambda_or_temporary_errors(asl_path: Path) -> None:
    unknown = [
        f"{state.path}: {error}"
        for state in walk(definition(asl_path)["States"])
        for retrier in state.body.get("Retry", [])
        for error in retrier["ErrorEquals"]
        if not (error.startswith(("Lambda.", "States.")) or error in RETRIED_EXCEPTIONS)
    ]
    assert unknown == []


def test_the_temporary_errors_are_retried_by_every_lambda_task(asl_path: Path) -> None:
    # The exceptions documented as retried must actually be retried by each Lambda task
    for state in walk(definition(asl_path)["States"]):
        if state.body["Type"] != "Task":
            continue
        retried = {e for r in state.body.get("Retry", []) for e in r["ErrorEquals"]}
        assert {"AwsThrottled", "AwsUnavailable", "ConcurrentUpdate"} <= retried, state.path


def test_the_create_pipeline_retries_every_temporary_error_a_task_can_raise() -> None:
    # Its tasks reach every adapter: a TemporaryError it did not name would fail a stage
    # instead of being retried.
    asl = definition(ROOT / "statemachines" / "create_cluster.asl.json")
    for state in walk(asl["States"]):
        if state.body["Type"] == "Task":
            retried = {e for r in state.body.get("Retry", []) for e in r["ErrorEquals"]}
            assert retried >= RETRIED_EXCEPTIONS, state.path


def test_every_work_state_catches_into_the_failure_recorder(asl_path: Path) -> None:
    asl = definition(asl_path)
    recorder_states = recorders(asl)
    # Given exactly one state that records failures
    assert len(recorder_states) == 1, "one Task runs the `fail` (or `fail-...`) task"
    ((recorder_name, recorder),) = recorder_states.items()
    error_path = recorder["Parameters"]["error.$"]

    def catches(body: dict[str, Any]) -> bool:
        return any(
            "States.ALL" in catcher["ErrorEquals"]
            and catcher["Next"] == recorder_name
            and catcher.get("ResultPath") == error_path
            for catcher in body.get("Catch", [])
        )

    # Then every Task and Parallel (but the recorder) catches every error into it,
    # or runs inside a Parallel/Map that does
    uncovered = [
        state.path
        for state in walk(asl["States"])
        if state.body["Type"] in {"Task", "Parallel", "Map"}
        and state.name != recorder_name
        and not catches(state.body)
        and not any(catches(outer) for outer in state.enclosing)
    ]
    assert uncovered == []
    # And the recorder has no Catch (it must not loop into itself)
    assert "Catch" not in recorder


def test_placeholders_are_definition_substitutions(asl_path: Path) -> None:
    template = load_template()
    machines = state_machines_using(template, asl_path)
    assert len(machines) == 1, f"{asl_path.name} is used by one state machine in template.yaml"
    substitutions = set(machines[0].get("DefinitionSubstitutions", {}))
    used = set(PLACEHOLDER.findall(asl_path.read_text()))
    assert used - substitutions == set(), "placeholders without a DefinitionSubstitutions key"
    assert substitutions - used == set(), "DefinitionSubstitutions keys the definition never uses"


def test_no_arn_names_a_partition_of_its_own(asl_path: Path) -> None:
    # An integration ARN of another partition (arn:aws:states:::... in aws-cn) is accepted when
    # the state machine is created and fails every execution: the partition is the stack's.
    assert re.findall(r"arn:(?!\$\{Partition\}:)[^:\"]*:", asl_path.read_text()) == []
    machine, = state_machines_using(load_template(), asl_path)
    if "${Partition}" in asl_path.read_text():
        assert machine["DefinitionSubstitutions"]["Partition"] == {"Ref": "AWS::Partition"}


def routers_by_placeholder(template: dict[str, Any]) -> dict[str, TaskRouter]:
    """The task router of the function each `${...Arn}` placeholder names."""
    by_function = {
        "OperationTasksFunction": operation_tasks_router,
        "ClusterTasksFunction": create_router,
        "CapacityTasksFunction": capacity_tasks_router,
        "DiscoverFunction": discover_router,
        "FeatureTasksFunction": feature_tasks_router,
        "TeardownTasksFunction": teardown_tasks_router,
    }
    routers: dict[str, TaskRouter] = {}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::Serverless::StateMachine":
            continue
        for key, value in resource["Properties"].get("DefinitionSubstitutions", {}).items():
            if "Fn::GetAtt" not in value:
                continue  # not a function (the partition)
            logical_id, attribute = value["Fn::GetAtt"]
            assert attribute == "Arn"
            routers[key] = by_function[logical_id]
    return routers


def test_every_task_state_names_a_task_of_the_function_it_invokes(asl_path: Path) -> None:
    routers = routers_by_placeholder(load_template())
    for state in walk(definition(asl_path)["States"]):
        if state.body["Type"] != "Task":
            continue
        assert task_name(state) in routers[function_placeholder(state)].names, state.path
