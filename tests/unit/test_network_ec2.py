"""hypd.network.ensure_compute_subnet against moto's EC2: each branch of the priority,
dedicated subnets, address accounting, crash recovery, the CIDR race and exhaustion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from pydantic import ValidationError

from hypd.aws import ec2 as ec2_api
from hypd.aws.ec2 import SubnetCidrConflict
from hypd.errors import AwsThrottled, ClientRequestError, PermanentError, TemporaryError
from hypd.network import (
    TAG_AVAILABILITY_ZONE,
    TAG_CLUSTER,
    TAG_DEDICATED_TO,
    TAG_NAT_GATEWAY,
    TAG_ROLE,
    ComputeSubnet,
    ComputeSubnetRequest,
    NetworkExhausted,
    SubnetMismatch,
    SubnetNotFound,
    SubnetSource,
    SubnetTooSmall,
    TooManyAddresses,
    VpcNotFound,
    ensure_compute_subnet,
)
from hypd.network.subnets import ips_per_node
from tests.unit.support import REGION

AZ = "us-west-2a"
OTHER_AZ = "us-west-2b"
S3_SERVICE = f"com.amazonaws.{REGION}.s3"
COMPUTE_TAGS = {TAG_ROLE: "compute", TAG_AVAILABILITY_ZONE: AZ}


@pytest.fixture
def ec2(moto_aws: None) -> Any:
    return boto3.client("ec2", region_name=REGION)


@pytest.fixture
def vpc_id(ec2: Any) -> str:
    return str(ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"])


def request(vpc_id: str, **fields: Any) -> ComputeSubnetRequest:
    values: dict[str, Any] = {
        "vpc_id": vpc_id,
        "availability_zone": AZ,
        "node_count": 4,
        "ips_per_node": 1,
        "cluster_tag": "demo",
        "group_name": "gpu",
        **fields,
    }
    return ComputeSubnetRequest(**values)


def make_subnet(
    ec2: Any, vpc_id: str, cidr: str, az: str = AZ, tags: dict[str, str] | None = None
) -> str:
    kwargs: dict[str, Any] = {"VpcId": vpc_id, "CidrBlock": cidr, "AvailabilityZone": az}
    if tags:
        kwargs["TagSpecifications"] = [
            {"ResourceType": "subnet", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ]
    return str(ec2.create_subnet(**kwargs)["Subnet"]["SubnetId"])


def make_nat_gateway(ec2: Any, vpc_id: str, cidr: str, az: str) -> str:
    subnet_id = make_subnet(ec2, vpc_id, cidr, az)
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=subnet_id, AllocationId=allocation)["NatGateway"]
    return str(nat["NatGatewayId"])


def compute_subnets(ec2: Any, vpc_id: str) -> list[dict[str, Any]]:
    filters = [
        {"Name": "vpc-id", "Values": [vpc_id]},
        {"Name": f"tag:{TAG_ROLE}", "Values": ["compute"]},
    ]
    return list(ec2.describe_subnets(Filters=filters)["Subnets"])


def hypd_route_tables(ec2: Any, vpc_id: str) -> list[dict[str, Any]]:
    filters = [
        {"Name": "vpc-id", "Values": [vpc_id]},
        {"Name": f"tag:{TAG_ROLE}", "Values": ["compute-routes"]},
    ]
    return list(ec2.describe_route_tables(Filters=filters)["RouteTables"])


def s3_endpoints(ec2: Any, vpc_id: str) -> list[dict[str, Any]]:
    filters = [
        {"Name": "vpc-id", "Values": [vpc_id]},
        {"Name": "service-name", "Values": [S3_SERVICE]},
    ]
    return list(ec2.describe_vpc_endpoints(Filters=filters)["VpcEndpoints"])


def tags_of(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def assert_wired(ec2: Any, vpc_id: str, result: ComputeSubnet) -> None:
    """The subnet is associated with hypd's route table, which the S3 endpoint serves."""
    tables = ec2.describe_route_tables(
        Filters=[{"Name": "association.subnet-id", "Values": [result.subnet_id]}]
    )["RouteTables"]
    assert [t["RouteTableId"] for t in tables] == [result.route_table_id]
    assert tags_of(tables[0])[TAG_ROLE] == "compute-routes"
    [endpoint] = s3_endpoints(ec2, vpc_id)
    assert endpoint["VpcEndpointId"] == result.s3_endpoint_id
    assert result.route_table_id in endpoint["RouteTableIds"]


