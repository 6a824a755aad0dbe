"""Seed the local cloud with EKS clusters and HyperPod clusters linked to them.

Everything goes through plain boto3 calls against the moto server, exactly as a user's account
would be populated, so discovery and the demo see ordinary API results:

    seed_clusters(cloud)                     # the default account: see DEFAULT_SEEDS
    seed_clusters(cloud, ["alpha", "beta"])
    seed_clusters(cloud, [ClusterSeed("gamma", hyperpod=False)])   # an EKS cluster alone

Each seed gets a VPC with control-plane and compute subnets, a security group, an EKS cluster
(API authentication mode) and, unless ``hyperpod=False``, a HyperPod cluster whose
``Orchestrator.Eks.ClusterArn`` is that EKS cluster.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from hypd_local.emulator.hyperpod_iam import EXECUTION_ACTIONS


class _CloudLike(Protocol):
    region: str

    def client(self, service: str) -> Any: ...


@dataclass(frozen=True)
class InstanceGroupSeed:
    name: str = "workers"
    instance_type: str = "ml.g5.8xlarge"
    count: int = 2
    threads_per_core: int = 1


@dataclass(frozen=True)
class ClusterSeed:
    """One cluster to create. ``name`` is the HyperPod cluster's name."""

    name: str
    eks_name: str | None = None
    """Defaults to ``<name>-eks``."""
    hyperpod: bool = True
    kubernetes_version: str = "1.31"
    instance_groups: tuple[InstanceGroupSeed, ...] = (InstanceGroupSeed(),)
    tags: Mapping[str, str] = field(default_factory=dict)
    availability_zones: tuple[str, ...] = ()
    """Zones for the subnets (default: the Region's a and b zones)."""

    @property
    def eks_cluster_name(self) -> str:
        return self.eks_name or f"{self.name}-eks"


@dataclass(frozen=True)
class SeededCluster:
    name: str
    eks_name: str
    eks_arn: str
    hyperpod_arn: str | None
    vpc_id: str
    control_plane_subnet_ids: tuple[str, ...]
    compute_subnet_ids: tuple[str, ...]
    security_group_id: str


DEFAULT_SEEDS: tuple[ClusterSeed, ...] = (
    ClusterSeed(
        "training",
        instance_groups=(
            InstanceGroupSeed("controller", "ml.c5.2xlarge", 1),
            InstanceGroupSeed("gpu-workers", "ml.g5.8xlarge", 2),
        ),
        tags={"team": "research"},
    ),
    ClusterSeed(
        "inference",
        instance_groups=(InstanceGroupSeed("gpu", "ml.g5.12xlarge", 1),),
        tags={"team": "serving"},
    ),
    ClusterSeed("sandbox", hyperpod=False),
)
"""A team that already has clusters: two HyperPod clusters on EKS and one EKS cluster alone."""


