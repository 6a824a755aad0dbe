"""Helpers of the teardown end-to-end tests and of `bench/teardown.py`: a cluster with
everything a teardown deletes, and what every emulated service still lists of it."""

from __future__ import annotations

from typing import Any

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import follow
from tests.e2e.capacity import TAG, run, stages
from tests.e2e.test_workloads import INFERENCE_ON, TLS_BUCKET, TRAINING_ON, job_body
from tests.support import create_body

TEARDOWN_STAGES = ["workloads", "governance", "hyperpod", "addons", "eks", "storage",
                   "network", "roles", "record"]
GOVERNANCE_ON = {"taskGovernance": {"enabled": True}}
FOUR_FEATURES = {**TRAINING_ON, **INFERENCE_ON, **GOVERNANCE_ON,
                 "observability": {"enabled": True}}
"""The features with add-ons, roles or quotas of their own (what the end-to-end test has)."""
EVERY_FEATURE = {**FOUR_FEATURES, "tieredCheckpointing": {"enabled": True, "memoryPercent": 20}}
"""The five managed features (tiered checkpointing is a setting of the HyperPod cluster)."""
TEAM = {"resources": [{"instanceType": "ml.g6.4xlarge", "count": 1}]}
FALCON = {"name": "falcon", "instanceType": "ml.g6.4xlarge", "replicas": 1,
          "jumpStart": {"modelId": "huggingface-llm-falcon-7b-bf16", "acceptEula": True},
          "sageMakerEndpointName": "falcon"}


def world(cloud: Any) -> dict[str, list[str]]:
    """What every emulated service lists for the cluster now."""
    sagemaker, eks, ec2 = cloud.client("sagemaker"), cloud.client("eks"), cloud.client("ec2")
    stacks = [s["StackName"] for s in cloud.client("cloudformation").list_stacks()[
        "StackSummaries"] if s["StackStatus"] != "DELETE_COMPLETE"]
    tagged = [{"Name": "tag:hypd:tag", "Values": [TAG]}]
    stack_tagged = [{"Name": "tag:aws:cloudformation:stack-name",
                     "Values": [f"hypd-{TAG}-network"]}]
    return {
        "hyperpod": [c["ClusterName"] for c in sagemaker.list_clusters()["ClusterSummaries"]],
        "eks": list(eks.list_clusters()["clusters"]),
        "fsx": [f["FileSystemId"] for f in cloud.client("fsx").describe_file_systems()[
            "FileSystems"]],
        "stacks": stacks,
        "vpcs": [v["VpcId"] for v in ec2.describe_vpcs(Filters=stack_tagged)["Vpcs"]],
        "subnets": [s["SubnetId"] for s in ec2.describe_subnets(Filters=tagged)["Subnets"]],
        "interfaces": [n["NetworkInterfaceId"] for n in ec2.describe_network_interfaces()[
            "NetworkInterfaces"]],
        "roles": [r["RoleName"] for r in cloud.client("iam").list_roles()["Roles"]
                  if r["RoleName"].startswith(f"hypd-{TAG}-")],
        "oidc": [p["Arn"] for p in cloud.client("iam").list_open_id_connect_providers()[
            "OpenIDConnectProviderList"]],
        "quotas": [q["Name"] for q in sagemaker.list_compute_quotas()["ComputeQuotaSummaries"]],
        "schedulerConfigs": [c["Name"] for c in sagemaker.list_cluster_scheduler_configs()[
            "ClusterSchedulerConfigSummaries"] if c["Status"] != "Deleted"],
        "endpoints": [e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"]],
        "workspaces": [w["alias"] for w in cloud.client("amp").list_workspaces()["workspaces"]],
        # The TLS bucket hypd makes (hyperpod-tls-<tag>-<digest>), not the user's.
        "tlsBuckets": [b["Name"] for b in cloud.client("s3").list_buckets()["Buckets"]
                       if b["Name"].startswith(f"hyperpod-tls-{TAG}-")],
    }


def nothing_left(cloud: Any) -> None:
    left = world(cloud)
    assert left == {key: [] for key in left}


def by_stage(steps: list[dict[str, Any]]) -> dict[str, list[tuple[str, str]]]:
    return {s["stage"]: sorted((r["type"], r["name"]) for r in s["resources"]) for s in steps}


def deleted_by_stage(operation: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    return by_stage([{"stage": name, "resources": (stage.get("output") or {}).get("deleted")
                      or []} for name, stage in stages(operation).items()])


def create_with_fsx(api: ApiClient, cloud: Any, features: dict[str, Any]) -> None:
    s3 = cloud.client("s3")
    for bucket in ("team-data", TLS_BUCKET):
        s3.create_bucket(Bucket=bucket,
                         CreateBucketConfiguration={"LocationConstraint": cloud.region})
    body = create_body(storage={"fsx": {"storageCapacityGiB": 1200}}, features=features)
    operation = follow(api, cloud, str(api.post("/clusters", body)["operationId"]), timeout=240)
    assert operation["status"] == "SUCCEEDED", operation.get("error")


def full_cluster(api: ApiClient, cloud: Any, features: dict[str, Any]) -> None:
    """Cluster `train` with FSx, `features`, team `ml`, endpoint `falcon` and the running job
    `llama-fsdp`: everything a teardown deletes."""
    create_with_fsx(api, cloud, features)
    assert run(api, cloud, api.set_team(TAG, "ml", TEAM))["status"] == "SUCCEEDED"
    deployed = run(api, cloud, api.call("deployInferenceEndpoint", tag=TAG, body=FALCON))
    assert deployed["status"] == "SUCCEEDED", deployed.get("error")
    job = run(api, cloud, api.submit_training_job(TAG, job_body(nodeCount=1)))
    assert job["status"] == "SUCCEEDED", job.get("error")
