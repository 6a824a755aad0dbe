"""The network stage on the local cloud: the stack made by moto's CloudFormation, read back
ready, and hypd.network carving a compute /20 in the stack's VPC."""

from __future__ import annotations

import ipaddress
from typing import Any

from hypd.create.network_stack import (
    control_plane_zones,
    ensure_network_stack,
    read_network_stack,
    stack_name,
)
from hypd.network import ComputeSubnetRequest, SubnetSource, ensure_compute_subnet
from hypd.network.subnets import ips_per_node

TAG = "netdemo"


def zones_of(cloud: Any) -> tuple[str, str]:
    ec2 = cloud.client("ec2")
    region_zones = [z["ZoneName"] for z in ec2.describe_availability_zones()["AvailabilityZones"]]
    return control_plane_zones(f"{cloud.region}a", region_zones)


def test_stack_is_created_once_and_read_back_ready(cloud: Any) -> None:
    cfn, ec2 = cloud.client("cloudformation"), cloud.client("ec2")
    zones = zones_of(cloud)
    assert zones == (f"{cloud.region}a", f"{cloud.region}b")

    # When the stage ensures the stack twice (a retried task) and checks it after the wait
    first = ensure_network_stack(cfn, TAG, lambda: zones, "op-1-network")
    second = ensure_network_stack(cfn, TAG, lambda: zones, "op-1-network")
    stack = read_network_stack(cfn, TAG)

    # Then there is one stack, ready, with every output
    names = [s["StackName"] for s in cfn.describe_stacks()["Stacks"]]
    assert names.count(stack_name(TAG)) == 1
    assert first == second == stack
    assert (stack.ready, stack.status) == (True, "CREATE_COMPLETE")
    assert None not in (stack.vpc_id, stack.security_group_id, stack.nat_gateway_id)
    assert stack.s3_endpoint_id is not None
    assert len(stack.control_plane_subnet_ids) == len(stack.public_subnet_ids) == 2

    # And the resources are what the outputs say
    vpc = ec2.describe_vpcs(VpcIds=[stack.vpc_id])["Vpcs"][0]
    assert vpc["CidrBlock"] == "10.0.0.0/16"
    assert {"Key": "hypd:tag", "Value": TAG} in vpc["Tags"]
    subnets = ec2.describe_subnets(SubnetIds=stack.control_plane_subnet_ids)["Subnets"]
    assert sorted((s["AvailabilityZone"], s["CidrBlock"]) for s in subnets) == [
        (zones[0], "10.0.240.0/24"),
        (zones[1], "10.0.241.0/24"),
    ]
    (nat,) = ec2.describe_nat_gateways(NatGatewayIds=[stack.nat_gateway_id])["NatGateways"]
    assert (nat["VpcId"], nat["State"]) == (stack.vpc_id, "available")
    assert nat["SubnetId"] in stack.public_subnet_ids
    (endpoint,) = ec2.describe_vpc_endpoints(VpcEndpointIds=[stack.s3_endpoint_id])["VpcEndpoints"]
    assert endpoint["ServiceName"] == f"com.amazonaws.{cloud.region}.s3"
    # The endpoint serves the two private tables, whose default route is the NAT gateway.
    # (moto's CloudFormation drops the Tags of route tables, and its
    # AWS::EC2::SubnetRouteTableAssociation does not show in DescribeRouteTables, so the tables
    # are found through the endpoint rather than by tag or subnet.)
    private_tables = ec2.describe_route_tables(RouteTableIds=endpoint["RouteTableIds"])[
        "RouteTables"
    ]
    assert len(private_tables) == 2
    for table in private_tables:
        defaults = [r for r in table["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"]
        assert [r.get("NatGatewayId") for r in defaults] == [stack.nat_gateway_id]
    # Members reach each other (moto's CloudFormation skips AWS::EC2::SecurityGroupEgress, so
    # only the self-referencing ingress rule can be checked here).
    (group,) = ec2.describe_security_groups(GroupIds=[stack.security_group_id])["SecurityGroups"]
    assert [
        (p["IpProtocol"], [g["GroupId"] for g in p["UserIdGroupPairs"]])
        for p in group["IpPermissions"]
    ] == [("-1", [stack.security_group_id])]


def test_compute_subnet_is_carved_below_the_stacks_subnets(cloud: Any) -> None:
    cfn, ec2 = cloud.client("cloudformation"), cloud.client("ec2")
    zones = zones_of(cloud)
    stack = ensure_network_stack(cfn, TAG, lambda: zones, "op-2-network")
    assert stack.ready
    assert stack.vpc_id is not None

    # When the network function makes the cluster zone's compute subnet in the stack's VPC
    subnet = ensure_compute_subnet(
        ec2,
        ComputeSubnetRequest(
            vpc_id=stack.vpc_id,
            availability_zone=zones[0],
            node_count=1,
            ips_per_node=ips_per_node(efa_interfaces=32, efa_only=True),
            cluster_tag=TAG,
        ),
    )

    # Then it is the VPC's first /20, routed through the stack's NAT gateway and served by the
    # stack's S3 endpoint (no second endpoint)
    assert subnet.source is SubnetSource.CREATED
    assert subnet.availability_zone == zones[0]
    assert ipaddress.IPv4Network(subnet.cidr_block) == ipaddress.IPv4Network("10.0.0.0/20")
    assert subnet.nat_gateway_id == stack.nat_gateway_id
    assert subnet.s3_endpoint_id == stack.s3_endpoint_id
    (endpoint,) = ec2.describe_vpc_endpoints(
        Filters=[{"Name": "vpc-id", "Values": [stack.vpc_id]}]
    )["VpcEndpoints"]
    assert subnet.route_table_id in endpoint["RouteTableIds"]
    (table,) = ec2.describe_route_tables(RouteTableIds=[subnet.route_table_id])["RouteTables"]
    assert subnet.subnet_id in [a.get("SubnetId") for a in table["Associations"]]
    defaults = [r for r in table["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"]
    assert [r.get("NatGatewayId") for r in defaults] == [stack.nat_gateway_id]
