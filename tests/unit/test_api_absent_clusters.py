"""The guard of every /clusters/{tag}/... route (hypd.api.absent_clusters): which routes it
covers, and, through functions/api/app.py in-process on moto, that a DELETED record is answered
409 ClusterDeleted and a CREATING or FAILED one whose HyperPod cluster was not made 409
ClusterNotActive before the route runs, while other records and unknown tags reach it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hypd.aws.dynamodb import Table
from hypd.clusters.models import ClusterSource, ClusterStatus
from hypd.clusters.store import ClusterStore
from hypd.operations.lifecycle import new_operation
from hypd.operations.models import Operation, OperationKind, StageStatus
from hypd.operations.store import OperationStore
from tests.unit.support import (
    FakeClock,
    cluster_record,
    eks_arn,
)
from tests.unit.test_api_handler import discover_api

pytestmark = pytest.mark.usefixtures("fresh_imports")

TEARDOWN = "op-" + "d" * 32


def test_the_guard_covers_every_route_under_a_tag_but_the_reads_of_hypds_own_records() -> None:
    from hypd.api.absent_clusters import BEFORE_CREATION, RECORD_READS, guarded
    from hypd.api.app import declared_routes

    routes = {(method, rule) for _module, method, rule in declared_routes()}
    assert routes >= BEFORE_CREATION >= RECORD_READS, "every exception is a route"
    under_a_tag = {(method, rule) for method, rule in routes if rule.startswith("/clusters/<tag>/")}
    assert {route for route in routes if guarded(*route)} == under_a_tag - RECORD_READS
    assert {route for route in routes if guarded(*route, deleted=False)} == (
        under_a_tag - BEFORE_CREATION)
    # The record itself, and its DELETE (?forget=true removes a DELETED record), are not under it
    assert not guarded("GET", "/clusters/<tag>")
    assert not guarded("DELETE", "/clusters/<tag>")
    assert guarded("get", "/clusters/<tag>/nodes")


@pytest.fixture
def call(monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table,
         fixed_clock: FakeClock) -> Any:
    """The API function in-process (`discover_api`): (status, body) of a request."""
    api = discover_api(monkeypatch, template, table)

    def send(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        answer = api.call(method, path, body=json.dumps(body) if body is not None else None)
        return answer.status, answer.body

    return send


def record(table: Table, status: ClusterStatus, operation_id: str = TEARDOWN) -> None:
    ClusterStore(table).save(
        cluster_record("train", eks_arn("hypd-train"), source=ClusterSource.CREATED).model_copy(
            update={"status": status, "last_operation_id": operation_id}
        )
    )


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/clusters/train/nodes", None),
        ("GET", "/clusters/train/health", None),
        ("GET", "/clusters/train/teardown-plan", None),
        ("PUT", "/clusters/train/health-policy", {"action": "reboot"}),
        ("PATCH", "/clusters/train/instance-groups/workers", {"count": 1}),
    ],
)
def test_a_deleted_clusters_route_is_409_cluster_deleted_naming_its_status(
    call: Any, table: Table, method: str, path: str, body: dict[str, Any] | None
) -> None:
    # Given the record of a cluster a teardown deleted (nothing of it in moto's SageMaker)
    record(table, ClusterStatus.DELETED)
    # When one of its routes is asked
    status, answer = call(method, path, body)
    # Then the record answers: 409 ClusterDeleted, its status in the message and the details
    assert (status, answer["code"]) == (409, "ClusterDeleted"), answer
    assert answer["details"] == {"tag": "train", "status": "DELETED", "operationId": TEARDOWN}
    assert answer["message"].startswith(
        f"cluster train is DELETED: it was torn down by operation {TEARDOWN}"
    )
    assert "DELETE /clusters/train?forget=true removes the record" in answer["message"]


def test_a_bad_body_is_still_a_400_before_the_guard(call: Any, table: Table) -> None:
    record(table, ClusterStatus.DELETED)
    status, answer = call("PATCH", "/clusters/train/instance-groups/workers", {"count": -1})
    assert (status, answer["code"]) == (400, "ValidationError")


def test_the_record_and_the_reads_of_hypds_own_records_still_answer(
    call: Any, table: Table
) -> None:
    record(table, ClusterStatus.DELETED)
    assert call("GET", "/clusters/train")[1]["status"] == "DELETED"
    status, policy = call("GET", "/clusters/train/health-policy")
    assert (status, policy["default"]) == (200, True)
    status, history = call("GET", "/clusters/train/nodes/i-0123456789abcdef0/health")
    assert (status, history["code"]) == (404, "NotFound")  # no event of it was recorded


@pytest.mark.parametrize("status", [ClusterStatus.ACTIVE, ClusterStatus.DELETING])
def test_a_cluster_not_deleted_reaches_its_route(
    call: Any, table: Table, status: ClusterStatus
) -> None:
    record(table, status)
    answer, body = call("PUT", "/clusters/train/health-policy", {"action": "reboot"})
    assert answer == 200, body
    assert body["policy"]["action"] == "reboot"


def test_an_unknown_tag_is_still_the_routes_404(call: Any) -> None:
    status, answer = call("GET", "/clusters/ghost/nodes")
    assert (status, answer["code"], answer["details"]) == (404, "NotFound", {"tag": "ghost"})
    assert answer["message"] == "cluster ghost does not exist"


def creation(hyperpod: StageStatus) -> Operation:
    """A creation of cluster `train` whose `hyperpod` stage is `hyperpod`."""
    operation = new_operation(OperationKind.CREATE_CLUSTER, cluster_tag="train")
    return operation.model_copy(update={"stages": [
        stage.model_copy(update={"status": hyperpod}) if stage.name == "hyperpod" else stage
        for stage in operation.stages]})


def creating(table: Table, status: ClusterStatus, hyperpod: StageStatus) -> str:
    """A CREATING or FAILED record and its creation, whose `hyperpod` stage is `hyperpod`; the
    creation's id."""
    operation = creation(hyperpod)
    table.put(*OperationStore(table).new(operation))
    record(table, status, operation.id)
    return operation.id


