"""Injected faults on the query, ec2 and rest-xml services, with real boto3 clients.

CloudFormation and STS speak the query protocol, EC2 its own dialect of it, S3 rest-xml: the
middleware finds their operation (``Action=`` in the form body or query string; S3's method and
path) and answers a fault with the XML error botocore parses for that protocol. Requests that are
not faulted reach moto unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from hypd_local import LocalCloud

TEMPLATE_BODY = json.dumps({
    "Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "faulted"}}},
})


@pytest.fixture
def faulty(idle_cloud: LocalCloud) -> Iterator[LocalCloud]:
    idle_cloud.faults.clear()
    yield idle_cloud
    idle_cloud.faults.clear()


def client(cloud: LocalCloud, service: str, attempts: int = 1) -> Any:
    return boto3.client(
        service, endpoint_url=cloud.aws_endpoint, region_name=cloud.region,
        aws_access_key_id="testing", aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "total_max_attempts": attempts}))


def test_cloudformation_create_stack_fails_once_then_works(faulty: LocalCloud) -> None:
    faulty.faults.fail("cloudformation", "CreateStack", code="ValidationError",
                       message="Template format error: unsupported structure.")
    cfn = client(faulty, "cloudformation")
    with pytest.raises(ClientError) as caught:
        cfn.create_stack(StackName="faulted", TemplateBody=TEMPLATE_BODY)
    response = caught.value.response
    assert response["Error"] == {"Type": "Sender", "Code": "ValidationError",
                                 "Message": "Template format error: unsupported structure."}
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["ResponseMetadata"]["RequestId"]

    # the same call again reaches moto, body intact: the stack is created from the template
    stack_id = cfn.create_stack(StackName="faulted", TemplateBody=TEMPLATE_BODY)["StackId"]
    assert cfn.describe_stacks(StackName=stack_id)["Stacks"][0]["StackName"] == "faulted"
    assert cfn.get_template(StackName="faulted")["TemplateBody"] == json.loads(TEMPLATE_BODY)
    assert faulty.faults.pending() == []
    cfn.delete_stack(StackName="faulted")


def test_cloudformation_modeled_error_is_its_exception_class(faulty: LocalCloud) -> None:
    faulty.faults.fail("cloudformation", "DescribeStacks", code="StackNotFoundException")
    cfn = client(faulty, "cloudformation")
    with pytest.raises(cfn.exceptions.StackNotFoundException) as caught:
        cfn.describe_stacks(StackName="nope")
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_ec2_request_limit_exceeded_is_retried_by_botocore(faulty: LocalCloud) -> None:
    faulty.faults.fail("ec2", "DescribeVpcs", code="RequestLimitExceeded", times=2)
    vpcs = client(faulty, "ec2", attempts=3).describe_vpcs()["Vpcs"]
    assert vpcs  # moto's default VPC, after two throttled attempts
    assert [f["code"] for f in faulty.faults.fired[-2:]] == ["RequestLimitExceeded"] * 2

    faulty.faults.fail("ec2", "DescribeVpcs", code="RequestLimitExceeded")
    with pytest.raises(ClientError) as caught:
        client(faulty, "ec2").describe_vpcs()
    response = caught.value.response
    assert response["Error"]["Code"] == "RequestLimitExceeded"
    assert response["Error"]["Message"] == "Rate exceeded"
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert response["ResponseMetadata"]["RequestId"]


def test_s3_head_bucket_access_denied_and_get_object(faulty: LocalCloud) -> None:
    s3 = client(faulty, "s3")
    s3.create_bucket(Bucket="faulted-bucket",
                     CreateBucketConfiguration={"LocationConstraint": faulty.region})
    s3.put_object(Bucket="faulted-bucket", Key="dir/a b.txt", Body=b"payload")

    faulty.faults.fail("s3", "HeadBucket", code="AccessDenied")
    with pytest.raises(ClientError) as caught:
        s3.head_bucket(Bucket="faulted-bucket")
    # a HEAD response has no body: botocore makes the code from the status
    assert caught.value.response["Error"]["Code"] == "403"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert s3.head_bucket(Bucket="faulted-bucket")["ResponseMetadata"]["HTTPStatusCode"] == 200

    faulty.faults.fail("s3", "GetObject", code="AccessDenied")
    with pytest.raises(ClientError) as caught:
        s3.get_object(Bucket="faulted-bucket", Key="dir/a b.txt")
    assert caught.value.response["Error"]["Code"] == "AccessDenied"
    assert caught.value.response["Error"]["Message"] == "Access Denied"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert s3.get_object(Bucket="faulted-bucket", Key="dir/a b.txt")["Body"].read() == b"payload"


def test_s3_put_list_and_create_bucket(faulty: LocalCloud) -> None:
    s3 = client(faulty, "s3")
    faulty.faults.fail("s3", "CreateBucket", code="BucketAlreadyExists")
    with pytest.raises(s3.exceptions.BucketAlreadyExists) as caught:
        s3.create_bucket(Bucket="other-bucket",
                         CreateBucketConfiguration={"LocationConstraint": faulty.region})
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    s3.create_bucket(Bucket="other-bucket",
                     CreateBucketConfiguration={"LocationConstraint": faulty.region})

    faulty.faults.fail("s3", "PutObject", code="SlowDown")
    with pytest.raises(ClientError) as caught:
        s3.put_object(Bucket="other-bucket", Key="k", Body=b"x" * 1000)
    assert caught.value.response["Error"]["Code"] == "SlowDown"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    s3.put_object(Bucket="other-bucket", Key="k", Body=b"x" * 1000)

    faulty.faults.fail("s3", "ListObjectsV2", code="InternalError")
    with pytest.raises(ClientError) as caught:
        s3.list_objects_v2(Bucket="other-bucket")
    assert caught.value.response["Error"]["Code"] == "InternalError"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="other-bucket")["Contents"]] == ["k"]


def test_sts_expired_token(faulty: LocalCloud) -> None:
    faulty.faults.fail("sts", "GetCallerIdentity", code="ExpiredToken",
                       message="The security token included in the request is expired")
    sts = client(faulty, "sts")
    with pytest.raises(ClientError) as caught:
        sts.get_caller_identity()
    assert caught.value.response["Error"]["Code"] == "ExpiredToken"
    assert caught.value.response["Error"]["Type"] == "Sender"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert sts.get_caller_identity()["Account"] == faulty.account_id


def test_xml_faults_over_http(faulty: LocalCloud) -> None:
    answer = requests.post(f"{faulty.local_url}/_local/faults", json=[
        {"service": "ec2", "operation": "DescribeSubnets", "code": "UnauthorizedOperation"},
        {"service": "cloudformation", "operation": "*", "code": "Throttling", "times": 1},
    ], timeout=10)
    assert answer.status_code == 201
    with pytest.raises(ClientError) as caught:
        client(faulty, "ec2").describe_subnets()
    assert caught.value.response["Error"]["Code"] == "UnauthorizedOperation"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    with pytest.raises(ClientError) as caught:
        client(faulty, "cloudformation").list_stacks()
    assert caught.value.response["Error"]["Code"] == "Throttling"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert requests.get(f"{faulty.local_url}/_local/faults", timeout=10).json() == {"faults": []}
