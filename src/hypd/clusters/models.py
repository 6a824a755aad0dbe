"""Cluster records and the AWS facts they summarise."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.clusters.create_request import eks_cluster_name, hyperpod_cluster_name
from hypd.errors import ConflictError

CLUSTER_TAG_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"
HYPD_TAG_KEY = "hypd:tag"
"""A resource tag naming the hypd cluster an EKS or HyperPod cluster belongs to."""


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class EksCluster(_Model):
    name: str
    arn: str
    status: str
    version: str | None = None
    endpoint: str | None = None
    created_at: str | None = Field(default=None, alias="createdAt")
    authentication_mode: str | None = Field(default=None, alias="authenticationMode")
    vpc_id: str | None = Field(default=None, alias="vpcId")
    subnet_ids: list[str] = Field(default_factory=list, alias="subnetIds")
    tags: dict[str, str] = Field(default_factory=dict)


class InstanceGroupSummary(_Model):
    name: str
    instance_type: str | None = Field(default=None, alias="instanceType")
    current_count: int = Field(default=0, alias="currentCount")
    target_count: int = Field(default=0, alias="targetCount")
    status: str | None = None


class HyperPodCluster(_Model):
    name: str
    arn: str
    status: str
    created_at: str | None = Field(default=None, alias="createdAt")
    eks_cluster_arn: str | None = Field(default=None, alias="eksClusterArn")
    node_recovery: str | None = Field(default=None, alias="nodeRecovery")
    node_provisioning_mode: str | None = Field(default=None, alias="nodeProvisioningMode")
    instance_groups: list[InstanceGroupSummary] = Field(
        default_factory=list, alias="instanceGroups"
    )
    failure_message: str | None = Field(default=None, alias="failureMessage")
    tags: dict[str, str] = Field(default_factory=dict)


class ClusterSource(StrEnum):
    DISCOVERED = "discovered"
    CREATED = "created"


class ClusterStatus(StrEnum):
    """Where a cluster hypd creates stands; a discovered cluster has none (its EKS and HyperPod
    statuses say it all)."""

    CREATING = "CREATING"
    ACTIVE = "ACTIVE"
    FAILED = "FAILED"
    DELETING = "DELETING"
    """A delete-cluster operation runs (or failed: a retry resumes it)."""
    DELETED = "DELETED"
    """Every resource hypd made for it is gone; the record stays with its operations."""


class Cluster(_Model):
    tag: str
    source: ClusterSource
    region: str | None = None
    anchor_arn: str = Field(alias="anchorArn")
    """The ARN that identifies the pair: the EKS cluster's, or the HyperPod cluster's when its
    EKS cluster is gone. A record never changes anchor, so a tag never moves to other resources."""
    eks: EksCluster | None = None
    hyperpod: HyperPodCluster | None = None
    created_at: str = Field(alias="createdAt")
    updated_at: str = Field(alias="updatedAt")
    last_seen_at: str | None = Field(default=None, alias="lastSeenAt")
    last_operation_id: str | None = Field(default=None, alias="lastOperationId")
    status: ClusterStatus | None = None
    """Set for a cluster hypd creates (CREATING until its create operation ends)."""
    protection: bool = False
    """Deletion protection (``PUT /clusters/{tag}/protection``): DELETE refuses while on."""

    @property
    def eks_name(self) -> str:
        """The EKS cluster's name: the recorded one, else the name a create gives it."""
        return self.eks.name if self.eks else eks_cluster_name(self.tag)

    @property
    def hyperpod_name(self) -> str:
        """The HyperPod cluster's name: the recorded one, else the name a create gives it."""
        return self.hyperpod.name if self.hyperpod else hyperpod_cluster_name(self.tag)

    def torn_down(self) -> dict[str, Any]:
        """The changes that record the cluster DELETED: its EKS and HyperPod snapshots keep
        their names and ARNs (the history) but no longer say ACTIVE, InService or nodes up."""
        changes: dict[str, Any] = {"status": ClusterStatus.DELETED}
        if self.eks is not None:
            changes["eks"] = self.eks.model_copy(update={"status": GONE})
        if self.hyperpod is not None:
            changes["hyperpod"] = self.hyperpod.model_copy(update={
                "status": GONE,
                "instance_groups": [g.model_copy(update={"current_count": 0, "status": GONE})
                                    for g in self.hyperpod.instance_groups]})
        return changes

    def to_api(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude={"anchor_arn"})


