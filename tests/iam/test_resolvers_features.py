"""The checks of the managed features' requests: task governance (SageMaker), AMP workspaces
(``aps``), IAM OIDC providers and role policy attachments; and their decisions for a
principal, as the Service Authorization Reference says."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from hypd_local.iam.checks import Check, Denial, authorize
from hypd_local.iam.principals import Directory, Principal
from hypd_local.iam.resolvers import resolve
from hypd_local.iam.world import World
from tests.emulator.test_hyperpod_support import (
    ACCOUNT,
    EKS_ARN,
    REGION,
    cluster_request,
    make,
)

CALLER = f"arn:aws:sts::{ACCOUNT}:assumed-role/hypd-features/session"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/hypd-features"
HYPERPOD_SLR = (f"arn:aws:iam::{ACCOUNT}:role/aws-service-role/hyperpod.sagemaker.amazonaws.com/"
                "AWSServiceRoleForSageMakerHyperPod")
ISSUER = "oidc.eks.us-west-2.amazonaws.com/id/0123456789ABCDEF"


class Features:
    """A HyperPod emulator with one cluster (tagged ``team=ml``), a World over it and moto."""

    def __init__(self) -> None:
        self.emu, self.api, self.clock, _events = make()
        self.cluster = self.api.create_cluster(**cluster_request())["ClusterArn"]
        self.clock.advance(hours=1)
        self.world = World(ACCOUNT, REGION, Directory(ACCOUNT, REGION), hyperpod=self.emu)

    def checks(self, service: str, prefix: str, op: str, **params: Any) -> list[Check]:
        return resolve(service, prefix, op, params, self.world)

    def quota(self, **extra: Any) -> str:
        return str(self.api.create_compute_quota(
            Name="team-a", ClusterArn=self.cluster, ComputeQuotaConfig={},
            ComputeQuotaTarget={"TeamName": "team-a"}, **extra)["ComputeQuotaId"])


@pytest.fixture
def features() -> Iterator[Features]:
    with mock_aws():
        yield Features()


def principal(*statements: dict[str, Any]) -> Principal:
    return Principal(CALLER, ROLE, ACCOUNT, "AssumedRole", "AROAEXAMPLE:session",
                     identity_policies=({"Version": "2012-10-17",
                                         "Statement": list(statements)},))


def allow(action: str | list[str], resource: str | list[str] = "*", **extra: Any
          ) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def decide(who: Principal, checks: list[Check]) -> Denial | None:
    return authorize(who, checks, {"aws:requestedregion": [REGION]})


def summary(checks: list[Check]) -> list[tuple[str, list[tuple[str, str | None]]]]:
    return [(c.action, [(t.arn, t.type) for t in c.targets]) for c in checks]


# --------------------------------------------------------------------------- task governance

def test_creating_a_quota_acts_on_the_cluster_and_the_new_resource(features: Features) -> None:
    checks = features.checks(
        "sagemaker", "sagemaker", "CreateComputeQuota", Name="q", ClusterArn=features.cluster,
        ComputeQuotaConfig={}, ComputeQuotaTarget={"TeamName": "a"},
        Tags=[{"Key": "hypd:tag", "Value": "t1"}])
    quotas = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:compute-quota/*"
    entry = f"arn:aws:eks:{REGION}:{ACCOUNT}:access-entry/hp-eks/role/{ACCOUNT}/" \
            "AWSServiceRoleForSageMakerHyperPod/*"
    assert summary(checks) == [
        ("sagemaker:CreateComputeQuota", [(features.cluster, "cluster"),
                                          (quotas, "compute-quota")]),
        ("sagemaker:DescribeCluster", [(features.cluster, "cluster")]),
        ("sagemaker:AddTags", [(quotas, "compute-quota")]),
        ("eks:DescribeCluster", [(EKS_ARN, "cluster")]),
        ("eks:ListAssociatedAccessPolicies", [(entry, "access-entry")]),
        ("eks:AssociateAccessPolicy", [(entry, "access-entry")]),
    ]
    create = checks[0]
    assert create.targets[0].tags == {"team": "ml"}
    assert create.targets[1].request_tags == {"hypd:tag": "t1"}


def test_a_create_is_allowed_only_with_the_request_tag_and_the_cluster(
        features: Features) -> None:
    checks = features.checks(
        "sagemaker", "sagemaker", "CreateClusterSchedulerConfig", Name="p",
        ClusterArn=features.cluster, SchedulerConfig={},
        Tags=[{"Key": "hypd:tag", "Value": "t1"}])
    dependents = allow(["sagemaker:DescribeCluster", "sagemaker:AddTags", "eks:DescribeCluster",
                        "eks:ListAssociatedAccessPolicies", "eks:AssociateAccessPolicy"])
    tagged = {"StringEquals": {"aws:RequestTag/hypd:tag": "t1"}}
    configs = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster-scheduler-config/*"
    clusters = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/*"
    assert decide(principal(dependents, allow("sagemaker:CreateClusterSchedulerConfig",
                                              [configs, clusters], Condition=tagged)),
                  checks) is None
    other = {"StringEquals": {"aws:RequestTag/hypd:tag": "t2"}}
    denied = decide(principal(dependents, allow("sagemaker:CreateClusterSchedulerConfig",
                                                [configs, clusters], Condition=other)), checks)
    assert denied is not None
    assert denied.message == (
        f"User: {CALLER} is not authorized to perform: sagemaker:CreateClusterSchedulerConfig "
        f"on resource: {features.cluster} because no identity-based policy allows the "
        "sagemaker:CreateClusterSchedulerConfig action")
    no_cluster = decide(principal(dependents, allow("sagemaker:CreateClusterSchedulerConfig",
                                                    configs)), checks)
    assert no_cluster is not None
    assert no_cluster.resource == features.cluster
    no_tagging = decide(principal(
        allow(["sagemaker:DescribeCluster", "eks:*"]),
        allow("sagemaker:CreateClusterSchedulerConfig", [configs, clusters])), checks)
    assert no_tagging is not None
    assert no_tagging.action == "sagemaker:AddTags"
    no_eks = decide(principal(
        allow(["sagemaker:*"]), allow("eks:DescribeCluster", EKS_ARN)), checks)
    assert no_eks is not None
    assert no_eks.action == "eks:ListAssociatedAccessPolicies"


def test_describe_update_and_delete_act_on_the_resource(features: Features) -> None:
    ident = features.quota(Tags=[{"Key": "hypd:tag", "Value": "t1"}])
    arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:compute-quota/{ident}"
    for op, extra in (("DescribeComputeQuota", {}), ("DeleteComputeQuota", {}),
                      ("UpdateComputeQuota", {"TargetVersion": 1})):
        checks = features.checks("sagemaker", "sagemaker", op, ComputeQuotaId=ident, **extra)
        assert summary(checks) == [(f"sagemaker:{op}", [(arn, "compute-quota")])]
        assert checks[0].targets[0].tags == {"hypd:tag": "t1"}
    by_tag = principal(allow("sagemaker:DescribeComputeQuota", Condition={
        "StringEquals": {"aws:ResourceTag/hypd:tag": "t1"}}))
    assert decide(by_tag, features.checks("sagemaker", "sagemaker", "DescribeComputeQuota",
                                          ComputeQuotaId=ident)) is None
    unknown = features.checks("sagemaker", "sagemaker", "DescribeClusterSchedulerConfig",
                              ClusterSchedulerConfigId="abcdefabcdef")
    assert summary(unknown) == [("sagemaker:DescribeClusterSchedulerConfig", [(
        f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster-scheduler-config/abcdefabcdef",
        "cluster-scheduler-config")])]
    assert unknown[0].targets[0].tags is None


def test_listings_are_authorised_against_star(features: Features) -> None:
    for op in ("ListComputeQuotas", "ListClusterSchedulerConfigs"):
        checks = features.checks("sagemaker", "sagemaker", op, ClusterArn=features.cluster)
        assert summary(checks) == [(f"sagemaker:{op}", [("*", None)])]
    on_arn = principal(allow("sagemaker:ListComputeQuotas",
                             f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:compute-quota/*"))
    assert decide(on_arn, features.checks("sagemaker", "sagemaker", "ListComputeQuotas"))


def test_tags_of_governance_resources(features: Features) -> None:
    ident = features.quota(Tags=[{"Key": "hypd:tag", "Value": "t1"}])
    arn = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:compute-quota/{ident}"
    listed = features.checks("sagemaker", "sagemaker", "ListTags", ResourceArn=arn)
    assert summary(listed) == [("sagemaker:ListTags", [(arn, "compute-quota")])]
    assert listed[0].targets[0].tags == {"hypd:tag": "t1"}
    removed = features.checks("sagemaker", "sagemaker", "DeleteTags", ResourceArn=arn,
                              TagKeys=["hypd:tag"])
    assert removed[0].keys == {"aws:TagKeys": ["hypd:tag"]}


# --------------------------------------------------------------------------- S3 (TLS bucket)

def test_the_tls_buckets_operations_act_on_the_bucket_and_its_objects(
    features: Features
) -> None:
    bucket, arn = "hyperpod-tls-t-0123456789ab", "arn:aws:s3:::hyperpod-tls-t-0123456789ab"
    for op, action in (("CreateBucket", "CreateBucket"),
                       ("PutPublicAccessBlock", "PutBucketPublicAccessBlock"),
                       ("PutBucketEncryption", "PutEncryptionConfiguration"),
                       ("PutBucketTagging", "PutBucketTagging"),
                       ("GetBucketTagging", "GetBucketTagging"),
                       ("ListObjectsV2", "ListBucket"), ("DeleteBucket", "DeleteBucket")):
        assert summary(features.checks("s3", "s3", op, Bucket=bucket)) == [
            (f"s3:{action}", [(arn, "bucket")])], op
    # A multi-object delete is authorised object by object, as DeleteObject.
    emptied = features.checks("s3", "s3", "DeleteObjects", Bucket=bucket, Delete={
        "Objects": [{"Key": "certs/a.pem"}, {"Key": "certs/b.pem"}]})
    assert summary(emptied) == [("s3:DeleteObject", [(f"{arn}/certs/a.pem", "object")]),
                                ("s3:DeleteObject", [(f"{arn}/certs/b.pem", "object")])]
    assert decide(principal(allow("s3:DeleteObject", arn)), emptied) is not None
    objects = principal(allow("s3:DeleteObject", "arn:aws:s3:::hyperpod-tls-*/*"))
    assert decide(objects, emptied) is None


# --------------------------------------------------------------------------- AMP (aps)

def test_a_workspace_is_created_against_star_with_its_request_tags(features: Features) -> None:
    checks = features.checks("amp", "aps", "CreateWorkspace", alias="hypd",
                             tags={"SageMaker": "true"})
    assert summary(checks) == [("aps:CreateWorkspace", [("*", None)])]  # no aps:TagResource
    tagged = principal(allow("aps:CreateWorkspace", Condition={
        "StringEquals": {"aws:RequestTag/SageMaker": "true"}}))
    assert decide(tagged, checks) is None
    untagged = features.checks("amp", "aps", "CreateWorkspace", alias="hypd")
    denied = decide(tagged, untagged)
    assert denied is not None
    assert denied.resource == "*"


def test_workspace_operations_act_on_the_workspace(features: Features) -> None:
    from moto.amp.models import amp_backends

    workspace = amp_backends[ACCOUNT][REGION].create_workspace("hypd", {"SageMaker": "true"})
    arn = workspace.arn
    for op in ("DescribeWorkspace", "DeleteWorkspace"):
        checks = features.checks("amp", "aps", op, workspaceId=workspace.workspace_id)
        assert summary(checks) == [(f"aps:{op}", [(arn, "workspace")])]
        assert checks[0].targets[0].tags == {"SageMaker": "true"}
    tag = features.checks("amp", "aps", "TagResource", resourceArn=arn, tags={"a": "b"})
    assert summary(tag) == [("aps:TagResource", [(arn, "workspace")])]
    assert tag[0].targets[0].request_tags == {"a": "b"}
    untag = features.checks("amp", "aps", "UntagResource", resourceArn=arn, tagKeys=["a"])
    assert untag[0].keys == {"aws:TagKeys": ["a"]}
    assert summary(features.checks("amp", "aps", "ListWorkspaces")) == [
        ("aps:ListWorkspaces", [("*", None)])]
    only_sagemaker = principal(allow("aps:DescribeWorkspace", "arn:aws:aps:*:*:workspace/*",
                                     Condition={"StringEquals": {
                                         "aws:ResourceTag/SageMaker": "true"}}))
    assert decide(only_sagemaker, features.checks(
        "amp", "aps", "DescribeWorkspace", workspaceId=workspace.workspace_id)) is None


# --------------------------------------------------------------------------- IAM

def test_oidc_providers_are_named_by_their_issuer(features: Features) -> None:
    arn = f"arn:aws:iam::{ACCOUNT}:oidc-provider/{ISSUER}"
    created = features.checks("iam", "iam", "CreateOpenIDConnectProvider",
                              Url=f"https://{ISSUER}", ClientIDList=["sts.amazonaws.com"],
                              Tags=[{"Key": "hypd:tag", "Value": "t1"}])
    assert summary(created) == [("iam:CreateOpenIDConnectProvider", [(arn, "oidc-provider")])]
    assert created[0].targets[0].request_tags == {"hypd:tag": "t1"}
    tagged = principal(allow("iam:CreateOpenIDConnectProvider", "arn:aws:iam::*:oidc-provider/*",
                             Condition={"StringEquals": {"aws:RequestTag/hypd:tag": "t1"}}))
    assert decide(tagged, created) is None
    from moto.iam.models import iam_backends

    iam_backends[ACCOUNT]["aws"].create_open_id_connect_provider(
        f"https://{ISSUER}", [], ["sts.amazonaws.com"], [{"Key": "hypd:tag", "Value": "t1"}])
    for op in ("GetOpenIDConnectProvider", "DeleteOpenIDConnectProvider",
               "TagOpenIDConnectProvider", "UntagOpenIDConnectProvider"):
        checks = features.checks("iam", "iam", op, OpenIDConnectProviderArn=arn,
                                 Tags=[{"Key": "k", "Value": "v"}], TagKeys=["k"])
        assert summary(checks) == [(f"iam:{op}", [(arn, "oidc-provider")])]
        assert checks[0].targets[0].tags == {"hypd:tag": "t1"}
    tag = features.checks("iam", "iam", "TagOpenIDConnectProvider", OpenIDConnectProviderArn=arn,
                          Tags=[{"Key": "k", "Value": "v"}])
    assert tag[0].targets[0].request_tags == {"k": "v"}
    assert summary(features.checks("iam", "iam", "ListOpenIDConnectProviders")) == [
        ("iam:ListOpenIDConnectProviders", [("*", None)])]
    by_tag = principal(allow("iam:GetOpenIDConnectProvider", Condition={
        "StringEquals": {"aws:ResourceTag/hypd:tag": "t1"}}))
    assert decide(by_tag, features.checks("iam", "iam", "GetOpenIDConnectProvider",
                                          OpenIDConnectProviderArn=arn)) is None


@pytest.mark.parametrize("op", ["AttachRolePolicy", "DetachRolePolicy"])
def test_role_policy_attachments_carry_the_policy_arn(features: Features, op: str) -> None:
    managed = "arn:aws:iam::aws:policy/AmazonSageMakerHyperPodTrainingOperatorAccess"
    checks = features.checks("iam", "iam", op, RoleName="feature-role", PolicyArn=managed)
    role = f"arn:aws:iam::{ACCOUNT}:role/feature-role"
    assert summary(checks) == [(f"iam:{op}", [(role, "role")])]
    assert checks[0].keys == {"iam:PolicyARN": [managed]}
    only_that = principal(allow(f"iam:{op}", "arn:aws:iam::*:role/feature-*", Condition={
        "ArnEquals": {"iam:PolicyARN": managed}}))
    assert decide(only_that, checks) is None
    other = features.checks("iam", "iam", op, RoleName="feature-role",
                            PolicyArn="arn:aws:iam::aws:policy/AdministratorAccess")
    assert decide(only_that, other) is not None


def test_listing_attached_role_policies_acts_on_the_role(features: Features) -> None:
    checks = features.checks("iam", "iam", "ListAttachedRolePolicies", RoleName="feature-role")
    assert summary(checks) == [("iam:ListAttachedRolePolicies", [
        (f"arn:aws:iam::{ACCOUNT}:role/feature-role", "role")])]
