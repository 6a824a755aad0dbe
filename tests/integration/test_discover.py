"""The discover operation on the local cloud: real API handler, real ASL, real task handlers."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, ApiError
from hypd_local.seed import seed_clusters
from tests.support import fail_calls, records_in_table


def _discover(api: ApiClient, body: dict[str, Any] | None = None) -> str:
    accepted = api.post("/clusters/discover", body)
    assert accepted["status"] in {"PENDING", "RUNNING"}
    return str(accepted["operationId"])


def test_discover_links_and_records_clusters(cloud: Any, api: ApiClient) -> None:
    # Given an account with two HyperPod clusters on their EKS clusters and one bare EKS cluster
    seed_clusters(cloud)

    # When a client discovers them through the REST API
    operation_id = _discover(api)
    cloud.wait_for_executions(timeout=60)

    # Then the operation succeeded stage by stage, each on its first attempt
    operation = api.get(f"/operations/{operation_id}")
    assert operation["status"] == "SUCCEEDED", operation
    assert [(s["name"], s["status"], s["attempts"]) for s in operation["stages"]] == [
        ("eks-clusters", "SUCCEEDED", 1),
        ("hyperpod-clusters", "SUCCEEDED", 1),
        ("record", "SUCCEEDED", 1),
    ]
    assert operation["executionArn"].endswith(f":{operation_id}")
    # And every HyperPod cluster is recorded with the EKS cluster it runs on
    clusters = {c["tag"]: c for c in api.get("/clusters")["clusters"]}
    linked = [c for c in clusters.values() if c["hyperpod"]]
    assert linked, clusters
    for cluster in linked:
        assert cluster["hyperpod"]["eksClusterArn"] == cluster["eks"]["arn"]
        assert cluster["source"] == "discovered"
    assert any(c["hyperpod"] is None and c["eks"] for c in clusters.values())
    assert sorted(operation["output"]["recorded"]) == sorted(clusters)
    # And the records are in DynamoDB
    assert set(records_in_table(cloud, "CLUSTER#")) == {f"CLUSTER#{t}" for t in clusters}
    assert records_in_table(cloud, f"OP#{operation_id}") == [f"OP#{operation_id}"]


def test_rediscovery_keeps_tags_and_adds_nothing(cloud: Any, api: ApiClient) -> None:
    # Given clusters discovered once
    seed_clusters(cloud)
    _discover(api)
    cloud.wait_for_executions(timeout=60)
    first = {c["tag"]: c["createdAt"] for c in api.get("/clusters")["clusters"]}

    # When discovery runs again
    operation_id = _discover(api)
    cloud.wait_for_executions(timeout=60)

    # Then the same tags are recorded, with their original creation time
    assert api.get(f"/operations/{operation_id}")["status"] == "SUCCEEDED"
    again = {c["tag"]: c["createdAt"] for c in api.get("/clusters")["clusters"]}
    assert again == first


def test_throttling_is_retried_with_virtual_back_off(cloud: Any, api: ApiClient) -> None:
    # Given SageMaker throttles the first two ListClusters calls (after botocore's own retries)
    seed_clusters(cloud)
    started = cloud.clock.now()
    with fail_calls(cloud, "sagemaker", "list_clusters", "ThrottlingException", times=2 * 4):
        # When discovery runs
        operation_id = _discover(api)
        cloud.wait_for_executions(timeout=60)

    # Then the state machine retried the stage until it succeeded, and time only moved virtually
    operation = api.get(f"/operations/{operation_id}")
    assert operation["status"] == "SUCCEEDED", operation
    stage = next(s for s in operation["stages"] if s["name"] == "hyperpod-clusters")
    assert stage["attempts"] == 3
    assert stage["error"] is None
    assert (cloud.clock.now() - started).total_seconds() >= 5


def test_permanent_error_fails_the_stage_with_the_aws_error(cloud: Any, api: ApiClient) -> None:
    # Given the control plane's role may not list HyperPod clusters
    seed_clusters(cloud)
    with fail_calls(cloud, "sagemaker", "list_clusters", "AccessDeniedException", times=100):
        # When discovery runs
        operation_id = _discover(api)
        cloud.wait_for_executions(timeout=60)

    # Then the HyperPod stage failed once (no retry of a permanent error) with AWS's code
    operation = api.get(f"/operations/{operation_id}")
    assert operation["status"] == "FAILED"
    stage = next(s for s in operation["stages"] if s["name"] == "hyperpod-clusters")
    assert stage["status"] == "FAILED"
    assert stage["attempts"] == 1
    assert stage["error"]["code"] == "AccessDeniedException"
    assert operation["error"]["code"] == "AccessDeniedException"
    record = next(s for s in operation["stages"] if s["name"] == "record")
    assert record["status"] == "PENDING"
    # And nothing was recorded as a cluster
    assert api.get("/clusters")["clusters"] == []
    # And a new discover may start (the failed one released its lock)
    _discover(api)
    cloud.wait_for_executions(timeout=60)


def test_second_discover_while_one_runs_is_refused(cloud: Any, api: ApiClient) -> None:
    # Given a discover that is still listing clusters
    seed_clusters(cloud)
    release = threading.Event()
    with fail_calls(cloud, "eks", "list_clusters", None, times=1, block=release):
        first = _discover(api)

        # When a second discover arrives
        with pytest.raises(ApiError) as refused:
            api.post("/clusters/discover")
        release.set()
        cloud.wait_for_executions(timeout=60)

    # Then it is refused with 409, naming the running operation
    assert refused.value.status == 409
    assert refused.value.details["operationId"] == first
    assert api.get(f"/operations/{first}")["status"] == "SUCCEEDED"


def test_aborted_execution_cancels_the_operation(cloud: Any, api: ApiClient) -> None:
    # Given a discover that is still listing clusters
    seed_clusters(cloud)
    release = threading.Event()
    with fail_calls(cloud, "eks", "list_clusters", None, times=1, block=release):
        operation_id = _discover(api)
        execution_arn = api.get(f"/operations/{operation_id}")["executionArn"]

        # When someone stops its execution in the Step Functions console
        cloud.client("stepfunctions").stop_execution(executionArn=execution_arn)
        release.set()
        cloud.wait_for_executions(timeout=60)

    # Then the status-change event reconciles the operation to CANCELLED and frees the lock
    operation = api.get(f"/operations/{operation_id}")
    assert operation["status"] == "CANCELLED", operation
    _discover(api)
    cloud.wait_for_executions(timeout=60)