GONE = "DELETED"
"""The status a DELETED record gives its EKS and HyperPod snapshots (neither service has one
for a cluster that no longer exists)."""


class ClusterDeleting(ConflictError):
    """A delete-cluster operation holds the cluster (running, or failed and resumable)."""

    code = "ClusterDeleting"


class ClusterDeleted(ConflictError):
    """The cluster was torn down; its record stays with its operations."""

    code = "ClusterDeleted"


def deletion_refusal(cluster: Cluster | None) -> ClusterDeleting | ClusterDeleted | None:
    """Why an operation on `cluster` is refused because of its teardown, or None: it is being
    deleted (DELETING: the teardown running, or failed and resumable) or was deleted."""
    if cluster is None or cluster.status not in (ClusterStatus.DELETING, ClusterStatus.DELETED):
        return None
    if cluster.status is ClusterStatus.DELETED:
        return cluster_deleted(cluster)
    operation = cluster.last_operation_id
    return ClusterDeleting(
        f"cluster {cluster.tag} is being deleted by operation {operation}: follow it with "
        f"GET /operations/{operation} (if it failed, POST /operations/{operation}/retry "
        "resumes it)", details=refusal_details(cluster))


def refusal_details(cluster: Cluster) -> dict[str, str]:
    """The `details` of a refusal on the cluster's state: its tag, status and last operation."""
    operation = cluster.last_operation_id
    status = cluster.status.value if cluster.status else "unknown"
    return {"tag": cluster.tag, "status": status,
            **({"operationId": operation} if operation else {})}


def cluster_deleted(cluster: Cluster) -> ClusterDeleted:
    """The refusal of a request that needs what a DELETED record's teardown removed."""
    details = refusal_details(cluster)
    tag, status, operation = cluster.tag, details["status"], cluster.last_operation_id
    by = f" by operation {operation}" if operation else ""
    return ClusterDeleted(
        f"cluster {tag} is {status}: it was torn down{by} and nothing of it is left to read or "
        f"change. Its record stays (GET /clusters/{tag}); POST /clusters with its tag creates "
        f"it again, DELETE /clusters/{tag}?forget=true removes the record", details=details)


class ClusterNotActive(ConflictError):
    """A created cluster's creation has not succeeded (CREATING or FAILED)."""

    code = "ClusterNotActive"


def cluster_not_created(cluster: Cluster) -> ClusterNotActive:
    """The refusal of a request that needs the HyperPod cluster a CREATING or FAILED record's
    creation has not made (yet)."""
    details = refusal_details(cluster)
    tag, status, operation = cluster.tag, details["status"], cluster.last_operation_id
    if cluster.status is ClusterStatus.FAILED:
        what = (f"its creation (operation {operation}) failed before its HyperPod cluster was "
                f"made, so there is nothing to read or change: POST /operations/{operation}/retry "
                f"resumes it, DELETE /clusters/{tag} removes what it made")
    else:
        what = (f"its HyperPod cluster is not made yet: follow its creation with "
                f"GET /operations/{operation}")
    return ClusterNotActive(f"cluster {tag} is {status}: {what}", details=details)


def require_not_deleted(cluster: Cluster | None) -> None:
    """Refuse an operation on a cluster being deleted or deleted (its teardown's excepted).

    Raises:
        ClusterDeleting: its record is DELETING.
        ClusterDeleted: its record is DELETED.
    """
    refusal = deletion_refusal(cluster)
    if refusal is not None:
        raise refusal
