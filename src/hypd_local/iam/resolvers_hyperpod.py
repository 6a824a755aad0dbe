"""How EKS and SageMaker HyperPod requests name their resources: clusters, add-ons, access
entries, pod identity associations, HyperPod clusters with their instance groups and the EKS
cluster they act on, task governance's scheduler configs and compute quotas."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hypd_local.iam.checks import MISSING_FROM_SAR, Check, Target
from hypd_local.iam.resolver_base import (
    HYPERPOD_SERVICE_LINKED_ROLE,
    _tags,
    pass_role,
)
from hypd_local.iam.sar import reference
from hypd_local.iam.world import World


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
        if op == "UpdateAddon":
            checks += [pass_role(w, str(a["roleArn"]), "pods.eks.amazonaws.com")
                       for a in p.get("podIdentityAssociations") or []]
        return checks
    if op in ("DescribePodIdentityAssociation", "UpdatePodIdentityAssociation",
              "DeletePodIdentityAssociation") and cluster:
        # the SAR: the association itself (podidentityassociation/${ClusterName}/${UUID})
        arn, tags = w.eks_pod_identity_association(str(cluster), str(p["associationId"]))
        checks = [Check(action, (Target(arn, "podidentityassociation", tags=tags),))]
        if op == "UpdatePodIdentityAssociation" and p.get("roleArn"):
            checks.append(pass_role(w, str(p["roleArn"]), "pods.eks.amazonaws.com"))
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


# Task governance operations -> (the ARN's resource type, the request member of its id)
_GOVERNED = {
    "ClusterSchedulerConfig": ("cluster-scheduler-config", "ClusterSchedulerConfigId"),
    "ComputeQuota": ("compute-quota", "ComputeQuotaId"),
}


def _governance(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    """CreateX authorised on the cluster and the new resource (``<type>/*``: its id is not
    known yet), with the request's tags, plus the dependent actions the SAR lists whose
    resources the request names (the HyperPod cluster and its EKS cluster, the access entry
    of HyperPod's service-linked role there, tag-on-create); DescribeX, UpdateX and DeleteX on
    the resource's ARN. ListX: None (the SAR lists no resource type: ``*``)."""
    verb = next((v for v in ("Create", "Describe", "Update", "Delete")
                 if op.startswith(v) and op[len(v):] in _GOVERNED), None)
    if verb is None:
        return None
    kind, id_member = _GOVERNED[op[len(verb):]]
    action = f"sagemaker:{op}"
    if verb != "Create":
        arn, tags = w.hyperpod_governed(kind, str(p[id_member]))
        return [Check(action, (Target(arn, kind, tags=tags),))]
    request_tags = _tags(p.get("Tags"))
    arn, tags = w.hyperpod_cluster(str(p["ClusterArn"]))
    cluster = Target(arn, "cluster", tags=tags, request_tags=request_tags)
    created = Target(w.arn("sagemaker", f"{kind}/*"), kind, request_tags=request_tags)
    checks = [Check(action, (cluster, created)),
              Check("sagemaker:DescribeCluster", (Target(arn, "cluster", tags=tags),))]
    if request_tags:
        checks.append(Check("sagemaker:AddTags", (created,)))
    eks_arn = w.hyperpod_eks_arn(str(p["ClusterArn"]))
    if eks_arn:
        name = eks_arn.rsplit("/", 1)[-1]
        service, role_name = HYPERPOD_SERVICE_LINKED_ROLE
        principal = w.directory.service_linked_role_arn(service, role_name)
        entry_arn, entry_tags = w.eks_access_entry(name, principal)
        entry = Target(entry_arn, "access-entry", tags=entry_tags)
        checks += [Check("eks:DescribeCluster", (_eks_cluster_target(w, name),)),
                   Check("eks:ListAssociatedAccessPolicies", (entry,)),
                   Check("eks:AssociateAccessPolicy", (entry,))]
    return checks


def _tagged_target(w: World, arn: str, applied: dict[str, str] | None) -> Target:
    """The resource of ListTags / AddTags / DeleteTags, by its ARN's resource type."""
    for kind, _member in _GOVERNED.values():
        if f":{kind}/" in arn:
            return Target(arn, kind, tags=w.hyperpod_governed(kind, arn)[1],
                          request_tags=applied)
    if ":training-plan/" in arn:
        return Target(arn, "training-plan", request_tags=applied)
    return Target(arn, "cluster", tags=w.hyperpod_cluster(arn)[1], request_tags=applied)


def _sagemaker(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    action = f"sagemaker:{op}"
    governance = _governance(op, p, w)
    if governance is not None:
        return governance
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
        applied = _tags(p.get("Tags")) if op == "AddTags" else None
        keys = {"aws:TagKeys": [str(k) for k in p.get("TagKeys") or []]} if (
            op == "DeleteTags") else {}
        return [Check(action, (_tagged_target(w, str(p["ResourceArn"]), applied),), keys=keys)]
    if op == "DescribeTrainingPlan":
        return [Check(action, (Target(w.training_plan(str(p["TrainingPlanName"])),
                                      "training-plan"),))]
    if "EndpointName" in p:
        return [Check(action, (_endpoint(w, str(p["EndpointName"])),))]
    if "ClusterName" in p:
        sar_action = reference().action(action)
        known = (sar_action is not None and "cluster" in {t.name for t in
                                                           sar_action.resource_types})
        if known or action.lower() in MISSING_FROM_SAR:
            return [Check(action, (_sagemaker_cluster(w, str(p["ClusterName"])),))]
    return None


def _endpoint(w: World, name: str) -> Target:
    """A SageMaker endpoint: its ARN names it in lower case, as SageMaker writes it."""
    return Target(w.arn("sagemaker", f"endpoint/{name.lower()}"), "endpoint")


def _sagemaker_runtime(op: str, p: dict[str, Any], w: World) -> list[Check] | None:
    """SageMaker Runtime (IAM prefix ``sagemaker``): InvokeEndpoint on the endpoint."""
    if op in ("InvokeEndpoint", "InvokeEndpointAsync",
              "InvokeEndpointWithResponseStream") and "EndpointName" in p:
        return [Check(f"sagemaker:{op}", (_endpoint(w, str(p["EndpointName"])),))]
    return None
