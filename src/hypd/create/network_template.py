"""The network stack's template and the choices it is built from: the control-plane zones (the
zones EKS does not support skipped), the stack's address blocks, the template itself, and the
template that moves the control plane to zones EKS accepts (see `hypd.create.network_stack`,
which creates, waits for and reads the stack)."""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from hypd.catalog.models import AvailabilityZone
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.errors import PermanentError
from hypd.network.subnets import next_free_block

DEFAULT_VPC_CIDR = "10.0.0.0/16"
EKS_UNSUPPORTED_ZONE_IDS = frozenset({"use1-az3", "usw1-az2", "cac1-az3"})
"""Zones (by ID: zone names differ between accounts) where EKS creates no control plane: the
EKS user guide's "View Amazon EKS networking requirements for VPC and subnets", subnet
requirements for clusters (read 2026-12-01). CreateCluster refuses subnets there with
UnsupportedAvailabilityZoneException. Other zones can be refused for a time (capacity): the
exception names the zones EKS accepts, and `move_control_plane` handles it."""

TAG_ROLE = "hypd:role"
TAG_AVAILABILITY_ZONE = "hypd:availability-zone"


class NetworkStackFailed(PermanentError):
    """The network stack failed (or is being deleted); `details.awsErrorCode` is its status."""

    code = "NetworkStackFailed"


class NotEnoughZones(PermanentError):
    """EKS needs control-plane subnets in two zones and the Region offers only one."""

    code = "NotEnoughZones"


class UnknownZone(PermanentError):
    """The cluster's zone is not one of the Region's available zones."""

    code = "UnknownZone"


def known_unsupported_zones(zones: Sequence[AvailabilityZone]) -> list[str]:
    """The names of the zones among `zones` whose ID is in `EKS_UNSUPPORTED_ZONE_IDS`."""
    return sorted(z.name for z in zones if z.zone_id in EKS_UNSUPPORTED_ZONE_IDS)


def _from(zone: str, zones: Sequence[str]) -> list[str]:
    """`zones` in name order, starting at `zone` (or where it would be) and wrapping around."""
    ordered = sorted(set(zones))
    start = sum(1 for z in ordered if z < zone)
    return ordered[start:] + ordered[:start]


def control_plane_zones(
    cluster_zone: str, region_zones: Sequence[str], *, unsupported: Collection[str] = ()
) -> tuple[str, str]:
    """The two zones of the network stack's control-plane (and public) subnets: the cluster's
    zone and the next zone of the Region in name order (wrapping around), skipping the zones
    in `unsupported` (`known_unsupported_zones`); if the cluster's zone is one of them, the two
    supported zones after it (the compute subnets stay in the cluster's zone either way).

    Raises:
        UnknownZone: `cluster_zone` is not among `region_zones`.
        NotEnoughZones: fewer than two zones of the Region can hold an EKS control plane.
    """
    zones = sorted(set(region_zones))
    if cluster_zone not in zones:
        raise UnknownZone(
            f"Availability Zone {cluster_zone} is not an available zone of the Region "
            f"({', '.join(zones) or 'none'})",
            details={"availabilityZone": cluster_zone, "regionZones": zones},
        )
    usable = [z for z in _from(cluster_zone, zones) if z not in set(unsupported)]
    if len(usable) < 2:
        raise NotEnoughZones(
            "EKS needs control-plane subnets in two Availability Zones; of the Region's "
            f"{', '.join(zones)} it supports only {', '.join(usable) or 'none'}",
            details={"availabilityZone": cluster_zone, "regionZones": zones,
                     "unsupportedZones": sorted(set(unsupported))},
        )
    return usable[0], usable[1]


def _stack_block(vpc_cidr: str) -> ipaddress.IPv4Network:
    """The VPC's last /20, which holds the stack's /24s (compute /20s fill from the bottom)."""
    vpc = ipaddress.IPv4Network(vpc_cidr)
    if not 16 <= vpc.prefixlen <= 19:
        raise ValueError(f"the VPC CIDR must be a /16 to /19, not {vpc_cidr}")
    return list(vpc.subnets(new_prefix=20))[-1]


