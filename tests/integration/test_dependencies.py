"""The ``dependencies`` stage's domain logic on the local cloud: EKS add-ons installed through the
EKS API in dependency order, then the project's dependency chart rendered with helm and applied
by server-side apply through the cluster's Kubernetes API."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from kubernetes import client as k8s

from hypd.create import addons as addons_mod
from hypd.create.addons import AddonFailed, AddonProgress, advance_addons, plan_addons
from hypd.create.chart import chart_source, render_chart
from hypd.create.control_plane import (
    EksState,
    ensure_admin_access,
    ensure_eks_cluster,
    principal_of,
    read_eks_cluster,
)
from hypd.kubernetes import eks_token, kubernetes_api, token_sts_client
from hypd.kubernetes.apply import (
    KubernetesAccessDenied,
    KubernetesApplyConflict,
    apply_manifests,
    check_rollout,
)

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "hyperpod-dependencies"
CSI_ROLE = "arn:aws:iam::123456789012:role/hypd-s3-csi"
_ids = itertools.count(1)


def active_cluster(cloud: Any) -> EksState:
    """An ACTIVE EKS cluster made by the eks stage's functions, hypd granted cluster admin."""
    name = f"hypd-dep-{next(_ids)}"
    ec2, iam, eks = cloud.client("ec2"), cloud.client("iam"), cloud.client("eks")
    vpc = ec2.create_vpc(CidrBlock="10.70.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.70.{i}.0/24",
                                 AvailabilityZone=zone)["Subnet"]["SubnetId"]
               for i, zone in enumerate((f"{cloud.region}a", f"{cloud.region}b"))]
    role = iam.create_role(RoleName=f"eks-{name}", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "eks.amazonaws.com"}}]}))
    ensure_eks_cluster(eks, name=name, role_arn=role["Role"]["Arn"], subnet_ids=subnets,
                       security_group_ids=[], kubernetes_version="1.33", tags={},
                       client_token=f"op-{name}-eks")
    cloud.clock.advance(12 * 60)
    ensure_admin_access(eks, name, principal_of(cloud.client("sts")))
    state = read_eks_cluster(eks, name)
    assert state.ready
    return state


def install(cloud: Any, name: str, storage: str = "s3", **kwargs: Any) -> list[AddonProgress]:
    """advance_addons until done, waiting what each step says; every step's progress."""
    eks = cloud.client("eks")
    steps = [advance_addons(eks, name, plan_addons(storage), client_token="op-1-addons",
                            **kwargs)]
    while not steps[-1].done:
        assert len(steps) < 30
        cloud.clock.advance(steps[-1].next_check_seconds)
        steps.append(advance_addons(eks, name, plan_addons(storage),
                                    client_token="op-1-addons", **kwargs))
    return steps


def session_of(cloud: Any, role_arn: str) -> boto3.session.Session:
    """A session on `role_arn` (assumed through the cloud's STS)."""
    creds = cloud.client("sts").assume_role(RoleArn=role_arn,
                                            RoleSessionName="hypd-test")["Credentials"]
    return boto3.session.Session(
        aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"], region_name=cloud.region)


def api_for(cloud: Any, state: EksState, session: boto3.session.Session | None = None) -> Any:
    sts = token_sts_client(cloud.region, session or cloud.boto3_session())
    return kubernetes_api(state.kubernetes_cluster(),
                          eks_token(sts, state.name, now=cloud.clock.now()).value)


def pod_identity_role(cloud: Any) -> str:
    """The CSI driver's role: EKS refuses a pod identity role that does not trust it."""
    name = CSI_ROLE.rsplit("/", 1)[-1]
    cloud.client("iam").create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": ["sts:AssumeRole", "sts:TagSession"],
            "Principal": {"Service": "pods.eks.amazonaws.com"}}]}))
    return CSI_ROLE


