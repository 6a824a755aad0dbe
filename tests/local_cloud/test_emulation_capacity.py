"""Capacity features of the emulated HyperPod on a running local cloud, end to end.

Managed Karpenter (its CRDs and the status of HyperpodNodeClasses and NodePools), the cluster
role checked against moto's IAM, instance group labels and taints on the Kubernetes nodes, and
ListClusterEvents / DescribeClusterEvent, all through plain boto3 clients, the official
kubernetes client and the ``/_local/`` routes. Time is virtual; nothing sleeps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
from botocore.exceptions import ClientError
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hypd_local import LocalCloud
from tests.local_cloud.test_emulation import (
    active_eks,
    api_client,
    create_hyperpod,
    eks_token,
    error_code,
    group_spec,
    nodes,
    unique,
)

KARPENTER = {"Mode": "Enable", "AutoScalerType": "Karpenter"}
NODECLASS = ("karpenter.sagemaker.amazonaws.com", "v1", "hyperpodnodeclasses")
NODEPOOL = ("karpenter.sh", "v1", "nodepools")
HYPERPOD_TRUST = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"Service": "hyperpod.sagemaker.amazonaws.com"},
    "Action": "sts:AssumeRole"}]}
NODE_ACTIONS = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow",
    "Action": ["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"],
    "Resource": "arn:aws:sagemaker:*:*:cluster/*"}]}


def cluster_role(cloud: LocalCloud, trust: dict[str, Any] | None = None,
                 boundary: dict[str, Any] | None = None) -> str:
    """A cluster role in moto's IAM (path /hypd/) with the node actions as inline policy."""
    iam = cloud.client("iam")
    name = unique("autoscaling")
    extra: dict[str, Any] = {}
    if boundary is not None:
        extra["PermissionsBoundary"] = iam.create_policy(
            PolicyName=unique("boundary"), PolicyDocument=json.dumps(boundary))["Policy"]["Arn"]
    arn: str = iam.create_role(RoleName=name, Path="/hypd/",
                               AssumeRolePolicyDocument=json.dumps(trust or HYPERPOD_TRUST),
                               **extra)["Role"]["Arn"]
    iam.put_role_policy(RoleName=name, PolicyName="nodes", PolicyDocument=json.dumps(NODE_ACTIONS))
    return arn


def autoscaling(cloud: LocalCloud, name: str) -> dict[str, Any]:
    described = cloud.client("sagemaker").describe_cluster(ClusterName=name)
    found: dict[str, Any] = described.get("AutoScaling", {})
    return found


def continuous_cluster(cloud: LocalCloud, groups: list[dict[str, Any]] | None = None,
                       **extra: Any) -> tuple[str, dict[str, Any]]:
    """A continuous HyperPod cluster (being created) on a new ACTIVE EKS cluster."""
    eks, network = active_eks(cloud, unique("eks"))
    name = unique("hp")
    create_hyperpod(cloud, name, eks["arn"], network,
                    groups or [group_spec(cloud, "workers", "ml.c5.2xlarge", 0)],
                    NodeProvisioningMode="Continuous", **extra)
    return name, eks


class Kubernetes:
    """The official client on an EKS cluster of the cloud, with a fresh token per call."""

    def __init__(self, cloud: LocalCloud, eks: dict[str, Any], directory: Path) -> None:
        self.cloud, self.eks, self.directory = cloud, eks, directory

    def client(self) -> k8s.ApiClient:
        token = eks_token(self.cloud.boto3_session(), self.eks["name"], self.cloud.region)
        return api_client(self.eks, token, self.directory)

    def custom(self) -> Any:
        return k8s.CustomObjectsApi(self.client())

    def core(self) -> Any:
        return k8s.CoreV1Api(self.client())


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in obj.get("status", {}).get("conditions", [])}


# --------------------------------------------------------------------------- managed Karpenter

