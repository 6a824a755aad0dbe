"""The network stage's pure parts (template, zones, check policy) and its status mapping over
a stubbed CloudFormation client."""

from __future__ import annotations

import copy
import ipaddress
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from cfnlint.api import lint_all

from hypd.aws import cloudformation as cfn_api
from hypd.aws.partitions import gateway_endpoint_service
from hypd.catalog.models import AvailabilityZone
from hypd.create.network_stack import (
    EKS_UNSUPPORTED_ZONE_IDS,
    EXPECTED_STACK_SECONDS,
    MAX_CHECK_SECONDS,
    MIN_CHECK_SECONDS,
    STACK_TIMEOUT_MINUTES,
    NetworkStack,
    NetworkStackFailed,
    NotEnoughZones,
    UnknownZone,
    control_plane_moved,
    control_plane_zones,
    ensure_network_stack,
    known_unsupported_zones,
    move_control_plane,
    network_stack_template,
    next_check_seconds,
    read_network_stack,
    stack_name,
)
from hypd.errors import AwsThrottled, AwsUnavailable, PermanentError
from hypd.network.subnets import next_free_block
from tests.unit.support import REGION

TAG = "demo"
ZONES = ("us-west-2a", "us-west-2b")


def zones() -> tuple[str, str]:
    return ZONES


def no_zones() -> tuple[str, str]:
    raise AssertionError("the zones are needed only to create the stack")
NAME = "hypd-demo-network"
STACK_ID = f"arn:aws:cloudformation:{REGION}:123456789012:stack/{NAME}/0f0e"
OUTPUTS = {
    "VpcId": "vpc-1",
    "ControlPlaneSubnetIds": "subnet-a,subnet-b",
    "PublicSubnetIds": "subnet-c,subnet-d",
    "SecurityGroupId": "sg-1",
    "NatGatewayId": "nat-1",
    "S3EndpointId": "vpce-1",
}
TAGGABLE = {
    "AWS::EC2::VPC",
    "AWS::EC2::InternetGateway",
    "AWS::EC2::RouteTable",
    "AWS::EC2::EIP",
    "AWS::EC2::NatGateway",
    "AWS::EC2::VPCEndpoint",
    "AWS::EC2::SecurityGroup",
    "AWS::EC2::Subnet",
}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return network_stack_template(TAG, ZONES)


def of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def tags(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource["Properties"].get("Tags", [])}


# ---------------------------------------------------------------------------- template
def test_stack_is_named_after_the_tag() -> None:
    assert stack_name(TAG) == NAME


def test_vpc_is_a_16_with_dns_support_and_hostnames(template: dict[str, Any]) -> None:
    (vpc,) = of_type(template, "AWS::EC2::VPC").values()
    assert vpc["Properties"]["CidrBlock"] == "10.0.0.0/16"
    assert vpc["Properties"]["EnableDnsSupport"] is True
    assert vpc["Properties"]["EnableDnsHostnames"] is True
    assert "Parameters" not in template


def test_subnets_are_four_24s_in_the_vpcs_last_20(template: dict[str, Any]) -> None:
    subnets = {k: v["Properties"] for k, v in of_type(template, "AWS::EC2::Subnet").items()}
    assert {k: (p["CidrBlock"], p["AvailabilityZone"]) for k, p in subnets.items()} == {
        "ControlPlaneSubnet1": ("10.0.240.0/24", "us-west-2a"),
        "ControlPlaneSubnet2": ("10.0.241.0/24", "us-west-2b"),
        "PublicSubnet1": ("10.0.242.0/24", "us-west-2a"),
        "PublicSubnet2": ("10.0.243.0/24", "us-west-2b"),
    }
    assert tags(template["Resources"]["ControlPlaneSubnet1"])["hypd:role"] == "control-plane"
    assert tags(template["Resources"]["PublicSubnet2"])["kubernetes.io/role/elb"] == "1"
    assert "kubernetes.io/role/elb" not in tags(template["Resources"]["ControlPlaneSubnet1"])


def test_compute_subnets_fill_the_vpc_from_the_bottom(template: dict[str, Any]) -> None:
    # hypd.network plans compute /20s around every existing subnet: the stack's /24s cost one
    # /20 of sixteen, the top one.
    used = [r["Properties"]["CidrBlock"] for r in of_type(template, "AWS::EC2::Subnet").values()]
    assert next_free_block(["10.0.0.0/16"], used) == ipaddress.IPv4Network("10.0.0.0/20")
    free: list[ipaddress.IPv4Network] = []
    while (block := next_free_block(["10.0.0.0/16"], used + [str(b) for b in free])) is not None:
        free.append(block)
    assert len(free) == 15
    assert free[-1] == ipaddress.IPv4Network("10.0.224.0/20")