def stack_blocks(vpc_cidr: str = DEFAULT_VPC_CIDR) -> dict[str, str]:
    """The stack's four /24s, in the VPC's last /20 so compute /20s fill from the bottom.

    For 10.0.0.0/16: control plane 10.0.240.0/24 and 10.0.241.0/24, public 10.0.242.0/24 and
    10.0.243.0/24; the fifteen /20s 10.0.0.0/20 ... 10.0.224.0/20 stay free for compute.
    """
    blocks = [str(block) for block in list(_stack_block(vpc_cidr).subnets(new_prefix=24))[:4]]
    return {
        "ControlPlane1": blocks[0],
        "ControlPlane2": blocks[1],
        "Public1": blocks[2],
        "Public2": blocks[3],
    }


def _tags(tag: str, name: str, **extra: str) -> list[dict[str, str]]:
    values = {"Name": name, HYPD_TAG_KEY: tag, **extra}
    return [{"Key": key, "Value": value} for key, value in values.items()]


def _joined(logical_ids: Sequence[str]) -> dict[str, Any]:
    return {"Fn::Join": [",", [{"Ref": logical_id} for logical_id in logical_ids]]}


def _control_plane_resources(tag: str, index: int, zone: str, cidr: str) -> dict[str, Any]:
    """Control-plane subnet `index` in `zone`: the /24, its route table (default route through
    the NAT gateway) and their association."""
    name = f"hypd-{tag}-control-plane-{zone}"
    subnet, table = f"ControlPlaneSubnet{index}", f"ControlPlaneRouteTable{index}"
    return {
        subnet: {
            "Type": "AWS::EC2::Subnet",
            "Properties": {
                "VpcId": {"Ref": "Vpc"},
                "AvailabilityZone": zone,
                "CidrBlock": cidr,
                "Tags": _tags(
                    tag, name, **{TAG_ROLE: "control-plane", TAG_AVAILABILITY_ZONE: zone}
                ),
            },
        },
        table: {
            "Type": "AWS::EC2::RouteTable",
            "Properties": {
                "VpcId": {"Ref": "Vpc"},
                "Tags": _tags(
                    tag, name, **{TAG_ROLE: "control-plane-routes", TAG_AVAILABILITY_ZONE: zone}
                ),
            },
        },
        f"ControlPlaneDefaultRoute{index}": {
            "Type": "AWS::EC2::Route",
            "Properties": {
                "RouteTableId": {"Ref": table},
                "DestinationCidrBlock": "0.0.0.0/0",
                "NatGatewayId": {"Ref": "NatGateway"},
            },
        },
        f"{subnet}RouteTableAssociation": {
            "Type": "AWS::EC2::SubnetRouteTableAssociation",
            "Properties": {"SubnetId": {"Ref": subnet}, "RouteTableId": {"Ref": table}},
        },
    }


