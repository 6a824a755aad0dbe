"""How CloudFormation, EC2 and FSx requests name their resources (the network stack, the
file systems): types a template creates, EC2's created and targeted resources with their tags,
file systems and their subnets."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from hypd_local.iam.checks import Check, Target
from hypd_local.iam.resolver_base import _tags, pass_role
from hypd_local.iam.sar import reference
from hypd_local.iam.world import World


def _template_types(body: Any) -> list[str]:
    try:
        template = json.loads(body) if isinstance(body, str) else {}
    except ValueError:
        return []
    resources = template.get("Resources") if isinstance(template, dict) else None
    return sorted({str(r.get("Type")) for r in (resources or {}).values()
                   if isinstance(r, dict) and r.get("Type")})


def _cloudformation(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    name = p.get("StackName")
    if not isinstance(name, str):
        return None
    existing = w.stack_arn(name)
    if op == "CreateStack" or existing is None:
        arn = name if name.startswith("arn:") else w.arn("cloudformation", f"stack/{name}/*")
        tags = None
    else:
        arn, tags = existing, w.stack_tags(existing)
    keys: dict[str, list[str]] = {}
    if p.get("RoleARN"):
        keys["cloudformation:RoleArn"] = [str(p["RoleARN"])]
    if p.get("TemplateURL"):
        keys["cloudformation:TemplateUrl"] = [str(p["TemplateURL"])]
    if "TemplateBody" in p:
        keys["cloudformation:ResourceTypes"] = _template_types(p["TemplateBody"])
    request_tags = _tags(p.get("Tags")) if op in ("CreateStack", "UpdateStack") else None
    checks = [Check(f"cloudformation:{op}",
                    (Target(arn, "stack", tags=tags, request_tags=request_tags),), keys=keys)]
    if p.get("RoleARN"):
        checks.append(pass_role(w, str(p["RoleARN"]), "cloudformation.amazonaws.com"))
    return checks


# Create actions: the type of what they create, and the parameters naming existing resources
# the action is also authorised against.
_EC2_CREATES: dict[str, tuple[str, tuple[str, ...]]] = {
    "CreateVpc": ("vpc", ()),
    "CreateSubnet": ("subnet", ("VpcId",)),
    "CreateRouteTable": ("route-table", ("VpcId",)),
    "CreateSecurityGroup": ("security-group", ("VpcId",)),
    "CreateInternetGateway": ("internet-gateway", ()),
    "CreateNatGateway": ("natgateway", ("SubnetId", "AllocationId")),
    "AllocateAddress": ("elastic-ip", ()),
    "CreateVpcEndpoint": ("vpc-endpoint", ("VpcId", "RouteTableIds", "SubnetIds",
                                            "SecurityGroupIds")),
}


# TagSpecifications' ResourceType for each created type
_EC2_TAG_TYPES = {"natgateway": "natgateway", "elastic-ip": "elastic-ip"}


# Actions on existing resources: the parameters naming them.
_EC2_TARGETS: dict[str, tuple[str, ...]] = {
    "CreateRoute": ("RouteTableId",),
    "ReplaceRoute": ("RouteTableId",),
    "DeleteRoute": ("RouteTableId",),
    "AssociateRouteTable": ("RouteTableId", "SubnetId", "GatewayId"),
    "ModifyVpcEndpoint": ("VpcEndpointId", "AddRouteTableIds", "RemoveRouteTableIds",
                          "AddSubnetIds", "RemoveSubnetIds", "AddSecurityGroupIds",
                          "RemoveSecurityGroupIds"),
    "ModifySubnetAttribute": ("SubnetId",),
    "ModifyVpcAttribute": ("VpcId",),
    "AttachInternetGateway": ("InternetGatewayId", "VpcId"),
    "DetachInternetGateway": ("InternetGatewayId", "VpcId"),
    "AuthorizeSecurityGroupIngress": ("GroupId",),
    "AuthorizeSecurityGroupEgress": ("GroupId",),
    "RevokeSecurityGroupIngress": ("GroupId",),
    "RevokeSecurityGroupEgress": ("GroupId",),
    "DeleteSubnet": ("SubnetId",),
    "DeleteNetworkInterface": ("NetworkInterfaceId",),
    "DeleteVpc": ("VpcId",),
    "DeleteRouteTable": ("RouteTableId",),
    "DeleteSecurityGroup": ("GroupId",),
    "DeleteInternetGateway": ("InternetGatewayId",),
    "DeleteNatGateway": ("NatGatewayId",),
    "DeleteVpcEndpoints": ("VpcEndpointIds",),
    "ReleaseAddress": ("AllocationId",),
    "CreateTags": ("Resources",),
    "DeleteTags": ("Resources",),
}


def _ids(p: Mapping[str, Any], names: Iterable[str]) -> list[str]:
    found: list[str] = []
    for name in names:
        value = p.get(name)
        found += [str(v) for v in value] if isinstance(value, list) else (
            [str(value)] if value else [])
    return found


def _ec2_targets(w: World, action: str, ids: list[str]) -> list[Target]:
    sar_action = reference().action(action)
    types = {t.name for t in sar_action.resource_types} if sar_action else set()
    targets = []
    for resource_id in ids:
        try:
            kind, arn = w.ec2_arn(resource_id)
        except KeyError:
            continue
        if kind in types:
            targets.append(Target(arn, kind, tags=w.ec2_tags(resource_id)))
    return targets


def _ec2(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    action = f"ec2:{op}"
    if op in _EC2_CREATES:
        kind, parents = _EC2_CREATES[op]
        tag_type = _EC2_TAG_TYPES.get(kind, kind)
        request_tags: dict[str, str] = {}
        for spec in p.get("TagSpecifications") or []:
            if spec.get("ResourceType") == tag_type:
                request_tags.update(_tags(spec.get("Tags")))
        created = Target(w.arn("ec2", f"{kind}/*"), kind, request_tags=request_tags)
        checks = [Check(action, (created, *_ec2_targets(w, action, _ids(p, parents))))]
        if request_tags:
            # Tagging on creation is authorised as ec2:CreateTags on the new resource.
            checks.append(Check("ec2:CreateTags", (created,), keys={"ec2:CreateAction": [op]}))
        return checks
    if op in _EC2_TARGETS:
        targets = _ec2_targets(w, action, _ids(p, _EC2_TARGETS[op]))
        if op == "CreateTags":
            targets = [Target(t.arn, t.type, tags=t.tags, request_tags=_tags(p.get("Tags")))
                       for t in targets]
        return [Check(action, tuple(targets))] if targets else None
    return None


def _fsx(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    action = f"fsx:{op}"
    if op == "CreateFileSystem":
        request_tags = _tags(p.get("Tags"))
        created = Target(w.arn("fsx", "file-system/*"), "file-system", request_tags=request_tags)
        checks = [Check(action, (created,))]
        if request_tags:
            checks.append(Check("fsx:TagResource", (created,)))
        return checks
    if "FileSystemId" in p:
        fs_id = str(p["FileSystemId"])
        return [Check(action, (Target(w.arn("fsx", f"file-system/{fs_id}"), "file-system",
                                      tags=w.fsx_tags(fs_id)),))]
    if op in ("TagResource", "UntagResource", "ListTagsForResource"):
        arn = str(p["ResourceARN"])
        fs_id = arn.rsplit("/", 1)[-1]
        applied = _tags(p.get("Tags")) if op == "TagResource" else None
        return [Check(action, (Target(arn, "file-system", tags=w.fsx_tags(fs_id),
                                      request_tags=applied),))]
    return None
