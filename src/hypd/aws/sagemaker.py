"""SageMaker HyperPod adapter: clusters and training plans."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from hypd import clock
from hypd.aws.errors import all_pages, code_in, error_code, unless_not_found
from hypd.catalog.models import ReservedCapacity, TrainingPlan
from hypd.clusters.models import HyperPodCluster, InstanceGroupSummary


def list_cluster_names(client: Any) -> list[str]:
    summaries = all_pages(client, "list_clusters", "ClusterSummaries", "listing HyperPod clusters")
    return sorted(summary["ClusterName"] for summary in summaries)


def describe_cluster(client: Any, name: str) -> HyperPodCluster | None:
    """The cluster with its tags, or None if it disappeared since it was listed."""
    cluster = unless_not_found(
        lambda: client.describe_cluster(ClusterName=name),
        f"describing HyperPod cluster {name}",
        _cluster_not_found,
    )
    return None if cluster is None else to_model(cluster, list_tags(client, cluster["ClusterArn"]))


def _cluster_not_found(exc: ClientError) -> bool:
    # An unknown cluster is ResourceNotFound; some SageMaker APIs answer a
    # ValidationException whose message says the resource was not found.
    code = error_code(exc)
    message = str(exc).lower()
    return code == "ResourceNotFound" or (
        code == "ValidationException" and ("not found" in message or "could not find" in message)
    )


def list_tags(client: Any, arn: str) -> dict[str, str]:
    tags = all_pages(client, "list_tags", "Tags", f"listing tags of {arn}", ResourceArn=arn)
    return {tag["Key"]: tag.get("Value", "") for tag in tags}


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


# ---------------------------------------------------------------------------- training plans
def list_training_plans(client: Any) -> list[TrainingPlan]:
    """Every training plan of the account in the Region (all pages), by name."""
    summaries = all_pages(
        client, "list_training_plans", "TrainingPlanSummaries", "listing training plans"
    )
    return sorted((training_plan(raw) for raw in summaries), key=lambda plan: plan.name)


def describe_training_plan(client: Any, name: str) -> TrainingPlan | None:
    """The training plan named ``name``, or None if there is none."""
    raw = unless_not_found(
        lambda: client.describe_training_plan(TrainingPlanName=name),
        f"describing training plan {name}",
        code_in("ResourceNotFound"),
    )
    return None if raw is None else training_plan(raw)


def training_plan(raw: dict[str, Any]) -> TrainingPlan:
    """A ListTrainingPlans summary or DescribeTrainingPlan answer as the domain's plan."""
    return TrainingPlan(
        name=raw["TrainingPlanName"],
        arn=raw["TrainingPlanArn"],
        status=raw.get("Status", "Unknown"),
        status_message=raw.get("StatusMessage"),
        total_instance_count=raw.get("TotalInstanceCount"),
        available_instance_count=raw.get("AvailableInstanceCount"),
        in_use_instance_count=raw.get("InUseInstanceCount"),
        start_time=raw.get("StartTime"),
        end_time=raw.get("EndTime"),
        duration_hours=raw.get("DurationHours"),
        target_resources=tuple(raw.get("TargetResources") or ()),
        reserved_capacities=tuple(
            ReservedCapacity(
                instance_type=rc.get("InstanceType"),
                total_instance_count=rc.get("TotalInstanceCount"),
                availability_zone=rc.get("AvailabilityZone"),
                availability_zone_id=rc.get("AvailabilityZoneId"),
                status=rc.get("Status"),
            )
            for rc in raw.get("ReservedCapacitySummaries") or []
        ),
    )