def network_stack_template(
    tag: str, zones: Sequence[str], *, vpc_cidr: str = DEFAULT_VPC_CIDR
) -> dict[str, Any]:
    """The network stack's CloudFormation template (serialise it with `json.dumps`).

    `zones` are the two control-plane zones, the cluster's first (`control_plane_zones`).
    """
    if len(zones) != 2 or zones[0] == zones[1]:
        raise ValueError(f"the network stack needs two different zones, not {list(zones)}")
    blocks = stack_blocks(vpc_cidr)
    prefix = f"hypd-{tag}"
    vpc = {"Ref": "Vpc"}
    resources: dict[str, Any] = {
        "Vpc": {
            "Type": "AWS::EC2::VPC",
            "Properties": {
                "CidrBlock": vpc_cidr,
                "EnableDnsSupport": True,
                "EnableDnsHostnames": True,
                "Tags": _tags(tag, f"{prefix}-vpc"),
            },
        },
        "InternetGateway": {
            "Type": "AWS::EC2::InternetGateway",
            "Properties": {"Tags": _tags(tag, f"{prefix}-igw")},
        },
        "InternetGatewayAttachment": {
            "Type": "AWS::EC2::VPCGatewayAttachment",
            "Properties": {"VpcId": vpc, "InternetGatewayId": {"Ref": "InternetGateway"}},
        },
        "PublicRouteTable": {
            "Type": "AWS::EC2::RouteTable",
            "Properties": {
                "VpcId": vpc,
                "Tags": _tags(tag, f"{prefix}-public", **{TAG_ROLE: "public-routes"}),
            },
        },
        "PublicDefaultRoute": {
            "Type": "AWS::EC2::Route",
            "DependsOn": "InternetGatewayAttachment",
            "Properties": {
                "RouteTableId": {"Ref": "PublicRouteTable"},
                "DestinationCidrBlock": "0.0.0.0/0",
                "GatewayId": {"Ref": "InternetGateway"},
            },
        },
        "NatGatewayEip": {
            "Type": "AWS::EC2::EIP",
            "DependsOn": "InternetGatewayAttachment",
            "Properties": {"Domain": "vpc", "Tags": _tags(tag, f"{prefix}-nat")},
        },
        "NatGateway": {
            "Type": "AWS::EC2::NatGateway",
            "Properties": {
                "AllocationId": {"Fn::GetAtt": ["NatGatewayEip", "AllocationId"]},
                "SubnetId": {"Ref": "PublicSubnet1"},
                "Tags": _tags(
                    tag,
                    f"{prefix}-nat",
                    **{TAG_ROLE: "nat-gateway", TAG_AVAILABILITY_ZONE: zones[0]},
                ),
            },
        },
        "S3Endpoint": {
            "Type": "AWS::EC2::VPCEndpoint",
            "Properties": {
                "VpcId": vpc,
                "VpcEndpointType": "Gateway",
                # A gateway endpoint's service is com.amazonaws.<region>.<service> in every
                # partition, China's included (`partitions.gateway_endpoint_service`).
                "ServiceName": {"Fn::Sub": "com.amazonaws.${AWS::Region}.s3"},
                "RouteTableIds": [
                    {"Ref": "ControlPlaneRouteTable1"},
                    {"Ref": "ControlPlaneRouteTable2"},
                ],
                "Tags": _tags(tag, f"{prefix}-s3", **{TAG_ROLE: "s3-endpoint"}),
            },
        },
        "ClusterSecurityGroup": {
            "Type": "AWS::EC2::SecurityGroup",
            "Properties": {
                "GroupDescription": f"hypd cluster {tag}: all traffic between members (EFA)",
                "VpcId": vpc,
                "SecurityGroupEgress": [
                    {
                        "IpProtocol": "-1",
                        "CidrIp": "0.0.0.0/0",
                        "Description": "all outbound traffic",
                    }
                ],
                "Tags": _tags(tag, f"{prefix}-cluster", **{TAG_ROLE: "cluster"}),
            },
        },
        "ClusterSecurityGroupSelfIngress": {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {
                "GroupId": {"Fn::GetAtt": ["ClusterSecurityGroup", "GroupId"]},
                "SourceSecurityGroupId": {"Fn::GetAtt": ["ClusterSecurityGroup", "GroupId"]},
                "IpProtocol": "-1",
                "Description": "all traffic from members of the group",
            },
        },
        "ClusterSecurityGroupSelfEgress": {
            "Type": "AWS::EC2::SecurityGroupEgress",
            "Properties": {
                "GroupId": {"Fn::GetAtt": ["ClusterSecurityGroup", "GroupId"]},
                "DestinationSecurityGroupId": {"Fn::GetAtt": ["ClusterSecurityGroup", "GroupId"]},
                "IpProtocol": "-1",
                "Description": "all traffic to members of the group (EFA)",
            },
        },
    }
    for index, zone in enumerate(zones, start=1):
        resources[f"PublicSubnet{index}"] = {
            "Type": "AWS::EC2::Subnet",
            "Properties": {
                "VpcId": vpc,
                "AvailabilityZone": zone,
                "CidrBlock": blocks[f"Public{index}"],
                "Tags": _tags(
                    tag,
                    f"{prefix}-public-{zone}",
                    **{
                        TAG_ROLE: "public",
                        TAG_AVAILABILITY_ZONE: zone,
                        "kubernetes.io/role/elb": "1",
                    },
                ),
            },
        }
        resources[f"PublicSubnet{index}RouteTableAssociation"] = {
            "Type": "AWS::EC2::SubnetRouteTableAssociation",
            "Properties": {
                "SubnetId": {"Ref": f"PublicSubnet{index}"},
                "RouteTableId": {"Ref": "PublicRouteTable"},
            },
        }
        resources.update(
            _control_plane_resources(tag, index, zone, blocks[f"ControlPlane{index}"])
        )

    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"hypd cluster {tag}: VPC, control-plane and public subnets, NAT, S3 "
        "endpoint, cluster security group",
        "Resources": resources,
        "Outputs": {
            "VpcId": {"Value": vpc},
            "ControlPlaneSubnetIds": {
                "Value": _joined(["ControlPlaneSubnet1", "ControlPlaneSubnet2"])
            },
            "PublicSubnetIds": {"Value": _joined(["PublicSubnet1", "PublicSubnet2"])},
            "SecurityGroupId": {"Value": {"Fn::GetAtt": ["ClusterSecurityGroup", "GroupId"]}},
            "NatGatewayId": {"Value": {"Ref": "NatGateway"}},
            "S3EndpointId": {"Value": {"Ref": "S3Endpoint"}},
        },
    }


