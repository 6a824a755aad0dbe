"""What a fresh account refuses: API Gateway logging without its CloudWatch role, a function
whose role Lambda cannot assume, and (through the emulators) service-linked roles its caller
may not create, roles that do not trust the service they are handed to, PassRole."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hypd_local import LocalCloud
from hypd_local.intrinsics import TemplateError
from hypd_local.template import Stack
from tests.conftest import ROOT
from tests.support import service_role

from .test_template import FUNCTION_FILES, write_template


def logging_template(tmp_path: Path, *, account: bool, depends: bool,
                     service: str = "apigateway.amazonaws.com") -> Path:
    """An API whose stage writes access logs; with the account's CloudWatch role or not."""
    resources: dict[str, Any] = {
        "Logs": {"Type": "AWS::Logs::LogGroup"},
        "Api": {"Type": "AWS::Serverless::Api", "Properties": {
            "StageName": "v1",
            "AccessLogSetting": {"DestinationArn": {"Fn::GetAtt": ["Logs", "Arn"]},
                                 "Format": "$context.requestId"}}},
    }
    if account:
        resources["LogsRole"] = {"Type": "AWS::IAM::Role", "Properties": {
            "AssumeRolePolicyDocument": {"Statement": [{
                "Effect": "Allow", "Principal": {"Service": service},
                "Action": "sts:AssumeRole"}]},
            "ManagedPolicyArns": [
                "arn:aws:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"]}}
        resources["Account"] = {"Type": "AWS::ApiGateway::Account", "Properties": {
            "CloudWatchRoleArn": {"Fn::GetAtt": ["LogsRole", "Arn"]}}}
    if depends:
        resources["Api"]["DependsOn"] = "Account"
    path = tmp_path / "template.json"
    path.write_text(json.dumps({"Transform": "AWS::Serverless-2016-10-31",
                                "Resources": resources}))
    return path


def test_access_logging_in_a_fresh_account_needs_the_cloudwatch_role(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="CloudWatch Logs role ARN must be set"):
        LocalCloud(logging_template(tmp_path, account=False, depends=False)).start()


def test_the_stage_must_wait_for_the_account_setting(tmp_path: Path) -> None:
    # Nothing orders the stage after the setting: CloudFormation may create it first.
    with pytest.raises(TemplateError, match="make the API depend on it"):
        LocalCloud(logging_template(tmp_path, account=True, depends=False)).start()


def test_a_role_api_gateway_cannot_assume_is_refused(tmp_path: Path) -> None:
    template = logging_template(tmp_path, account=True, depends=True,
                                service="lambda.amazonaws.com")
    with pytest.raises(TemplateError, match="does not have required permissions"):
        LocalCloud(template).start()


def test_with_the_setting_first_the_stack_deploys(tmp_path: Path) -> None:
    with LocalCloud(logging_template(tmp_path, account=True, depends=True)) as cloud:
        account = cloud.client("apigateway").get_account()
        assert account["cloudwatchRoleArn"] == cloud.stack.roles["LogsRole"].arn


def test_lambda_refuses_a_function_whose_role_does_not_trust_it(tmp_path: Path) -> None:
    template = write_template(tmp_path, """
        Transform: AWS::Serverless-2016-10-31
        Resources:
          Role:
            Type: AWS::IAM::Role
            Properties:
              AssumeRolePolicyDocument:
                Statement: [{Effect: Allow, Principal: {Service: ec2.amazonaws.com},
                             Action: sts:AssumeRole}]
          Fn:
            Type: AWS::Serverless::Function
            Properties:
              CodeUri: fn
              Handler: app.handler
              Runtime: python3.12
              Role: !GetAtt Role.Arn
    """, FUNCTION_FILES)
    with pytest.raises(TemplateError, match="cannot be assumed by Lambda"):
        LocalCloud(template).start()


# ---------------------------------------------------------------------------- as a principal
def session_for(cloud: Any, name: str, statements: list[dict[str, Any]]) -> boto3.Session:
    """A role with these permissions, assumed: requests signed with it are authorised."""
    iam = cloud.client("iam")
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": cloud.account_id},
            "Action": "sts:AssumeRole"}]}))["Role"]
    iam.put_role_policy(RoleName=name, PolicyName="p", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": statements}))
    creds = cloud.client("sts").assume_role(RoleArn=role["Arn"],
                                            RoleSessionName="test")["Credentials"]
    return boto3.Session(aws_access_key_id=creds["AccessKeyId"],
                         aws_secret_access_key=creds["SecretAccessKey"],
                         aws_session_token=creds["SessionToken"], region_name=cloud.region)


def trusting(cloud: Any, name: str, service: str) -> str:
    return str(cloud.client("iam").create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"Service": service},
            "Action": "sts:AssumeRole"}]}))["Role"]["Arn"])


def eks_request(cloud: Any, role_arn: str) -> dict[str, Any]:
    ec2 = cloud.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.9.{i}.0/24",
                                 AvailabilityZone=f"{cloud.region}{z}")["Subnet"]["SubnetId"]
               for i, z in enumerate("ab")]
    return {"name": "c1", "roleArn": role_arn, "resourcesVpcConfig": {"subnetIds": subnets},
            "tags": {"hypd:tag": "c1"}}


