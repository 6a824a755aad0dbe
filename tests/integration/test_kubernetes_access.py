"""hypd's Kubernetes access on the local cloud: a bearer token from hypd.kubernetes.token and
an API client from hypd.kubernetes.client, against an emulated EKS cluster's Kubernetes API
(which verifies the token through STS and authorises it against access entries)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import boto3
import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hypd.kubernetes import TokenCache, eks_token, kubernetes_api, token_sts_client

APPLY_PATCH = "application/apply-patch+yaml"
_ids = itertools.count(1)


def active_eks(cloud: Any, name: str) -> dict[str, Any]:
    """An EKS cluster (API authentication) on two subnets in two zones, made ACTIVE by letting
    12 virtual minutes pass; DescribeCluster's ``cluster``."""
    ec2 = cloud.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.40.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.40.{i}.0/24",
                          AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for i, zone in enumerate((f"{cloud.region}a", f"{cloud.region}b"))
    ]
    trust = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"},
        "Action": "sts:AssumeRole"}]}
    role = cloud.client("iam").create_role(RoleName=f"eks-{next(_ids)}",
                                           AssumeRolePolicyDocument=json.dumps(trust))
    eks = cloud.client("eks")
    created = eks.create_cluster(name=name, roleArn=role["Role"]["Arn"],
                                 resourcesVpcConfig={"subnetIds": subnets},
                                 accessConfig={"authenticationMode": "API"})["cluster"]
    assert created["status"] == "CREATING"
    cloud.clock.advance(12 * 60)
    cluster: dict[str, Any] = eks.describe_cluster(name=name)["cluster"]
    assert cluster["status"] == "ACTIVE"
    return cluster


def unknown_principal(cloud: Any) -> boto3.session.Session:
    """A session on a role that has no access entry on any cluster."""
    arn = cloud.client("iam").create_role(RoleName=f"stranger-{next(_ids)}",
                                          AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    creds = cloud.client("sts").assume_role(RoleArn=arn, RoleSessionName="test")["Credentials"]
    return boto3.session.Session(
        aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"], region_name=cloud.region)


def test_creator_lists_namespaces_and_applies_a_config_map(cloud: Any) -> None:
    # Given an ACTIVE EKS cluster whose creator (the cloud's identity) has a cluster-admin entry
    name = f"hypd-{next(_ids)}"
    cluster = active_eks(cloud, name)

    # When hypd builds a token and a client from DescribeCluster alone
    sts = token_sts_client(cloud.region, cloud.boto3_session())
    token = eks_token(sts, name, now=cloud.clock.now())
    api = kubernetes_api(cluster, token.value)
    core = k8s.CoreV1Api(api)

    # Then it reads the cluster
    namespaces = {ns.metadata.name for ns in core.list_namespace().items if ns.metadata}
    assert {"default", "kube-system"} <= namespaces

    # And creates, then server-side applies, a ConfigMap
    core.create_namespaced_config_map("default", k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name="hypd-probe"), data={"owner": "hypd"}))
    applied: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "hypd-probe", "namespace": "default"},
                               "data": {"owner": "hypd", "stage": "applied"}}
    result = core.patch_namespaced_config_map("hypd-probe", "default", applied,
                                              field_manager="hypd", force=True,
                                              _content_type=APPLY_PATCH)
    assert result.data == {"owner": "hypd", "stage": "applied"}
    assert result.metadata is not None
    managers = {entry.manager for entry in result.metadata.managed_fields or ()}
    assert "hypd" in managers
    assert core.read_namespaced_config_map("hypd-probe", "default").data == applied["data"]


def test_a_long_lived_client_takes_its_tokens_from_a_cache(cloud: Any) -> None:
    # (The local Kubernetes API judges token age on the wall clock, since botocore stamps
    # X-Amz-Date from it; advancing the virtual clock here only ages the cache's entries.)
    name = f"hypd-{next(_ids)}"
    cluster = active_eks(cloud, name)
    signers: list[Any] = []

    def sts() -> Any:
        signers.append(token_sts_client(cloud.region, cloud.boto3_session()))
        return signers[-1]

    cache = TokenCache(sts)
    first = cache.token(name, now=cloud.clock.now())
    core = k8s.CoreV1Api(kubernetes_api(
        cluster, first.value,
        refresh_token=lambda: cache.token(name, now=cloud.clock.now()).value))

    assert core.list_namespace().items
    cloud.clock.advance(9 * 60)  # younger than 10 minutes: the same token
    assert core.list_namespace().items
    assert len(signers) == 1
    cloud.clock.advance(2 * 60)  # older: a new one, signed and accepted
    assert core.list_namespace().items
    assert len(signers) == 2
    assert cache.token(name, now=cloud.clock.now()) != first


def test_a_principal_without_an_access_entry_gets_401(cloud: Any) -> None:
    name = f"hypd-{next(_ids)}"
    cluster = active_eks(cloud, name)

    sts = token_sts_client(cloud.region, unknown_principal(cloud))
    core = k8s.CoreV1Api(kubernetes_api(cluster, eks_token(sts, name,
                                                           now=cloud.clock.now()).value))

    with pytest.raises(ApiException) as denied:
        core.list_namespace()
    assert denied.value.status == 401


def test_a_token_for_another_cluster_gets_401(cloud: Any) -> None:
    name = f"hypd-{next(_ids)}"
    cluster = active_eks(cloud, name)

    sts = token_sts_client(cloud.region, cloud.boto3_session())
    core = k8s.CoreV1Api(kubernetes_api(cluster, eks_token(sts, "some-other-cluster",
                                                           now=cloud.clock.now()).value))

    with pytest.raises(ApiException) as denied:
        core.list_namespace()
    assert denied.value.status == 401
