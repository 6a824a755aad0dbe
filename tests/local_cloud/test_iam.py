"""IAM in the template: managed policies (Ref = ARN), role paths, boundaries, attachments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hypd_local import LocalCloud
from hypd_local.intrinsics import TemplateError
from hypd_local.template import Stack

from .conftest import FIXTURES
from .test_template import write_template

IAM_TEMPLATE = FIXTURES / "iam.yaml"
ACCOUNT = "123456789012"


def test_a_managed_policy_refers_to_its_arn() -> None:
    # Given the IAM fixture template
    # When it is loaded
    stack = Stack(IAM_TEMPLATE, stack_name="fx")

    # Then Ref of a managed policy is its ARN: its name (or a physical one) under its path
    refs = stack.refs()
    boundary = f"arn:aws:iam::{ACCOUNT}:policy/hypd/fx-AutoscalingRoleBoundary"
    assert refs["AutoscalingRoleBoundary"] == boundary
    assert refs["ReadClustersPolicy"] == f"arn:aws:iam::{ACCOUNT}:policy/read-clusters"
    # and a role without a RoleName is named as CloudFormation names it, with a suffix
    role = stack.roles["OperatorRole"]
    assert re.fullmatch(r"fx-OperatorRole-[A-Z0-9]{13}", role.name), role.name
    assert stack.managed_policies["ReadClustersPolicy"].roles == (role.name,)
    # and a role's path, boundary and managed policies are resolved
    assert role.arn == f"arn:aws:iam::{ACCOUNT}:role/hypd/{role.name}"
    assert role.permissions_boundary == boundary
    assert role.managed_policy_arns == (
        boundary, "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy")
    assert [name for name, _document in role.policies] == ["nodes"]


def test_the_partition_follows_the_region() -> None:
    stack = Stack(IAM_TEMPLATE, region="cn-north-1", stack_name="fx")
    assert stack.refs()["ReadClustersPolicy"] == (
        f"arn:aws-cn:iam::{ACCOUNT}:policy/read-clusters")


BOUNDARY_TEMPLATE = """
    Resources:
      Boundary:
        Type: AWS::IAM::ManagedPolicy
        Properties:
          Path: {path}
          PolicyDocument: {{Version: "2012-10-17", Statement: []}}
      Role:
        Type: AWS::IAM::Role
        Properties:
          PermissionsBoundary: !GetAtt Boundary.{attribute}
"""


@pytest.mark.parametrize(("path", "attribute", "problem"), [
    ("/", "PolicyId", "PolicyId"),  # moto draws the id at random: it cannot be known before
    ("hypd", "PolicyArn", "Path"),  # a path must begin and end with a slash
])
def test_what_the_loader_cannot_know_or_accept_fails_loudly(
    tmp_path: Path, path: str, attribute: str, problem: str
) -> None:
    template = write_template(tmp_path, BOUNDARY_TEMPLATE.format(path=path, attribute=attribute))
    with pytest.raises(TemplateError, match=problem):
        Stack(template)


def test_managed_policies_and_roles_are_provisioned_in_moto() -> None:
    with LocalCloud(IAM_TEMPLATE) as cloud:
        iam = cloud.client("iam")
        boundary = cloud.resources["AutoscalingRoleBoundary"]

        # The policy exists with the resolved document
        policy = iam.get_policy(PolicyArn=boundary)["Policy"]
        assert (policy["Path"], policy["PolicyName"]) == ("/hypd/",
                                                          "hypd-AutoscalingRoleBoundary")
        version = iam.get_policy_version(PolicyArn=boundary,
                                         VersionId=policy["DefaultVersionId"])["PolicyVersion"]
        document = version["Document"]
        if isinstance(document, str):
            document = json.loads(document)
        assert document["Statement"][0]["Resource"] == (
            f"arn:aws:sagemaker:{cloud.region}:{ACCOUNT}:cluster/*")

        # The template's role has its boundary, its inline policy and the template's policies
        name = cloud.stack.roles["OperatorRole"].name
        role = iam.get_role(RoleName=name)["Role"]
        assert role["PermissionsBoundary"]["PermissionsBoundaryArn"] == boundary
        assert role["Arn"] == f"arn:aws:iam::{ACCOUNT}:role/hypd/{name}"
        # (an AWS managed policy from moto's copy of AWS's documents)
        attached = iam.list_attached_role_policies(RoleName=name)
        assert sorted(p["PolicyArn"] for p in attached["AttachedPolicies"]) == sorted(
            [boundary, cloud.resources["ReadClustersPolicy"],
             "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"])
        assert iam.list_role_policies(RoleName=name)["PolicyNames"] == ["nodes"]

        # A role created at run time can have the policy as its boundary
        iam.create_role(RoleName="runtime", Path="/hypd/", PermissionsBoundary=boundary,
                        AssumeRolePolicyDocument=json.dumps({
                            "Version": "2012-10-17", "Statement": [{
                                "Effect": "Allow", "Action": "sts:AssumeRole",
                                "Principal": {"Service": "hyperpod.sagemaker.amazonaws.com"}}]}))
        runtime = iam.get_role(RoleName="runtime")["Role"]
        assert runtime["PermissionsBoundary"] == {
            "PermissionsBoundaryType": "PermissionsBoundaryPolicy",
            "PermissionsBoundaryArn": boundary}
