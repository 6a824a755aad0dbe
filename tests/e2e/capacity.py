"""Helpers of the capacity end-to-end tests: a created cluster, and what AWS and Kubernetes say.

Each test runs the real create pipeline first (a few seconds of real time), then the capacity
operations through the REST API, as any client would.
"""

from __future__ import annotations

from typing import Any

import requests

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import follow
from hypd_local.seed import ClusterSeed, SeededCluster, seed_clusters
from tests.support import create_body, group_body

BUCKET = "team-data"
TAG = "train"
CLUSTER = f"hypd-{TAG}"
REASON = "HyperPod Health Monitoring Agent (HMA) has detected fault type NvidiaErrorTerminate"


def created_cluster(
    api: ApiClient, cloud: Any, *groups: dict[str, Any], tag: str = TAG
) -> dict[str, Any]:
    """Create cluster `tag` (default: one on-demand group `workers` of 2 ml.g6.4xlarge) and
    wait until it is ACTIVE; returns the create operation."""
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )
    body = create_body(tag=tag, instanceGroups=list(groups) or [group_body()])
    accepted = api.post("/clusters", body)
    operation = follow(api, cloud, str(accepted["operationId"]), timeout=240)
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    return operation


def discovered_cluster(api: ApiClient, cloud: Any, name: str = "theirs"
                       ) -> tuple[SeededCluster, str]:
    """An EKS and a HyperPod cluster (`name`) hypd did not create, discovered: the seed, and
    the tag of the record discovery made (the only one: call it before creating any)."""
    (seeded,) = seed_clusters(cloud, [ClusterSeed(name)])
    discovered = follow(api, cloud, str(api.discover_clusters()["operationId"]), timeout=60)
    assert discovered["status"] == "SUCCEEDED", discovered.get("error")
    (tag,) = [c["tag"] for c in api.list_clusters()["clusters"]]
    return seeded, tag


def make_unhealthy(cloud: Any, node_id: str, action: str = "Replace",
                   reason: str = REASON) -> None:
    """A node health event through the fault route a user of the local cloud calls; HyperPod
    does not repair the node."""
    answer = requests.post(
        f"{cloud.local_url}/_local/faults/hyperpod/node-unhealthy",
        json={"clusterName": CLUSTER, "nodeId": node_id, "action": action, "reason": reason,
              "repair": False},
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    cloud.wait_for_executions(timeout=120)


def run(api: ApiClient, cloud: Any, accepted: dict[str, Any]) -> dict[str, Any]:
    """Follow a started operation (a 202's body) to its end."""
    return follow(api, cloud, str(accepted["operationId"]), timeout=240)


def stages(operation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {stage["name"]: stage for stage in operation["stages"]}


def described_groups(cloud: Any, name: str = CLUSTER) -> dict[str, dict[str, Any]]:
    described = cloud.client("sagemaker").describe_cluster(ClusterName=name)
    return {g["InstanceGroupName"]: g for g in described["InstanceGroups"]}


def carried(group: dict[str, Any]) -> dict[str, Any]:
    """A described group without what a scale or the passing of time changes."""
    return {
        k: v
        for k, v in group.items()
        if k not in ("CurrentCount", "TargetCount", "Status", "ActiveOperations")
    }


def _store(cloud: Any, tag: str) -> Any:
    server = cloud.emulation.kube.get(f"hypd-{tag}")
    assert server is not None, f"EKS cluster hypd-{tag} serves no Kubernetes API"
    return server.store


def kube_nodes(cloud: Any, tag: str = TAG) -> list[dict[str, Any]]:
    """The Kubernetes nodes of the cluster, as the local API server holds them."""
    store = _store(cloud, tag)
    nodes, _version, _token = store.list(store.builtin_type("", "nodes"), None)
    return [dict(node) for node in nodes]


def kube_object(
    cloud: Any, group: str, version: str, plural: str, name: str, tag: str = TAG
) -> dict[str, Any] | None:
    """A cluster-scoped object (None when it, or its kind, does not exist)."""
    from hypd_local.kube.errors import KubeError

    store = _store(cloud, tag)
    rtype = store.find_type(group, version, plural)
    if rtype is None:
        return None
    try:
        return dict(store.get(rtype, None, name))
    except KubeError:
        return None


def group_nodes(cloud: Any, group: str, tag: str = TAG) -> list[dict[str, Any]]:
    return [
        n
        for n in kube_nodes(cloud, tag)
        if n["metadata"]["labels"].get("sagemaker.amazonaws.com/instance-group-name") == group
    ]


def operations_of(api: ApiClient, tag: str = TAG) -> list[dict[str, Any]]:
    return list(api.get("/operations", clusterTag=tag)["operations"])
