"""What managed features need of the local cloud, end to end through boto3: AMP workspaces with
a life cycle, IAM OIDC providers and AMP authorised for an issued principal, and HyperPod task
governance against the EKS emulator's add-on and the cluster's Kubernetes API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from hypd_local import LocalCloud
from hypd_local.emulator.hyperpod_governance import TASK_GOVERNANCE_ADDON
from hypd_local.patches import AMP_CREATE_SECONDS
from tests.local_cloud.conftest import FIXTURE_TEMPLATE
from tests.local_cloud.test_emulation import (
    active_eks,
    create_hyperpod,
    group_spec,
    hyperpod_status,
    unique,
)


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(FIXTURE_TEMPLATE) as running:
        yield running


def session_with(cloud: LocalCloud, *statements: dict[str, Any]) -> boto3.session.Session:
    """A role allowed ``statements`` and a session that assumed it (an issued principal, whose
    requests the local cloud authorises)."""
    iam = cloud.client("iam")
    name = unique("features")
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    iam.put_role_policy(RoleName=name, PolicyName="features", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": list(statements)}))
    creds = cloud.client("sts").assume_role(RoleArn=arn, RoleSessionName="features")["Credentials"]
    return boto3.session.Session(
        aws_access_key_id=creds["AccessKeyId"], aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"], region_name=cloud.region)


def code(info: pytest.ExceptionInfo[ClientError]) -> str:
    return str(info.value.response["Error"]["Code"])


def test_a_workspace_is_creating_then_active(cloud: LocalCloud) -> None:
    amp = cloud.client("amp")
    created = amp.create_workspace(alias="hypd", tags={"SageMaker": "true"})
    assert created["status"] == {"statusCode": "CREATING"}
    described = amp.describe_workspace(workspaceId=created["workspaceId"])["workspace"]
    assert described["status"]["statusCode"] == "CREATING"
    assert described["tags"] == {"SageMaker": "true"}
    assert abs((described["createdAt"] - cloud.clock.now()).total_seconds()) < 5
    cloud.clock.advance(AMP_CREATE_SECONDS)
    listed = amp.list_workspaces(alias="hypd")["workspaces"]
    assert [(w["workspaceId"], w["status"]["statusCode"]) for w in listed] == [
        (created["workspaceId"], "ACTIVE")]
    amp.tag_resource(resourceArn=created["arn"], tags={"hypd:tag": "t1"})
    assert amp.list_tags_for_resource(resourceArn=created["arn"])["tags"] == {
        "SageMaker": "true", "hypd:tag": "t1"}
    amp.delete_workspace(workspaceId=created["workspaceId"])
    with pytest.raises(ClientError) as gone:
        amp.delete_workspace(workspaceId=created["workspaceId"])
    assert code(gone) == "ResourceNotFoundException"


def test_amp_and_oidc_are_authorised_for_issued_principals(cloud: LocalCloud) -> None:
    tagged = {"StringEquals": {"aws:RequestTag/SageMaker": "true"}}
    session = session_with(
        cloud,
        {"Effect": "Allow", "Action": "aps:CreateWorkspace", "Resource": "*",
         "Condition": tagged},
        {"Effect": "Allow", "Action": ["aps:DescribeWorkspace", "aps:ListWorkspaces"],
         "Resource": "*"},
        {"Effect": "Allow", "Action": "iam:CreateOpenIDConnectProvider",
         "Resource": "arn:aws:iam::*:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/*",
         "Condition": {"StringEquals": {"aws:RequestTag/hypd:tag": "t1"}}},
        {"Effect": "Allow", "Action": "iam:GetOpenIDConnectProvider", "Resource": "*"},
    )
    amp = session.client("amp", endpoint_url=cloud.aws_endpoint)
    workspace = amp.create_workspace(alias="as-role", tags={"SageMaker": "true"})
    assert amp.describe_workspace(workspaceId=workspace["workspaceId"])["workspace"]["alias"] == (
        "as-role")
    with pytest.raises(ClientError) as refused:
        amp.create_workspace(alias="untagged")
    assert code(refused) == "AccessDeniedException"
    assert "aps:CreateWorkspace on resource: *" in refused.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as refused:
        amp.delete_workspace(workspaceId=workspace["workspaceId"])
    assert code(refused) == "AccessDeniedException"
    assert f"aps:DeleteWorkspace on resource: {workspace['arn']}" in (
        refused.value.response["Error"]["Message"])

    iam = session.client("iam", endpoint_url=cloud.aws_endpoint)
    url = "https://oidc.eks.us-west-2.amazonaws.com/id/FEEDFACE"
    arn = iam.create_open_id_connect_provider(
        Url=url, ClientIDList=["sts.amazonaws.com"],
        Tags=[{"Key": "hypd:tag", "Value": "t1"}])["OpenIDConnectProviderArn"]
    assert arn == (f"arn:aws:iam::{cloud.account_id}:oidc-provider/"
                   "oidc.eks.us-west-2.amazonaws.com/id/FEEDFACE")
    assert iam.get_open_id_connect_provider(OpenIDConnectProviderArn=arn)["Tags"] == [
        {"Key": "hypd:tag", "Value": "t1"}]
    with pytest.raises(ClientError) as refused:
        iam.create_open_id_connect_provider(Url=url + "0", ClientIDList=["sts.amazonaws.com"])
    assert code(refused) == "AccessDenied"
    with pytest.raises(ClientError) as refused:
        iam.delete_open_id_connect_provider(OpenIDConnectProviderArn=arn)
    assert f"iam:DeleteOpenIDConnectProvider on resource: {arn}" in (
        refused.value.response["Error"]["Message"])


def _namespaces(cloud: LocalCloud, eks_name: str) -> set[str]:
    assert cloud.emulation is not None
    assert cloud.emulation.kube is not None
    server = cloud.emulation.kube.get(eks_name)
    assert server is not None
    namespaces = server.store.builtin_type("", "namespaces")
    return {n["metadata"]["name"] for n in server.store.list(namespaces, None)[0]}


def test_task_governance_waits_for_its_addon_and_makes_team_namespaces(
        cloud: LocalCloud) -> None:
    eks_name = unique("gov-eks")
    eks_cluster, network = active_eks(cloud, eks_name)
    name = unique("gov")
    cluster = create_hyperpod(cloud, name, eks_cluster["arn"], network,
                              [group_spec(cloud, "workers", "ml.g5.8xlarge", 1)])
    cloud.clock.advance(3600)
    assert hyperpod_status(cloud, name) == "InService"
    sagemaker = cloud.client("sagemaker")
    policy = {"PriorityClasses": [{"Name": "inference", "Weight": 100}], "FairShare": "Enabled"}

    # created before the add-on: CreateFailed, then deleted and created again
    early = sagemaker.create_cluster_scheduler_config(
        Name="policy", ClusterArn=cluster, SchedulerConfig=policy)["ClusterSchedulerConfigId"]
    eks = cloud.client("eks")
    eks.create_addon(clusterName=eks_name, addonName=TASK_GOVERNANCE_ADDON)
    cloud.clock.advance(60)
    failed = sagemaker.describe_cluster_scheduler_config(ClusterSchedulerConfigId=early)
    assert failed["Status"] == "CreateFailed"
    assert TASK_GOVERNANCE_ADDON in failed["FailureReason"]
    with pytest.raises(ClientError) as refused:
        sagemaker.create_cluster_scheduler_config(Name="again", ClusterArn=cluster,
                                                  SchedulerConfig=policy)
    assert code(refused) == "ConflictException"
    cloud.clock.advance(600)
    addon = eks.describe_addon(clusterName=eks_name, addonName=TASK_GOVERNANCE_ADDON)["addon"]
    assert addon["status"] == "ACTIVE"
    sagemaker.delete_cluster_scheduler_config(ClusterSchedulerConfigId=early)
    cloud.clock.advance(60)
    again = sagemaker.create_cluster_scheduler_config(
        Name="policy", ClusterArn=cluster, SchedulerConfig=policy)["ClusterSchedulerConfigId"]
    quota = sagemaker.create_compute_quota(
        Name="team-a", ClusterArn=cluster,
        ComputeQuotaConfig={"ComputeQuotaResources": [
            {"InstanceType": "ml.g5.8xlarge", "Count": 1}]},
        ComputeQuotaTarget={"TeamName": "team-a", "FairShareWeight": 10})["ComputeQuotaId"]
    assert "hyperpod-ns-team-a" not in _namespaces(cloud, eks_name)
    cloud.clock.advance(60)
    assert sagemaker.describe_cluster_scheduler_config(
        ClusterSchedulerConfigId=again)["Status"] == "Created"
    assert sagemaker.describe_compute_quota(ComputeQuotaId=quota)["Status"] == "Created"
    assert "hyperpod-ns-team-a" in _namespaces(cloud, eks_name)

    with pytest.raises(ClientError) as refused:  # the middleware validates the model
        sagemaker.create_compute_quota(
            Name="bad", ClusterArn=cluster, ComputeQuotaConfig={},
            ComputeQuotaTarget={"TeamName": "team-b", "FairShareWeight": 101})
    assert code(refused) == "ValidationException"
    assert "ComputeQuotaTarget.FairShareWeight" in refused.value.response["Error"]["Message"]

    sagemaker.delete_compute_quota(ComputeQuotaId=quota)
    cloud.clock.advance(60)
    assert "hyperpod-ns-team-a" not in _namespaces(cloud, eks_name)
    with pytest.raises(ClientError) as gone:
        sagemaker.describe_compute_quota(ComputeQuotaId=quota)
    assert code(gone) == "ResourceNotFound"
    deleted = sagemaker.list_compute_quotas(Status="Deleted", ClusterArn=cluster)
    assert [q["ComputeQuotaId"] for q in deleted["ComputeQuotaSummaries"]] == [quota]


def test_tiered_storage_through_the_local_cloud(cloud: LocalCloud) -> None:
    eks_name = unique("ts-eks")
    eks_cluster, network = active_eks(cloud, eks_name)
    name = unique("ts")
    create_hyperpod(cloud, name, eks_cluster["arn"], network,
                    [group_spec(cloud, "workers", "ml.g5.8xlarge", 1)],
                    TieredStorageConfig={"Mode": "Enable",
                                         "InstanceMemoryAllocationPercentage": 20})
    cloud.clock.advance(3600)
    sagemaker = cloud.client("sagemaker")
    sagemaker.update_cluster(ClusterName=name, TieredStorageConfig={
        "Mode": "Enable", "InstanceMemoryAllocationPercentage": 50})
    described = sagemaker.describe_cluster(ClusterName=name)
    assert described["ClusterStatus"] == "Updating"
    assert described["TieredStorageConfig"]["InstanceMemoryAllocationPercentage"] == 20
    with pytest.raises(ClientError) as refused:
        sagemaker.update_cluster(ClusterName=name, TieredStorageConfig={"Mode": "Disable"})
    assert code(refused) == "ConflictException"
    cloud.clock.advance(300)
    described = sagemaker.describe_cluster(ClusterName=name)
    assert described["ClusterStatus"] == "InService"
    assert described["TieredStorageConfig"]["InstanceMemoryAllocationPercentage"] == 50



def test_task_governance_is_authorised_for_issued_principals(cloud: LocalCloud) -> None:
    session = session_with(cloud, {"Effect": "Allow", "Resource": "*", "Action": [
        "sagemaker:ListComputeQuotas", "sagemaker:ListClusterSchedulerConfigs"]})
    sagemaker = session.client("sagemaker", endpoint_url=cloud.aws_endpoint)
    assert "ComputeQuotaSummaries" in sagemaker.list_compute_quotas()
    assert "ClusterSchedulerConfigSummaries" in sagemaker.list_cluster_scheduler_configs()
    cluster = f"arn:aws:sagemaker:{cloud.region}:{cloud.account_id}:cluster/abcdefabcdef"
    with pytest.raises(ClientError) as refused:
        sagemaker.create_compute_quota(Name="q", ClusterArn=cluster, ComputeQuotaConfig={},
                                       ComputeQuotaTarget={"TeamName": "a"})
    assert code(refused) == "AccessDeniedException"
    assert f"sagemaker:CreateComputeQuota on resource: {cluster}" in (
        refused.value.response["Error"]["Message"])
