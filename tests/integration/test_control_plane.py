"""The ``eks`` stage's domain logic on the local cloud: the emulated EKS control plane created
once, polled on the wait policy until ACTIVE, and opened to hypd through an access entry."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hypd.create.control_plane import (
    EKS_WAIT,
    EksClusterConflict,
    EksClusterFailed,
    EksState,
    cluster_admin_policy_arn,
    ensure_admin_access,
    ensure_eks_cluster,
    principal_of,
    read_eks_cluster,
)
from hypd.kubernetes import eks_token, kubernetes_api, token_sts_client

_ids = itertools.count(1)
CLUSTER_ADMIN_POLICY_ARN = cluster_admin_policy_arn("aws")


def network(cloud: Any, second_octet: int = 50) -> tuple[list[str], str]:
    """Two subnets in two zones of a new VPC, and a security group in it."""
    ec2 = cloud.client("ec2")
    vpc = ec2.create_vpc(CidrBlock=f"10.{second_octet}.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.{second_octet}.{i}.0/24",
                          AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for i, zone in enumerate((f"{cloud.region}a", f"{cloud.region}b"))
    ]
    group = ec2.create_security_group(GroupName=f"eks-{next(_ids)}", Description="eks",
                                      VpcId=vpc)["GroupId"]
    return subnets, group


def eks_role(cloud: Any) -> str:
    trust = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"},
        "Action": "sts:AssumeRole"}]}
    role = cloud.client("iam").create_role(RoleName=f"eks-cluster-{next(_ids)}",
                                           AssumeRolePolicyDocument=json.dumps(trust))
    return str(role["Role"]["Arn"])


def create(cloud: Any, name: str, subnets: list[str], group: str,
           operation: str = "op-1") -> EksState:
    return ensure_eks_cluster(
        cloud.client("eks"), name=name, role_arn=eks_role(cloud), subnet_ids=subnets,
        security_group_ids=[group], kubernetes_version=None, tags={"hypd:tag": name},
        client_token=f"{operation}-eks")


def wait_until_active(cloud: Any, name: str) -> tuple[EksState, int]:
    """Poll as the state machine does: wait `next_check_seconds`, look, repeat."""
    eks = cloud.client("eks")
    state = read_eks_cluster(eks, name)
    looks = 0
    while not state.ready:
        cloud.clock.advance(state.next_check_seconds())
        state = read_eks_cluster(eks, name)
        looks += 1
        assert looks < 40
    return state, looks


def test_cluster_is_created_once_polled_to_active_and_opened_to_hypd(cloud: Any) -> None:
    name = f"hypd-cp-{next(_ids)}"
    subnets, group = network(cloud)
    eks = cloud.client("eks")

    # When the stage creates the cluster, and a retried task does it again
    first = create(cloud, name, subnets, group)
    again = create(cloud, name, subnets, group)

    # Then there is one cluster, CREATING, with API authentication and hypd's settings
    assert eks.list_clusters()["clusters"].count(name) == 1
    assert first.status == again.status == "CREATING"
    assert first.arn == again.arn
    assert not first.ready
    described = eks.describe_cluster(name=name)["cluster"]
    assert described["accessConfig"] == {"authenticationMode": "API",
                                         "bootstrapClusterCreatorAdminPermissions": False}
    vpc = described["resourcesVpcConfig"]
    assert vpc["endpointPublicAccess"] is True
    assert vpc["endpointPrivateAccess"] is True
    assert vpc["securityGroupIds"] == [group]
    logging = described["logging"]["clusterLogging"]
    assert {"types": ["api", "audit", "authenticator"], "enabled": True} in logging
    assert described["tags"] == {"hypd:tag": name}

    # And polling on the wait policy finds it ACTIVE within 30 s of it turning ACTIVE,
    # after a first look near the expected end and a few short intervals
    created_at = first.created_at
    assert created_at is not None
    active, looks = wait_until_active(cloud, name)
    assert active.endpoint
    assert active.certificate_authority
    assert active.vpc_id
    assert set(active.subnet_ids) == set(subnets)
    assert looks <= 1 + (12 * 60 - EKS_WAIT.first_look_seconds) // EKS_WAIT.interval_seconds + 1
    noticed = (cloud.clock.now() - created_at).total_seconds()
    assert noticed <= 12 * 60 + EKS_WAIT.interval_seconds

    # And hypd's own principal is let in: no entry before (no bootstrap admin), cluster admin after
    principal = principal_of(cloud.client("sts"))
    assert principal.startswith("arn:aws:iam::")
    sts = token_sts_client(cloud.region, cloud.boto3_session())
    core = k8s.CoreV1Api(kubernetes_api(active.kubernetes_cluster(),
                                        eks_token(sts, name, now=cloud.clock.now()).value))
    with pytest.raises(ApiException) as denied:
        core.list_namespace()
    assert denied.value.status == 401

    assert ensure_admin_access(eks, name, principal) is True
    assert ensure_admin_access(eks, name, principal) is False  # idempotent
    policies = eks.list_associated_access_policies(clusterName=name, principalArn=principal)
    assert [(p["policyArn"], p["accessScope"]["type"])
            for p in policies["associatedAccessPolicies"]] == [(CLUSTER_ADMIN_POLICY_ARN,
                                                                 "cluster")]
    core = k8s.CoreV1Api(kubernetes_api(active.kubernetes_cluster(),
                                        eks_token(sts, name, now=cloud.clock.now()).value))
    assert {"default", "kube-system"} <= {ns.metadata.name for ns in core.list_namespace().items
                                          if ns.metadata}

    # And the adopted cluster is reported as it is on a later ensure (a resumed operation)
    assert create(cloud, name, subnets, group, operation="op-2").ready


def test_an_entry_without_the_policy_gets_it_associated(cloud: Any) -> None:
    name = f"hypd-cp-{next(_ids)}"
    subnets, group = network(cloud)
    create(cloud, name, subnets, group)
    cloud.clock.advance(12 * 60)
    eks = cloud.client("eks")
    principal = principal_of(cloud.client("sts"))
    eks.create_access_entry(clusterName=name, principalArn=principal, type="STANDARD")

    assert ensure_admin_access(eks, name, principal) is True
    associated = eks.list_associated_access_policies(clusterName=name, principalArn=principal)
    assert [p["policyArn"] for p in associated["associatedAccessPolicies"]] == [
        CLUSTER_ADMIN_POLICY_ARN]


def test_a_failed_creation_raises_eks_cluster_failed_with_the_reason(cloud: Any) -> None:
    name = f"hypd-cp-{next(_ids)}"
    subnets, group = network(cloud)
    cloud.emulation.eks.fail_next_cluster(name, "Subnets lack free addresses (injected).")
    create(cloud, name, subnets, group)
    cloud.clock.advance(12 * 60)

    with pytest.raises(EksClusterFailed) as failed:
        read_eks_cluster(cloud.client("eks"), name)
    assert name in failed.value.message
    assert "Subnets lack free addresses (injected)." in failed.value.message
    assert failed.value.details["awsErrorCode"] == "InternalFailure"

    # And ensure (a retried create task) does not adopt the failed cluster either
    with pytest.raises(EksClusterFailed):
        create(cloud, name, subnets, group)


def test_an_existing_cluster_on_other_subnets_is_a_conflict(cloud: Any) -> None:
    name = f"hypd-cp-{next(_ids)}"
    subnets, group = network(cloud, 60)
    other_subnets, other_group = network(cloud, 61)
    create(cloud, name, subnets, group)

    with pytest.raises(EksClusterConflict) as conflict:
        create(cloud, name, other_subnets, other_group)
    assert name in conflict.value.message
    assert conflict.value.details["requestedSubnetIds"] == sorted(other_subnets)
