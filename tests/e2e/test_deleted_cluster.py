"""A DELETED cluster's routes answer from its record, end to end on the local cloud.

After a real teardown, every operation of docs/openapi.json under `/clusters/{tag}` is sent (its
path parameters filled, a minimal valid body where it takes one) while the local cloud's IAM
enforcement watches every call: each answers 409 ClusterDeleted naming the status (the record
itself, and the routes that read only hypd's own records, answer as for any cluster), never a
5xx, and the API function calls nothing but its own table (the record read), nothing else runs,
nothing is started.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from hypd_cli.api_client import ApiClient
from hypd_local.iam.enforce import Authorization
from tests.conftest import ROOT
from tests.e2e.capacity import TAG, created_cluster, make_unhealthy, operations_of, run
from tests.e2e.teardown import FALCON, TEAM, nothing_left
from tests.e2e.test_workloads import job_body
from tests.support import group_body

DOCUMENT = json.loads((ROOT / "docs" / "openapi.json").read_text())
TAG_PATH = "/clusters/{tag}"
BODIES: dict[str, dict[str, Any]] = {
    "setAutoscaling": {"enabled": False},
    "setFeatures": {"trainingOperator": {"enabled": True}},
    "setHealthPolicy": {},
    "deployInferenceEndpoint": FALCON,
    "invokeInferenceEndpoint": {"body": {"inputs": "hello"}},
    "addInstanceGroup": group_body(name="more", count=1),
    "updateInstanceGroup": {"count": 1},
    "setProtection": {"enabled": True},
    "setTeam": TEAM,
    "submitTrainingJob": job_body(),
}
"""A minimal valid body of each tag-scoped operation that takes one (the request validation
runs before the guard: a 409 shows the body passed it)."""
RECORD_READS = {"getCluster", "getHealthPolicy", "getNodeHealth"}
"""The record, and the reads of hypd's own records (hypd.api.deleted_clusters.RECORD_READS):
answered as for any cluster."""


def tag_scoped() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(METHOD, path, operation) of every operation of /clusters/{tag} and under it in the
    document."""
    for path, item in DOCUMENT["paths"].items():
        if path == TAG_PATH or path.startswith(f"{TAG_PATH}/"):
            for method, operation in item.items():
                yield method.upper(), path, operation


def filled(path: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)


def test_every_route_of_a_deleted_cluster_answers_from_its_record_without_calling_aws(
    api: ApiClient, cloud: Any
) -> None:
    # Given a cluster with a node that had a health event, torn down for real
    created_cluster(api, cloud)
    node = str(api.get(f"/clusters/{TAG}/nodes")["nodes"][0]["nodeId"])
    make_unhealthy(cloud, node, action="Reboot")
    teardown = run(api, cloud, api.call("deleteCluster", tag=TAG))
    assert teardown["status"] == "SUCCEEDED", teardown.get("error")
    nothing_left(cloud)
    cloud.wait_for_executions(timeout=120)
    history = operations_of(api)
    operations = list(tag_scoped())
    taking_bodies = {op["operationId"] for _m, _p, op in operations if "requestBody" in op}
    assert taking_bodies == set(BODIES), "every operation with a body has one here"
    assert len(operations) == 34

    # When every tag-scoped route is sent, each call any principal makes being watched
    api_role = cloud.stack.functions["ApiFunction"].role_arn
    seen: list[Authorization] = []
    answers: dict[str, tuple[int, dict[str, Any], list[Authorization]]] = {}
    values = {"tag": TAG, "nodeId": node, "name": "workers", "team": "ml"}
    with cloud.watch_authorizations(seen.append):
        for method, path, operation in operations:
            seen.clear()
            body = BODIES.get(operation["operationId"])
            data = json.dumps(body).encode() if body is not None else None
            answer = api.send(method, filled(path, values), data=data)
            answers[operation["operationId"]] = (answer.status, json.loads(answer.body), [*seen])
    cloud.wait_for_executions(timeout=120)

    # Then each is the record's 409 ClusterDeleted naming the status and the teardown (a DELETE
    # without forget too), never a 5xx; the record reads give their answer (the record, the
    # health history kept)
    for operation_id, (status, body, _calls) in answers.items():
        if operation_id in RECORD_READS:
            assert status == 200, (operation_id, body)
            continue
        assert (status, body["code"]) == (409, "ClusterDeleted"), (operation_id, body)
        assert body["details"] == {
            "tag": TAG, "status": "DELETED", "operationId": teardown["id"]}, operation_id
        assert f"cluster {TAG} is DELETED" in body["message"]
        assert f"DELETE /clusters/{TAG}?forget=true" in body["message"]
    assert answers["getCluster"][1]["status"] == "DELETED"
    assert answers["getNodeHealth"][1]["nodeId"] == node
    # And the API function read its table and called nothing else; no other principal called
    # anything (nothing was started)
    for operation_id, (_status, _body, calls) in answers.items():
        assert {c.principal.arn for c in calls} == {api_role}, operation_id
        assert {c.operation for c in calls} <= {"dynamodb:GetItem", "dynamodb:Query"}, (
            operation_id, sorted({c.operation for c in calls}))
        assert all(c.denial is None for c in calls), operation_id
        assert "dynamodb:GetItem" in {c.operation for c in calls}, operation_id  # the record
    assert operations_of(api) == history

    # And the record is still read, and forgotten; then the tag is unknown (404 as before)
    assert api.get(f"/clusters/{TAG}")["status"] == "DELETED"
    assert api.call("deleteCluster", tag=TAG, forget=True) == {"tag": TAG, "forgotten": True}
    for method, path in (("GET", f"/clusters/{TAG}"), ("GET", f"/clusters/{TAG}/nodes")):
        gone = api.send(method, path)
        assert (gone.status, json.loads(gone.body)["code"]) == (404, "NotFound")
