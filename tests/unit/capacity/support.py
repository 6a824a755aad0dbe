"""Builders of the capacity unit tests: described groups and live clusters, as AWS gives them."""

from __future__ import annotations

from typing import Any

from hypd.aws.ec2 import Subnet
from hypd.capacity.live import LiveCluster
from hypd.network import TAG_DEDICATED_TO

ROLE = "arn:aws:iam::123456789012:role/hypd-HyperPodExecutionRole"
ARN = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdef123456"
PLAN = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-reserved-0123456789"
SHARED = "subnet-0shared"
OTHER_ZONE = "subnet-0zoneb"
DEDICATED = "subnet-0dedicated"


def details(name: str = "gpu", **overrides: Any) -> dict[str, Any]:
    """One group as DescribeCluster describes it (2 of 2 up, on-demand)."""
    group: dict[str, Any] = {
        "InstanceGroupName": name,
        "InstanceType": "ml.g6.4xlarge",
        "TargetCount": 2,
        "CurrentCount": 2,
        "ExecutionRole": ROLE,
        "ThreadsPerCore": 1,
        "Status": "InService",
        "CapacityRequirements": {"OnDemand": {}},
        "OnStartDeepHealthChecks": ["InstanceStress"],
        "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}],
        "KubernetesConfig": {"CurrentLabels": {"team": "ml"}, "DesiredLabels": {"team": "ml"}},
    }
    group.update(overrides)
    return {k: v for k, v in group.items() if v is not None}


def subnet(subnet_id: str, zone: str, **tags: str) -> Subnet:
    return Subnet(subnet_id, "vpc-0abc", zone, "10.0.0.0/20", 4000, dict(tags))


def live(*groups: dict[str, Any], status: str = "InService", **cluster: Any) -> LiveCluster:
    described: dict[str, Any] = {
        "ClusterName": "hypd-train",
        "ClusterArn": ARN,
        "ClusterStatus": status,
        "InstanceGroups": list(groups),
        "VpcConfig": {"SecurityGroupIds": ["sg-0abc"], "Subnets": [SHARED]},
        "NodeRecovery": "Automatic",
        "NodeProvisioningMode": "Continuous",
        **cluster,
    }
    return LiveCluster(
        tag="train",
        described=described,
        vpc_id="vpc-0abc",
        security_group_ids=("sg-0abc",),
        subnet_id=SHARED,
        zone="us-west-2a",
        subnets={
            SHARED: subnet(SHARED, "us-west-2a"),
            OTHER_ZONE: subnet(OTHER_ZONE, "us-west-2b"),
            DEDICATED: subnet(DEDICATED, "us-west-2a", **{TAG_DEDICATED_TO: "big"}),
        },
    )
