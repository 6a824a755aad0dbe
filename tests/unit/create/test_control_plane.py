"""The eks stage's domain logic over stubbed EKS and STS clients: inspect before create, the
CreateCluster request, FAILED and conflicting clusters, access entries, principals and the wait
policy."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from hypd.create.control_plane import (
    EKS_EXPECTED_SECONDS,
    EKS_WAIT,
    EksClusterConflict,
    EksClusterFailed,
    UnsupportedPrincipal,
    cluster_admin_policy_arn,
    create_cluster_params,
    ensure_admin_access,
    ensure_eks_cluster,
    iam_principal,
    next_check_seconds,
    principal_of,
    read_eks_cluster,
    state_of,
)
from hypd.errors import AwsAccessDenied, AwsResourceNotFound, AwsThrottled, AwsUnavailable
from hypd.operations.waits import WaitPolicy
from tests.unit.support import ACCOUNT, REGION

NAME = "hypd-demo"
ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{NAME}"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/hypd-eks"
SUBNETS = ["subnet-a", "subnet-b"]
CREATED = datetime(2026, 1, 15, 10, 0, tzinfo=UTC)
PRINCIPAL = f"arn:aws:iam::{ACCOUNT}:role/hypd-tasks"
CLUSTER_ADMIN_POLICY_ARN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


@pytest.fixture
def eks() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "eks", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def cluster(
    status: str = "CREATING", subnets: list[str] | None = None, mode: str = "API", **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": NAME,
        "arn": ARN,
        "status": status,
        "version": "1.33",
        "createdAt": CREATED,
        "resourcesVpcConfig": {"subnetIds": subnets or SUBNETS, "vpcId": "vpc-1"},
        "accessConfig": {"authenticationMode": mode},
    }
    if status == "ACTIVE":
        body["endpoint"] = "https://ABC.gr7.us-west-2.eks.amazonaws.com"
        body["certificateAuthority"] = {"data": "LS0tLS1CRUdJTi0tLS0t"}
    body.update(extra)
    return body


def not_found(stub: Stubber, operation: str = "describe_cluster", **params: Any) -> None:
    stub.add_client_error(
        operation,
        "ResourceNotFoundException",
        "No cluster found",
        404,
        expected_params=params or {"name": NAME},
    )


def ensure(client: Any, subnets: list[str] | None = None) -> Any:
    return ensure_eks_cluster(
        client,
        name=NAME,
        role_arn=ROLE,
        subnet_ids=subnets or SUBNETS,
        security_group_ids=["sg-1"],
        kubernetes_version="1.33",
        tags={"hypd:tag": "demo"},
        client_token="op-1-eks",
    )


# ---------------------------------------------------------------------------- the request
def test_the_create_request_has_api_auth_both_endpoints_and_three_log_types() -> None:
    params = create_cluster_params(
        name=NAME,
        role_arn=ROLE,
        subnet_ids=SUBNETS,
        security_group_ids=["sg-1"],
        kubernetes_version="1.33",
        tags={"hypd:tag": "demo"},
        client_token="op-1-eks",
    )
    assert params == {
        "name": NAME,
        "version": "1.33",
        "roleArn": ROLE,
        "resourcesVpcConfig": {
            "subnetIds": SUBNETS,
            "securityGroupIds": ["sg-1"],
            "endpointPublicAccess": True,
            "endpointPrivateAccess": True,
        },
        "accessConfig": {
            "authenticationMode": "API",
            "bootstrapClusterCreatorAdminPermissions": False,
        },
        "logging": {
            "clusterLogging": [{"types": ["api", "audit", "authenticator"], "enabled": True}]
        },
        "tags": {"hypd:tag": "demo"},
        "clientRequestToken": "op-1-eks",
    }


def test_optional_members_are_left_out_when_not_given() -> None:
    params = create_cluster_params(
        name=NAME,
        role_arn=ROLE,
        subnet_ids=SUBNETS,
        security_group_ids=[],
        kubernetes_version=None,
        tags={},
        client_token="t",
        public_access_cidrs=["203.0.113.0/24"],
    )
    assert "version" not in params
    assert "tags" not in params  # EKS refuses an empty map
    assert "securityGroupIds" not in params["resourcesVpcConfig"]
    assert params["resourcesVpcConfig"]["publicAccessCidrs"] == ["203.0.113.0/24"]


# ---------------------------------------------------------------------------- ensure
def test_a_missing_cluster_is_created(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    not_found(stub)
    expected = create_cluster_params(
        name=NAME,
        role_arn=ROLE,
        subnet_ids=SUBNETS,
        security_group_ids=["sg-1"],
        kubernetes_version="1.33",
        tags={"hypd:tag": "demo"},
        client_token="op-1-eks",
    )
    stub.add_response("create_cluster", {"cluster": cluster()}, expected)

    state = ensure(client)

    assert (state.name, state.arn, state.status, state.ready) == (NAME, ARN, "CREATING", False)
    assert state.created_at == CREATED
    assert state.subnet_ids == tuple(SUBNETS)


def test_an_existing_cluster_is_adopted_without_a_create(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    stub.add_response("describe_cluster", {"cluster": cluster("ACTIVE", ["subnet-b", "subnet-a"])})
    state = ensure(client)
    assert state.ready
    assert state.endpoint
    assert state.kubernetes_cluster() == {
        "name": NAME,
        "endpoint": state.endpoint,
        "certificateAuthority": {"data": "LS0tLS1CRUdJTi0tLS0t"},
    }
    assert state.to_json()["ready"] is True


def test_a_cluster_created_meanwhile_is_read_and_adopted(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    not_found(stub)
    stub.add_client_error("create_cluster", "ResourceInUseException", "Cluster already exists", 409)
    stub.add_response("describe_cluster", {"cluster": cluster()}, {"name": NAME})
    assert ensure(client).status == "CREATING"


def test_an_existing_cluster_on_other_subnets_is_a_conflict(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    stub.add_response("describe_cluster", {"cluster": cluster("ACTIVE", ["subnet-x", "subnet-y"])})
    with pytest.raises(EksClusterConflict, match="vpc-1") as conflict:
        ensure(client)
    assert conflict.value.details["subnetIds"] == ["subnet-x", "subnet-y"]
    assert conflict.value.details["requestedSubnetIds"] == SUBNETS


@pytest.mark.parametrize(
    ("status", "mode", "match"),
    [
        ("ACTIVE", "CONFIG_MAP", "authentication mode CONFIG_MAP"),
        ("DELETING", "API", "being deleted"),
    ],
)
def test_an_unusable_existing_cluster_is_a_conflict(
    eks: tuple[Any, Stubber], status: str, mode: str, match: str
) -> None:
    client, stub = eks
    stub.add_response("describe_cluster", {"cluster": cluster(status, mode=mode)})
    with pytest.raises(EksClusterConflict, match=match):
        ensure(client)


def test_a_failed_cluster_raises_eks_cluster_failed_with_its_reason(
    eks: tuple[Any, Stubber],
) -> None:
    client, stub = eks
    issue = {
        "code": "Ec2SubnetNotFound",
        "message": "The subnet ID 'subnet-a' does not exist",
        "resourceIds": ["subnet-a"],
    }
    stub.add_response(
        "describe_cluster", {"cluster": cluster("FAILED", health={"issues": [issue]})}
    )
    with pytest.raises(EksClusterFailed) as failed:
        ensure(client)
    assert "Ec2SubnetNotFound: The subnet ID 'subnet-a' does not exist" in failed.value.message
    assert failed.value.details["awsErrorCode"] == "Ec2SubnetNotFound"


def test_read_reports_failed_not_found_and_throttling(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    stub.add_response("describe_cluster", {"cluster": cluster("FAILED")})
    with pytest.raises(EksClusterFailed, match="no reason given"):
        read_eks_cluster(client, NAME)
    not_found(stub)
    with pytest.raises(AwsResourceNotFound):
        read_eks_cluster(client, NAME)
    stub.add_client_error("describe_cluster", "ThrottlingException", "slow down", 429)
    with pytest.raises(AwsThrottled):
        read_eks_cluster(client, NAME)
    stub.add_client_error("describe_cluster", "ServerException", "oops", 500)
    with pytest.raises(AwsUnavailable):
        read_eks_cluster(client, NAME)


def test_state_elapsed_time_drives_the_next_check() -> None:
    state = state_of(cluster())
    assert state.elapsed_seconds(CREATED + timedelta(minutes=2)) == 120
    assert state.next_check_seconds(CREATED + timedelta(minutes=2)) == 6 * 60
    assert state_of({"name": NAME, "arn": ARN}).elapsed_seconds(CREATED) == 0


# ---------------------------------------------------------------------------- access
def entry_params(**extra: Any) -> dict[str, Any]:
    return {"clusterName": NAME, "principalArn": PRINCIPAL, **extra}


def associate(stub: Stubber) -> None:
    stub.add_response(
        "associate_access_policy",
        {
            "clusterName": NAME,
            "principalArn": PRINCIPAL,
            "associatedAccessPolicy": {
                "policyArn": CLUSTER_ADMIN_POLICY_ARN,
                "accessScope": {"type": "cluster"},
            },
        },
        entry_params(policyArn=CLUSTER_ADMIN_POLICY_ARN, accessScope={"type": "cluster"}),
    )


def test_admin_access_creates_the_entry_and_associates_the_policy(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    stub.add_response(
        "create_access_entry",
        {"accessEntry": {"principalArn": PRINCIPAL}},
        entry_params(type="STANDARD", clientRequestToken="op-1-eks-access"),
    )
    associate(stub)
    assert ensure_admin_access(client, NAME, PRINCIPAL, client_token="op-1-eks") is True


def test_admin_access_keeps_an_existing_entry_and_association(eks: tuple[Any, Stubber]) -> None:
    client, stub = eks
    stub.add_client_error("create_access_entry", "ResourceInUseException", "in use", 409)
    stub.add_response(
        "list_associated_access_policies",
        {
            "clusterName": NAME,
            "principalArn": PRINCIPAL,
            "associatedAccessPolicies": [
                {"policyArn": CLUSTER_ADMIN_POLICY_ARN, "accessScope": {"type": "cluster"}}
            ],
        },
        entry_params(),
    )
    assert ensure_admin_access(client, NAME, PRINCIPAL) is False


def test_admin_access_associates_the_policy_with_an_entry_that_lacks_it(
    eks: tuple[Any, Stubber],
) -> None:
    client, stub = eks
    stub.add_client_error("create_access_entry", "ResourceInUseException", "in use", 409)
    stub.add_response(
        "list_associated_access_policies",
        {
            "clusterName": NAME,
            "principalArn": PRINCIPAL,
            "associatedAccessPolicies": [
                {
                    "policyArn": CLUSTER_ADMIN_POLICY_ARN,
                    "accessScope": {"type": "namespace", "namespaces": ["default"]},
                }
            ],
        },
        entry_params(),
    )
    associate(stub)
    assert ensure_admin_access(client, NAME, PRINCIPAL) is True


@pytest.mark.parametrize(
    ("partition", "policy"),
    [
        ("aws", "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"),
        ("aws-cn", "arn:aws-cn:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"),
        ("aws-us-gov",
         "arn:aws-us-gov:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"),
    ],
)
def test_admin_access_associates_the_policy_of_the_principal_s_partition(
    partition: str, policy: str
) -> None:
    # Given a principal of the partition (its ARN names it) and a cluster there
    region = {"aws": "us-west-2", "aws-cn": "cn-north-1", "aws-us-gov": "us-gov-west-1"}
    client = boto3.client("eks", region_name=region[partition], aws_access_key_id="x",
                          aws_secret_access_key="x")
    principal = f"arn:{partition}:iam::{ACCOUNT}:role/hypd-tasks"
    with Stubber(client) as stub:
        stub.add_response("create_access_entry", {"accessEntry": {"principalArn": principal}},
                          {"clusterName": NAME, "principalArn": principal, "type": "STANDARD"})
        stub.add_response(
            "associate_access_policy",
            {"clusterName": NAME, "principalArn": principal,
             "associatedAccessPolicy": {"policyArn": policy, "accessScope": {"type": "cluster"}}},
            {"clusterName": NAME, "principalArn": principal, "policyArn": policy,
             "accessScope": {"type": "cluster"}},
        )
        # When it gets admin access, Then the association names that partition's policy
        assert ensure_admin_access(client, NAME, principal) is True
        stub.assert_no_pending_responses()
    assert cluster_admin_policy_arn(partition) == policy


# ---------------------------------------------------------------------------- principals
@pytest.mark.parametrize(
    ("caller", "principal"),
    [
        (
            f"arn:aws:sts::{ACCOUNT}:assumed-role/hypd-tasks/fn-session",
            f"arn:aws:iam::{ACCOUNT}:role/hypd-tasks",
        ),
        (f"arn:aws-cn:sts::{ACCOUNT}:assumed-role/r/s", f"arn:aws-cn:iam::{ACCOUNT}:role/r"),
        (f"arn:aws:iam::{ACCOUNT}:role/service/hypd", f"arn:aws:iam::{ACCOUNT}:role/service/hypd"),
        (f"arn:aws:iam::{ACCOUNT}:user/alice", f"arn:aws:iam::{ACCOUNT}:user/alice"),
        (f"arn:aws:sts::{ACCOUNT}:user/moto", f"arn:aws:iam::{ACCOUNT}:user/moto"),
    ],
)
def test_iam_principal_maps_sessions_to_their_role(caller: str, principal: str) -> None:
    assert iam_principal(caller) == principal


@pytest.mark.parametrize(
    "caller",
    [
        f"arn:aws:iam::{ACCOUNT}:root",
        f"arn:aws:sts::{ACCOUNT}:federated-user/bob",
        f"arn:aws:sts::{ACCOUNT}:assumed-role/no-session",
        "not-an-arn",
    ],
)
def test_principals_without_an_access_entry_form_are_refused(caller: str) -> None:
    with pytest.raises(UnsupportedPrincipal):
        iam_principal(caller)


def test_principal_of_asks_sts_who_is_calling() -> None:
    sts = boto3.client("sts", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(sts) as stub:
        stub.add_response(
            "get_caller_identity",
            {
                "UserId": "AROA:fn",
                "Account": ACCOUNT,
                "Arn": f"arn:aws:sts::{ACCOUNT}:assumed-role/hypd-tasks/hypd-fn",
            },
        )
        assert principal_of(sts) == PRINCIPAL
        stub.add_client_error("get_caller_identity", "ExpiredToken", "expired", 403)
        with pytest.raises(AwsAccessDenied, match="ExpiredToken"):
            principal_of(sts)


# ---------------------------------------------------------------------------- wait policy
def test_the_first_look_is_near_the_expected_end_then_short_intervals() -> None:
    assert EKS_WAIT.first_look_seconds <= EKS_EXPECTED_SECONDS
    assert next_check_seconds(0) == EKS_WAIT.first_look_seconds == 480
    assert next_check_seconds(300) == 180
    assert next_check_seconds(479.5) == 1
    assert next_check_seconds(480) == 30
    assert next_check_seconds(19 * 60) == 30
    assert next_check_seconds(20 * 60) == 60  # well past the expected time
    assert next_check_seconds(-5) == 480  # clock skew
    assert not EKS_WAIT.overdue(44 * 60)
    assert EKS_WAIT.overdue(45 * 60)


@pytest.mark.parametrize("ready_after", [8 * 60, 9 * 60 + 7, 10 * 60, 11 * 60 + 59, 12 * 60])
def test_a_cluster_is_noticed_within_30_s_with_few_looks(ready_after: int) -> None:
    elapsed, looks = 0, 0
    while True:
        elapsed += next_check_seconds(elapsed)
        looks += 1
        if elapsed >= ready_after:
            break
    assert elapsed - ready_after <= 30
    assert looks <= 10  # fixed 30 s polling from the start would take up to 24


def test_an_inconsistent_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="inconsistent"):
        WaitPolicy(
            expected_seconds=60,
            first_look_seconds=60,
            interval_seconds=0,
            late_after_seconds=120,
            late_interval_seconds=30,
            give_up_after_seconds=600,
        )
