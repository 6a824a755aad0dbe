"""SageMaker HyperPod adapter: clusters and training plans."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from hypd import clock
from hypd.aws.errors import (
    NETWORK_ERRORS,
    all_pages,
    code_in,
    error_code,
    translate,
    unless_not_found,
)
from hypd.catalog.models import ReservedCapacity, TrainingPlan
from hypd.clusters.models import HyperPodCluster, InstanceGroupSummary
from hypd.errors import PermanentError, TemporaryError


def list_cluster_names(client: Any) -> list[str]:
    summaries = all_pages(client, "list_clusters", "ClusterSummaries", "listing HyperPod clusters")
    return sorted(summary["ClusterName"] for summary in summaries)


def describe_cluster(client: Any, name: str) -> HyperPodCluster | None:
    """The cluster with its tags, or None if it disappeared since it was listed."""
    cluster = find_cluster(client, name)
    return None if cluster is None else to_model(cluster, list_tags(client, cluster["ClusterArn"]))


def find_cluster(client: Any, name: str) -> dict[str, Any] | None:
    """DescribeCluster's answer as AWS gives it (the normaliser reads it), or None."""
    cluster: dict[str, Any] | None = unless_not_found(
        lambda: client.describe_cluster(ClusterName=name),
        f"describing HyperPod cluster {name}",
        _cluster_not_found,
    )
    if cluster is not None:
        cluster.pop("ResponseMetadata", None)
    return cluster


def _cluster_not_found(exc: ClientError) -> bool:
    # An unknown cluster is ResourceNotFound; some SageMaker APIs answer a
    # ValidationException whose message says the resource was not found.
    code = error_code(exc)
    message = str(exc).lower()
    return code == "ResourceNotFound" or (
        code == "ValidationException" and ("not found" in message or "could not find" in message)
    )


def find_endpoint(client: Any, name: str) -> dict[str, Any] | None:
    """DescribeEndpoint's answer (a SageMaker endpoint an inference operator registered), or
    None when it is gone."""
    endpoint: dict[str, Any] | None = unless_not_found(
        lambda: client.describe_endpoint(EndpointName=name),
        f"describing SageMaker endpoint {name}",
        _cluster_not_found,
    )
    if endpoint is not None:
        endpoint.pop("ResponseMetadata", None)
    return endpoint


def create_cluster(client: Any, request: dict[str, Any]) -> None:
    """CreateCluster. A cluster of that name already there is not an error (a crashed
    earlier attempt may have made it): the caller describes it next."""
    unless_not_found(
        lambda: client.create_cluster(**request),
        f"creating HyperPod cluster {request['ClusterName']}",
        code_in("ConflictException", "ResourceInUse"),
    )


def delete_cluster(client: Any, name: str, action: str | None = None) -> None:
    """Start deleting the cluster (being deleted already, or gone: nothing to do)."""
    unless_not_found(
        lambda: client.delete_cluster(ClusterName=name),
        action or f"deleting HyperPod cluster {name}",
        code_in("ConflictException", "ResourceNotFound"),
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


# ---------------------------------------------------------------------------- capacity
class ClusterBusy(TemporaryError):
    """HyperPod refused a change because another one is in progress (ConflictException)."""

    code = "ClusterBusy"


class QuotaExceeded(PermanentError):
    """A service quota (e.g. cluster usage of an instance type) does not allow the change."""

    code = "QuotaExceeded"


def update_cluster(client: Any, request: dict[str, Any]) -> str:
    """UpdateCluster; returns the cluster's ARN.

    Raises:
        ClusterBusy: ConflictException (the cluster is updating; retried).
        QuotaExceeded: ResourceLimitExceeded.
        AwsThrottled, AwsUnavailable, AwsAccessDenied, AwsResourceNotFound, AwsRequestRejected.
    """
    name = request["ClusterName"]
    action = f"updating HyperPod cluster {name}"
    try:
        return str(client.update_cluster(**request)["ClusterArn"])
    except ClientError as exc:
        code = error_code(exc)
        if code == "ConflictException":
            raise ClusterBusy(
                f"{action}: {code}: {exc.response['Error'].get('Message', '')}",
                details={"awsErrorCode": code},
            ) from exc
        if code == "ResourceLimitExceeded":
            raise QuotaExceeded(
                f"{action}: {code}: {exc.response['Error'].get('Message', '')}",
                details={"awsErrorCode": code},
            ) from exc
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc


def list_cluster_nodes(
    client: Any, name: str, *, instance_group: str | None = None
) -> list[dict[str, Any]]:
    """Every node of the cluster (all pages), oldest first; optionally of one group only
    (ListClusterNodes filters by substring: the exact group is kept)."""
    kwargs: dict[str, Any] = {"ClusterName": name}
    if instance_group:
        kwargs["InstanceGroupNameContains"] = instance_group
    nodes = all_pages(
        client, "list_cluster_nodes", "ClusterNodeSummaries",
        f"listing nodes of HyperPod cluster {name}", **kwargs,
    )
    if instance_group:
        nodes = [n for n in nodes if n.get("InstanceGroupName") == instance_group]
    return nodes


def describe_cluster_node(client: Any, name: str, node_id: str) -> dict[str, Any] | None:
    """The node's details, or None when the cluster has no such node."""
    answer = unless_not_found(
        lambda: client.describe_cluster_node(ClusterName=name, NodeId=node_id),
        f"describing node {node_id} of HyperPod cluster {name}",
        _cluster_not_found,
    )
    return None if answer is None else dict(answer["NodeDetails"])


class NodeActionRefused(PermanentError):
    """HyperPod answered a batch node call with a failure for the node."""

    code = "NodeActionRefused"


BATCH_NODE_CALLS = {
    "reboot": "batch_reboot_cluster_nodes",
    "replace": "batch_replace_cluster_nodes",
    "delete": "batch_delete_cluster_nodes",
}


def batch_node_action(client: Any, action: str, name: str, node_id: str) -> None:
    """Reboot, replace or delete one node (BatchRebootClusterNodes, ...).

    Raises:
        NodeActionRefused: the answer lists the node as failed (its code and message).
        AwsThrottled, AwsUnavailable, AwsAccessDenied, AwsResourceNotFound, AwsRequestRejected.
    """
    what = f"{action} node {node_id} of HyperPod cluster {name}"
    try:
        answer = getattr(client, BATCH_NODE_CALLS[action])(ClusterName=name, NodeIds=[node_id])
    except ClientError as exc:
        raise translate(exc, what) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, what) from exc
    for failure in answer.get("Failed") or []:
        if failure.get("NodeId") == node_id:
            code = str(failure.get("ErrorCode") or failure.get("Code") or "Failed")
            raise NodeActionRefused(
                f"{what}: {code}: {failure.get('Message') or 'refused'}",
                details={"awsErrorCode": code, "nodeId": node_id},
            )