def test_autoscaling_in_service_installs_karpenter_and_node_classes_get_ready(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # Given a continuous cluster created with autoscaling and a role HyperPod may use
    name, eks = continuous_cluster(cloud, ClusterRole=cluster_role(cloud, boundary=NODE_ACTIONS),
                                   AutoScaling=KARPENTER)
    kubernetes = Kubernetes(cloud, eks, tmp_path)
    assert autoscaling(cloud, name)["Status"] == "Creating"
    with pytest.raises(ApiException) as absent:
        kubernetes.custom().get_api_resources("karpenter.sh", "v1")
    assert absent.value.status == 404

    # When it is InService
    cloud.clock.advance(20 * 60)
    assert autoscaling(cloud, name)["Status"] == "InService"

    # Then clients find Karpenter's kinds and a node class of its group becomes Ready
    custom = kubernetes.custom()
    custom.create_cluster_custom_object(*NODECLASS, {
        "apiVersion": "karpenter.sagemaker.amazonaws.com/v1", "kind": "HyperpodNodeClass",
        "metadata": {"name": "hypd"}, "spec": {"instanceGroups": ["workers"]}})
    custom.create_cluster_custom_object(*NODEPOOL, {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "hypd"},
        "spec": {"template": {"spec": {"nodeClassRef": {
            "group": "karpenter.sagemaker.amazonaws.com", "kind": "HyperpodNodeClass",
            "name": "hypd"}}}}})
    node_class = custom.get_cluster_custom_object(*NODECLASS, "hypd")
    assert conditions(node_class) == {"InstanceGroupReady": "True", "SubnetsReady": "True",
                                      "Ready": "True"}
    (group,) = node_class["status"]["instanceGroups"]
    assert group["instanceTypes"] == ["ml.c5.2xlarge"]
    assert [s["zone"] for s in group["subnets"]] == ["us-west-2a"]
    assert conditions(custom.get_cluster_custom_object(*NODEPOOL, "hypd"))["Ready"] == "True"

    # When autoscaling is disabled, the CRDs stay and the node class is no longer Ready
    cloud.client("sagemaker").update_cluster(ClusterName=name, AutoScaling={"Mode": "Disable"})
    cloud.clock.advance(20 * 60)
    assert autoscaling(cloud, name) == {}
    node_class = kubernetes.custom().get_cluster_custom_object(*NODECLASS, "hypd")
    assert conditions(node_class)["Ready"] == "False"


def test_the_cluster_role_is_looked_up_in_moto_iam(cloud: LocalCloud) -> None:
    sagemaker = cloud.client("sagemaker")
    missing = f"arn:aws:iam::{cloud.account_id}:role/hypd/no-such-role"
    with pytest.raises(ClientError) as refused:
        continuous_cluster(cloud, ClusterRole=missing, AutoScaling=KARPENTER)
    assert error_code(refused) == "ValidationException"
    assert missing in str(refused.value)

    untrusting = cluster_role(cloud, trust={"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"},
        "Action": "sts:AssumeRole"}]})
    name, _eks = continuous_cluster(cloud, ClusterRole=untrusting, AutoScaling=KARPENTER)
    cloud.clock.advance(20 * 60)
    assert sagemaker.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService"
    failed = autoscaling(cloud, name)
    assert failed["Status"] == "Failed"
    assert "does not trust hyperpod.sagemaker.amazonaws.com" in failed["FailureMessage"]


def test_the_autoscaling_fails_route(cloud: LocalCloud) -> None:
    name, _eks = continuous_cluster(cloud)
    answer = requests.post(f"{cloud.local_url}/_local/faults/hyperpod/autoscaling-fails",
                           json={"clusterName": name, "message": "Karpenter crashed"},
                           timeout=10)
    assert answer.status_code == 201
    assert answer.json() == {"injected": "hyperpod/autoscaling-fails", "clusterName": name,
                             "message": "Karpenter crashed"}
    cloud.clock.advance(20 * 60)

    cloud.client("sagemaker").update_cluster(ClusterName=name, ClusterRole=cluster_role(cloud),
                                             AutoScaling=KARPENTER)
    cloud.clock.advance(20 * 60)

    assert autoscaling(cloud, name) == {**KARPENTER, "Status": "Failed",
                                        "FailureMessage": "Karpenter crashed"}
    bad = requests.post(f"{cloud.local_url}/_local/faults/hyperpod/autoscaling-fails",
                        json={"cluster": name}, timeout=10)
    assert bad.status_code == 400
    assert "cluster" in bad.json()["message"]