@pytest.fixture(scope="module")
def bare_cloud() -> Any:
    with LocalCloud(Path(__file__).parent / "fixtures" / "iam.yaml") as cloud:
        yield cloud


def test_a_denied_call_names_the_action_and_the_resource(bare_cloud: Any) -> None:
    session = session_for(bare_cloud, "reader", [{
        "Effect": "Allow", "Action": "eks:DescribeCluster",
        "Resource": f"arn:aws:eks:{bare_cloud.region}:{bare_cloud.account_id}:cluster/*"}])
    eks = session.client("eks", endpoint_url=bare_cloud.aws_endpoint)
    with pytest.raises(ClientError) as refused:
        eks.list_clusters()
    error = refused.value.response["Error"]
    assert error["Code"] == "AccessDeniedException"
    assert error["Message"] == (
        f"User: arn:aws:sts::{bare_cloud.account_id}:assumed-role/reader/test is not "
        "authorized to perform: eks:ListClusters on resource: * because no identity-based "
        "policy allows the eks:ListClusters action")


def test_eks_wants_passrole_a_trusting_role_and_its_service_linked_role(bare_cloud: Any) -> None:
    cloud = bare_cloud
    eks_role = trusting(cloud, "eks-cluster", "eks.amazonaws.com")
    not_eks = trusting(cloud, "not-eks", "ec2.amazonaws.com")
    create = {"Effect": "Allow", "Action": "eks:CreateCluster", "Resource": "*"}
    pass_eks = {"Effect": "Allow", "Action": "iam:PassRole", "Resource": [eks_role, not_eks],
                "Condition": {"StringEquals": {"iam:PassedToService": "eks.amazonaws.com"}}}
    slr = {"Effect": "Allow", "Action": "iam:CreateServiceLinkedRole", "Resource": "*",
           "Condition": {"StringEquals": {"iam:AWSServiceName": "eks.amazonaws.com"}}}

    def attempt(name: str, statements: list[dict[str, Any]], role: str) -> dict[str, Any]:
        eks = session_for(cloud, name, statements).client("eks",
                                                          endpoint_url=cloud.aws_endpoint)
        try:
            return {"ok": eks.create_cluster(**eks_request(cloud, role))["cluster"]["name"]}
        except ClientError as exc:
            return dict(exc.response["Error"])

    no_pass = attempt("no-pass", [create, slr], eks_role)
    assert no_pass["Code"] == "AccessDeniedException"
    assert "iam:PassRole on resource: " + eks_role in no_pass["Message"]
    untrusted = attempt("untrusted", [create, pass_eks, slr], not_eks)
    assert untrusted["Code"] == "InvalidParameterException"
    assert "[eks.amazonaws.com] were not found in the trust relationships" in (
        untrusted["Message"])
    # a fresh account has no EKS service-linked role: the caller must be allowed to make it
    iam = cloud.client("iam")
    no_slr = attempt("no-slr", [create, pass_eks], eks_role)
    assert no_slr["Code"] == "InvalidRequestException"
    assert "AWSServiceRoleForAmazonEKS" in no_slr["Message"]
    assert not any(r["RoleName"] == "AWSServiceRoleForAmazonEKS"
                   for r in iam.list_roles()["Roles"])
    assert attempt("admin", [create, pass_eks, slr], eks_role) == {"ok": "c1"}
    linked = iam.get_role(RoleName="AWSServiceRoleForAmazonEKS")["Role"]
    assert linked["Path"] == "/aws-service-role/eks.amazonaws.com/"


def test_each_service_refuses_in_its_own_words(bare_cloud: Any) -> None:
    cloud = bare_cloud
    session = session_for(cloud, "nothing", [{"Effect": "Allow", "Action": "sts:GetCallerIdentity",
                                              "Resource": "*"}])

    def error(call: Callable[[], Any]) -> dict[str, Any]:
        with pytest.raises(ClientError) as refused:
            call()
        return {"code": refused.value.response["Error"]["Code"],
                "status": refused.value.response["ResponseMetadata"]["HTTPStatusCode"],
                "message": refused.value.response["Error"].get("Message", "")}

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=cloud.aws_endpoint)

    ec2 = error(lambda: client("ec2").describe_vpcs())
    assert (ec2["code"], ec2["status"]) == ("UnauthorizedOperation", 403)
    assert ec2["message"].startswith("You are not authorized to perform this operation. User:")
    assert error(lambda: client("sns").publish(
        TopicArn=f"arn:aws:sns:{cloud.region}:{cloud.account_id}:t", Message="m"))["code"] == (
        "AuthorizationError")
    assert error(lambda: client("iam").get_role(RoleName="reader"))["code"] == "AccessDenied"
    assert error(lambda: client("dynamodb").list_tables())["code"] == "AccessDeniedException"
    # a HEAD has no body: botocore takes the code from the status
    assert error(lambda: client("s3").head_bucket(Bucket="b"))["code"] == "403"
    # STS GetCallerIdentity needs no permission, as on AWS
    assert session.client("sts", endpoint_url=cloud.aws_endpoint).get_caller_identity()[
        "Arn"].endswith(":assumed-role/nothing/test")