def list_cluster_events(
    client: Any,
    name: str,
    *,
    instance_group: str | None = None,
    after: datetime | None = None,
) -> list[dict[str, Any]]:
    """The cluster's events (ListClusterEvents, all pages), newest first."""
    kwargs: dict[str, Any] = {"ClusterName": name, "SortOrder": "Descending"}
    if instance_group:
        kwargs["InstanceGroupName"] = instance_group
    if after is not None:
        kwargs["EventTimeAfter"] = after
    return all_pages(
        client, "list_cluster_events", "Events", f"listing events of HyperPod cluster {name}",
        **kwargs,
    )


# ---------------------------------------------------------------------------- task governance
def _live(client: Any, operation: str, key: str, what: str, cluster_arn: str
          ) -> list[dict[str, Any]]:
    """The cluster's scheduler configs or compute quotas (summaries), Deleted ones left out."""
    summaries = all_pages(client, operation, key,
                          f"listing the {what} of HyperPod cluster {cluster_arn}",
                          ClusterArn=cluster_arn)
    return [s for s in summaries if s.get("Status") != "Deleted"]


def list_scheduler_configs(client: Any, cluster_arn: str) -> list[dict[str, Any]]:
    """The cluster's scheduler configs (summaries), newest first, Deleted ones left out."""
    return _live(client, "list_cluster_scheduler_configs", "ClusterSchedulerConfigSummaries",
                 "scheduler configs", cluster_arn)


def list_compute_quotas(client: Any, cluster_arn: str) -> list[dict[str, Any]]:
    return _live(client, "list_compute_quotas", "ComputeQuotaSummaries", "compute quotas",
                 cluster_arn)


def _describe(call: Any, what: str) -> dict[str, Any] | None:
    answer: dict[str, Any] | None = unless_not_found(call, f"describing {what}",
                                                     _cluster_not_found)
    return answer


def describe_scheduler_config(client: Any, config_id: str) -> dict[str, Any] | None:
    return _describe(
        lambda: client.describe_cluster_scheduler_config(ClusterSchedulerConfigId=config_id),
        f"scheduler config {config_id}")


def describe_compute_quota(client: Any, quota_id: str) -> dict[str, Any] | None:
    return _describe(lambda: client.describe_compute_quota(ComputeQuotaId=quota_id),
                     f"compute quota {quota_id}")


def governance_call(client: Any, operation: str, action: str, **params: Any) -> dict[str, Any]:
    """One create, update or delete of a scheduler config or compute quota.

    Raises:
        ClusterBusy: ConflictException (another change in progress, a stale version: retried).
        AwsThrottled, AwsUnavailable, AwsAccessDenied, AwsResourceNotFound, AwsRequestRejected.
    """
    try:
        answer: dict[str, Any] = getattr(client, operation)(**params)
        return answer
    except ClientError as exc:
        code = error_code(exc)
        if code == "ConflictException":
            raise ClusterBusy(
                f"{action}: {code}: {exc.response['Error'].get('Message', '')}",
                details={"awsErrorCode": code},
            ) from exc
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc


class SoftwareUpdateRefused(PermanentError):
    """HyperPod refused UpdateClusterSoftware (ValidationException: a group, an image, a
    deployment configuration it does not accept)."""

    code = "SoftwareUpdateRefused"


def update_cluster_software(client: Any, request: dict[str, Any]) -> str:
    """UpdateClusterSoftware; returns the cluster's ARN.

    Raises:
        ClusterBusy: ConflictException (an update or change is in progress; retried).
        SoftwareUpdateRefused: ValidationException.
    """
    action = f"updating the software of HyperPod cluster {request['ClusterName']}"
    try:
        return str(client.update_cluster_software(**request)["ClusterArn"])
    except ClientError as exc:
        code = error_code(exc)
        message = f"{action}: {code}: {exc.response['Error'].get('Message', '')}"
        if code == "ConflictException":
            raise ClusterBusy(message, details={"awsErrorCode": code}) from exc
        if code == "ValidationException":
            raise SoftwareUpdateRefused(message, details={"awsErrorCode": code}) from exc
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc
