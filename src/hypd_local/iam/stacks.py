"""What CloudFormation calls, as a stack's service role, to make each resource of a stack.

CloudFormation makes a stack's resources with the stack's service role (``RoleARN``) or, with
none, with its caller's permissions. moto's CloudFormation makes them inside its backends, where
nothing is authorised; the local cloud authorises afterwards the calls CloudFormation's resource
handlers would have made (``calls``: the API requests, with the resource's resolved properties,
the physical ids of what it refers to, and the tags it puts on it: the stack's and its own), in
the order the resources were made, and a denied one fails the resource as on AWS
(``CREATE_FAILED``, the stack rolled back).

Each call goes through the same resolvers as a request of a function (``hypd_local.iam.
resolvers``): the creates are authorised against the new resource (with the tags CloudFormation
puts on it, and ``ec2:CreateTags`` for tagging on creation) and against the resources they are
made in (the VPC, with its tags). Only the resource types the local cloud's stacks use are
known; another type is refused so that nothing is made unauthorised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Call = tuple[str, str, dict[str, Any]]
"""(botocore service name, operation, request parameters)."""


@dataclass(frozen=True)
class StackResource:
    logical_id: str
    type: str
    properties: Mapping[str, Any]
    """Resolved: references are physical ids."""
    physical_id: str | None


class UnknownResourceType(LookupError):
    """The local cloud does not know which calls CloudFormation makes for this type."""


def _tag_list(stack_tags: Mapping[str, str], properties: Mapping[str, Any]) -> list[dict[str, str]]:
    tags = {k: v for k, v in stack_tags.items() if not k.startswith("aws:")}
    for tag in properties.get("Tags") or []:
        tags[str(tag["Key"])] = str(tag["Value"])
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def _specs(kind: str, tags: list[dict[str, str]]) -> dict[str, Any]:
    return {"TagSpecifications": [{"ResourceType": kind, "Tags": tags}]} if tags else {}


def calls(resource: StackResource, stack_tags: Mapping[str, str]) -> list[Call]:
    """The EC2 calls CloudFormation makes to create ``resource``."""
    p = resource.properties
    tags = _tag_list(stack_tags, p)
    kind = resource.type
    if kind == "AWS::EC2::VPC":
        made: list[Call] = [("ec2", "CreateVpc", _specs("vpc", tags))]
        if ("EnableDnsHostnames" in p or "EnableDnsSupport" in p) and resource.physical_id:
            made.append(("ec2", "ModifyVpcAttribute", {"VpcId": resource.physical_id}))
        return made
    if kind == "AWS::EC2::Subnet":
        made = [("ec2", "CreateSubnet", {"VpcId": p["VpcId"], **_specs("subnet", tags)})]
        if p.get("MapPublicIpOnLaunch") and resource.physical_id:
            made.append(("ec2", "ModifySubnetAttribute", {"SubnetId": resource.physical_id}))
        return made
    if kind == "AWS::EC2::InternetGateway":
        return [("ec2", "CreateInternetGateway", _specs("internet-gateway", tags))]
    if kind == "AWS::EC2::VPCGatewayAttachment":
        return [("ec2", "AttachInternetGateway", {"InternetGatewayId": p["InternetGatewayId"],
                                                  "VpcId": p["VpcId"]})]
    if kind == "AWS::EC2::RouteTable":
        return [("ec2", "CreateRouteTable", {"VpcId": p["VpcId"],
                                             **_specs("route-table", tags)})]
    if kind == "AWS::EC2::Route":
        return [("ec2", "CreateRoute", {"RouteTableId": p["RouteTableId"]})]
    if kind == "AWS::EC2::SubnetRouteTableAssociation":
        return [("ec2", "AssociateRouteTable", {"RouteTableId": p["RouteTableId"],
                                                "SubnetId": p["SubnetId"]})]
    if kind == "AWS::EC2::EIP":
        return [("ec2", "AllocateAddress", _specs("elastic-ip", tags))]
    if kind == "AWS::EC2::NatGateway":
        return [("ec2", "CreateNatGateway", {"SubnetId": p["SubnetId"],
                                             "AllocationId": p.get("AllocationId"),
                                             **_specs("natgateway", tags)})]
    if kind == "AWS::EC2::VPCEndpoint":
        return [("ec2", "CreateVpcEndpoint", {
            "VpcId": p["VpcId"], "RouteTableIds": list(p.get("RouteTableIds") or []),
            "SubnetIds": list(p.get("SubnetIds") or []),
            "SecurityGroupIds": list(p.get("SecurityGroupIds") or []),
            **_specs("vpc-endpoint", tags)})]
    if kind == "AWS::EC2::SecurityGroup":
        made = [("ec2", "CreateSecurityGroup", {"VpcId": p.get("VpcId"),
                                                **_specs("security-group", tags)})]
        if resource.physical_id:
            if p.get("SecurityGroupIngress"):
                made.append(("ec2", "AuthorizeSecurityGroupIngress",
                             {"GroupId": resource.physical_id}))
            if p.get("SecurityGroupEgress"):
                made.append(("ec2", "AuthorizeSecurityGroupEgress",
                             {"GroupId": resource.physical_id}))
        return made
    if kind == "AWS::EC2::SecurityGroupIngress":
        return [("ec2", "AuthorizeSecurityGroupIngress", {"GroupId": p["GroupId"]})]
    if kind == "AWS::EC2::SecurityGroupEgress":
        return [("ec2", "AuthorizeSecurityGroupEgress", {"GroupId": p["GroupId"]})]
    raise UnknownResourceType(
        f"{resource.logical_id}: the local cloud does not know the calls CloudFormation makes "
        f"for {kind} (hypd_local/iam/stacks.py)")


def stack_calls(resources: Sequence[StackResource], stack_tags: Mapping[str, str]
                ) -> list[tuple[StackResource, list[Call]]]:
    return [(resource, calls(resource, stack_tags)) for resource in resources]