@pytest.mark.parametrize("path", ["/clusters/train/nodes", "/clusters/train/health"])
def test_a_cluster_whose_creation_failed_before_its_hyperpod_cluster_is_409_naming_its_status(
    call: Any, table: Table, path: str
) -> None:
    # Given a creation that failed at its HyperPod stage (no HyperPod cluster in moto either)
    created = creating(table, ClusterStatus.FAILED, StageStatus.FAILED)
    # When a route that reads the HyperPod cluster is asked
    status, answer = call("GET", path)
    # Then the record answers: 409 ClusterNotActive, its status and how to resume or delete it
    assert (status, answer["code"]) == (409, "ClusterNotActive"), answer
    assert answer["details"] == {"tag": "train", "status": "FAILED", "operationId": created}
    assert answer["message"] == (
        f"cluster train is FAILED: its creation (operation {created}) failed before its "
        "HyperPod cluster was made, so there is nothing to read or change: POST /operations/"
        f"{created}/retry resumes it, DELETE /clusters/train removes what it made")


def test_a_cluster_being_created_before_its_hyperpod_cluster_is_409_naming_its_operation(
    call: Any, table: Table
) -> None:
    created = creating(table, ClusterStatus.CREATING, StageStatus.PENDING)
    status, answer = call("GET", "/clusters/train/instance-groups")
    assert (status, answer["code"], answer["details"]["status"]) == (
        409, "ClusterNotActive", "CREATING")
    assert answer["message"] == (
        "cluster train is CREATING: its HyperPod cluster is not made yet: follow its creation "
        f"with GET /operations/{created}")


def test_a_cluster_not_created_yet_keeps_its_settings_and_its_record(
    call: Any, table: Table
) -> None:
    creating(table, ClusterStatus.FAILED, StageStatus.PENDING)
    assert call("PUT", "/clusters/train/health-policy", {"action": "reboot"})[0] == 200
    assert call("PUT", "/clusters/train/protection", {"enabled": True})[0] == 200
    assert call("GET", "/clusters/train/health-policy")[1]["policy"]["action"] == "reboot"
    assert call("GET", "/clusters/train")[1]["protection"] is True


@pytest.mark.parametrize(
    ("status", "hyperpod", "refused"),
    [
        (ClusterStatus.FAILED, StageStatus.PENDING, "ClusterNotActive"),  # failed at EKS
        (ClusterStatus.FAILED, StageStatus.FAILED, "ClusterNotActive"),
        (ClusterStatus.CREATING, StageStatus.RUNNING, "ClusterNotActive"),
        (ClusterStatus.FAILED, StageStatus.SUCCEEDED, None),  # failed later: its nodes exist
        (ClusterStatus.CREATING, StageStatus.SUCCEEDED, None),
        (ClusterStatus.ACTIVE, StageStatus.SUCCEEDED, None),
        (ClusterStatus.DELETING, StageStatus.SUCCEEDED, None),
        (ClusterStatus.DELETED, StageStatus.SUCCEEDED, "ClusterDeleted"),
    ],
)
def test_the_guard_refuses_only_what_the_record_says_is_absent_from_aws(
    status: ClusterStatus, hyperpod: StageStatus, refused: str | None
) -> None:
    from hypd.api.absent_clusters import refusal

    operation = creation(hyperpod)
    cluster = cluster_record("train", eks_arn("hypd-train"), source=ClusterSource.CREATED)
    cluster = cluster.model_copy(update={"status": status, "last_operation_id": operation.id})
    found = {operation.id: operation}.get
    error = refusal("GET", "/clusters/<tag>/nodes", cluster, found)
    assert (error.code if error else None) == refused
    # the exceptions and the routes outside /clusters/{tag}/ are never refused
    assert refusal("GET", "/clusters/<tag>/health-policy", cluster, found) is None
    assert refusal("GET", "/clusters/<tag>", cluster, found) is None
    assert refusal("GET", "/clusters/<tag>/nodes", None, found) is None  # the route's 404


def test_a_creation_record_that_is_gone_counts_as_no_hyperpod_cluster() -> None:
    from hypd.api.absent_clusters import refusal

    cluster = cluster_record("train", eks_arn("hypd-train"), source=ClusterSource.CREATED)
    cluster = cluster.model_copy(
        update={"status": ClusterStatus.FAILED, "last_operation_id": TEARDOWN})
    error = refusal("GET", "/clusters/<tag>/teams", cluster, lambda _id: None)
    assert (error.code if error else None) == "ClusterNotActive"
    assert refusal("GET", "/clusters/<tag>/teardown-plan", cluster, lambda _id: None) is None
