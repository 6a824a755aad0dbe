"""What managed features need of EKS, through what a user has: boto3 on the local cloud's AWS
endpoint (pod identity associations, the add-ons' traps, DescribeAddonConfiguration), principals
whose policies IAM judges, and the official Kubernetes client on the cluster's endpoint (the
add-ons' CRDs and controller Deployments). Time is virtual: tests advance ``cloud.clock``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from kubernetes import client as k8s

from hypd_local import LocalCloud
from tests.local_cloud.conftest import FIXTURES
from tests.local_cloud.test_account_setup import session_for, trusting
from tests.local_cloud.test_emulation import active_eks, api_client, eks_token, unique
from tests.support import service_role

TRAINING = "amazon-sagemaker-hyperpod-training-operator"


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(FIXTURES / "iam.yaml") as running:
        yield running


def refusal(call: Any, **params: Any) -> dict[str, Any]:
    with pytest.raises(ClientError) as refused:
        call(**params)
    error: dict[str, Any] = dict(refused.value.response["Error"])
    error["status"] = refused.value.response["ResponseMetadata"]["HTTPStatusCode"]
    return error


def test_pod_identity_associations_round_trip_with_boto3(cloud: LocalCloud) -> None:
    eks = cloud.client("eks")
    name = unique("eks")
    active_eks(cloud, name)
    role = service_role(cloud, unique("pods"), "pods.eks.amazonaws.com")
    other = service_role(cloud, unique("pods"), "pods.eks.amazonaws.com")

    created = eks.create_pod_identity_association(
        clusterName=name, namespace="aws-hyperpod",
        serviceAccount="hp-training-operator-controller-manager", roleArn=role,
        tags={"hypd:tag": name})["association"]
    association_id = created["associationId"]
    assert len(association_id) == 19
    assert created["associationArn"].endswith(f":podidentityassociation/{name}/{association_id}")
    assert eks.describe_pod_identity_association(
        clusterName=name, associationId=association_id)["association"]["roleArn"] == role
    listed = eks.list_pod_identity_associations(clusterName=name,
                                                namespace="aws-hyperpod")["associations"]
    assert [a["associationId"] for a in listed] == [association_id]
    assert eks.list_pod_identity_associations(clusterName=name,
                                              serviceAccount="other")["associations"] == []
    in_use = refusal(eks.create_pod_identity_association, clusterName=name,
                     namespace="aws-hyperpod",
                     serviceAccount="hp-training-operator-controller-manager", roleArn=other)
    assert (in_use["Code"], in_use["status"]) == ("ResourceInUseException", 409)
    assert in_use["Message"] == f"Association already exists: {association_id}"

    updated = eks.update_pod_identity_association(clusterName=name, associationId=association_id,
                                                  roleArn=other)["association"]
    assert updated["roleArn"] == other
    eks.delete_pod_identity_association(clusterName=name, associationId=association_id)
    gone = refusal(eks.describe_pod_identity_association, clusterName=name,
                   associationId=association_id)
    assert (gone["Code"], gone["status"]) == ("ResourceNotFoundException", 404)
    malformed = refusal(eks.delete_pod_identity_association, clusterName=name,
                        associationId="a-123")
    assert malformed["Message"] == "The parameter associationId should be 19 characters long."


def test_roles_pods_cannot_assume_are_refused(cloud: LocalCloud) -> None:
    eks = cloud.client("eks")
    name = unique("eks")
    active_eks(cloud, name)
    missing = f"arn:aws:iam::{cloud.account_id}:role/no-such-role"
    absent = refusal(eks.create_pod_identity_association, clusterName=name, namespace="ml",
                     serviceAccount="trainer", roleArn=missing)
    assert absent["Code"] == "InvalidParameterException"
    assert "does not exist" in absent["Message"]
    ec2_role = trusting(cloud, unique("ec2"), "ec2.amazonaws.com")
    untrusted = refusal(eks.create_pod_identity_association, clusterName=name, namespace="ml",
                        serviceAccount="trainer", roleArn=ec2_role)
    assert untrusted["Code"] == "InvalidParameterException"
    assert "[pods.eks.amazonaws.com] were not found in the trust relationships" in (
        untrusted["Message"])
    role = service_role(cloud, unique("pods"), "pods.eks.amazonaws.com")
    association_id = eks.create_pod_identity_association(
        clusterName=name, namespace="ml", serviceAccount="trainer",
        roleArn=role)["association"]["associationId"]
    # UpdatePodIdentityAssociation hands its role to EKS too
    assert refusal(eks.update_pod_identity_association, clusterName=name,
                   associationId=association_id, roleArn=ec2_role)["Code"] == (
        "InvalidParameterException")


def test_the_feature_addons_traps_through_boto3(cloud: LocalCloud) -> None:
    eks = cloud.client("eks")
    name = unique("eks")
    active_eks(cloud, name)
    role = service_role(cloud, unique("pods"), "pods.eks.amazonaws.com")
    trap = refusal(eks.create_addon, clusterName=name, addonName=TRAINING,
                   podIdentityAssociations=[{
                       "serviceAccount": "hp-training-operator-controller-manager",
                       "roleArn": role}])
    assert (trap["Code"], trap["status"]) == ("InvalidParameterException", 400)
    assert trap["Message"] == ("Pod Identity feature is not supported for addon version: "
                               "v1.2.1-eksbuild.1")
    cert_manager = refusal(eks.create_addon, clusterName=name, addonName="cert-manager",
                           podIdentityAssociations=[{"serviceAccount": "cert-manager",
                                                     "roleArn": role}])
    assert cert_manager["Message"] == ("Pod Identity feature is not supported for addon "
                                       "version: v1.18.2-eksbuild.2")
    described = eks.describe_addon_configuration(
        addonName="amazon-sagemaker-hyperpod-inference", addonVersion="v1.0.0-eksbuild.1")
    assert "tlsCertificateS3Bucket" in json.loads(described["configurationSchema"])["required"]
    config = refusal(eks.create_addon, clusterName=name,
                     addonName="amazon-sagemaker-hyperpod-observability",
                     configurationValues=json.dumps({"logging": {"enabled": "yes"}}))
    assert config["Code"] == "InvalidParameterException"
    assert config["Message"].endswith("[$.logging.enabled: string found, boolean expected]")


def test_iam_authorises_associations_against_their_arn(cloud: LocalCloud) -> None:
    name = unique("eks")
    cluster, _network = active_eks(cloud, name)
    role = service_role(cloud, unique("pods"), "pods.eks.amazonaws.com")
    association = cloud.client("eks").create_pod_identity_association(
        clusterName=name, namespace="ml", serviceAccount="trainer", roleArn=role)["association"]
    cluster_arn = cluster["arn"]
    actions = ["eks:DescribePodIdentityAssociation", "eks:ListPodIdentityAssociations",
               "eks:UpdatePodIdentityAssociation", "eks:DeletePodIdentityAssociation"]
    on_cluster = session_for(cloud, unique("on-cluster"), [{
        "Effect": "Allow", "Action": actions, "Resource": cluster_arn}]).client(
        "eks", endpoint_url=cloud.aws_endpoint)
    # List is authorised against the cluster; the others against the association
    assert len(on_cluster.list_pod_identity_associations(
        clusterName=name)["associations"]) == 1
    denied = refusal(on_cluster.describe_pod_identity_association, clusterName=name,
                     associationId=association["associationId"])
    assert denied["Code"] == "AccessDeniedException"
    assert (f"eks:DescribePodIdentityAssociation on resource: "
            f"{association['associationArn']}") in denied["Message"]

    on_associations = session_for(cloud, unique("on-associations"), [{
        "Effect": "Allow", "Action": actions,
        "Resource": cluster_arn.replace(":cluster/", ":podidentityassociation/") + "/*"}]
    ).client("eks", endpoint_url=cloud.aws_endpoint)
    assert on_associations.describe_pod_identity_association(
        clusterName=name, associationId=association["associationId"])["association"]
    other = service_role(cloud, unique("pods"), "pods.eks.amazonaws.com")
    no_pass = refusal(on_associations.update_pod_identity_association, clusterName=name,
                      associationId=association["associationId"], roleArn=other)
    assert no_pass["Code"] == "AccessDeniedException"
    assert f"iam:PassRole on resource: {other}" in no_pass["Message"]
    on_associations.delete_pod_identity_association(
        clusterName=name, associationId=association["associationId"])


def test_an_addon_s_objects_reach_the_official_client(cloud: LocalCloud, tmp_path: Path) -> None:
    eks = cloud.client("eks")
    name = unique("eks")
    cluster, _network = active_eks(cloud, name)
    eks.create_addon(clusterName=name, addonName="cert-manager")
    cloud.clock.advance(60)
    assert eks.describe_addon(clusterName=name,
                              addonName="cert-manager")["addon"]["status"] == "ACTIVE"
    api = api_client(cluster, eks_token(cloud.boto3_session(), name, cloud.region), tmp_path)
    extensions: Any = k8s.ApiextensionsV1Api(api)  # the client's Optional members, unwrapped
    apps: Any = k8s.AppsV1Api(api)
    crds = {c.metadata.name for c in extensions.list_custom_resource_definition().items}
    assert {"certificates.cert-manager.io", "issuers.cert-manager.io",
            "clusterissuers.cert-manager.io"} <= crds
    deployment = apps.read_namespaced_deployment("cert-manager", "cert-manager")
    assert deployment.spec.replicas == 1
    assert {c.type: c.status for c in deployment.status.conditions}["Available"] == "False"
    assert {f.manager for f in deployment.metadata.managed_fields} == {"eks"}

    eks.delete_addon(clusterName=name, addonName="cert-manager")
    cloud.clock.advance(30)
    crds = {c.metadata.name for c in extensions.list_custom_resource_definition().items}
    assert "certificates.cert-manager.io" not in crds
    api.close()  # type: ignore[no-untyped-call]
