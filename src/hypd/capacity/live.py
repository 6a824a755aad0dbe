"""The live cluster a capacity request acts on: HyperPod's own description, and its network.

Capacity is judged on what HyperPod and EC2 say now, never on what a record remembers: the
groups (DescribeCluster, raw, as the normaliser reads it), the cluster's subnet, security group
and zone (its VpcConfig), and the VPC's subnets with their tags (zones of groups' subnets,
dedicated subnets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hypd.aws import ec2 as ec2_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.aws.ec2 import Subnet
from hypd.clusters.create_request import hyperpod_cluster_name
from hypd.errors import ConflictError
from hypd.instance_groups.views import InstanceGroupView, group_view
from hypd.network import TAG_DEDICATED_TO


class HyperPodClusterMissing(ConflictError):
    """The record names a HyperPod cluster that no longer exists (deleted outside hypd)."""

    code = "HyperPodClusterMissing"


@dataclass(frozen=True)
class LiveCluster:
    tag: str
    described: Mapping[str, Any]
    """DescribeCluster's answer."""
    vpc_id: str
    security_group_ids: tuple[str, ...]
    subnet_id: str
    """The cluster's own subnet (VpcConfig): groups without an override use it."""
    zone: str
    """The zone of the cluster's subnet: a new group's zone unless it asks for another."""
    subnets: Mapping[str, Subnet] = field(default_factory=dict)
    """Every subnet of the VPC, by id."""

    @property
    def name(self) -> str:
        return str(self.described["ClusterName"])

    @property
    def arn(self) -> str:
        return str(self.described["ClusterArn"])

    @property
    def status(self) -> str:
        return str(self.described.get("ClusterStatus", "Unknown"))

    @property
    def groups(self) -> list[Mapping[str, Any]]:
        return list(self.described.get("InstanceGroups") or [])

    def group(self, name: str) -> Mapping[str, Any] | None:
        return next((g for g in self.groups if g.get("InstanceGroupName") == name), None)

    def group_subnet_ids(self, details: Mapping[str, Any]) -> list[str]:
        """The subnets of a group: its override, else the cluster's."""
        override = (details.get("OverrideVpcConfig") or {}).get("Subnets")
        vpc = self.described.get("VpcConfig") or {}
        return list(override or vpc.get("Subnets") or [])

    def group_zone(self, details: Mapping[str, Any]) -> str | None:
        """The zone of a group's subnets (None when they are unknown or in several zones)."""
        zones = self.group_zones(details)
        return zones.pop() if len(zones) == 1 else None

    def group_zones(self, details: Mapping[str, Any]) -> set[str]:
        """The zones of a group's subnets that EC2 knows."""
        return {
            self.subnets[s].availability_zone
            for s in self.group_subnet_ids(details)
            if s in self.subnets
        }

    def dedicated(self, details: Mapping[str, Any]) -> bool:
        """Whether the group runs in a compute subnet dedicated to it."""
        name = details.get("InstanceGroupName")
        return any(
            self.subnets[s].tags.get(TAG_DEDICATED_TO) == name
            for s in self.group_subnet_ids(details)
            if s in self.subnets
        )

    def view(self, name: str, autoscaled: bool = False) -> InstanceGroupView | None:
        """The API's view of one group (None when it is not in the cluster)."""
        details = self.group(name)
        if details is None:
            return None
        return group_view(
            details,
            availability_zone=self.group_zone(details),
            subnet_ids=self.group_subnet_ids(details),
            dedicated=self.dedicated(details),
            autoscaled=autoscaled,
        )

    @property
    def continuous(self) -> bool:
        return self.described.get("NodeProvisioningMode") == "Continuous"

    @property
    def autoscaling(self) -> Mapping[str, Any] | None:
        found = self.described.get("AutoScaling")
        return found if isinstance(found, Mapping) else None


def read_live_cluster(sagemaker: Any, ec2: Any, tag: str) -> LiveCluster:
    """The HyperPod cluster of `tag` as AWS describes it now.

    Raises:
        HyperPodClusterMissing: there is no HyperPod cluster hypd-{tag}.
        AwsThrottled, AwsUnavailable, AwsAccessDenied, AwsRequestRejected: from AWS.
    """
    name = hyperpod_cluster_name(tag)
    described = sagemaker_api.find_cluster(sagemaker, name)
    if described is None:
        raise HyperPodClusterMissing(
            f"HyperPod cluster {name} of cluster {tag} does not exist (was it deleted outside "
            "hypd?)",
            details={"tag": tag, "clusterName": name},
        )
    vpc = described.get("VpcConfig") or {}
    subnet_ids = list(vpc.get("Subnets") or [])
    first = ec2_api.describe_subnet(ec2, subnet_ids[0]) if subnet_ids else None
    if first is None:
        raise HyperPodClusterMissing(
            f"HyperPod cluster {name} has no subnet hypd can read (VpcConfig {subnet_ids})",
            details={"tag": tag, "clusterName": name},
        )
    subnets = {s.subnet_id: s for s in ec2_api.list_subnets(ec2, first.vpc_id)}
    return LiveCluster(
        tag=tag,
        described=described,
        vpc_id=first.vpc_id,
        security_group_ids=tuple(vpc.get("SecurityGroupIds") or ()),
        subnet_id=first.subnet_id,
        zone=first.availability_zone,
        subnets=subnets,
    )