def test_addons_are_installed_in_dependency_order_with_the_csi_pod_identity(cloud: Any) -> None:
    state = active_cluster(cloud)
    eks = cloud.client("eks")
    pod_identity_role(cloud)

    steps = install(cloud, state.name,
                    pod_identity_roles={"aws-mountpoint-s3-csi-driver": CSI_ROLE})

    # Then every planned add-on is ACTIVE, each created only after its prerequisites were
    plan = plan_addons("s3")
    assert [s.name for s in plan] == ["vpc-cni", "kube-proxy", "coredns",
                                      "eks-pod-identity-agent", "aws-mountpoint-s3-csi-driver"]
    assert steps[-1].statuses == {spec.name: "ACTIVE" for spec in plan}
    described = {spec.name: eks.describe_addon(clusterName=state.name,
                                               addonName=spec.name)["addon"] for spec in plan}
    for spec in plan:
        for prerequisite in spec.prerequisites:
            ready_at = (described[prerequisite]["createdAt"].timestamp()
                        + cloud.emulation.eks.durations.addon_create)
            assert described[spec.name]["createdAt"].timestamp() >= ready_at, (spec.name,
                                                                               prerequisite)
    created = [name for step in steps for name in step.created]
    assert sorted(created) == sorted(spec.name for spec in plan)  # each created exactly once
    assert [step.created for step in steps if step.created] == [
        ("vpc-cni", "kube-proxy"), ("coredns", "eks-pod-identity-agent"),
        ("aws-mountpoint-s3-csi-driver",)]
    # three rounds of a minute, each noticed when it ends: no idle polling
    assert len(steps) == 4

    # And the default version for the cluster's Kubernetes version was installed
    versions = eks.describe_addon_versions(addonName="coredns", kubernetesVersion="1.33")
    default = next(v["addonVersion"] for v in versions["addons"][0]["addonVersions"]
                   if any(c["defaultVersion"] for c in v["compatibilities"]))
    assert described["coredns"]["addonVersion"] == default

    # And only the CSI driver got a pod identity association (for its service account)
    assert len(described["aws-mountpoint-s3-csi-driver"]["podIdentityAssociations"]) == 1
    assert all(not described[name]["podIdentityAssociations"]
               for name in ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"))

    # And a further step (a retried task) changes nothing
    again = advance_addons(eks, state.name, plan, client_token="op-2-addons")
    assert again.done
    assert again.created == ()
    assert again.summary()["done"] is True


def test_fsx_storage_gets_the_fsx_csi_driver(cloud: Any) -> None:
    state = active_cluster(cloud)
    steps = install(cloud, state.name, storage="fsx")
    assert "aws-fsx-csi-driver" in steps[-1].statuses
    assert "aws-mountpoint-s3-csi-driver" not in cloud.emulation.eks.addon_names(state.name)


def test_an_unhealthy_addon_fails_the_stage_naming_it_and_its_issues(cloud: Any) -> None:
    state = active_cluster(cloud)
    cloud.emulation.eks.degrade_addon(state.name, "coredns", "ConfigurationConflict",
                                      "Conflicts found when trying to apply (injected).")

    with pytest.raises(AddonFailed) as failed:
        install(cloud, state.name)
    assert "coredns" in failed.value.message
    assert "ConfigurationConflict" in failed.value.message
    assert "Conflicts found when trying to apply (injected)." in failed.value.message
    assert failed.value.details["addonName"] == "coredns"
    assert failed.value.details["awsErrorCode"] == "ConfigurationConflict"


def test_an_addon_short_of_replicas_for_lack_of_nodes_is_settled(cloud: Any) -> None:
    # (On AWS, coredns and the CSI controllers are DEGRADED/InsufficientNumberOfReplicas until
    # HyperPod adds nodes, which happens after this stage.)
    state = active_cluster(cloud)
    cloud.emulation.eks.degrade_addon(state.name, "coredns", "InsufficientNumberOfReplicas")

    steps = install(cloud, state.name)
    assert steps[-1].statuses["coredns"] == addons_mod.AWAITING_NODES
    assert steps[-1].awaiting_nodes == ["coredns"]
    assert steps[-1].statuses["aws-mountpoint-s3-csi-driver"] == "ACTIVE"

    # But once nodes are expected, the same state is a failure
    with pytest.raises(AddonFailed, match="InsufficientNumberOfReplicas"):
        advance_addons(cloud.client("eks"), state.name, plan_addons("s3"), awaiting_nodes=False)


def test_the_dependency_chart_is_applied_once_and_reapplying_changes_nothing(cloud: Any) -> None:
    state = active_cluster(cloud)
    manifests = render_chart(chart_source(str(CHART)), release="hyperpod-dependencies",
                             namespace="kube-system", values={})
    api = api_for(cloud, state)

    first = apply_manifests(api, manifests)
    second = apply_manifests(api, manifests)

    # Then every object was created by the first apply, in namespace/CRD-first order
    assert len(first) == len(manifests)
    assert all(obj.created for obj in first)
    kinds = [obj.kind for obj in first]
    assert kinds[:5] == ["Namespace"] * 3 + ["CustomResourceDefinition"] * 2
    # and the second changed nothing (same objects, same resource versions)
    assert not any(obj.created for obj in second)
    assert [(o.ref, o.resource_version) for o in second] == [
        (o.ref, o.resource_version) for o in first]

    # And the objects are there, custom resource types included
    apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
    assert {"aws-hyperpod", "kubeflow", "mpi-operator"} <= {
        ns.metadata.name for ns in core.list_namespace().items if ns.metadata}
    agent = apps.read_namespaced_daemon_set("health-monitoring-agent", "aws-hyperpod")
    assert agent.spec is not None
    assert apps.read_namespaced_deployment("training-operator", "kubeflow").metadata is not None
    custom = k8s.CustomObjectsApi(api)
    listed: Any = custom.list_namespaced_custom_object("kubeflow.org", "v1", "default",
                                                       "pytorchjobs")
    assert listed["items"] == []

    # And nothing reports unready: the emulated API runs no controllers, so no status
    assert check_rollout(api, first) == []


def test_without_force_a_field_owned_by_another_manager_is_a_conflict(cloud: Any) -> None:
    state = active_cluster(cloud)
    api = api_for(cloud, state)
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hypd-settings"},
              "data": {"mode": "a"}}
    apply_manifests(api, [config], namespace="kube-system")
    changed = {**config, "data": {"mode": "b"}}

    with pytest.raises(KubernetesApplyConflict, match="conflict"):
        apply_manifests(api, [changed], field_manager="someone-else", force=False,
                        namespace="kube-system")
    (taken,) = apply_manifests(api, [changed], field_manager="someone-else",
                               namespace="kube-system")
    assert (taken.namespace, taken.created) == ("kube-system", False)
    data = k8s.CoreV1Api(api).read_namespaced_config_map("hypd-settings", "kube-system").data
    assert data == {"mode": "b"}


