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
- EKS add-ons with pod identity associations need ``eks:CreatePodIdentityAssociation``;
  Describe/Update/DeletePodIdentityAssociation are authorised against the association
  (``podidentityassociation/<cluster>/<id>``), ListPodIdentityAssociations against the cluster,
  and a role given to Create/UpdatePodIdentityAssociation or an add-on's association needs
  ``iam:PassRole`` to ``pods.eks.amazonaws.com``;
- HyperPod's task governance creates (scheduler configs, compute quotas) act on the cluster
  too and read it and its EKS cluster (the dependent actions the SAR lists for them);
- EventBridge's PutEvents is authorised against each event bus its entries name;
- IAM OIDC providers are named by their issuer (``oidc-provider/<host and path>``); AMP
  (``aps``) workspaces by their id.

An operation of a service that has a resolver but no rule here is refused
(``Unresolvable``), unless the SAR lists no resource type for its action (then ``*`` is all
IAM looks at), so that no call passes unauthorised by accident.

The resolvers of CloudFormation, EC2 and FSx are in `resolvers_network`, those of EKS and
SageMaker in `resolvers_hyperpod`, what they all share in `resolver_base`.
"""

from __future__ import annotations

from typing import Any

from hypd_local.iam.checks import Check, Target
from hypd_local.iam.resolver_base import (
    HYPERPOD_SERVICE_LINKED_ROLE,
    Resolver,
    Unresolvable,
    _tags,
    pass_role,
    service_linked_role_check,
)
from hypd_local.iam.resolvers_hyperpod import _eks, _sagemaker, _sagemaker_runtime
from hypd_local.iam.resolvers_network import _cloudformation, _ec2, _fsx
from hypd_local.iam.sar import reference
from hypd_local.iam.world import World

__all__ = [
    "HYPERPOD_SERVICE_LINKED_ROLE", "RESOLVERS", "Resolver", "Unresolvable", "pass_role",
    "resolve", "service_linked_role_check",
]


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


# ---------------------------------------------------------------------------- EventBridge
def _events(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    if op != "PutEvents":
        return None
    # Each entry is authorised on its bus, with its source and detail type as condition keys.
    checks = []
    for entry in p.get("Entries") or []:
        bus = str(entry.get("EventBusName") or "default")
        arn = bus if bus.startswith("arn:") else w.arn("events", f"event-bus/{bus}")
        checks.append(Check("events:PutEvents", (Target(arn, "event-bus"),), keys={
            "events:source": [str(entry.get("Source", ""))],
            "events:detail-type": [str(entry.get("DetailType", ""))],
        }))
    return checks or None


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
    "PutPublicAccessBlock": "PutBucketPublicAccessBlock",
    "GetPublicAccessBlock": "GetBucketPublicAccessBlock",
    "PutBucketEncryption": "PutEncryptionConfiguration",
    "GetBucketEncryption": "GetEncryptionConfiguration",
}


def _s3(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    bucket = p.get("Bucket")
    if not isinstance(bucket, str):
        return None
    if op == "DeleteObjects":
        # S3 authorises a multi-object delete object by object, as DeleteObject (a body
        # naming no object is not read: Unresolvable).
        return [Check("s3:DeleteObject",
                      (Target(f"arn:{w.partition}:s3:::{bucket}/{o.get('Key', '')}", "object"),))
                for o in (p.get("Delete") or {}).get("Objects") or []] or None
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


def oidc_provider_arn(w: World, url: str) -> str:
    """The ARN IAM gives the OIDC provider of an issuer URL: ``oidc-provider/`` and the URL
    without its scheme (host and path)."""
    issuer = url.split("://", 1)[-1].rstrip("/")
    return w.arn("iam", f"oidc-provider/{issuer}", region=False)


def _iam_oidc(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    """The OIDC provider operations: the provider's ARN, its tags and the request's."""
    action = f"iam:{op}"
    if op == "CreateOpenIDConnectProvider":
        target = Target(oidc_provider_arn(w, str(p["Url"])), "oidc-provider",
                        request_tags=_tags(p.get("Tags")))
        return [Check(action, (target,))]
    arn = p.get("OpenIDConnectProviderArn")
    if not isinstance(arn, str):
        return None
    keys: dict[str, list[str]] = {}
    if op == "UntagOpenIDConnectProvider":
        keys["aws:TagKeys"] = [str(k) for k in p.get("TagKeys") or []]
    request_tags = _tags(p.get("Tags")) if op == "TagOpenIDConnectProvider" else None
    return [Check(action, (Target(arn, "oidc-provider", tags=w.oidc_provider_tags(arn),
                                  request_tags=request_tags),), keys=keys)]


def _iam(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    if op == "CreateServiceLinkedRole":
        return [service_linked_role_check(w, str(p["AWSServiceName"]))]
    if "OpenIDConnectProvider" in op:
        return _iam_oidc(op, p, w)
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


# ---------------------------------------------------------------------------- AMP (aps)
def _amp(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    action = f"aps:{op}"
    if op == "CreateWorkspace":
        # the SAR lists no resource type: authorised against *, with the request's tags
        return [Check(action, (Target(request_tags=_tags(p.get("tags"))),))]
    sar_action = reference().action(action)
    if op in ("TagResource", "UntagResource", "ListTagsForResource"):
        arn = str(p.get("resourceArn", ""))
        found = next((t for t in (sar_action.resource_types if sar_action else ())
                      if t.describes(arn)), None)
        if found is None:
            return None
        keys: dict[str, list[str]] = {}
        if op == "UntagResource":
            keys["aws:TagKeys"] = [str(k) for k in p.get("tagKeys") or []]
        request_tags = _tags(p.get("tags")) if op == "TagResource" else None
        return [Check(action, (Target(arn, found.name, tags=w.amp_tags(arn),
                                      request_tags=request_tags),), keys=keys)]
    workspace = p.get("workspaceId")
    if isinstance(workspace, str) and sar_action is not None and "workspace" in {
            t.name for t in sar_action.resource_types}:
        arn = w.arn("aps", f"workspace/{workspace}")
        return [Check(action, (Target(arn, "workspace", tags=w.amp_tags(arn)),))]
    return None


RESOLVERS: dict[str, Resolver] = {
    "dynamodb": _dynamodb,
    "stepfunctions": _states,
    "lambda": _lambda,
    "sqs": _sqs,
    "sns": _sns,
    "events": _events,
    "s3": _s3,
    "sts": _sts,
    "iam": _iam,
    "cloudformation": _cloudformation,
    "ec2": _ec2,
    "eks": _eks,
    "sagemaker": _sagemaker,
    "sagemaker-runtime": _sagemaker_runtime,
    "fsx": _fsx,
    "amp": _amp,
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
