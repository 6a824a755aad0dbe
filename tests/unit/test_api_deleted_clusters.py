"""The guard of every /clusters/{tag}/... route (hypd.api.deleted_clusters): which routes it
covers, and, through functions/api/app.py in-process on moto, that a DELETED record is answered
409 ClusterDeleted before the route runs, while other records and unknown tags reach it."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from hypd.aws.dynamodb import Table
from hypd.clusters.models import ClusterSource, ClusterStatus
from hypd.clusters.store import ClusterStore
from tests.unit.support import (
    REGION,
    FakeClock,
    FakeLambdaContext,
    cluster_record,
    eks_arn,
)
from tests.unit.test_api_handler import api_event, load_api, state_machine

pytestmark = pytest.mark.usefixtures("fresh_imports")

TEARDOWN = "op-" + "d" * 32


def test_the_guard_covers_every_route_under_a_tag_but_the_reads_of_hypds_own_records() -> None:
    from hypd.api.app import declared_routes
    from hypd.api.deleted_clusters import RECORD_READS, guarded

    routes = {(method, rule) for _module, method, rule in declared_routes()}
    assert routes >= RECORD_READS, "every exempted read is a route"
    covered = {(method, rule) for method, rule in routes if guarded(method, rule)}
    under_a_tag = {(method, rule) for method, rule in routes if rule.startswith("/clusters/<tag>/")}
    assert covered == under_a_tag - RECORD_READS
    # The record itself, and its DELETE (?forget=true removes a DELETED record), are not under it
    assert not guarded("GET", "/clusters/<tag>")
    assert not guarded("DELETE", "/clusters/<tag>")
    assert guarded("get", "/clusters/<tag>/nodes")


@pytest.fixture
def call(
    monkeypatch: pytest.MonkeyPatch,
    template: dict[str, Any],
    table: Table,
    fixed_clock: FakeClock,
) -> Any:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    module = load_api(monkeypatch, template, table, state_machine(sfn, "Discover-unit"))

    def send(method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        event = api_event(method, path, body=json.dumps(body) if body is not None else None)
        raw = module.handler(event, FakeLambdaContext("hypd-api"))
        return raw["statusCode"], json.loads(raw["body"])

    return send


def record(table: Table, status: ClusterStatus) -> None:
    ClusterStore(table).save(
        cluster_record("train", eks_arn("hypd-train"), source=ClusterSource.CREATED).model_copy(
            update={"status": status, "last_operation_id": TEARDOWN}
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
