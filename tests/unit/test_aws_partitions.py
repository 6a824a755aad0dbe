"""The partition of a Region or an ARN, and the names that depend on it, for the aws, aws-cn
and aws-us-gov partitions (and a Region newer than any list)."""

from __future__ import annotations

import boto3
import pytest

from hypd.aws import ec2
from hypd.aws.partitions import (
    dns_suffix,
    gateway_endpoint_service,
    partition_of,
    partition_of_arn,
)


@pytest.mark.parametrize(
    ("region", "partition", "suffix"),
    [
        ("us-west-2", "aws", "amazonaws.com"),
        ("eu-central-1", "aws", "amazonaws.com"),
        ("cn-north-1", "aws-cn", "amazonaws.com.cn"),
        ("cn-northwest-1", "aws-cn", "amazonaws.com.cn"),
        ("us-gov-west-1", "aws-us-gov", "amazonaws.com"),
        ("us-gov-east-1", "aws-us-gov", "amazonaws.com"),
        # not listed by the installed botocore, matched by its partition's pattern
        ("cn-south-9", "aws-cn", "amazonaws.com.cn"),
        ("us-gov-south-9", "aws-us-gov", "amazonaws.com"),
        ("ap-east-9", "aws", "amazonaws.com"),
    ],
)
def test_a_region_s_partition_and_domain_are_botocore_s(
    region: str, partition: str, suffix: str
) -> None:
    assert partition_of(region) == partition
    assert dns_suffix(region) == suffix


def test_a_region_no_partition_claims_is_in_aws_as_botocore_says() -> None:
    assert partition_of("nowhere") == "aws"
    assert dns_suffix("nowhere") == "amazonaws.com"


@pytest.mark.parametrize(
    ("arn", "partition"),
    [
        ("arn:aws:iam::123456789012:role/hypd", "aws"),
        ("arn:aws-cn:sts::123456789012:assumed-role/hypd/session", "aws-cn"),
        ("arn:aws-us-gov:states:us-gov-west-1:123456789012:stateMachine:m", "aws-us-gov"),
    ],
)
def test_an_arn_names_its_partition(arn: str, partition: str) -> None:
    assert partition_of_arn(arn) == partition


@pytest.mark.parametrize("text", ["", "role/hypd", "arn::iam::1:role/x", "arn:aws:iam"])
def test_what_is_not_an_arn_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not an ARN"):
        partition_of_arn(text)


@pytest.mark.parametrize(
    ("region", "service"),
    [
        ("us-west-2", "com.amazonaws.us-west-2.s3"),
        # China names many *interface* endpoints cn.com.amazonaws...; gateway endpoints keep
        # com.amazonaws (see the function's docstring for the sources)
        ("cn-north-1", "com.amazonaws.cn-north-1.s3"),
        ("cn-northwest-1", "com.amazonaws.cn-northwest-1.s3"),
        ("us-gov-west-1", "com.amazonaws.us-gov-west-1.s3"),
    ],
)
def test_the_s3_gateway_endpoint_service_of_each_partition(region: str, service: str) -> None:
    assert gateway_endpoint_service(region, "s3") == service


def test_only_gateway_services_have_a_gateway_endpoint_name() -> None:
    assert gateway_endpoint_service("cn-north-1", "dynamodb") == "com.amazonaws.cn-north-1.dynamodb"
    with pytest.raises(ValueError, match="no gateway endpoint"):
        gateway_endpoint_service("us-west-2", "ec2")


@pytest.mark.parametrize(
    ("region", "service"),
    [
        ("us-west-2", "com.amazonaws.us-west-2.s3"),
        ("cn-northwest-1", "com.amazonaws.cn-northwest-1.s3"),
        ("us-gov-east-1", "com.amazonaws.us-gov-east-1.s3"),
    ],
)
def test_the_ec2_adapter_names_the_s3_endpoint_of_its_client_s_region(
    region: str, service: str
) -> None:
    client = boto3.client("ec2", region_name=region, aws_access_key_id="x",
                          aws_secret_access_key="x")
    assert ec2.s3_service_name(client) == service
