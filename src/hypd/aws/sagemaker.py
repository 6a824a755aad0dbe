"""SageMaker HyperPod adapter."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from hypd import clock
from hypd.aws.errors import NETWORK_ERRORS, error_code, translate
from hypd.clusters.models import HyperPodCluster, InstanceGroupSummary


def list_cluster_names(client: Any) -> list[str]:
    names: list[str] = []
    try:
        for page in client.get_paginator("list_clusters").paginate():
            names.extend(summary["ClusterName"] for summary in page.get("ClusterSummaries", []))
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, "listing HyperPod clusters") from exc
    return sorted(names)


def describe_cluster(client: Any, name: str) -> HyperPodCluster | None:
    """The cluster with its tags, or None if it disappeared since it was listed."""
    try:
        cluster = client.describe_cluster(ClusterName=name)
    except ClientError as exc:
        # An unknown cluster is ResourceNotFound; some SageMaker APIs answer a
        # ValidationException whose message says the resource was not found.
        code = error_code(exc)
        message = str(exc).lower()
        if code == "ResourceNotFound" or (
            code == "ValidationException"
            and ("not found" in message or "could not find" in message)
        ):
            return None
        raise translate(exc, f"describing HyperPod cluster {name}") from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, f"describing HyperPod cluster {name}") from exc
    return to_model(cluster, list_tags(client, cluster["ClusterArn"]))


def list_tags(client: Any, arn: str) -> dict[str, str]:
    tags: dict[str, str] = {}
    try:
        for page in client.get_paginator("list_tags").paginate(ResourceArn=arn):
            tags.update({tag["Key"]: tag.get("Value", "") for tag in page.get("Tags", [])})
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, f"listing tags of {arn}") from exc
    return tags


def to_model(cluster: dict[str, Any], tags: dict[str, str]) -> HyperPodCluster:
    created = cluster.get("CreationTime")
    eks = (cluster.get("Orchestrator") or {}).get("Eks") or {}
    return HyperPodCluster(
        name=cluster["ClusterName"],
        arn=cluster["ClusterArn"],
        status=cluster.get("ClusterStatus", "Unknown"),
        created_at=clock.isoformat(created) if isinstance(created, datetime) else None,
        eks_cluster_arn=eks.get("ClusterArn"),
        node_recovery=cluster.get("NodeRecovery"),
        node_provisioning_mode=cluster.get("NodeProvisioningMode"),
        failure_message=cluster.get("FailureMessage"),
        instance_groups=[
            InstanceGroupSummary(
                name=group["InstanceGroupName"],
                instance_type=group.get("InstanceType"),
                current_count=group.get("CurrentCount", 0),
                target_count=group.get("TargetCount", 0),
                status=group.get("Status"),
            )
            for group in cluster.get("InstanceGroups", [])
        ],
        tags=tags,
    )