_CONTROL_PLANE_SUBNET = "ControlPlaneSubnet"


def _control_plane_output(template: Mapping[str, Any]) -> list[str]:
    """The logical ids the ``ControlPlaneSubnetIds`` output joins, in order."""
    value = template["Outputs"]["ControlPlaneSubnetIds"]["Value"]
    return [str(ref["Ref"]) for ref in value["Fn::Join"][1]]


def control_plane_moved(
    template: Mapping[str, Any], tag: str, valid_zones: Collection[str]
) -> dict[str, Any] | None:
    """`template` (the network stack's, as CloudFormation holds it) with every control-plane
    subnet the ``ControlPlaneSubnetIds`` output names that is outside `valid_zones` replaced,
    in the output, by a control-plane subnet in a valid zone the others do not use: one the
    stack already has there, else a new one (subnet, route table, default route, association)
    on the next free /24 of the VPC's last /20. Nothing else changes: every existing resource
    stays as it is. None when the output's subnets are all in `valid_zones`.

    Raises:
        NotEnoughZones: `valid_zones` leave fewer than two zones.
        NetworkStackFailed: the last /20 has no free /24 left.
    """
    resources: Mapping[str, Any] = template["Resources"]

    def zone(logical_id: str) -> str:
        return str(resources[logical_id]["Properties"]["AvailabilityZone"])

    active = _control_plane_output(template)
    valid = set(valid_zones)
    refused = [lid for lid in active if zone(lid) not in valid]
    if not refused:
        return None
    control_plane = {
        lid: zone(lid)
        for lid, resource in resources.items()
        if resource.get("Type") == "AWS::EC2::Subnet"
        and lid.startswith(_CONTROL_PLANE_SUBNET)
        and lid.removeprefix(_CONTROL_PLANE_SUBNET).isdigit()
    }
    used = {zone(lid) for lid in active if lid not in refused}
    candidates = [z for z in _from(zone(active[0]), sorted(valid)) if z not in used]
    if len(candidates) < len(refused):
        raise NotEnoughZones(
            "EKS needs control-plane subnets in two Availability Zones and supports only "
            f"{', '.join(sorted(valid)) or 'none'} here",
            details={"validZones": sorted(valid), "refusedZones": sorted(map(zone, refused))},
        )
    moved = copy.deepcopy(dict(template))  # the caller's stays as it was
    next_index = max(int(lid.removeprefix(_CONTROL_PLANE_SUBNET)) for lid in control_plane) + 1
    outputs: list[str] = []
    for lid in active:
        if lid not in refused:
            outputs.append(lid)
            continue
        target = candidates.pop(0)
        existing = sorted(other for other, z in control_plane.items()
                          if z == target and other not in active)
        if existing:
            outputs.append(existing[0])
            continue
        cidr = _free_control_plane_block(moved)
        moved["Resources"].update(_control_plane_resources(tag, next_index, target, cidr))
        outputs.append(f"{_CONTROL_PLANE_SUBNET}{next_index}")
        next_index += 1
    moved["Outputs"]["ControlPlaneSubnetIds"]["Value"] = _joined(outputs)
    return moved


def _free_control_plane_block(template: Mapping[str, Any]) -> str:
    """The first /24 of the VPC's last /20 that no subnet of `template` overlaps."""
    resources: Mapping[str, Any] = template["Resources"]
    last_20 = _stack_block(resources["Vpc"]["Properties"]["CidrBlock"])
    taken = [
        resource["Properties"]["CidrBlock"]
        for resource in resources.values()
        if resource.get("Type") == "AWS::EC2::Subnet"
        and isinstance(resource.get("Properties", {}).get("CidrBlock"), str)
    ]
    block = next_free_block([str(last_20)], taken, prefix=24)
    if block is None:
        raise NetworkStackFailed(
            f"the network stack has no free /24 left in {last_20} for another control-plane "
            "subnet",
            details={"awsErrorCode": "NoFreeBlock", "block": str(last_20)},
        )
    return str(block)