def test_a_tag_condition_sees_the_resources_tags_and_the_requests(bare_cloud: Any) -> None:
    cloud = bare_cloud
    ec2 = cloud.client("ec2")
    tagged = ec2.create_vpc(CidrBlock="10.20.0.0/16", TagSpecifications=[{
        "ResourceType": "vpc", "Tags": [{"Key": "hypd:tag", "Value": "x"}]}])["Vpc"]["VpcId"]
    other = ec2.create_vpc(CidrBlock="10.21.0.0/16")["Vpc"]["VpcId"]
    session = session_for(cloud, "subnets", [
        {"Effect": "Allow", "Action": "ec2:CreateSubnet",
         "Resource": f"arn:aws:ec2:{cloud.region}:{cloud.account_id}:subnet/*",
         "Condition": {"StringLike": {"aws:RequestTag/hypd:role": "?*"}}},
        {"Effect": "Allow", "Action": "ec2:CreateSubnet",
         "Resource": f"arn:aws:ec2:{cloud.region}:{cloud.account_id}:vpc/*",
         "Condition": {"StringLike": {"ec2:ResourceTag/hypd:tag": "?*"}}},
        {"Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
         "Condition": {"StringEquals": {"ec2:CreateAction": "CreateSubnet"}}},
    ])
    mine = session.client("ec2", endpoint_url=cloud.aws_endpoint)
    role = [{"ResourceType": "subnet", "Tags": [{"Key": "hypd:role", "Value": "compute"}]}]

    made = mine.create_subnet(VpcId=tagged, CidrBlock="10.20.1.0/24", TagSpecifications=role)
    assert made["Subnet"]["VpcId"] == tagged
    with pytest.raises(ClientError, match=f"on resource: arn:aws:ec2:.*:vpc/{other}"):
        mine.create_subnet(VpcId=other, CidrBlock="10.21.1.0/24", TagSpecifications=role)
    with pytest.raises(ClientError, match=r"ec2:CreateSubnet on resource: .*:subnet/\*"):
        mine.create_subnet(VpcId=tagged, CidrBlock="10.20.2.0/24")  # no hypd:role tag


def test_a_request_the_local_cloud_cannot_read_is_refused_not_let_through(
    bare_cloud: Any,
) -> None:
    session = session_for(bare_cloud, "everything", [{"Effect": "Allow", "Action": "*",
                                                       "Resource": "*"}])
    kms = session.client("kms", endpoint_url=bare_cloud.aws_endpoint)
    with pytest.raises(ClientError, match="does not authorise requests to kms"):
        kms.list_keys()


def test_hyperpod_needs_its_service_linked_role_or_the_permission_to_make_it(
    bare_cloud: Any,
) -> None:
    cloud = bare_cloud
    execution = service_role(cloud, "hp-execution", "sagemaker.amazonaws.com")
    session = session_for(cloud, "hp-no-slr", [
        {"Effect": "Allow", "Action": ["sagemaker:CreateCluster", "sagemaker:AddTags",
                                       "iam:PassRole", "eks:*"], "Resource": "*"}])
    with pytest.raises(ClientError) as refused:
        session.client("sagemaker", endpoint_url=cloud.aws_endpoint).create_cluster(
            ClusterName="hp", InstanceGroups=[{
                "InstanceGroupName": "g", "InstanceType": "ml.g5.8xlarge", "InstanceCount": 1,
                "ExecutionRole": execution,
                "LifeCycleConfig": {"SourceS3Uri": "s3://b/l/", "OnCreate": "on_create.sh"}}])
    error = refused.value.response["Error"]
    assert error["Code"] == "AccessDeniedException"
    assert ("iam:CreateServiceLinkedRole on resource: arn:aws:iam::123456789012:role/"
            "aws-service-role/hyperpod.sagemaker.amazonaws.com/"
            "AWSServiceRoleForSageMakerHyperPod") in error["Message"]


def test_the_stack_keeps_an_existing_logging_role_or_makes_one_it_retains() -> None:
    template = ROOT / "template.yaml"
    made = Stack(template)
    assert "ApiGatewayCloudWatchRole" in made.roles
    assert made.api_accounts["ApiGatewayAccount"].cloudwatch_role_arn == (
        made.roles["ApiGatewayCloudWatchRole"].arn)
    # deleting the stack must not leave the Region's setting naming a deleted role
    assert made.template["Resources"]["ApiGatewayCloudWatchRole"]["DeletionPolicy"] == "Retain"

    existing = "arn:aws:iam::123456789012:role/team-apigateway-logs"
    kept = Stack(template, parameters={"ApiGatewayCloudWatchRoleArn": existing})
    assert "ApiGatewayCloudWatchRole" not in kept.roles
    assert kept.api_accounts["ApiGatewayAccount"].cloudwatch_role_arn == existing