def test_chart_values_switch_subcharts_off(cloud: Any) -> None:
    manifests = render_chart(CHART, release="deps", namespace="kube-system",
                             values={"mpi-operator": {"enabled": False},
                                     "nvidia-device-plugin": {"devicePlugin": {"enabled": False}}})
    names = {(m["kind"], m["metadata"]["name"]) for m in manifests}
    assert ("Deployment", "training-operator") in names
    assert ("Deployment", "mpi-operator") not in names
    assert ("CustomResourceDefinition", "mpijobs.kubeflow.org") not in names
    assert ("DaemonSet", "nvidia-device-plugin") not in names


def test_a_principal_with_a_view_policy_gets_403_naming_the_access_entry(cloud: Any) -> None:
    state = active_cluster(cloud)
    iam, eks = cloud.client("iam"), cloud.client("eks")
    viewer = iam.create_role(RoleName=f"viewer-{next(_ids)}",
                             AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    eks.create_access_entry(clusterName=state.name, principalArn=viewer, type="STANDARD")
    eks.associate_access_policy(
        clusterName=state.name, principalArn=viewer,
        policyArn="arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
        accessScope={"type": "cluster"})
    manifests = render_chart(CHART, release="deps", namespace="kube-system", values={})

    with pytest.raises(KubernetesAccessDenied) as denied:
        apply_manifests(api_for(cloud, state, session_of(cloud, viewer)), manifests)
    assert denied.value.details["kubernetesStatus"] == 403
    assert "AmazonEKSClusterAdminPolicy" in denied.value.message
    assert "forbid" in denied.value.message


def test_a_principal_without_an_access_entry_gets_401_naming_the_access_entry(
        cloud: Any) -> None:
    state = active_cluster(cloud)
    stranger = cloud.client("iam").create_role(RoleName=f"stranger-{next(_ids)}",
                                               AssumeRolePolicyDocument="{}")["Role"]["Arn"]

    with pytest.raises(KubernetesAccessDenied) as denied:
        apply_manifests(api_for(cloud, state, session_of(cloud, stranger)),
                        [{"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"name": "hypd-probe"}}])
    assert denied.value.details["kubernetesStatus"] == 401
    assert "access entry" in denied.value.message
