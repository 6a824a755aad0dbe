"""POST /clusters over HTTP on the local cloud: validation against the catalogue, the cluster
record written with the operation, 409s, and two simultaneous creates of one tag.

These tests judge what the API does when it starts a create; the pipeline's own stages are
the integration tests' concern, so each started operation is cancelled once checked.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, ApiError
from hypd_local.seed import seed_clusters
from tests.support import create_body as support_create_body
from tests.support import group_body


def group(**overrides: Any) -> dict[str, Any]:
    return group_body(**{"count": 1, **overrides})


def create_body(**overrides: Any) -> dict[str, Any]:
    return support_create_body(
        **{"availabilityZone": "us-west-2d", "instanceGroups": [group()], **overrides}
    )


def cancel_and_wait(cloud: Any, api: ApiClient, operation_id: str) -> dict[str, Any]:
    """Stop the pipeline this test started; the operation as it ended."""
    try:
        api.post(f"/operations/{operation_id}/cancel")
    except ApiError as error:  # it ended already (its pipeline is not what these tests judge)
        if error.code != "OperationNotCancellable":
            raise
    cloud.wait_for_executions(timeout=120)
    return api.get(f"/operations/{operation_id}")


def test_a_create_records_its_cluster_and_operation(cloud: Any, api: ApiClient) -> None:
    # When a cluster is created
    accepted = api.post("/clusters", create_body())
    # Then 202 with a create-cluster operation
    assert accepted["kind"] == "create-cluster"
    assert accepted["status"] in {"PENDING", "RUNNING"}  # the execution may have begun
    operation_id = accepted["operationId"]
    # And the cluster is there at once, CREATING by that operation
    cluster = api.get("/clusters/train")
    assert (cluster["source"], cluster["status"]) == ("created", "CREATING")
    assert cluster["lastOperationId"] == operation_id
    assert cluster["region"] == cloud.region
    # And the operation carries the resolved request, listed under the cluster
    operation = api.get(f"/operations/{operation_id}")
    assert operation["clusterTag"] == "train"
    assert operation["input"]["availabilityZone"] == "us-west-2d"
    assert operation["input"]["instanceGroups"][0]["resolvedCapacity"]["type"] == "on-demand"
    assert operation["executionArn"].endswith(f":{operation_id}")
    listed = api.get("/operations", clusterTag="train")["operations"]
    assert [op["id"] for op in listed] == [operation_id]
    # And once cancelled, it is CANCELLED with the request recorded
    ended = cancel_and_wait(cloud, api, operation_id)
    assert ended["status"] == "CANCELLED", ended
    assert ended["cancelRequestedAt"]


def test_a_training_plan_gives_the_zone(cloud: Any, api: ApiClient) -> None:
    # Given the local cloud's active p5 plan (4 instances in us-west-2a)
    plan = next(
        p for p in api.get("/catalog/training-plans")["trainingPlans"] if p["name"] == "p5-active"
    )
    # When a group on it is created without a zone
    body = create_body(
        availabilityZone=None,
        instanceGroups=[
            group(
                instanceType="ml.p5.48xlarge",
                count=2,
                capacity={"type": "training-plan", "trainingPlanArn": plan["arn"]},
            )
        ],
    )
    operation_id = api.post("/clusters", body)["operationId"]
    # Then the plan's zone is the cluster's
    operation = api.get(f"/operations/{operation_id}")
    assert operation["input"]["availabilityZone"] == "us-west-2a"
    assert operation["input"]["availabilityZoneSource"] == "training-plan"
    cancel_and_wait(cloud, api, operation_id)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (create_body(tag="bad_tag"), "tag"),
        (create_body(availabilityZone="us-west-2z"), "availabilityZone"),
        # EC2 offers ml.g5.xlarge's type only in other zones of the Region
        (
            create_body(instanceGroups=[group(instanceType="ml.g5.xlarge")]),
            "instanceGroups[0].instanceType",
        ),
        (create_body(instanceGroups=[group(efaOnly=True)]), "instanceGroups[0].efaOnly"),
        (create_body(storage={"s3": {"bucket": "x"}}), "storage.s3.bucket"),
    ],
)
def test_a_bad_request_is_400_naming_the_field(
    api: ApiClient, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(ApiError) as error:
        api.post("/clusters", body)
    assert error.value.status == 400
    assert error.value.code == "ValidationError"
    assert field in error.value.message
    # and nothing was started or recorded
    assert api.get("/operations")["operations"] == []
    assert api.get("/clusters")["clusters"] == []


def test_a_discovered_clusters_tag_is_409(cloud: Any, api: ApiClient) -> None:
    # Given discovered clusters
    seed_clusters(cloud)
    api.post("/clusters/discover")
    cloud.wait_for_executions(timeout=60)
    tag = api.get("/clusters")["clusters"][0]["tag"]
    # When one of their tags is created
    with pytest.raises(ApiError) as error:
        api.post("/clusters", create_body(tag=tag))
    # Then 409 ClusterExists names it, and no create started
    assert error.value.status == 409
    assert error.value.code == "ClusterExists"
    assert error.value.details["tag"] == tag
    assert error.value.details["source"] == "discovered"
    assert api.get("/operations", clusterTag=tag)["operations"] == []


def test_two_simultaneous_creates_of_one_tag_start_one(cloud: Any, api: ApiClient) -> None:
    # Given two clients that create the same tag at the same moment
    barrier = threading.Barrier(2)
    accepted: list[dict[str, Any]] = []
    refused: list[ApiError] = []

    def create() -> None:
        client = ApiClient(cloud.api_url)
        barrier.wait()
        try:
            accepted.append(client.post("/clusters", create_body(tag="race")))
        except ApiError as exc:
            refused.append(exc)

    threads = [threading.Thread(target=create) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # Then exactly one is accepted and the other is a 409
    assert len(accepted) == 1, refused
    assert [exc.status for exc in refused] == [409]
    assert refused[0].code in {"ClusterExists", "Conflict"}
    (winner,) = [a["operationId"] for a in accepted]
    # And there is one operation for the tag, and the cluster is the winner's
    assert [op["id"] for op in api.get("/operations", clusterTag="race")["operations"]] == [winner]
    assert api.get("/clusters/race")["lastOperationId"] == winner
    cancel_and_wait(cloud, api, winner)