# ---------------------------------------------------------------------------- 1. explicit
def test_explicit_subnet_is_verified_and_returned_untouched(ec2: Any, vpc_id: str) -> None:
    # Given a plain subnet of the user's, dedicated to another group even
    subnet_id = make_subnet(ec2, vpc_id, "10.0.200.0/24", tags={TAG_DEDICATED_TO: "other"})
    # When a request names it
    result = ensure_compute_subnet(ec2, request(vpc_id, subnet_id=subnet_id))
    # Then it is used as is: no route table, no endpoint, no new subnet
    assert result.source is SubnetSource.EXPLICIT
    assert (result.subnet_id, result.cidr_block, result.availability_zone) == (
        subnet_id,
        "10.0.200.0/24",
        AZ,
    )
    assert result.route_table_id is None
    assert result.s3_endpoint_id is None
    assert hypd_route_tables(ec2, vpc_id) == []
    assert s3_endpoints(ec2, vpc_id) == []


def test_explicit_subnet_reports_its_route_table(ec2: Any, vpc_id: str) -> None:
    subnet_id = make_subnet(ec2, vpc_id, "10.0.200.0/24")
    table_id = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.associate_route_table(RouteTableId=table_id, SubnetId=subnet_id)
    result = ensure_compute_subnet(ec2, request(vpc_id, subnet_id=subnet_id))
    assert result.route_table_id == table_id


@pytest.mark.parametrize("subnet_id", ["subnet-0123456789abcdef0", "not-a-subnet"])
def test_unknown_explicit_subnet_is_a_400_naming_the_field(
    ec2: Any, vpc_id: str, subnet_id: str
) -> None:
    req = request(vpc_id, subnet_id=subnet_id, subnet_field="instanceGroups[0].subnetId")
    with pytest.raises(SubnetNotFound) as caught:
        ensure_compute_subnet(ec2, req)
    assert isinstance(caught.value, ClientRequestError)
    assert caught.value.status == 400
    assert caught.value.details["field"] == "instanceGroups[0].subnetId"
    assert caught.value.message.startswith("instanceGroups[0].subnetId: ")


def test_explicit_subnet_in_another_vpc_is_a_mismatch(ec2: Any, vpc_id: str) -> None:
    other_vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet_id = make_subnet(ec2, other_vpc, "10.9.0.0/24")
    with pytest.raises(SubnetMismatch, match=f"is in VPC {other_vpc}, not {vpc_id}") as caught:
        ensure_compute_subnet(ec2, request(vpc_id, subnet_id=subnet_id))
    assert caught.value.details["field"] == "subnetId"
    assert caught.value.status == 400


def test_explicit_subnet_in_another_zone_is_a_mismatch(ec2: Any, vpc_id: str) -> None:
    subnet_id = make_subnet(ec2, vpc_id, "10.0.200.0/24", az=OTHER_AZ)
    with pytest.raises(SubnetMismatch, match=f"is in {OTHER_AZ}, not {AZ}") as caught:
        ensure_compute_subnet(ec2, request(vpc_id, subnet_id=subnet_id))
    assert caught.value.details["expectedAvailabilityZone"] == AZ


def test_explicit_subnet_without_room_is_too_small(ec2: Any, vpc_id: str) -> None:
    # Given a /24 (251 free addresses) and 100 nodes of 4 addresses each
    subnet_id = make_subnet(ec2, vpc_id, "10.0.200.0/24")
    req = request(vpc_id, subnet_id=subnet_id, node_count=100, ips_per_node=4)
    with pytest.raises(SubnetTooSmall) as caught:
        ensure_compute_subnet(ec2, req)
    assert caught.value.details["requiredIps"] == 400
    assert caught.value.details["availableIps"] == 251


# ---------------------------------------------------------------------------- 2. existing
def test_existing_compute_subnet_in_the_zone_is_reused_and_finished(ec2: Any, vpc_id: str) -> None:
    # Given a compute subnet hypd made earlier in the zone (not yet wired)
    existing = make_subnet(ec2, vpc_id, "10.0.16.0/20", tags=COMPUTE_TAGS)
    # When a capacity path asks for room in that zone
    result = ensure_compute_subnet(ec2, request(vpc_id))
    # Then it gets that subnet, now with its route table and S3 endpoint
    assert (result.subnet_id, result.source) == (existing, SubnetSource.EXISTING)
    assert len(compute_subnets(ec2, vpc_id)) == 1
    assert_wired(ec2, vpc_id, result)