# --------------------------------------------------------------------------- labels and taints

def test_group_labels_and_taints_reach_the_nodes_and_follow_updates(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # Given a group whose KubernetesConfig declares labels and taints
    workers = {**group_spec(cloud, "workers", "ml.c5.2xlarge", 1), "KubernetesConfig": {
        "Labels": {"team": "ml", "tier": "gold"},
        "Taints": [{"Key": "dedicated", "Value": "ml", "Effect": "NoSchedule"},
                   {"Key": "spot", "Effect": "PreferNoSchedule"}]}}
    name, eks = continuous_cluster(cloud, [workers])
    cloud.clock.advance(20 * 60)
    core = Kubernetes(cloud, eks, tmp_path).core()
    node_name = f"hyperpod-{nodes(cloud, name)[0]['InstanceId']}"
    node = core.read_node(node_name)
    assert {"team": "ml", "tier": "gold"}.items() <= node.metadata.labels.items()
    assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [
        ("dedicated", "ml", "NoSchedule"), ("spot", None, "PreferNoSchedule")]
    # and a user's own label and taint on the node
    core.patch_node(node_name, {"metadata": {"labels": {"owner": "me"}}, "spec": {"taints": [
        *node.to_dict()["spec"]["taints"], {"key": "mine", "effect": "NoExecute"}]}})

    # When UpdateCluster changes the group's KubernetesConfig
    cloud.client("sagemaker").update_cluster(ClusterName=name, InstanceGroups=[{
        **workers, "KubernetesConfig": {
            "Labels": {"team": "research", "zone-pinned": "yes"},
            "Taints": [{"Key": "dedicated", "Value": "research", "Effect": "NoExecute"}]}}])
    cloud.clock.advance(1)  # the next sync

    # Then the node follows; what HyperPod did not put there stays
    node = core.read_node(node_name)
    labels = node.metadata.labels
    assert (labels["team"], labels["zone-pinned"], labels["owner"]) == ("research", "yes", "me")
    assert "tier" not in labels
    assert sorted((t.key, t.value, t.effect) for t in node.spec.taints) == [
        ("dedicated", "research", "NoExecute"), ("mine", None, "NoExecute")]
    group = cloud.client("sagemaker").describe_cluster(ClusterName=name)["InstanceGroups"][0]
    assert group["KubernetesConfig"]["CurrentLabels"] == {"team": "research", "zone-pinned": "yes"}


# --------------------------------------------------------------------------- cluster events

def test_cluster_events_are_listed_and_described_through_boto3(cloud: LocalCloud) -> None:
    sagemaker = cloud.client("sagemaker")
    base = f"{cloud.local_url}/_local/faults/hyperpod/insufficient-capacity"
    short = {"instanceType": "ml.g5.4xlarge", "availabilityZone": "us-west-2a"}
    requests.post(base, json=short, timeout=10)
    try:
        name, _eks = continuous_cluster(cloud, [
            group_spec(cloud, "workers", "ml.c5.2xlarge", 1),
            group_spec(cloud, "gpu", "ml.g5.4xlarge", 1)])
        cloud.clock.advance(20 * 60)
    finally:
        requests.post(base, json={**short, "enabled": False}, timeout=10)

    errors = sagemaker.list_cluster_events(ClusterName=name, ResourceType="InstanceGroup")
    (error,) = errors["Events"]
    assert (error["EventLevel"], error["InstanceGroupName"]) == ("Error", "gpu")
    detail = sagemaker.describe_cluster_event(ClusterName=name, EventId=error["EventId"])
    assert detail["EventDetails"]["EventTime"] == error["EventTime"]
    paginator = sagemaker.get_paginator("list_cluster_events")
    pages = list(paginator.paginate(ClusterName=name, PaginationConfig={"PageSize": 1}))
    assert len([e for page in pages for e in page["Events"]]) >= 3  # launches too
    with pytest.raises(ClientError) as unknown:
        sagemaker.list_cluster_events(ClusterName="no-such-cluster")
    assert error_code(unknown) == "ResourceNotFound"
