"""Teardown end to end through the REST API on the local cloud: the plan, the refusals, and a
cluster created with FSx, features, a job and an endpoint deleted to nothing (every emulated
service lists none of its resources; the bucket stays), the plan matching what was deleted."""

from __future__ import annotations

from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, ApiError
from tests.e2e.capacity import CLUSTER, TAG, run, stages
from tests.e2e.test_workloads import INFERENCE_ON, TRAINING_ON, create, job_body

TEARDOWN_STAGES = ["workloads", "governance", "hyperpod", "addons", "eks", "storage",
                   "network", "roles", "record"]


def refused(call: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value


def world(cloud: Any) -> dict[str, list[str]]:
    """What every emulated service lists for the cluster now."""
    sagemaker, eks = cloud.client("sagemaker"), cloud.client("eks")
    stacks = [s["StackName"] for s in cloud.client("cloudformation").list_stacks()[
        "StackSummaries"] if s["StackStatus"] != "DELETE_COMPLETE"]
    return {
        "hyperpod": [c["ClusterName"] for c in sagemaker.list_clusters()["ClusterSummaries"]],
        "eks": list(eks.list_clusters()["clusters"]),
        "fsx": [f["FileSystemId"] for f in cloud.client("fsx").describe_file_systems()[
            "FileSystems"]],
        "stacks": stacks,
        "subnets": [s["SubnetId"] for s in cloud.client("ec2").describe_subnets(Filters=[
            {"Name": "tag:hypd:tag", "Values": [TAG]}])["Subnets"]],
        "roles": [r["RoleName"] for r in cloud.client("iam").list_roles()["Roles"]
                  if r["RoleName"].startswith(f"hypd-{TAG}-")],
        "oidc": [p["Arn"] for p in cloud.client("iam").list_open_id_connect_providers()[
            "OpenIDConnectProviderList"]],
        "quotas": [q["Name"] for q in sagemaker.list_compute_quotas()["ComputeQuotaSummaries"]],
        "endpoints": [e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"]],
    }


def test_a_full_cluster_is_torn_down_to_nothing(api: ApiClient, cloud: Any) -> None:
    create(api, cloud, {**TRAINING_ON, **INFERENCE_ON, "taskGovernance": {"enabled": True}})
    team = {"resources": [{"instanceType": "ml.g6.4xlarge", "count": 1}]}
    assert run(api, cloud, api.set_team(TAG, "ml", team))["status"] == "SUCCEEDED"
    job = run(api, cloud, api.submit_training_job(TAG, job_body(nodeCount=1)))
    assert job["status"] == "SUCCEEDED", job.get("error")

    plan = api.call("getTeardownPlan", tag=TAG)
    assert plan["deletable"] is False
    assert [b["code"] for b in plan["blockers"]] == ["WorkloadsRunning"]
    assert [s["stage"] for s in plan["steps"]] == TEARDOWN_STAGES
    planned = {s["stage"]: [r["name"] for r in s["resources"]] for s in plan["steps"]}
    assert planned["workloads"] == ["llama-fsdp"]
    assert planned["governance"][0] == "ml"
    assert planned["hyperpod"] == [CLUSTER]
    assert planned["eks"] == [CLUSTER]
    assert "amazon-sagemaker-hyperpod-training-operator" in planned["addons"]
    assert planned["network"][-1] == f"hypd-{TAG}-network"
    assert [k["name"] for k in plan["kept"]] == ["team-data"]

    # Running jobs refuse it; protection too; then force.
    running = refused(lambda: api.call("deleteCluster", tag=TAG))
    assert (running.status, running.code) == (409, "WorkloadsRunning")
    assert api.call("setProtection", tag=TAG, body={"enabled": True})["enabled"] is True
    protected = refused(lambda: api.call("deleteCluster", tag=TAG, force=True))
    assert (protected.status, protected.code) == (409, "DeletionProtected")
    api.call("setProtection", tag=TAG, body={"enabled": False})

    forced = api.call("getTeardownPlan", tag=TAG, force=True)
    assert forced["deletable"] is True
    accepted = api.call("deleteCluster", tag=TAG, force=True)
    assert accepted["kind"] == "delete-cluster"
    again = refused(lambda: api.call("deleteCluster", tag=TAG, force=True))
    assert again.status == 409
    operation = run(api, cloud, accepted)
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert [s["status"] for s in operation["stages"]] == ["SUCCEEDED"] * len(TEARDOWN_STAGES)

    # What was deleted is what the plan listed, resource for resource.
    deleted = {name: [r["name"] for r in (stage.get("output") or {}).get("deleted") or []]
               for name, stage in stages(operation).items()}
    for stage in ("hyperpod", "eks"):
        assert deleted[stage] == planned[stage], stage

    assert world(cloud) == {key: [] for key in world(cloud)}
    assert cloud.client("s3").head_bucket(Bucket="team-data")
    record = api.get(f"/clusters/{TAG}")
    assert record["status"] == "DELETED"


def test_a_discovered_cluster_is_forgotten_not_deleted(api: ApiClient, cloud: Any) -> None:
    create(api, cloud)
    # Forget refuses a cluster hypd created.
    error = refused(lambda: api.call("deleteCluster", tag=TAG, forget=True))
    assert error.status == 400
    assert "forget" in error.message


FAULTS = [
    ("hyperpod", "sagemaker", "DeleteCluster", "ValidationException"),
    ("eks", "eks", "DeleteCluster", "InvalidRequestException"),
    ("addons", "eks", "DeleteAddon", "InvalidRequestException"),
    ("network", "cloudformation", "DeleteStack", "ValidationError"),
    ("roles", "iam", "DeleteRole", "UnmodifiableEntity"),
]


@pytest.mark.parametrize(("stage", "service", "operation", "code"), FAULTS,
                         ids=[f[0] for f in FAULTS])
def test_a_fault_in_a_stage_fails_there_and_a_retry_finishes(
        api: ApiClient, cloud: Any, stage: str, service: str, operation: str, code: str) -> None:
    create(api, cloud, TRAINING_ON)
    cloud.faults.fail(service, operation, code=code, message=f"{operation} refused (injected)",
                      times=1)
    failed = run(api, cloud, api.call("deleteCluster", tag=TAG))
    assert failed["status"] == "FAILED"
    assert stages(failed)[stage]["status"] == "FAILED", failed["stages"]
    assert f"{operation} refused (injected)" in failed["error"]["message"]
    assert api.get(f"/clusters/{TAG}")["status"] == "DELETING"

    api.call("retryOperation", operationId=failed["id"])
    retried = run(api, cloud, {"operationId": failed["id"]})
    assert retried["status"] == "SUCCEEDED", retried.get("error")
    assert world(cloud) == {key: [] for key in world(cloud)}
    assert api.get(f"/clusters/{TAG}")["status"] == "DELETED"
