"""The Service Authorization Reference as the local cloud reads it, and ARN patterns."""

from __future__ import annotations

import pytest

from hypd_local.iam.patterns import is_of_format, overlaps_format
from hypd_local.iam.sar import key_matches, reference

EKS_CLUSTER = "arn:${Partition}:eks:${Region}:${Account}:cluster/${ClusterName}"
S3_BUCKET = "arn:${Partition}:s3:::${BucketName}"
S3_OBJECT = "arn:${Partition}:s3:::${BucketName}/${ObjectName}"
IAM_ROLE = "arn:${Partition}:iam::${Account}:role/${RoleNameWithPath}"


def test_actions_without_resource_types_are_authorised_against_star() -> None:
    sar = reference()
    for name in ("eks:CreateCluster", "states:SendTaskSuccess", "states:SendTaskFailure",
                 "eks:DescribeAddonVersions", "ec2:DescribeSubnets"):
        action = sar.action(name)
        assert action is not None, name
        assert not action.supports_resources, name
    cluster = sar.action("sagemaker:DescribeCluster")
    assert cluster is not None
    assert [t.name for t in cluster.resource_types] == ["cluster"]


def test_names_are_case_insensitive_and_wildcards_expand() -> None:
    sar = reference()
    assert sar.action("EKS:describecluster") == sar.action("eks:DescribeCluster")
    described = {a.name for a in sar.actions_matching("ec2:Describe*")}
    assert {"DescribeSubnets", "DescribeVpcs"} <= described
    assert "CreateSubnet" not in described
    assert sar.action("eks:NoSuchAction") is None


def test_a_request_tag_is_in_the_context_of_the_created_resource_only() -> None:
    # EC2 lists aws:RequestTag for the new subnet, not for the VPC it is made in
    create_subnet = reference().action("ec2:CreateSubnet")
    assert create_subnet is not None
    assert create_subnet.key_applies("aws:RequestTag/hypd:role", "subnet")
    assert not create_subnet.key_applies("aws:RequestTag/hypd:role", "vpc")
    assert create_subnet.key_applies("ec2:ResourceTag/hypd:tag", "vpc")
    # a resource's tags apply wherever the resource type does; global keys always
    describe = reference().action("eks:DescribeCluster")
    assert describe is not None
    assert describe.key_applies("aws:ResourceTag/hypd:tag", "cluster")
    assert describe.key_applies("aws:PrincipalArn", None)


def test_condition_key_templates_match_their_instances() -> None:
    assert key_matches("aws:RequestTag/${TagKey}", "aws:RequestTag/hypd:tag")
    assert key_matches("aws:RequestTag/${TagKey}", "AWS:requesttag/x")
    assert not key_matches("aws:RequestTag/${TagKey}", "aws:RequestTag/")
    assert not key_matches("iam:PassedToService", "iam:AWSServiceName")


@pytest.mark.parametrize(("pattern", "arn_format", "overlaps"), [
    ("arn:aws:eks:us-west-2:1:cluster/hypd-*", EKS_CLUSTER, True),
    ("arn:aws:eks:*:*:cluster/*", EKS_CLUSTER, True),
    ("arn:aws:eks:us-west-2:1:access-entry/hypd-*", EKS_CLUSTER, False),
    ("*", EKS_CLUSTER, True),
    # a bucket name has no "/": data/* names objects, not the bucket
    ("arn:aws:s3:::data/*", S3_BUCKET, False),
    ("arn:aws:s3:::data/*", S3_OBJECT, True),
    ("arn:aws:s3:::data-*", S3_BUCKET, True),
    # a role's name may carry its path
    ("arn:aws:iam::1:role/hypd/*", IAM_ROLE, True),
])
def test_a_statement_resource_overlaps_the_resource_types_it_can_name(
    pattern: str, arn_format: str, overlaps: bool
) -> None:
    assert overlaps_format(pattern, arn_format) is overlaps


def test_a_concrete_arn_is_of_its_resource_type_only() -> None:
    assert is_of_format("arn:aws:eks:us-west-2:1:cluster/hypd-demo", EKS_CLUSTER)
    assert not is_of_format("arn:aws:eks:us-west-2:1:addon/hypd-demo/a/b", EKS_CLUSTER)
    assert is_of_format("arn:aws:s3:::b/k/x.txt", S3_OBJECT)
    assert not is_of_format("arn:aws:s3:::b/k", S3_BUCKET)