def test_compute_subnets_of_other_zones_and_untagged_subnets_are_not_reused(
    ec2: Any, vpc_id: str
) -> None:
    make_subnet(ec2, vpc_id, "10.0.0.0/20", az=OTHER_AZ, tags={**COMPUTE_TAGS})
    make_subnet(ec2, vpc_id, "10.0.16.0/20")
    result = ensure_compute_subnet(ec2, request(vpc_id))
    assert result.source is SubnetSource.CREATED
    assert (result.availability_zone, result.cidr_block) == (AZ, "10.0.32.0/20")


def test_the_clusters_own_subnet_is_preferred_then_the_lowest_block(ec2: Any, vpc_id: str) -> None:
    # Given another cluster's compute subnet lowest, and two of this cluster's above it
    make_subnet(ec2, vpc_id, "10.0.0.0/20", tags={**COMPUTE_TAGS, TAG_CLUSTER: "other"})
    make_subnet(ec2, vpc_id, "10.0.32.0/20", tags={**COMPUTE_TAGS, TAG_CLUSTER: "demo"})
    lowest_ours = make_subnet(
        ec2, vpc_id, "10.0.16.0/20", tags={**COMPUTE_TAGS, TAG_CLUSTER: "demo"}
    )
    # Then cluster "demo" gets its own lowest one
    assert ensure_compute_subnet(ec2, request(vpc_id)).subnet_id == lowest_ours
    # And a cluster with none of its own gets the lowest compute subnet of the zone
    shared = ensure_compute_subnet(ec2, request(vpc_id, cluster_tag="third"))
    assert shared.cidr_block == "10.0.0.0/20"


def test_existing_subnet_without_room_is_skipped_for_a_new_one(ec2: Any, vpc_id: str) -> None:
    # Given a /24 compute subnet (251 addresses) and 100 nodes needing 32 addresses each
    make_subnet(ec2, vpc_id, "10.0.0.0/24", tags=COMPUTE_TAGS)
    req = request(vpc_id, node_count=100, ips_per_node=ips_per_node(efa_interfaces=31))
    # Then a new /20 is made next to it
    result = ensure_compute_subnet(ec2, req)
    assert (result.source, result.cidr_block) == (SubnetSource.CREATED, "10.0.16.0/20")


def test_efa_only_nodes_fit_where_ip_backed_interfaces_do_not(ec2: Any, vpc_id: str) -> None:
    # Given the same /24 and the same 100 nodes, but with EFA-only interfaces (1 address each)
    small = make_subnet(ec2, vpc_id, "10.0.0.0/24", tags=COMPUTE_TAGS)
    efa_only = ips_per_node(efa_interfaces=31, efa_only=True)
    result = ensure_compute_subnet(ec2, request(vpc_id, node_count=100, ips_per_node=efa_only))
    # Then the small subnet holds them
    assert (result.subnet_id, result.source) == (small, SubnetSource.EXISTING)


# ---------------------------------------------------------------------------- dedicated
def test_a_subnet_dedicated_to_another_group_is_not_reused(ec2: Any, vpc_id: str) -> None:
    make_subnet(ec2, vpc_id, "10.0.0.0/20", tags={**COMPUTE_TAGS, TAG_DEDICATED_TO: "cpu"})
    result = ensure_compute_subnet(ec2, request(vpc_id, group_name="gpu"))
    assert (result.source, result.cidr_block) == (SubnetSource.CREATED, "10.0.16.0/20")
    assert result.dedicated_to is None


def test_a_dedicated_subnet_passes_to_a_successor_group_of_that_name(ec2: Any, vpc_id: str) -> None:
    # Given a shared compute subnet and one dedicated to "gpu", whose group was deleted
    make_subnet(ec2, vpc_id, "10.0.0.0/20", tags=COMPUTE_TAGS)
    kept = make_subnet(ec2, vpc_id, "10.0.16.0/20", tags={**COMPUTE_TAGS, TAG_DEDICATED_TO: "gpu"})
    # When a new group named "gpu" asks (dedicated or not)
    for dedicated in (True, False):
        result = ensure_compute_subnet(ec2, request(vpc_id, group_name="gpu", dedicated=dedicated))
        # Then it gets the subnet kept for its name
        assert (result.subnet_id, result.dedicated_to) == (kept, "gpu")