def seed_clusters(
    target: _CloudLike | Any,
    clusters: Iterable[str | ClusterSeed] = DEFAULT_SEEDS,
    *,
    region: str | None = None,
) -> list[SeededCluster]:
    """Create the given clusters; ``target`` is a `LocalCloud` or a boto3 session.

    A boto3 session must reach the moto server (AWS_ENDPOINT_URL set, as a running local cloud
    does for its process).
    """
    client: Callable[[str], Any]
    if hasattr(target, "client") and hasattr(target, "aws_endpoint"):
        region = region or target.region
        client = target.client  # the cloud's cached clients
    else:
        session: Any = target
        region = region or session.region_name

        def client(service: str) -> Any:
            return session.client(service, region_name=region)

    ec2, iam, eks, sagemaker = client("ec2"), client("iam"), client("eks"), client("sagemaker")
    eks_role = _ensure_role(iam, "hypd-local-eks-cluster", "eks.amazonaws.com")
    execution_role = _ensure_role(iam, "hypd-local-hyperpod-execution", "sagemaker.amazonaws.com",
                                  {"Effect": "Allow", "Action": sorted(EXECUTION_ACTIONS),
                                   "Resource": "*"})

    pending: list[tuple[ClusterSeed, dict[str, Any], str, tuple[str, ...], tuple[str, ...], str]]
    pending = []
    for index, item in enumerate(clusters):
        seed = item if isinstance(item, ClusterSeed) else ClusterSeed(str(item))
        zones = seed.availability_zones or (f"{region}a", f"{region}b")
        vpc_id = ec2.create_vpc(CidrBlock=f"10.{index % 250}.0.0/16")["Vpc"]["VpcId"]
        ec2.create_tags(Resources=[vpc_id], Tags=[{"Key": "Name", "Value": seed.name}])
        control_plane = tuple(
            ec2.create_subnet(VpcId=vpc_id, CidrBlock=f"10.{index % 250}.{i}.0/24",
                              AvailabilityZone=zone)["Subnet"]["SubnetId"]
            for i, zone in enumerate(zones)
        )
        compute = tuple(
            ec2.create_subnet(VpcId=vpc_id, CidrBlock=f"10.{index % 250}.{16 * (i + 1)}.0/20",
                              AvailabilityZone=zone)["Subnet"]["SubnetId"]
            for i, zone in enumerate(zones[:1])
        )
        security_group = ec2.create_security_group(
            GroupName=f"{seed.name}-hyperpod", Description=f"HyperPod nodes of {seed.name}",
            VpcId=vpc_id,
        )["GroupId"]
        eks_cluster = eks.create_cluster(
            name=seed.eks_cluster_name,
            version=seed.kubernetes_version,
            roleArn=eks_role,
            resourcesVpcConfig={
                "subnetIds": list(control_plane),
                "securityGroupIds": [security_group],
                "endpointPublicAccess": True,
                "endpointPrivateAccess": True,
            },
            accessConfig={"authenticationMode": "API"},
            # AWS refuses an empty tag map: send tags only when there are some.
            **({"tags": dict(seed.tags)} if seed.tags else {}),
        )["cluster"]
        pending.append((seed, eks_cluster, vpc_id, control_plane, compute, security_group))

    # HyperPod accepts only an ACTIVE EKS cluster: wait for the control planes (8-12 virtual
    # minutes on the local cloud; the waiter's sleeps are virtual there).
    waiter = eks.get_waiter("cluster_active")
    for seed, *_ in pending:
        waiter.wait(name=seed.eks_cluster_name, WaiterConfig={"Delay": 30, "MaxAttempts": 60})

    seeded = []
    for seed, eks_cluster, vpc_id, control_plane, compute, security_group in pending:
        hyperpod_arn = None
        if seed.hyperpod:
            hyperpod_arn = sagemaker.create_cluster(
                ClusterName=seed.name,
                Orchestrator={"Eks": {"ClusterArn": eks_cluster["arn"]}},
                InstanceGroups=[
                    {
                        "InstanceGroupName": group.name,
                        "InstanceType": group.instance_type,
                        "InstanceCount": group.count,
                        "ExecutionRole": execution_role,
                        "ThreadsPerCore": group.threads_per_core,
                        "LifeCycleConfig": {
                            "SourceS3Uri": f"s3://sagemaker-hypd-local-{region}/lifecycle/",
                            "OnCreate": "on_create.sh",
                        },
                    }
                    for group in seed.instance_groups
                ],
                VpcConfig={"SecurityGroupIds": [security_group], "Subnets": list(compute)},
                NodeRecovery="Automatic",
                NodeProvisioningMode="Continuous",
                **({"Tags": [{"Key": k, "Value": v} for k, v in seed.tags.items()]}
                   if seed.tags else {}),
            )["ClusterArn"]
        seeded.append(SeededCluster(
            name=seed.name,
            eks_name=seed.eks_cluster_name,
            eks_arn=eks_cluster["arn"],
            hyperpod_arn=hyperpod_arn,
            vpc_id=vpc_id,
            control_plane_subnet_ids=control_plane,
            compute_subnet_ids=compute,
            security_group_id=security_group,
        ))
    clock = getattr(target, "clock", None)
    if clock is not None:
        _wait_in_service(sagemaker, [s.name for s in seeded if s.hyperpod_arn], clock)
    return seeded


def _wait_in_service(sagemaker: Any, names: list[str], clock: Any) -> None:
    """Let virtual time pass until every HyperPod cluster is InService (or ended Failed)."""
    for _ in range(240):
        statuses = [sagemaker.describe_cluster(ClusterName=n)["ClusterStatus"] for n in names]
        if all(status in ("InService", "Failed") for status in statuses):
            return
        clock.sleep(30)
    raise TimeoutError(f"HyperPod clusters {names} were not InService after 2 virtual hours")


def _ensure_role(iam: Any, name: str, service: str,
                 permissions: dict[str, Any] | None = None) -> str:
    """A role trusting ``service``, allowed ``permissions`` (one statement) if given."""
    try:
        arn: str = iam.get_role(RoleName=name)["Role"]["Arn"]
        return arn
    except iam.exceptions.NoSuchEntityException:
        pass
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service},
                       "Action": "sts:AssumeRole"}],
    }
    created: str = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(policy))[
        "Role"]["Arn"]
    if permissions is not None:
        iam.put_role_policy(RoleName=name, PolicyName="permissions", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [permissions]}))
    return created
