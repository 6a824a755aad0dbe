"""The `hyperpod` stage: CreateCluster from the resolved request, inspected before created.

The CreateCluster request is built from the decision-grade request alone plus what earlier
stages made (EKS cluster ARN, subnets, security group) and the deployment's execution role:
node recovery Automatic and continuous provisioning by default, each group's capacity choice
(on-demand, spot, training plan), deep health checks, EFA-only interfaces, labels and taints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypd.aws.sagemaker import create_cluster, delete_cluster, describe_cluster
from hypd.clusters.create_request import ResolvedCreate
from hypd.clusters.models import HYPD_TAG_KEY, HyperPodCluster
from hypd.errors import AwsUnavailable, PermanentError
from hypd.instance_groups.spec import group_spec

IN_SERVICE = "InService"
FAILED_STATES = ("Failed", "RollingBack")
"""ClusterStatus values from which a create never reaches InService by itself."""


class HyperPodClusterFailed(PermanentError):
    """HyperPod reported the cluster Failed; its FailureMessage says why."""

    code = "HyperPodClusterFailed"


class HyperPodClusterMismatch(PermanentError):
    """A cluster of the derived name exists but does not belong to this tag's EKS cluster."""

    code = "HyperPodClusterMismatch"


def cluster_request(
    resolved: ResolvedCreate,
    *,
    eks_cluster_arn: str,
    security_group_id: str,
    group_subnets: Mapping[str, str],
    execution_role_arn: str,
) -> dict[str, Any]:
    """The CreateCluster request. `group_subnets` maps each group to its compute subnet; the
    cluster's VpcConfig takes the shared subnet, a group on another (dedicated) subnet gets an
    OverrideVpcConfig."""
    shared = _shared_subnet(resolved, group_subnets)
    return {
        "ClusterName": resolved.hyperpod_cluster_name,
        "InstanceGroups": [
            group_spec(
                group,
                execution_role_arn=execution_role_arn,
                override_subnet=(
                    group_subnets[group.name] if group_subnets[group.name] != shared else None
                ),
                security_group_id=security_group_id,
            )
            for group in resolved.instance_groups
        ],
        "VpcConfig": {"SecurityGroupIds": [security_group_id], "Subnets": [shared]},
        "Orchestrator": {"Eks": {"ClusterArn": eks_cluster_arn}},
        "NodeRecovery": "Automatic",
        "NodeProvisioningMode": "Continuous",
        "Tags": [{"Key": HYPD_TAG_KEY, "Value": resolved.tag}],
    }


def _shared_subnet(resolved: ResolvedCreate, group_subnets: Mapping[str, str]) -> str:
    shared = [group_subnets[g.name] for g in resolved.instance_groups if not g.dedicated_subnet]
    return shared[0] if shared else group_subnets[resolved.instance_groups[0].name]


REPLACE_CHECK_SECONDS = 60
"""How often the stage looks while a failed cluster it is replacing is being deleted (HyperPod
deletes a cluster in minutes)."""


def ensure_cluster(
    sagemaker: Any, request: Mapping[str, Any], *, replace_failed: bool = False
) -> HyperPodCluster | None:
    """The cluster `request` describes: the existing one (checked to be ours), else created.

    `replace_failed` (a retry of the stage): a cluster of the name that ended Failed is deleted
    and, once gone, created anew; None while it is being deleted (look again later).

    Raises:
        HyperPodClusterMismatch: a cluster of that name runs on another EKS cluster.
        HyperPodClusterFailed: the cluster exists and is Failed (and `replace_failed` is off).
        AwsThrottled, AwsUnavailable, AwsAccessDenied, AwsRequestRejected: from SageMaker.
    """
    name = str(request["ClusterName"])
    existing = describe_cluster(sagemaker, name)
    expected = request["Orchestrator"]["Eks"]["ClusterArn"]
    if existing is not None and existing.eks_cluster_arn and existing.eks_cluster_arn != expected:
        raise HyperPodClusterMismatch(
            f"HyperPod cluster {name} already exists on EKS cluster {existing.eks_cluster_arn}, "
            f"not {expected}",
            details={"clusterName": name, "eksClusterArn": existing.eks_cluster_arn},
        )
    if existing is not None and replace_failed and existing.status in (*FAILED_STATES, "Deleting"):
        if existing.status != "Deleting":
            delete_cluster(sagemaker, name, f"deleting failed HyperPod cluster {name}")
        return None
    if existing is None:
        create_cluster(sagemaker, dict(request))
        existing = describe_cluster(sagemaker, name)
        if existing is None:
            raise AwsUnavailable(
                f"creating HyperPod cluster {name}: created, but not visible to DescribeCluster yet"
            )
    raise_if_failed(existing)
    return existing


def raise_if_failed(cluster: HyperPodCluster) -> None:
    if cluster.status in FAILED_STATES:
        raise HyperPodClusterFailed(
            f"HyperPod cluster {cluster.name} is {cluster.status}: "
            f"{cluster.failure_message or 'no failure message'}",
            details={"clusterName": cluster.name, "awsErrorCode": f"Cluster{cluster.status}"},
        )


def read_cluster_or_none(sagemaker: Any, name: str) -> HyperPodCluster | None:
    return describe_cluster(sagemaker, name)


def read_cluster(sagemaker: Any, name: str) -> HyperPodCluster:
    cluster = describe_cluster(sagemaker, name)
    if cluster is None:
        raise HyperPodClusterFailed(
            f"HyperPod cluster {name} no longer exists",
            details={"clusterName": name, "awsErrorCode": "ResourceNotFound"},
        )
    raise_if_failed(cluster)
    return cluster


def cluster_summary(cluster: HyperPodCluster) -> dict[str, Any]:
    """What the operation records about the cluster (the stage output)."""
    return {
        "name": cluster.name,
        "arn": cluster.arn,
        "status": cluster.status,
        "instanceGroups": [
            {
                "name": g.name,
                "instanceType": g.instance_type,
                "currentCount": g.current_count,
                "targetCount": g.target_count,
                "status": g.status,
            }
            for g in cluster.instance_groups
        ],
    }