def test_another_vpc_cidr_moves_the_24s_with_it() -> None:
    template = network_stack_template(TAG, ZONES, vpc_cidr="172.20.0.0/16")
    cidrs = sorted(
        r["Properties"]["CidrBlock"] for r in of_type(template, "AWS::EC2::Subnet").values()
    )
    assert cidrs == ["172.20.240.0/24", "172.20.241.0/24", "172.20.242.0/24", "172.20.243.0/24"]


@pytest.mark.parametrize("cidr", ["10.0.0.0/15", "10.0.0.0/20", "10.0.0.0/24"])
def test_a_vpc_cidr_outside_16_to_19_is_refused(cidr: str) -> None:
    with pytest.raises(ValueError, match="/16 to /19"):
        network_stack_template(TAG, ZONES, vpc_cidr=cidr)


@pytest.mark.parametrize("zones", [("us-west-2a",), ("us-west-2a", "us-west-2a"), ZONES * 2])
def test_the_template_needs_two_different_zones(zones: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="two different zones"):
        network_stack_template(TAG, zones)


def test_private_tables_route_through_the_one_nat_gateway(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    (nat,) = of_type(template, "AWS::EC2::NatGateway").values()
    assert nat["Properties"]["SubnetId"] == {"Ref": "PublicSubnet1"}
    assert nat["Properties"]["AllocationId"] == {"Fn::GetAtt": ["NatGatewayEip", "AllocationId"]}
    assert resources["NatGatewayEip"]["Properties"]["Domain"] == "vpc"
    routes = {k: v["Properties"] for k, v in of_type(template, "AWS::EC2::Route").items()}
    assert routes["ControlPlaneDefaultRoute1"] == {
        "RouteTableId": {"Ref": "ControlPlaneRouteTable1"},
        "DestinationCidrBlock": "0.0.0.0/0",
        "NatGatewayId": {"Ref": "NatGateway"},
    }
    assert routes["ControlPlaneDefaultRoute2"]["RouteTableId"] == {"Ref": "ControlPlaneRouteTable2"}
    assert routes["PublicDefaultRoute"]["GatewayId"] == {"Ref": "InternetGateway"}
    associations = {
        (v["Properties"]["SubnetId"]["Ref"], v["Properties"]["RouteTableId"]["Ref"])
        for v in of_type(template, "AWS::EC2::SubnetRouteTableAssociation").values()
    }
    assert associations == {
        ("ControlPlaneSubnet1", "ControlPlaneRouteTable1"),
        ("ControlPlaneSubnet2", "ControlPlaneRouteTable2"),
        ("PublicSubnet1", "PublicRouteTable"),
        ("PublicSubnet2", "PublicRouteTable"),
    }


def test_s3_gateway_endpoint_serves_the_private_tables(template: dict[str, Any]) -> None:
    (endpoint,) = of_type(template, "AWS::EC2::VPCEndpoint").values()
    assert endpoint["Properties"]["VpcEndpointType"] == "Gateway"
    assert endpoint["Properties"]["ServiceName"] == {"Fn::Sub": "com.amazonaws.${AWS::Region}.s3"}
    assert endpoint["Properties"]["RouteTableIds"] == [
        {"Ref": "ControlPlaneRouteTable1"},
        {"Ref": "ControlPlaneRouteTable2"},
    ]


@pytest.mark.parametrize("region", ["us-west-2", "cn-north-1", "us-gov-west-1"])
def test_the_stack_names_the_s3_gateway_service_as_the_ec2_adapter_does(
    template: dict[str, Any], region: str
) -> None:
    # CloudFormation substitutes the stack's Region: the name the compute subnets' endpoint
    # lookup uses in every partition (a gateway keeps com.amazonaws in China too)
    (endpoint,) = of_type(template, "AWS::EC2::VPCEndpoint").values()
    service = endpoint["Properties"]["ServiceName"]["Fn::Sub"]
    assert service.replace("${AWS::Region}", region) == gateway_endpoint_service(region, "s3")


def test_security_group_lets_members_talk_and_reach_out(template: dict[str, Any]) -> None:
    own_id = {"Fn::GetAtt": ["ClusterSecurityGroup", "GroupId"]}
    group = template["Resources"]["ClusterSecurityGroup"]["Properties"]
    assert [(r["IpProtocol"], r["CidrIp"]) for r in group["SecurityGroupEgress"]] == [
        ("-1", "0.0.0.0/0")
    ]
    ingress = template["Resources"]["ClusterSecurityGroupSelfIngress"]["Properties"]
    egress = template["Resources"]["ClusterSecurityGroupSelfEgress"]["Properties"]
    assert (ingress["GroupId"], ingress["SourceSecurityGroupId"], ingress["IpProtocol"]) == (
        own_id,
        own_id,
        "-1",
    )
    assert (egress["GroupId"], egress["DestinationSecurityGroupId"], egress["IpProtocol"]) == (
        own_id,
        own_id,
        "-1",
    )


def test_every_taggable_resource_carries_the_tag_and_a_name(template: dict[str, Any]) -> None:
    taggable = {k: v for k, v in template["Resources"].items() if v["Type"] in TAGGABLE}
    assert len(taggable) == 13
    for logical_id, resource in taggable.items():
        assert tags(resource)["hypd:tag"] == TAG, logical_id
        assert tags(resource)["Name"].startswith("hypd-demo-"), logical_id
    assert tags(template["Resources"]["NatGateway"])["hypd:role"] == "nat-gateway"


def test_outputs_name_every_id_the_pipeline_needs(template: dict[str, Any]) -> None:
    assert set(template["Outputs"]) == set(OUTPUTS)
    assert template["Outputs"]["ControlPlaneSubnetIds"]["Value"] == {
        "Fn::Join": [",", [{"Ref": "ControlPlaneSubnet1"}, {"Ref": "ControlPlaneSubnet2"}]]
    }


def test_template_passes_cfn_lint(template: dict[str, Any]) -> None:
    # Errors and warnings only (informational rules ask for metadata we do not keep), except
    # W3010 "hardcoded availability zone": the zones are the cluster's decision.
    problems = [
        str(match)
        for match in lint_all(json.dumps(template))
        if match.rule.id[0] in {"E", "W"} and match.rule.id != "W3010"
    ]
    assert problems == []


# ---------------------------------------------------------------------------- zones
def test_control_plane_zones_are_the_clusters_and_the_next() -> None:
    zones = ["us-west-2d", "us-west-2b", "us-west-2a", "us-west-2c"]
    assert control_plane_zones("us-west-2b", zones) == ("us-west-2b", "us-west-2c")
    assert control_plane_zones("us-west-2a", zones) == ("us-west-2a", "us-west-2b")


def test_the_last_zone_pairs_with_the_first() -> None:
    assert control_plane_zones("us-west-2d", ["us-west-2a", "us-west-2d", "us-west-2d"]) == (
        "us-west-2d",
        "us-west-2a",
    )


def test_a_region_with_one_zone_is_refused() -> None:
    with pytest.raises(NotEnoughZones, match="two Availability Zones") as caught:
        control_plane_zones("il-central-1a", ["il-central-1a"])
    assert isinstance(caught.value, PermanentError)


US_EAST_1 = [
    AvailabilityZone(f"us-east-1{letter}", zone_id, "available", "us-east-1")
    for letter, zone_id in zip("abcdef", ["use1-az6", "use1-az1", "use1-az2", "use1-az4",
                                         "use1-az3", "use1-az5"], strict=True)
]


def test_zones_eks_documents_as_unsupported_are_found_by_their_id() -> None:
    # use1-az3 is us-east-1e in this account's mapping (another account may call it otherwise)
    assert known_unsupported_zones(US_EAST_1) == ["us-east-1e"]
    assert {"use1-az3", "usw1-az2", "cac1-az3"} <= EKS_UNSUPPORTED_ZONE_IDS


def test_the_second_zone_skips_zones_eks_does_not_support() -> None:
    names = [z.name for z in US_EAST_1]
    assert control_plane_zones("us-east-1d", names, unsupported=["us-east-1e"]) == (
        "us-east-1d",
        "us-east-1f",
    )
    # without the knowledge, the next zone by name
    assert control_plane_zones("us-east-1d", names) == ("us-east-1d", "us-east-1e")


def test_a_cluster_zone_eks_does_not_support_hosts_no_control_plane_subnet() -> None:
    names = [z.name for z in US_EAST_1]
    assert control_plane_zones("us-east-1e", names, unsupported=["us-east-1e"]) == (
        "us-east-1f",
        "us-east-1a",
    )


def test_too_few_supported_zones_are_refused() -> None:
    with pytest.raises(NotEnoughZones, match="it supports only us-west-1a"):
        control_plane_zones("us-west-1a", ["us-west-1a", "us-west-1b"],
                            unsupported=["us-west-1b"])


def test_a_zone_outside_the_region_is_refused() -> None:
    with pytest.raises(UnknownZone, match="us-east-1a is not an available zone"):
        control_plane_zones("us-east-1a", ["us-west-2a", "us-west-2b"])


# ---------------------------------------------------------------------------- moving zones
def output_subnets(template: dict[str, Any]) -> list[str]:
    return [ref["Ref"] for ref in
            template["Outputs"]["ControlPlaneSubnetIds"]["Value"]["Fn::Join"][1]]


def zone_of(template: dict[str, Any], logical_id: str) -> str:
    return str(template["Resources"][logical_id]["Properties"]["AvailabilityZone"])


def test_a_refused_control_plane_zone_gets_a_new_subnet_and_nothing_else_changes(
    template: dict[str, Any],
) -> None:
    original = json.loads(json.dumps(template))
    # Given EKS refuses us-west-2b and accepts a, c and d
    moved = control_plane_moved(template, TAG, ["us-west-2a", "us-west-2c", "us-west-2d"])
    assert moved is not None
    # Then the output names the kept subnet and a new one in the next accepted zone
    assert output_subnets(moved) == ["ControlPlaneSubnet1", "ControlPlaneSubnet3"]
    assert zone_of(moved, "ControlPlaneSubnet3") == "us-west-2c"
    new = set(moved["Resources"]) - set(template["Resources"])
    assert new == {"ControlPlaneSubnet3", "ControlPlaneRouteTable3", "ControlPlaneDefaultRoute3",
                   "ControlPlaneSubnet3RouteTableAssociation"}
    # on the first free /24 of the last /20, tagged like the others
    subnet = moved["Resources"]["ControlPlaneSubnet3"]["Properties"]
    assert subnet["CidrBlock"] == "10.0.244.0/24"
    assert {"Key": "hypd:role", "Value": "control-plane"} in subnet["Tags"]
    assert {"Key": "hypd:tag", "Value": TAG} in subnet["Tags"]
    # And every resource the stack had stays exactly as it was (the S3 endpoint too)
    assert {k: moved["Resources"][k] for k in template["Resources"]} == template["Resources"]
    assert template == original  # the argument is not changed
    problems = [str(m) for m in lint_all(json.dumps(moved))
                if m.rule.id[0] in {"E", "W"} and m.rule.id != "W3010"]
    assert problems == []


def test_nothing_moves_when_every_control_plane_zone_is_accepted(
    template: dict[str, Any],
) -> None:
    assert control_plane_moved(template, TAG, ["us-west-2a", "us-west-2b"]) is None


def test_both_zones_refused_get_two_new_subnets(template: dict[str, Any]) -> None:
    moved = control_plane_moved(template, TAG, ["us-west-2c", "us-west-2d"])
    assert moved is not None
    assert output_subnets(moved) == ["ControlPlaneSubnet3", "ControlPlaneSubnet4"]
    assert [zone_of(moved, s) for s in output_subnets(moved)] == ["us-west-2c", "us-west-2d"]
    assert [moved["Resources"][s]["Properties"]["CidrBlock"] for s in output_subnets(moved)] == [
        "10.0.244.0/24", "10.0.245.0/24"]


def test_a_second_move_reuses_a_subnet_the_stack_already_has(template: dict[str, Any]) -> None:
    first = control_plane_moved(template, TAG, ["us-west-2a", "us-west-2c"])
    assert first is not None
    # EKS later refuses c and accepts b again: the stack's own subnet in b serves once more
    second = control_plane_moved(first, TAG, ["us-west-2a", "us-west-2b"])
    assert second is not None
    assert output_subnets(second) == ["ControlPlaneSubnet1", "ControlPlaneSubnet2"]
    assert set(second["Resources"]) == set(first["Resources"])


def test_fewer_than_two_accepted_zones_cannot_be_moved_to(template: dict[str, Any]) -> None:
    with pytest.raises(NotEnoughZones, match="supports only us-west-2a"):
        control_plane_moved(template, TAG, ["us-west-2a"])


def test_a_new_subnet_skips_taken_blocks_and_fails_when_the_last_20_is_full(
    template: dict[str, Any],
) -> None:
    def with_subnets(*cidrs: str) -> dict[str, Any]:
        filled = copy.deepcopy(template)
        for index, cidr in enumerate(cidrs):
            filled["Resources"][f"Other{index}"] = {
                "Type": "AWS::EC2::Subnet", "Properties": {"CidrBlock": cidr}}
        return filled

    # Given a subnet of another size on 10.0.244.0/23: the new /24 is the next one free
    moved = control_plane_moved(with_subnets("10.0.244.0/23"), TAG, ["us-west-2a", "us-west-2c"])
    assert moved is not None
    assert moved["Resources"]["ControlPlaneSubnet3"]["Properties"]["CidrBlock"] == "10.0.246.0/24"
    # And with the rest of the last /20 taken, there is no room
    full = with_subnets("10.0.244.0/22", "10.0.248.0/21")
    with pytest.raises(NetworkStackFailed, match=r"no free /24 left in 10\.0\.240\.0/20") as caught:
        control_plane_moved(full, TAG, ["us-west-2a", "us-west-2c"])
    assert caught.value.details["awsErrorCode"] == "NoFreeBlock"


# ---------------------------------------------------------------------------- check policy
def test_first_check_is_at_the_expected_end() -> None:
    assert EXPECTED_STACK_SECONDS == 180
    assert next_check_seconds(0) == EXPECTED_STACK_SECONDS
    assert next_check_seconds(-5) == EXPECTED_STACK_SECONDS
    assert next_check_seconds(100) == 80


def test_checks_near_and_after_the_expected_end_are_short_then_capped() -> None:
    assert next_check_seconds(EXPECTED_STACK_SECONDS - 3) == MIN_CHECK_SECONDS
    assert next_check_seconds(EXPECTED_STACK_SECONDS) == MIN_CHECK_SECONDS
    assert next_check_seconds(EXPECTED_STACK_SECONDS + 120) == 30
    assert next_check_seconds(STACK_TIMEOUT_MINUTES * 60) == MAX_CHECK_SECONDS


def test_check_intervals_never_shrink_after_the_expected_end() -> None:
    waits = [next_check_seconds(EXPECTED_STACK_SECONDS + s) for s in range(0, 3600, 7)]
    assert waits == sorted(waits)
    assert all(MIN_CHECK_SECONDS <= w <= MAX_CHECK_SECONDS for w in waits)


def test_a_stack_is_seen_at_the_expected_end_or_soon_after_it() -> None:
    # Simulate the state machine: wait, check, wait ... until the stack is done.
    def seen_at(done_at: int) -> int:
        elapsed = 0
        while elapsed < done_at:
            elapsed += next_check_seconds(elapsed)
        return elapsed

    assert seen_at(60) == seen_at(180) == EXPECTED_STACK_SECONDS  # one check
    for done_at in (181, 240, 600, 1800):
        overrun = done_at - EXPECTED_STACK_SECONDS
        assert seen_at(done_at) - done_at <= max(MIN_CHECK_SECONDS, overrun // 4)


# ---------------------------------------------------------------------------- status mapping
@pytest.fixture
def cfn() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "cloudformation", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stub:
        yield client, stub
        stub.assert_no_pending_responses()


def described(status: str, outputs: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    stack: dict[str, Any] = {
        "StackId": STACK_ID,
        "StackName": NAME,
        "StackStatus": status,
        "CreationTime": datetime(2026, 1, 15, tzinfo=UTC),
        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in (outputs or {}).items()],
        **extra,
    }
    return {"Stacks": [stack]}


def missing(stub: Stubber) -> None:
    stub.add_client_error(
        "describe_stacks",
        service_error_code="ValidationError",
        service_message=f"Stack with id {NAME} does not exist",
        expected_params={"StackName": NAME},
    )


def event(
    status: str, logical_id: str, reason: str, kind: str = "AWS::EC2::NatGateway"
) -> dict[str, Any]:
    return {
        "StackId": STACK_ID,
        "EventId": f"{logical_id}-{status}",
        "StackName": NAME,
        "LogicalResourceId": logical_id,
        "ResourceType": kind,
        "Timestamp": datetime(2026, 1, 15, tzinfo=UTC),
        "ResourceStatus": status,
        "ResourceStatusReason": reason,
    }


def test_a_missing_stack_is_created_with_the_template_and_tag(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    missing(stub)
    stub.add_response(
        "create_stack",
        {"StackId": STACK_ID},
        {
            "StackName": NAME,
            "TemplateBody": ANY,
            "Tags": [{"Key": "hypd:tag", "Value": TAG}],
            "ClientRequestToken": "op-1-network",
            "OnFailure": "ROLLBACK",
            "TimeoutInMinutes": STACK_TIMEOUT_MINUTES,
        },
    )
    stub.add_response("describe_stacks", described("CREATE_IN_PROGRESS"))
    stack = ensure_network_stack(client, TAG, zones, "op-1-network")
    assert stack == NetworkStack(
        ready=False, status="CREATE_IN_PROGRESS", stack_name=NAME, stack_id=STACK_ID
    )
    assert stack.vpc_id is None
    assert stack.model_dump(by_alias=True)["stackName"] == NAME


def test_a_stack_created_meanwhile_is_success(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    missing(stub)
    stub.add_client_error("create_stack", service_error_code="AlreadyExistsException")
    stub.add_response("describe_stacks", described("CREATE_COMPLETE", OUTPUTS))
    assert ensure_network_stack(client, TAG, zones, "op-1-network").ready


def test_a_stack_not_yet_visible_after_create_is_in_progress(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    missing(stub)
    stub.add_response("create_stack", {"StackId": STACK_ID})
    missing(stub)
    stack = ensure_network_stack(client, TAG, zones, "op-1-network")
    assert (stack.ready, stack.status) == (False, "CREATE_IN_PROGRESS")


@pytest.mark.parametrize("status", ["CREATE_COMPLETE", "UPDATE_COMPLETE"])
def test_a_ready_stack_is_reused_with_its_outputs(cfn: tuple[Any, Stubber], status: str) -> None:
    client, stub = cfn
    stub.add_response("describe_stacks", described(status, OUTPUTS), {"StackName": NAME})
    stack = ensure_network_stack(client, TAG, no_zones, "op-1-network")
    assert stack.model_dump(by_alias=True) == {
        "ready": True,
        "status": status,
        "stackName": NAME,
        "stackId": STACK_ID,
        "vpcId": "vpc-1",
        "controlPlaneSubnetIds": ["subnet-a", "subnet-b"],
        "publicSubnetIds": ["subnet-c", "subnet-d"],
        "securityGroupId": "sg-1",
        "natGatewayId": "nat-1",
        "s3EndpointId": "vpce-1",
    }


def test_a_stack_in_creation_is_not_ready(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    stub.add_response("describe_stacks", described("CREATE_IN_PROGRESS"))
    stack = read_network_stack(client, TAG)
    assert (stack.ready, stack.status, stack.vpc_id) == (False, "CREATE_IN_PROGRESS", None)


@pytest.mark.parametrize(
    "status",
    [
        "ROLLBACK_COMPLETE",
        "CREATE_FAILED",
        "ROLLBACK_IN_PROGRESS",
        "DELETE_IN_PROGRESS",
        "DELETE_FAILED",
        "ROLLBACK_FAILED",
    ],
)
def test_a_failed_stack_raises_with_its_first_failure(
    cfn: tuple[Any, Stubber], status: str
) -> None:
    client, stub = cfn
    stub.add_response("describe_stacks", described(status))
    # newest first, as CloudFormation answers
    stub.add_response(
        "describe_stack_events",
        {
            "StackEvents": [
                event(
                    "ROLLBACK_IN_PROGRESS",
                    NAME,
                    "The following resource(s) failed to create",
                    "AWS::CloudFormation::Stack",
                ),
                event(
                    "CREATE_FAILED",
                    "S3Endpoint",
                    "Resource creation cancelled",
                    "AWS::EC2::VPCEndpoint",
                ),
                event(
                    "CREATE_FAILED",
                    "NatGatewayEip",
                    "The maximum number of addresses has been reached.",
                    "AWS::EC2::EIP",
                ),
                event("CREATE_IN_PROGRESS", "NatGatewayEip", "", "AWS::EC2::EIP"),
            ]
        },
        {"StackName": STACK_ID},
    )
    with pytest.raises(NetworkStackFailed) as caught:
        ensure_network_stack(client, TAG, no_zones, "op-1-network")
    error = caught.value
    assert isinstance(error, PermanentError)
    assert error.details["awsErrorCode"] == status
    assert error.details["reason"] == (
        "NatGatewayEip: The maximum number of addresses has been reached."
    )
    assert f"network stack {NAME} is {status}: NatGatewayEip: The maximum" in error.message


def test_without_resource_failures_the_stack_reason_is_reported(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    stub.add_response("describe_stacks", described("ROLLBACK_COMPLETE"))
    stub.add_response("describe_stack_events", {"StackEvents": []})
    stub.add_response(
        "describe_stacks", described("ROLLBACK_COMPLETE", StackStatusReason="Timed out")
    )
    with pytest.raises(NetworkStackFailed, match="is ROLLBACK_COMPLETE: Timed out"):
        read_network_stack(client, TAG)


def test_a_ready_stack_without_outputs_is_not_ours(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    stub.add_response("describe_stacks", described("CREATE_COMPLETE", {"VpcId": "vpc-1"}))
    with pytest.raises(NetworkStackFailed, match="lacks the outputs ControlPlaneSubnetIds") as e:
        read_network_stack(client, TAG)
    assert e.value.details["awsErrorCode"] == "MissingOutputs"


def test_reading_a_missing_stack_fails(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    missing(stub)
    with pytest.raises(NetworkStackFailed, match="does not exist") as caught:
        read_network_stack(client, TAG)
    assert caught.value.details["awsErrorCode"] == "StackNotFound"


def test_the_retry_path_replaces_a_rolled_back_stack(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    stub.add_response("describe_stacks", described("ROLLBACK_COMPLETE"))
    stub.add_response("delete_stack", {}, {"StackName": NAME})
    missing(stub)  # gone at once (its resources were already rolled back)
    stub.add_response("create_stack", {"StackId": STACK_ID})
    stub.add_response("describe_stacks", described("CREATE_IN_PROGRESS"))
    stack = ensure_network_stack(client, TAG, zones, "op-1-r1-network", replace_failed=True)
    assert (stack.ready, stack.status) == (False, "CREATE_IN_PROGRESS")


def test_the_retry_path_waits_for_the_deletion(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    stub.add_response("describe_stacks", described("ROLLBACK_COMPLETE"))
    stub.add_response("delete_stack", {})
    stub.add_response("describe_stacks", described("DELETE_IN_PROGRESS"))
    stub.add_response("describe_stacks", described("DELETE_IN_PROGRESS"))
    first = ensure_network_stack(client, TAG, no_zones, "t", replace_failed=True)
    again = ensure_network_stack(client, TAG, no_zones, "t", replace_failed=True)
    assert (first.ready, first.status) == (False, "DELETE_IN_PROGRESS")
    assert (again.ready, again.status) == (False, "DELETE_IN_PROGRESS")


def test_the_retry_path_leaves_healthy_and_busy_stacks_alone(cfn: tuple[Any, Stubber]) -> None:
    # The Stubber fails on any call not queued: no DeleteStack for these
    client, stub = cfn
    stub.add_response("describe_stacks", described("CREATE_COMPLETE", OUTPUTS))
    stub.add_response("describe_stacks", described("UPDATE_IN_PROGRESS"))
    ready = ensure_network_stack(client, TAG, no_zones, "t", replace_failed=True)
    busy = ensure_network_stack(client, TAG, no_zones, "t", replace_failed=True)
    assert (ready.ready, busy.ready, busy.status) == (True, False, "UPDATE_IN_PROGRESS")


def test_throttling_is_a_temporary_error(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    stub.add_client_error("describe_stacks", service_error_code="Throttling", http_status_code=400)
    with pytest.raises(AwsThrottled, match=f"describing stack {NAME}: Throttling"):
        ensure_network_stack(client, TAG, no_zones, "t")


def test_a_server_error_on_create_is_a_temporary_error(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    missing(stub)
    stub.add_client_error(
        "create_stack", service_error_code="InternalFailure", http_status_code=500
    )
    with pytest.raises(AwsUnavailable, match=f"creating stack {NAME}"):
        ensure_network_stack(client, TAG, zones, "t")


def test_other_validation_errors_are_not_a_missing_stack(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    stub.add_client_error(
        "describe_stacks",
        service_error_code="ValidationError",
        service_message="1 validation error",
    )
    with pytest.raises(PermanentError, match="1 validation error"):
        cfn_api.describe_stack(client, NAME)


def test_failure_reason_of_a_vanished_stack_is_empty(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    stub.add_client_error(
        "describe_stack_events",
        service_error_code="ValidationError",
        service_message=f"Stack [{NAME}] does not exist",
    )
    assert cfn_api.stack_failure_reason(client, NAME) == ""


def test_the_failure_reason_is_the_latest_operations_not_an_earlier_ones(
    cfn: tuple[Any, Stubber],
) -> None:
    # Given two updates that rolled back, newest first (a page that would go on)
    client, stub = cfn
    stack_event = "AWS::CloudFormation::Stack"
    stub.add_response("describe_stack_events", {"NextToken": "older", "StackEvents": [
        event("UPDATE_ROLLBACK_COMPLETE", NAME, "", stack_event),
        event("UPDATE_FAILED", "ControlPlaneSubnet4", "The CIDR '10.0.245.0/24' conflicts",
              "AWS::EC2::Subnet"),
        event("UPDATE_IN_PROGRESS", NAME, "User Initiated", stack_event),
        event("UPDATE_ROLLBACK_COMPLETE", NAME, "", stack_event),
        event("UPDATE_FAILED", "ControlPlaneSubnet3", "Not authorized", "AWS::EC2::Subnet"),
    ]}, {"StackName": STACK_ID})
    # Then the reason is the second update's, and the older pages are not read (the Stubber
    # fails any call not queued)
    assert cfn_api.stack_failure_reason(client, STACK_ID) == (
        "ControlPlaneSubnet4: The CIDR '10.0.245.0/24' conflicts")


# ---------------------------------------------------------------------------- moving, on AWS
ROLE = f"arn:aws:iam::123456789012:role/{NAME}-role"


def test_moving_updates_the_stack_with_the_added_subnet(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    current = network_stack_template(TAG, ZONES)
    stub.add_response("describe_stacks", described("CREATE_COMPLETE", OUTPUTS),
                      {"StackName": NAME})
    # The Stubber answers the JSON body as text (botocore decodes it only on the wire).
    stub.add_response("get_template", {"TemplateBody": json.dumps(current)},
                      {"StackName": NAME, "TemplateStage": "Original"})
    stub.add_response("update_stack", {"StackId": STACK_ID}, {
        "StackName": NAME, "TemplateBody": ANY, "ClientRequestToken": "op-1-eks-1-zones-1",
        "RoleARN": ROLE})

    answer = move_control_plane(client, TAG, ["us-west-2a", "us-west-2c"],
                                client_token="op-1-eks-1-zones-1", role_arn=ROLE)

    assert answer is not None
    assert (answer.ready, answer.status) == (False, "UPDATE_IN_PROGRESS")


def test_moving_waits_for_an_update_in_progress(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    stub.add_response("describe_stacks", described("UPDATE_IN_PROGRESS"), {"StackName": NAME})
    answer = move_control_plane(client, TAG, ["us-west-2a", "us-west-2c"], client_token="t")
    assert answer is not None
    assert not answer.ready


def test_a_move_that_rolled_back_in_this_attempt_fails_with_its_reason(
    cfn: tuple[Any, Stubber],
) -> None:
    client, stub = cfn
    stub.add_response("describe_stacks", described("UPDATE_ROLLBACK_COMPLETE", OUTPUTS),
                      {"StackName": NAME})
    stub.add_response("describe_stack_events", {"StackEvents": [
        event("CREATE_FAILED", "ControlPlaneSubnet3", "The CIDR '10.0.244.0/24' conflicts",
              "AWS::EC2::Subnet")]},
        {"StackName": STACK_ID})
    with pytest.raises(NetworkStackFailed, match="conflicts") as caught:
        move_control_plane(client, TAG, ["us-west-2a", "us-west-2c"], client_token="t",
                           moved_before=True)
    assert caught.value.details["awsErrorCode"] == "UPDATE_ROLLBACK_COMPLETE"


def test_nothing_to_move_is_no_update(cfn: tuple[Any, Stubber]) -> None:
    client, stub = cfn
    stub.add_response("describe_stacks", described("CREATE_COMPLETE", OUTPUTS),
                      {"StackName": NAME})
    body = json.dumps(network_stack_template(TAG, ZONES))
    stub.add_response("get_template", {"TemplateBody": body},
                      {"StackName": NAME, "TemplateStage": "Original"})
    assert move_control_plane(client, TAG, list(ZONES), client_token="t") is None
