"""From an API request to the IAM checks it needs: actions, resource ARNs, condition keys.

The SAR says which resource types an action is authorised against; what it cannot say is how
a request names them. That is written here, per service, for the operations the control plane
and the local cloud call: the resource's ARN from the request's parameters (an ID, a name, an
ARN, a queue URL), its tags from the account's state, the tags the request applies, and the
checks AWS makes beyond the action itself:

- ``iam:PassRole`` (with ``iam:PassedToService``) for every role handed to a service;
- tag-on-create: EC2 authorises ``ec2:CreateTags`` (with ``ec2:CreateAction``) and SageMaker
  ``sagemaker:AddTags`` when a create request carries tags;
- HyperPod's ``CreateCluster`` acts on the orchestrating EKS cluster with the caller's
  permissions (``eks:DescribeCluster``, and an access entry for its service-linked role:
  ``eks:CreateAccessEntry``, ``eks:DescribeAccessEntry``, ``eks:AssociateAccessPolicy``),
  the dependent actions the SAR lists for it;
- EKS add-ons with pod identity associations need ``eks:CreatePodIdentityAssociation``.

An operation of a service that has a resolver but no rule here is refused
(``Unresolvable``), unless the SAR lists no resource type for its action (then ``*`` is all
IAM looks at), so that no call passes unauthorised by accident.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hypd_local.iam.checks import MISSING_FROM_SAR, Check, Target
from hypd_local.iam.sar import reference
from hypd_local.iam.world import World

Resolver = Callable[[str, dict[str, Any], World], list[Check] | None]

HYPERPOD_SERVICE_LINKED_ROLE = ("hyperpod.sagemaker.amazonaws.com",
                                "AWSServiceRoleForSageMakerHyperPod")


class Unresolvable(LookupError):
    """The local cloud does not know how this request names its resources."""


def _tags(items: Any) -> dict[str, str]:
    """Tags as a ``[{"Key", "Value"}]`` list or a ``{key: value}`` map."""
    if isinstance(items, dict):
        return {str(k): str(v) for k, v in items.items()}
    return {str(t.get("Key")): str(t.get("Value", "")) for t in items or []
            if isinstance(t, dict)}


def pass_role(world: World, role_arn: str, service: str) -> Check:
    """``iam:PassRole`` of ``role_arn`` to ``service``."""
    record = world.directory.role(role_arn)
    return Check("iam:PassRole",
                 (Target(role_arn, "role", tags=dict(record.tags) if record else None),),
                 keys={"iam:PassedToService": [service]})


# ---------------------------------------------------------------------------- DynamoDB
def _dynamodb(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    def table(name: str) -> str:
        return name if name.startswith("arn:") else w.arn("dynamodb", f"table/{name}")

    def on_table(action: str, name: str, index: str | None = None) -> Check:
        arn = table(name)
        if index:
            return Check(f"dynamodb:{action}", (Target(f"{arn}/index/{index}", "index"),))
        return Check(f"dynamodb:{action}", (Target(arn, "table"),))

    if op in ("Query", "Scan"):
        return [on_table(op, p["TableName"], p.get("IndexName"))]
    if "TableName" in p:
        return [on_table(op, p["TableName"])]
    if op == "TransactWriteItems":
        # Authorised item by item, as the item operations.
        names = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                 "ConditionCheck": "ConditionCheckItem"}
        return [on_table(names[kind], body["TableName"])
                for item in p.get("TransactItems", []) for kind, body in item.items()
                if kind in names]
    if op == "TransactGetItems":
        return [on_table("GetItem", item["Get"]["TableName"])
                for item in p.get("TransactItems", []) if "Get" in item]
    if op in ("BatchWriteItem", "BatchGetItem"):
        return [on_table(op, name) for name in p.get("RequestItems", {})]
    return None


# ---------------------------------------------------------------------------- Step Functions
def _states(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    if "stateMachineArn" in p:
        return [Check(f"states:{op}", (Target(p["stateMachineArn"], "statemachine"),))]
    if "executionArn" in p:
        return [Check(f"states:{op}", (Target(p["executionArn"], "execution"),))]
    return None


# ---------------------------------------------------------------------------- Lambda
def _lambda(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    name = p.get("FunctionName")
    if not isinstance(name, str):
        return None
    if name.startswith("arn:"):
        arn = name
    elif ":function:" in name:  # 123456789012:function:name
        arn = w.arn("lambda", name.split(":", 1)[1])
    else:
        arn = w.arn("lambda", f"function:{name}")
    base, qualifier = arn, p.get("Qualifier")
    parts = arn.split(":")
    if len(parts) > 7:  # arn:aws:lambda:R:A:function:name:qualifier
        base, qualifier = ":".join(parts[:7]), parts[7]
    action = {"Invoke": "InvokeFunction", "InvokeAsync": "InvokeAsync"}.get(op, op)
    target = (Target(f"{base}:{qualifier}", "function alias") if qualifier
              and qualifier != "$LATEST" else Target(base, "function"))
    return [Check(f"lambda:{action}", (target,))]


# ---------------------------------------------------------------------------- SQS and SNS
def _sqs(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    url = p.get("QueueUrl")
    if isinstance(url, str):
        account, name = url.rstrip("/").split("/")[-2:]  # .../<account>/<queue name>
        arn = f"arn:{w.partition}:sqs:{w.region}:{account}:{name}"
        return [Check(f"sqs:{op}", (Target(arn, "queue"),))]
    if op == "CreateQueue":
        arn = w.arn("sqs", str(p["QueueName"]))
        return [Check("sqs:CreateQueue", (Target(arn, "queue", request_tags=p.get("tags")),))]
    return None


def _sns(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    arn = p.get("TopicArn") or p.get("TargetArn")
    if isinstance(arn, str):
        return [Check(f"sns:{op}", (Target(arn, "topic"),))]
    if op == "CreateTopic":
        return [Check("sns:CreateTopic", (Target(w.arn("sns", str(p["Name"])), "topic",
                                                 request_tags=_tags(p.get("Tags"))),))]
    return None


# ---------------------------------------------------------------------------- S3
_S3_OBJECT_ACTIONS = {
    "GetObject": "GetObject", "HeadObject": "GetObject", "PutObject": "PutObject",
    "CreateMultipartUpload": "PutObject", "UploadPart": "PutObject",
    "CompleteMultipartUpload": "PutObject", "CopyObject": "PutObject",
    "DeleteObject": "DeleteObject", "AbortMultipartUpload": "AbortMultipartUpload",
    "GetObjectTagging": "GetObjectTagging", "PutObjectTagging": "PutObjectTagging",
}
_S3_BUCKET_ACTIONS = {
    "HeadBucket": "ListBucket", "ListObjects": "ListBucket", "ListObjectsV2": "ListBucket",
    "ListObjectVersions": "ListBucketVersions", "ListMultipartUploads":
    "ListBucketMultipartUploads", "GetBucketLocation": "GetBucketLocation",
    "CreateBucket": "CreateBucket", "DeleteBucket": "DeleteBucket",
    "GetBucketPolicy": "GetBucketPolicy", "PutBucketPolicy": "PutBucketPolicy",
    "GetBucketTagging": "GetBucketTagging", "PutBucketTagging": "PutBucketTagging",
}


def _s3(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    bucket = p.get("Bucket")
    if not isinstance(bucket, str):
        return None
    if op in _S3_OBJECT_ACTIONS:
        arn = f"arn:{w.partition}:s3:::{bucket}/{p.get('Key', '')}"
        return [Check(f"s3:{_S3_OBJECT_ACTIONS[op]}", (Target(arn, "object"),))]
    if op in _S3_BUCKET_ACTIONS:
        arn = f"arn:{w.partition}:s3:::{bucket}"
        return [Check(f"s3:{_S3_BUCKET_ACTIONS[op]}", (Target(arn, "bucket"),))]
    return None


# ---------------------------------------------------------------------------- STS and IAM
def _sts(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    if op == "GetCallerIdentity":
        return []  # needs no permission: AWS answers it even under an explicit deny
    if "RoleArn" in p:
        record = w.directory.role(str(p["RoleArn"]))
        return [Check(f"sts:{op}", (Target(str(p["RoleArn"]), "role",
                                           tags=dict(record.tags) if record else None),))]
    return None


_SERVICE_LINKED_ROLE_NAMES = {
    "eks.amazonaws.com": "AWSServiceRoleForAmazonEKS",
    "fsx.amazonaws.com": "AWSServiceRoleForAmazonFSx",
    HYPERPOD_SERVICE_LINKED_ROLE[0]: HYPERPOD_SERVICE_LINKED_ROLE[1],
}


def service_linked_role_check(w: World, service: str, role_name: str | None = None) -> Check:
    """``iam:CreateServiceLinkedRole`` of ``service``'s role (as the service asks its caller
    for on first use in an account)."""
    name = role_name or _SERVICE_LINKED_ROLE_NAMES.get(service, "*")
    arn = w.directory.service_linked_role_arn(service, name)
    return Check("iam:CreateServiceLinkedRole", (Target(arn, "role"),),
                 keys={"iam:AWSServiceName": [service]})


def _iam(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    if op == "CreateServiceLinkedRole":
        return [service_linked_role_check(w, str(p["AWSServiceName"]))]
    if "RoleName" in p:
        name = str(p["RoleName"])
        record = w.directory.role(name)
        if op == "CreateRole" or record is None:
            arn = w.arn("iam", f"role{p.get('Path') or '/'}{name}", region=False)
            boundary = p.get("PermissionsBoundary")
            tags = None
        else:
            arn, boundary, tags = record.arn, record.boundary_arn, dict(record.tags)
        if op == "PutRolePermissionsBoundary":
            boundary = p.get("PermissionsBoundary")
        keys: dict[str, list[str]] = {}
        if boundary:
            keys["iam:PermissionsBoundary"] = [str(boundary)]
        if "PolicyArn" in p:
            keys["iam:PolicyARN"] = [str(p["PolicyArn"])]
        request_tags = _tags(p.get("Tags")) if "Tags" in p else None
        return [Check(f"iam:{op}", (Target(arn, "role", tags=tags, request_tags=request_tags),),
                      keys=keys)]
    if "PolicyArn" in p:
        return [Check(f"iam:{op}", (Target(str(p["PolicyArn"]), "policy"),))]
    return None


# ---------------------------------------------------------------------------- CloudFormation
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


# ---------------------------------------------------------------------------- EC2
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


# ---------------------------------------------------------------------------- EKS
def _eks_cluster_target(w: World, name: str) -> Target:
    arn, tags = w.eks_cluster(name)
    return Target(arn, "cluster", tags=tags)


def _eks_resource_target(w: World, arn: str) -> Target | None:
    sar_action = reference().action("eks:TagResource")
    assert sar_action is not None
    for resource_type in sar_action.resource_types:
        if resource_type.describes(arn):
            return Target(arn, resource_type.name)
    return None


def _eks(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    action = f"eks:{op}"
    if op == "CreateCluster":
        access = p.get("accessConfig") or {}
        keys: dict[str, list[str]] = {}
        if access.get("authenticationMode"):
            keys["eks:authenticationMode"] = [str(access["authenticationMode"])]
        if "bootstrapClusterCreatorAdminPermissions" in access:
            keys["eks:bootstrapClusterCreatorAdminPermissions"] = [
                "true" if access["bootstrapClusterCreatorAdminPermissions"] else "false"]
        named = w.arn("eks", f"cluster/{p['name']}")
        checks = [Check(action, (Target(request_tags=_tags(p.get("tags")), named=named),),
                        keys=keys)]
        checks.append(pass_role(w, str(p["roleArn"]), "eks.amazonaws.com"))
        return checks
    cluster = p.get("clusterName") or p.get("name")
    if op in ("DescribeAccessEntry", "DeleteAccessEntry", "UpdateAccessEntry",
              "AssociateAccessPolicy", "DisassociateAccessPolicy",
              "ListAssociatedAccessPolicies") and cluster:
        arn, tags = w.eks_access_entry(str(cluster), str(p["principalArn"]))
        keys = {}
        if p.get("policyArn"):
            keys["eks:policyArn"] = [str(p["policyArn"])]
        scope = p.get("accessScope") or {}
        if scope.get("type"):
            keys["eks:accessScope"] = [str(scope["type"])]
        if scope.get("namespaces"):
            keys["eks:namespaces"] = [str(n) for n in scope["namespaces"]]
        return [Check(action, (Target(arn, "access-entry", tags=tags),), keys=keys)]
    if op in ("DescribeAddon", "DeleteAddon", "UpdateAddon") and cluster:
        arn, tags = w.eks_addon(str(cluster), str(p["addonName"]))
        checks = [Check(action, (Target(arn, "addon", tags=tags),))]
        if op == "UpdateAddon" and p.get("serviceAccountRoleArn"):
            checks.append(pass_role(w, str(p["serviceAccountRoleArn"]), "eks.amazonaws.com"))
        return checks
    if op in ("TagResource", "UntagResource", "ListTagsForResource"):
        target = _eks_resource_target(w, str(p.get("resourceArn", "")))
        if target is None:
            return None
        request_tags = _tags(p.get("tags")) if op == "TagResource" else None
        return [Check(action, (Target(target.arn, target.type, request_tags=request_tags),))]
    if not cluster:
        return None
    target = _eks_cluster_target(w, str(cluster))
    if op == "CreateAccessEntry":
        keys = {"eks:principalArn": [str(p["principalArn"])],
                "eks:accessEntryType": [str(p.get("type") or "STANDARD")]}
        if p.get("username"):
            keys["eks:username"] = [str(p["username"])]
        if p.get("kubernetesGroups"):
            keys["eks:kubernetesGroups"] = [str(g) for g in p["kubernetesGroups"]]
        return [Check(action, (Target(target.arn, "cluster", tags=target.tags,
                                      request_tags=_tags(p.get("tags"))),), keys=keys)]
    if op == "CreateAddon":
        checks = [Check(action, (Target(target.arn, "cluster", tags=target.tags,
                                        request_tags=_tags(p.get("tags"))),))]
        if p.get("serviceAccountRoleArn"):
            checks.append(pass_role(w, str(p["serviceAccountRoleArn"]), "eks.amazonaws.com"))
        for association in p.get("podIdentityAssociations") or []:
            checks.append(Check("eks:CreatePodIdentityAssociation",
                                (Target(target.arn, "cluster", tags=target.tags),)))
            checks.append(pass_role(w, str(association["roleArn"]), "pods.eks.amazonaws.com"))
        return checks
    if op == "CreatePodIdentityAssociation":
        return [Check(action, (Target(target.arn, "cluster", tags=target.tags,
                                      request_tags=_tags(p.get("tags"))),)),
                pass_role(w, str(p["roleArn"]), "pods.eks.amazonaws.com")]
    sar_action = reference().action(action)
    if sar_action is not None and "cluster" in {t.name for t in sar_action.resource_types}:
        return [Check(action, (target,))]
    return None


# ---------------------------------------------------------------------------- SageMaker
def _sagemaker_cluster(w: World, name: str) -> Target:
    arn, tags = w.hyperpod_cluster(name)
    return Target(arn, "cluster", tags=tags)


def _group_checks(w: World, groups: Iterable[Mapping[str, Any]]) -> tuple[list[Check],
                                                                          list[Target]]:
    passes: list[Check] = []
    plans: list[Target] = []
    for group in groups:
        if group.get("ExecutionRole"):
            passes.append(pass_role(w, str(group["ExecutionRole"]), "sagemaker.amazonaws.com"))
        if group.get("TrainingPlanArn"):
            plans.append(Target(w.training_plan(str(group["TrainingPlanArn"])),
                                "training-plan"))
    return passes, plans


def _hyperpod_on_eks(w: World, eks_arn: str) -> list[Check]:
    """What HyperPod's CreateCluster does on the EKS cluster with its caller's permissions:
    read it, and give its service-linked role an access entry there."""
    name = eks_arn.rsplit("/", 1)[-1]
    cluster = _eks_cluster_target(w, name)
    service, role_name = HYPERPOD_SERVICE_LINKED_ROLE
    principal = w.directory.service_linked_role_arn(service, role_name)
    entry_arn, entry_tags = w.eks_access_entry(name, principal)
    entry = Target(entry_arn, "access-entry", tags=entry_tags)
    return [
        Check("eks:DescribeCluster", (cluster,)),
        Check("eks:CreateAccessEntry", (cluster,), keys={"eks:principalArn": [principal]}),
        Check("eks:DescribeAccessEntry", (entry,)),
        Check("eks:AssociateAccessPolicy", (entry,)),
    ]


def _sagemaker(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    action = f"sagemaker:{op}"
    if op in ("CreateCluster", "UpdateCluster"):
        groups = list(p.get("InstanceGroups") or [])
        passes, plans = _group_checks(w, groups)
        if p.get("ClusterRole"):
            passes.append(pass_role(w, str(p["ClusterRole"]), "sagemaker.amazonaws.com"))
        keys: dict[str, list[str]] = {}
        types = sorted({str(g["InstanceType"]) for g in groups if g.get("InstanceType")})
        if types:
            keys["sagemaker:InstanceTypes"] = types
        vpc = p.get("VpcConfig") or {}
        if vpc.get("Subnets"):
            keys["sagemaker:VpcSubnets"] = [str(s) for s in vpc["Subnets"]]
        if vpc.get("SecurityGroupIds"):
            keys["sagemaker:VpcSecurityGroupIds"] = [str(s) for s in vpc["SecurityGroupIds"]]
        if op == "UpdateCluster":
            cluster = _sagemaker_cluster(w, str(p["ClusterName"]))
            return [Check(action, (cluster, *plans), keys=keys), *passes]
        request_tags = _tags(p.get("Tags"))
        created = Target(w.arn("sagemaker", "cluster/*"), "cluster", request_tags=request_tags)
        checks = [Check(action, (created, *plans), keys=keys), *passes]
        if request_tags:
            checks.append(Check("sagemaker:AddTags", (created,)))
        eks_arn = ((p.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
        if eks_arn:
            checks += _hyperpod_on_eks(w, str(eks_arn))
        return checks
    if op in ("ListTags", "AddTags", "DeleteTags"):
        arn = str(p["ResourceArn"])
        kind = "training-plan" if ":training-plan/" in arn else "cluster"
        tags = w.hyperpod_cluster(arn)[1] if kind == "cluster" else None
        applied = _tags(p.get("Tags")) if op == "AddTags" else None
        return [Check(action, (Target(arn, kind, tags=tags, request_tags=applied),))]
    if op == "DescribeTrainingPlan":
        return [Check(action, (Target(w.training_plan(str(p["TrainingPlanName"])),
                                      "training-plan"),))]
    if "ClusterName" in p:
        sar_action = reference().action(action)
        known = (sar_action is not None and "cluster" in {t.name for t in
                                                           sar_action.resource_types})
        if known or action.lower() in MISSING_FROM_SAR:
            return [Check(action, (_sagemaker_cluster(w, str(p["ClusterName"])),))]
    return None


# ---------------------------------------------------------------------------- FSx
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


RESOLVERS: dict[str, Resolver] = {
    "dynamodb": _dynamodb,
    "stepfunctions": _states,
    "lambda": _lambda,
    "sqs": _sqs,
    "sns": _sns,
    "s3": _s3,
    "sts": _sts,
    "iam": _iam,
    "cloudformation": _cloudformation,
    "ec2": _ec2,
    "eks": _eks,
    "sagemaker": _sagemaker,
    "fsx": _fsx,
}


def resolve(service: str, prefix: str, operation: str, params: dict[str, Any],
            world: World) -> list[Check]:
    """The checks of one request to ``service`` (botocore's name; ``prefix`` is its IAM
    prefix). Raises Unresolvable for a request this module cannot read."""
    resolver = RESOLVERS.get(service)
    checks = resolver(operation, params, world) if resolver is not None else None
    if checks is not None:
        return checks
    action = reference().action(f"{prefix}:{operation}")
    if action is not None and not action.supports_resources:
        return [Check(action.full_name)]
    raise Unresolvable(f"the local cloud cannot authorise {prefix}:{operation}: it does not "
                       "know which resources the request names (hypd_local/iam/resolvers.py)")
