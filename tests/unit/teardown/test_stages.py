"""How a teardown stage runs (hypd.teardown.stages): it ends only once nothing of its part is
left, then reports deleted what the plan listed and what else it found; it waits on the
stage's schedule; past its budget it fails naming what is left and why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from hypd.aws.dynamodb import Table
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import OperationKind, StageStatus
from hypd.operations.starter import new_operation
from hypd.operations.steps import Steps
from hypd.operations.store import OperationStore
from hypd.tasks import TaskRouter
from hypd.teardown.inputs import TeardownInput
from hypd.teardown.plan import Resource
from hypd.teardown.stages import WAITS, Look, TeardownFailed, stage_task
from tests.unit.support import FakeClock

pytestmark = pytest.mark.usefixtures("fixed_clock")

PLANNED = [Resource("FsxFileSystem", "fs-1", "arn:fs-1")]


@dataclass
class Services:
    operations: OperationStore
    locks: LockStore
    looks: list[Look] = field(default_factory=list)
    seen: list[list[tuple[str, str]]] = field(default_factory=list)

    @property
    def steps(self) -> Steps:
        return Steps(self.operations, self.locks)

    def client(self, service: str) -> Any:
        raise AssertionError("the looks are the test's")


def look(services: Services, where: TeardownInput, known: Sequence[Resource],
         start: bool) -> Look:
    services.seen.append([(r.type, r.name) for r in known])
    return services.looks.pop(0)


@pytest.fixture
def services(table: Table) -> Services:
    return Services(OperationStore(table), LockStore(table))


@pytest.fixture
def router() -> TaskRouter:
    routed = TaskRouter()
    stage_task(routed, "storage", look)
    return routed


def started(services: Services) -> str:
    work = TeardownInput(tag="t", eks_name="hypd-t", hyperpod_name="hypd-t",
                         planned={"storage": [r.view() for r in PLANNED]})
    operation = services.operations.create(
        new_operation(OperationKind.DELETE_CLUSTER, work, cluster_tag="t"))
    services.operations.update(operation.id, lifecycle.begin)
    return operation.id


def call(router: TaskRouter, services: Services, name: str, operation_id: str) -> Any:
    return router.dispatch({"task": name, "operationId": operation_id}, services)


def test_a_stage_ends_once_nothing_is_left_and_reports_the_plan_and_what_it_found(
        router: TaskRouter, services: Services, fixed_clock: FakeClock) -> None:
    operation_id = started(services)
    extra = Resource("FsxFileSystem", "fs-2")
    services.looks = [Look([PLANNED[0], extra]), Look([extra]), Look()]

    first = call(router, services, "teardown-storage", operation_id)
    assert first["ready"] is False
    assert first["waitSeconds"] == WAITS["storage"].first_look_seconds
    progress = services.operations.get(operation_id).stage("storage").progress or {}
    assert [r["name"] for r in progress["remaining"]] == ["fs-1", "fs-2"]

    fixed_clock.advance(first["waitSeconds"])
    second = call(router, services, "teardown-storage-check", operation_id)
    assert second["ready"] is False
    assert second["waitSeconds"] == WAITS["storage"].interval_seconds
    # The second look knows the plan's and what the first one found (it may be gone now).
    assert services.seen[1] == [("FsxFileSystem", "fs-1"), ("FsxFileSystem", "fs-2")]

    fixed_clock.advance(second["waitSeconds"])
    assert call(router, services, "teardown-storage-check", operation_id)["ready"] is True
    stage = services.operations.get(operation_id).stage("storage")
    assert stage.status is StageStatus.SUCCEEDED
    assert stage.output == {"deleted": [
        {"type": "FsxFileSystem", "name": "fs-1", "arn": "arn:fs-1"},
        {"type": "FsxFileSystem", "name": "fs-2"}]}


def test_a_stage_with_nothing_to_work_in_ends_at_once_saying_why_it_skipped(
        router: TaskRouter, services: Services) -> None:
    operation_id = started(services)
    services.looks = [Look(skipped="EKS cluster hypd-t never became ACTIVE")]

    assert call(router, services, "teardown-storage", operation_id)["ready"] is True
    stage = services.operations.get(operation_id).stage("storage")
    assert stage.status is StageStatus.SUCCEEDED
    # The plan's resources are reported as ever (a stage never deletes less than planned).
    assert stage.output == {
        "deleted": [{"type": "FsxFileSystem", "name": "fs-1", "arn": "arn:fs-1"}],
        "skipped": "EKS cluster hypd-t never became ACTIVE"}


def test_a_stage_waiting_past_its_budget_fails_naming_what_is_left_and_why(
        router: TaskRouter, services: Services, fixed_clock: FakeClock) -> None:
    operation_id = started(services)
    stuck = Look([PLANNED[0]], reason="FSx says: file system is in use")
    services.looks = [stuck, stuck]
    call(router, services, "teardown-storage", operation_id)

    fixed_clock.advance(WAITS["storage"].give_up_after_seconds + 1)
    with pytest.raises(TeardownFailed) as failed:
        call(router, services, "teardown-storage-check", operation_id)
    assert "stage storage: still there after 60 min: FsxFileSystem fs-1" in str(failed.value)
    assert "FSx says: file system is in use" in str(failed.value)
    assert failed.value.details["remaining"] == [
        {"type": "FsxFileSystem", "name": "fs-1", "arn": "arn:fs-1"}]


def test_what_a_stage_waits_for_alone_is_never_reported_deleted(
        router: TaskRouter, services: Services) -> None:
    operation_id = started(services)
    pod = Resource("Pod", "job-0", detail={"namespace": "default"})
    services.looks = [Look(waiting=[pod]), Look()]
    call(router, services, "teardown-storage", operation_id)
    call(router, services, "teardown-storage-check", operation_id)
    output = services.operations.get(operation_id).stage("storage").output or {}
    assert [r["name"] for r in output["deleted"]] == ["fs-1"]
