"""POST /operations/{id}/retry and /cancel over HTTP on the local cloud, with discover
operations (the real discover state machine) made to fail or wait by fault injection."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, ApiError
from hypd_local.seed import seed_clusters
from tests.support import fail_calls


def executions(cloud: Any, operation_id: str) -> dict[str, str]:
    """Name -> status of the discover executions of an operation (`{id}`, `{id}-r{n}`)."""
    sfn = cloud.client("stepfunctions")
    machine = cloud.resources["DiscoverStateMachine"]
    found = sfn.list_executions(stateMachineArn=machine)["executions"]
    return {e["name"]: e["status"] for e in found if e["name"].startswith(operation_id)}


def test_a_failed_operation_is_retried_from_its_failed_stage(cloud: Any, api: ApiClient) -> None:
    # Given a discover that failed in hyperpod-clusters (the role could not list them)
    seed_clusters(cloud)
    with fail_calls(cloud, "sagemaker", "list_clusters", "AccessDeniedException", times=100):
        operation_id = api.post("/clusters/discover")["operationId"]
        cloud.wait_for_executions(timeout=60)
    failed = api.get(f"/operations/{operation_id}")
    assert failed["status"] == "FAILED"

    # When it is retried
    view = api.post(f"/operations/{operation_id}/retry")

    # Then 202 with the operation PENDING (or already RUNNING: the new execution's first task
    # may have run before the answer was read back), the error in history; a discover cannot
    # resume, so it reruns from its first stage
    assert view["status"] in {"PENDING", "RUNNING"}
    assert view["error"] is None
    (retry,) = view["retries"]
    assert retry["resumeFrom"] == "eks-clusters"
    assert retry["failedStage"] == "hyperpod-clusters"
    assert retry["previousError"]["code"] == "AccessDeniedException"
    assert retry["previousExecutionArn"] == failed["executionArn"]
    assert view["executionArn"].endswith(f":{operation_id}-r1")
    # And the new execution runs it to success (attempts count across both executions)
    cloud.wait_for_executions(timeout=60)
    done = api.get(f"/operations/{operation_id}")
    assert done["status"] == "SUCCEEDED", done
    attempts = {s["name"]: s["attempts"] for s in done["stages"]}
    assert attempts == {"eks-clusters": 2, "hyperpod-clusters": 2, "record": 1}
    assert executions(cloud, operation_id) == {
        operation_id: "FAILED",
        f"{operation_id}-r1": "SUCCEEDED",
    }
    assert api.get("/clusters")["clusters"]
    # And a succeeded operation cannot be retried
    with pytest.raises(ApiError) as error:
        api.post(f"/operations/{operation_id}/retry")
    assert (error.value.status, error.value.code) == (409, "OperationNotRetryable")
    assert error.value.details["status"] == "SUCCEEDED"


def test_a_running_operation_is_cancelled_and_can_be_retried(cloud: Any, api: ApiClient) -> None:
    # Given a discover that is still listing EKS clusters
    seed_clusters(cloud)
    release = threading.Event()
    with fail_calls(cloud, "eks", "list_clusters", None, times=1, block=release):
        operation_id = api.post("/clusters/discover")["operationId"]
        # When it is cancelled
        view = api.post(f"/operations/{operation_id}/cancel")
        # Then 202 with the request recorded (the execution's end, reported by the
        # execution-ended rule at once or a moment later, makes it CANCELLED)
        assert view["status"] in {"PENDING", "RUNNING", "CANCELLED"}
        assert view["cancelRequestedAt"]
        release.set()
        cloud.wait_for_executions(timeout=60)

    # Then it is CANCELLED and its lock is free
    cancelled = api.get(f"/operations/{operation_id}")
    assert cancelled["status"] == "CANCELLED", cancelled
    assert executions(cloud, operation_id) == {operation_id: "ABORTED"}
    # And cancelling it again is a 409
    with pytest.raises(ApiError) as error:
        api.post(f"/operations/{operation_id}/cancel")
    assert (error.value.status, error.value.code) == (409, "OperationNotCancellable")
    assert error.value.details["status"] == "CANCELLED"
    # And a retry runs it to the end as {id}-r1
    retried = api.post(f"/operations/{operation_id}/retry")
    assert retried["retries"][0]["previousStatus"] == "CANCELLED"
    assert retried["cancelRequestedAt"] is None
    cloud.wait_for_executions(timeout=60)
    assert api.get(f"/operations/{operation_id}")["status"] == "SUCCEEDED"


def test_retry_while_another_operation_holds_the_lock_is_409(cloud: Any, api: ApiClient) -> None:
    # Given a failed discover, and a newer discover that is still running
    seed_clusters(cloud)
    with fail_calls(cloud, "sagemaker", "list_clusters", "AccessDeniedException", times=100):
        failed = api.post("/clusters/discover")["operationId"]
        cloud.wait_for_executions(timeout=60)
    release = threading.Event()
    with fail_calls(cloud, "eks", "list_clusters", None, times=1, block=release):
        newer = api.post("/clusters/discover")["operationId"]
        # When the failed one is retried
        with pytest.raises(ApiError) as error:
            api.post(f"/operations/{failed}/retry")
        release.set()
        cloud.wait_for_executions(timeout=60)
    # Then 409 names the running one, and the failed one is unchanged
    assert error.value.status == 409
    assert error.value.details["operationId"] == newer
    assert api.get(f"/operations/{failed}")["retries"] == []


@pytest.mark.parametrize("action", ["retry", "cancel"])
def test_unknown_and_malformed_operations(api: ApiClient, action: str) -> None:
    with pytest.raises(ApiError) as error:
        api.post(f"/operations/op-{'0' * 32}/{action}")
    assert (error.value.status, error.value.code) == (404, "NotFound")
    with pytest.raises(ApiError) as error:
        api.post(f"/operations/op-1/{action}")
    assert (error.value.status, error.value.code) == (400, "ValidationError")
    assert "operationId" in error.value.message
