"""The routes of a cluster absent from AWS answer from its record, end to end on the local cloud.

After a real teardown, and after a real creation that failed at its HyperPod stage, every
operation of docs/openapi.json under `/clusters/{tag}` is sent (its path parameters filled, a
minimal valid body where it takes one) while the local cloud's IAM enforcement watches every
call: each answers 409 naming the status (ClusterDeleted, ClusterNotActive; the exceptions of
hypd.api.absent_clusters answer as for any cluster), never a 5xx, and the API function calls
nothing but its own table (the record read), nothing else runs, nothing is started.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from unittest.mock import ANY

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import follow
from hypd_local.iam.enforce import Authorization
from tests.conftest import ROOT
from tests.e2e.capacity import BUCKET, TAG, created_cluster, make_unhealthy, operations_of, run
from tests.e2e.teardown import FALCON, TEAM, nothing_left
from tests.e2e.test_workloads import job_body
from tests.support import create_body, group_body

DOCUMENT = json.loads((ROOT / "docs" / "openapi.json").read_text())
TAG_PATH = "/clusters/{tag}"
BODIES: dict[str, dict[str, Any]] = {
    "setAutoscaling": {"enabled": False},
    "setFeatures": {"trainingOperator": {"enabled": True}},
    "upgradeCluster": {"kubernetesVersion": "1.34"},
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
"""The record, and the reads of hypd's own records (hypd.api.absent_clusters.RECORD_READS):
answered as for any cluster."""
BEFORE_CREATION = RECORD_READS | {"getTeardownPlan", "setHealthPolicy", "setProtection"}
"""Also answered for a cluster whose HyperPod cluster was not made
(hypd.api.absent_clusters.BEFORE_CREATION): the plan of its DELETE, the record's settings."""
Answers = dict[str, tuple[int, dict[str, Any], list[Authorization]]]
"""operationId -> (status, body, every call any principal made while it was answered)."""


def tag_scoped() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(METHOD, path, operation) of every operation of /clusters/{tag} and under it in the
    document."""
    for path, item in DOCUMENT["paths"].items():
        if path == TAG_PATH or path.startswith(f"{TAG_PATH}/"):
            for method, operation in item.items():
                yield method.upper(), path, operation


def filled(path: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)


def send_each(api: ApiClient, cloud: Any, values: dict[str, str], *, skip: set[str]) -> Answers:
    """Every tag-scoped operation but `skip`, sent once with its body, each call watched."""
    seen: list[Authorization] = []
    answers: Answers = {}
    with cloud.watch_authorizations(seen.append):
        for method, path, operation in tag_scoped():
            if operation["operationId"] in skip:
                continue
            seen.clear()
            body = BODIES.get(operation["operationId"])
            data = json.dumps(body).encode() if body is not None else None
            answer = api.send(method, filled(path, values), data=data)
            answers[operation["operationId"]] = (answer.status, json.loads(answer.body), [*seen])
    cloud.wait_for_executions(timeout=120)
    return answers


def only_the_table_was_read(
    cloud: Any, operation_id: str, calls: list[Authorization], *, writes: bool = False
) -> None:
    """The API function read its table (the record; wrote it, if it `writes`) and called
    nothing else; no other principal called anything (nothing was started)."""
    api_role = cloud.stack.functions["ApiFunction"].role_arn
    allowed = {"dynamodb:GetItem", "dynamodb:Query"} | (
        {"dynamodb:PutItem", "dynamodb:UpdateItem"} if writes else set())
    assert {c.principal.arn for c in calls} == {api_role}, operation_id
    assert {c.operation for c in calls} <= allowed, (
        operation_id, sorted({c.operation for c in calls}))
    assert all(c.denial is None for c in calls), operation_id
    assert "dynamodb:GetItem" in {c.operation for c in calls}, operation_id  # the record


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
    assert len(operations) == 36

    # When every tag-scoped route is sent, each call any principal makes being watched
    values = {"tag": TAG, "nodeId": node, "name": "workers", "team": "ml"}
    answers = send_each(api, cloud, values, skip=set())

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
    # And the API function read its table and called nothing else
    for operation_id, (_status, _body, calls) in answers.items():
        only_the_table_was_read(cloud, operation_id, calls)
    assert operations_of(api) == history

    # And the record is still read, and forgotten; then the tag is unknown (404 as before)
    assert api.get(f"/clusters/{TAG}")["status"] == "DELETED"
    assert api.call("deleteCluster", tag=TAG, forget=True) == {"tag": TAG, "forgotten": True}
    for method, path in (("GET", f"/clusters/{TAG}"), ("GET", f"/clusters/{TAG}/nodes")):
        gone = api.send(method, path)
        assert (gone.status, json.loads(gone.body)["code"]) == (404, "NotFound")


def test_every_route_of_a_cluster_whose_creation_failed_early_answers_from_its_record(
    api: ApiClient, cloud: Any
) -> None:
    # Given a creation that failed at its EKS stage: EKS refused CreateCluster, so the record is
    # FAILED and neither an EKS nor a HyperPod cluster exists (its network stack does)
    cloud.faults.fail("eks", "CreateCluster", code="InvalidParameterException", times=1)
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region})
    creation = follow(api, cloud, str(api.post("/clusters", create_body())["operationId"]),
                      timeout=240)
    assert (creation["status"], api.get(f"/clusters/{TAG}")["status"]) == ("FAILED", "FAILED")
    stages = {s["name"]: s["status"] for s in creation["stages"]}
    assert (stages["eks"], stages["hyperpod"]) == ("FAILED", "PENDING"), stages
    history = operations_of(api)

    # When every tag-scoped route is sent (but the record and its DELETE), each call watched
    values = {"tag": TAG, "nodeId": "i-0123456789abcdef0", "name": "workers", "team": "ml"}
    answers = send_each(api, cloud, values, skip={"getCluster", "deleteCluster"})

    # Then each is the record's 409 ClusterNotActive naming the status and how to resume or
    # delete it, without a call to AWS (GET /nodes and /health were 500 AccessDenied)
    for operation_id, (status, body, calls) in answers.items():
        if operation_id in BEFORE_CREATION:
            continue
        assert (status, body["code"]) == (409, "ClusterNotActive"), (operation_id, body)
        assert body["details"] == {
            "tag": TAG, "status": "FAILED", "operationId": creation["id"]}, operation_id
        assert f"POST /operations/{creation['id']}/retry resumes it" in body["message"]
        only_the_table_was_read(cloud, operation_id, calls)
    # And the exceptions answer as for any cluster: the record's settings (its table only), the
    # node health history (none recorded), the plan of the DELETE that removes what it made
    for operation_id in ("setHealthPolicy", "setProtection", "getHealthPolicy"):
        assert answers[operation_id][0] == 200, answers[operation_id][1]
        only_the_table_was_read(cloud, operation_id, answers[operation_id][2], writes=True)
    assert answers["getNodeHealth"][:2] == (404, {
        "code": "NotFound", "message": ANY, "details": ANY})
    plan = answers["getTeardownPlan"]
    assert plan[0] == 200, plan[1]
    assert [b["code"] for b in plan[1]["blockers"]] == ["DeletionProtected"]  # set just before
    assert operations_of(api) == history