def test_a_dedicated_request_never_takes_a_shared_subnet(ec2: Any, vpc_id: str) -> None:
    shared = make_subnet(ec2, vpc_id, "10.0.0.0/20", tags=COMPUTE_TAGS)
    result = ensure_compute_subnet(ec2, request(vpc_id, group_name="gpu", dedicated=True))
    assert result.subnet_id != shared
    assert (result.source, result.dedicated_to) == (SubnetSource.CREATED, "gpu")
    [created] = [s for s in compute_subnets(ec2, vpc_id) if s["SubnetId"] == result.subnet_id]
    assert tags_of(created)[TAG_DEDICATED_TO] == "gpu"
    # And a later shared request does not take the dedicated one
    other = ensure_compute_subnet(ec2, request(vpc_id, group_name="cpu"))
    assert other.subnet_id == shared


def test_a_dedicated_request_needs_a_group_name() -> None:
    with pytest.raises(ValidationError, match="groupName"):
        request("vpc-1", group_name=None, dedicated=True)


# ---------------------------------------------------------------------------- 3. new /20
def test_new_subnet_is_the_first_free_20_with_tags_route_table_and_endpoint(
    ec2: Any, vpc_id: str
) -> None:
    # Given EKS control-plane /24s at the bottom of the VPC and a NAT gateway in the zone
    make_subnet(ec2, vpc_id, "10.0.0.0/24", az=AZ)
    make_subnet(ec2, vpc_id, "10.0.1.0/24", az=OTHER_AZ)
    nat_id = make_nat_gateway(ec2, vpc_id, "10.0.2.0/24", AZ)
    # When no compute subnet exists
    result = ensure_compute_subnet(ec2, request(vpc_id))
    # Then a /20 clear of them is made, tagged, routed through the NAT and served by S3
    assert result.source is SubnetSource.CREATED
    assert (result.cidr_block, result.availability_zone) == ("10.0.16.0/20", AZ)
    assert result.available_ips == 4091
    [subnet] = compute_subnets(ec2, vpc_id)
    assert tags_of(subnet) == {
        "Name": f"hypd-compute-{AZ}",
        TAG_ROLE: "compute",
        TAG_AVAILABILITY_ZONE: AZ,
        TAG_CLUSTER: "demo",
    }
    assert result.nat_gateway_id == nat_id
    [table] = hypd_route_tables(ec2, vpc_id)
    assert tags_of(table)[TAG_NAT_GATEWAY] == nat_id
    default = [r for r in table["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"]
    assert [r["NatGatewayId"] for r in default] == [nat_id]
    assert_wired(ec2, vpc_id, result)
    [endpoint] = s3_endpoints(ec2, vpc_id)
    assert endpoint["VpcEndpointType"] == "Gateway"


def test_the_zones_nat_gateway_is_preferred_else_the_first(ec2: Any, vpc_id: str) -> None:
    other_nat = make_nat_gateway(ec2, vpc_id, "10.0.255.0/24", OTHER_AZ)
    assert ensure_compute_subnet(ec2, request(vpc_id)).nat_gateway_id == other_nat
    in_zone = make_nat_gateway(ec2, vpc_id, "10.0.254.0/24", "us-west-2c")
    result = ensure_compute_subnet(ec2, request(vpc_id, availability_zone="us-west-2c"))
    assert result.nat_gateway_id == in_zone


def test_without_nat_gateway_the_table_has_no_default_route_until_one_exists(
    ec2: Any, vpc_id: str
) -> None:
    # Given no NAT gateway: the subnet is private with no way out
    first = ensure_compute_subnet(ec2, request(vpc_id))
    assert first.nat_gateway_id is None
    [table] = hypd_route_tables(ec2, vpc_id)
    assert tags_of(table)[TAG_NAT_GATEWAY] == "none"
    # When a NAT gateway appears and a new subnet is needed in the zone
    nat_id = make_nat_gateway(ec2, vpc_id, "10.0.255.0/24", OTHER_AZ)
    second = ensure_compute_subnet(ec2, request(vpc_id, group_name="b", dedicated=True))
    # Then the zone's table gains the default route
    assert second.route_table_id == first.route_table_id
    assert second.nat_gateway_id == nat_id


def test_an_existing_s3_endpoint_gets_the_route_table_instead_of_a_second_endpoint(
    ec2: Any, vpc_id: str
) -> None:
    main = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
    main_id = main["RouteTables"][0]["RouteTableId"]
    endpoint_id = ec2.create_vpc_endpoint(
        VpcEndpointType="Gateway", VpcId=vpc_id, ServiceName=S3_SERVICE, RouteTableIds=[main_id]
    )["VpcEndpoint"]["VpcEndpointId"]
    result = ensure_compute_subnet(ec2, request(vpc_id))
    assert result.s3_endpoint_id == endpoint_id
    [endpoint] = s3_endpoints(ec2, vpc_id)
    assert sorted(endpoint["RouteTableIds"]) == sorted([main_id, result.route_table_id])


def test_subnets_in_one_zone_share_one_route_table(ec2: Any, vpc_id: str) -> None:
    first = ensure_compute_subnet(ec2, request(vpc_id, group_name="a", dedicated=True))
    second = ensure_compute_subnet(ec2, request(vpc_id, group_name="b", dedicated=True))
    elsewhere = ensure_compute_subnet(ec2, request(vpc_id, availability_zone=OTHER_AZ))
    assert first.subnet_id != second.subnet_id
    assert first.route_table_id == second.route_table_id != elsewhere.route_table_id
    assert len(hypd_route_tables(ec2, vpc_id)) == 2
    assert len(s3_endpoints(ec2, vpc_id)) == 1


def test_a_secondary_cidr_block_is_used_when_the_primary_is_full(ec2: Any) -> None:
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/20")["Vpc"]["VpcId"]
    ec2.associate_vpc_cidr_block(VpcId=vpc_id, CidrBlock="100.64.0.0/16")
    make_subnet(ec2, vpc_id, "10.0.0.0/24")
    result = ensure_compute_subnet(ec2, request(vpc_id))
    assert result.cidr_block == "100.64.0.0/20"


def test_exhausted_vpc_is_a_named_permanent_error(ec2: Any) -> None:
    # Given a /20 VPC whose space holds two control-plane /24s
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/20")["Vpc"]["VpcId"]
    make_subnet(ec2, vpc_id, "10.0.0.0/24")
    make_subnet(ec2, vpc_id, "10.0.1.0/24", az=OTHER_AZ)
    with pytest.raises(NetworkExhausted) as caught:
        ensure_compute_subnet(ec2, request(vpc_id))
    assert isinstance(caught.value, PermanentError)
    assert vpc_id in caught.value.message
    assert "10.0.0.0/20" in caught.value.message
    assert caught.value.details == {"vpcId": vpc_id, "cidrBlocks": ["10.0.0.0/20"]}
    assert compute_subnets(ec2, vpc_id) == []


def test_more_addresses_than_a_20_holds_is_a_400(ec2: Any, vpc_id: str) -> None:
    with pytest.raises(TooManyAddresses):
        ensure_compute_subnet(ec2, request(vpc_id, node_count=200, ips_per_node=32))


def test_unknown_vpc_is_a_named_error(ec2: Any) -> None:
    with pytest.raises(VpcNotFound):
        ensure_compute_subnet(ec2, request("vpc-0123456789abcdef0"))


# ---------------------------------------------------------------------------- idempotency
def test_running_twice_creates_nothing_twice(ec2: Any, vpc_id: str) -> None:
    first = ensure_compute_subnet(ec2, request(vpc_id))
    second = ensure_compute_subnet(ec2, request(vpc_id))
    assert second.subnet_id == first.subnet_id
    assert second.source is SubnetSource.EXISTING
    assert second.model_dump(exclude={"source"}) == first.model_dump(exclude={"source"})
    assert len(compute_subnets(ec2, vpc_id)) == 1
    assert len(hypd_route_tables(ec2, vpc_id)) == 1
    assert len(s3_endpoints(ec2, vpc_id)) == 1


def test_a_run_that_crashed_after_creating_subnet_and_table_is_finished(
    ec2: Any, vpc_id: str
) -> None:
    # Given a crashed run that created the subnet and the zone's route table, then died
    subnet = ec2_api.create_subnet(ec2, vpc_id, AZ, "10.0.0.0/20", {**COMPUTE_TAGS})
    table = ec2_api.create_route_table(
        ec2,
        vpc_id,
        {TAG_ROLE: "compute-routes", TAG_AVAILABILITY_ZONE: AZ},
        client_token=f"hypd-rt-{subnet.subnet_id}",
    )
    # When the task is retried
    result = ensure_compute_subnet(ec2, request(vpc_id))
    # Then it finishes that subnet with that table and makes no second one
    assert (result.subnet_id, result.route_table_id) == (subnet.subnet_id, table.route_table_id)
    assert len(compute_subnets(ec2, vpc_id)) == 1
    assert len(hypd_route_tables(ec2, vpc_id)) == 1
    assert_wired(ec2, vpc_id, result)


def test_a_subnet_the_user_routed_elsewhere_keeps_its_table(ec2: Any, vpc_id: str) -> None:
    subnet_id = make_subnet(ec2, vpc_id, "10.0.0.0/20", tags=COMPUTE_TAGS)
    table_id = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.associate_route_table(RouteTableId=table_id, SubnetId=subnet_id)
    result = ensure_compute_subnet(ec2, request(vpc_id))
    assert (result.subnet_id, result.route_table_id) == (subnet_id, table_id)
    assert result.s3_endpoint_id is None
    assert hypd_route_tables(ec2, vpc_id) == []


# ---------------------------------------------------------------------------- races
def patch_create_subnet(
    monkeypatch: pytest.MonkeyPatch, before_ours: Callable[[int], None]
) -> list[str]:
    """create_subnet that first lets `before_ours(call)` act as a concurrent caller, then
    makes the real call (which conflicts if the concurrent caller took the block)."""
    real = ec2_api.create_subnet
    calls: list[str] = []

    def racing(client: Any, vpc_id: str, az: str, cidr: str, tags: dict[str, str]) -> Any:
        calls.append(cidr)
        before_ours(len(calls))
        return real(client, vpc_id, az, cidr, tags)

    monkeypatch.setattr(ec2_api, "create_subnet", racing)
    return calls


def test_a_concurrent_creator_in_the_same_zone_wins_and_its_subnet_is_reused(
    ec2: Any, vpc_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given another caller creates the zone's subnet in the block we chose, just before us
    theirs: list[str] = []

    def other_caller(call: int) -> None:
        if call == 1:
            theirs.append(make_subnet(ec2, vpc_id, "10.0.0.0/20", tags=COMPUTE_TAGS))

    calls = patch_create_subnet(monkeypatch, other_caller)
    # When our CreateSubnet meets InvalidSubnet.Conflict
    result = ensure_compute_subnet(ec2, request(vpc_id))
    # Then we re-read, reuse theirs, and there is one compute subnet in the zone
    assert calls == ["10.0.0.0/20"]
    assert (result.subnet_id, result.source) == (theirs[0], SubnetSource.EXISTING)
    assert len(compute_subnets(ec2, vpc_id)) == 1
    assert_wired(ec2, vpc_id, result)


def test_a_concurrent_creator_in_another_zone_makes_us_plan_again(
    ec2: Any, vpc_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def other_zone(call: int) -> None:
        if call == 1:
            make_subnet(ec2, vpc_id, "10.0.0.0/20", az=OTHER_AZ, tags=COMPUTE_TAGS)

    calls = patch_create_subnet(monkeypatch, other_zone)
    result = ensure_compute_subnet(ec2, request(vpc_id))
    assert calls == ["10.0.0.0/20", "10.0.16.0/20"]
    assert (result.source, result.cidr_block, result.availability_zone) == (
        SubnetSource.CREATED,
        "10.0.16.0/20",
        AZ,
    )


def test_endless_conflicts_end_in_a_temporary_error(
    ec2: Any, vpc_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def conflict(*_args: Any) -> Any:
        raise SubnetCidrConflict("InvalidSubnet.Conflict")

    monkeypatch.setattr(ec2_api, "create_subnet", conflict)
    with pytest.raises(SubnetCidrConflict) as caught:
        ensure_compute_subnet(ec2, request(vpc_id))
    assert isinstance(caught.value, TemporaryError)


def test_adapter_names_an_overlapping_cidr(ec2: Any, vpc_id: str) -> None:
    make_subnet(ec2, vpc_id, "10.0.0.0/24")
    with pytest.raises(SubnetCidrConflict) as caught:
        ec2_api.create_subnet(ec2, vpc_id, AZ, "10.0.0.0/20", {})
    assert caught.value.details["awsErrorCode"] == "InvalidSubnet.Conflict"


# ---------------------------------------------------------------------------- adapter errors
def test_ec2_throttling_is_translated_to_a_retried_error() -> None:
    client = boto3.client(
        "ec2", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(client) as stub:
        stub.add_client_error("describe_subnets", service_error_code="RequestLimitExceeded")
        with pytest.raises(AwsThrottled, match="listing subnets of VPC vpc-1"):
            ec2_api.list_subnets(client, "vpc-1")
