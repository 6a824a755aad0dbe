"""What hypd made for a cluster tag, found in AWS (never in what hypd last wrote): the readers
the plan's inventory and the teardown's stages share. AWS only: the functions that delete
without the Kubernetes client (TeardownTasksFunction) import this, never `inventory`.

A resource is hypd's when it carries the tag ``hypd:tag`` = the cluster's tag (the HyperPod
and EKS clusters, FSx, compute subnets, the OIDC provider, the AMP workspace) or bears the name
hypd gives it (the network stack ``hypd-{tag}-network``, the roles ``hypd-{tag}-*``), or both
(the inference operator's TLS bucket hypd made: its name and the tags hypd gives it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from hypd.aws import amp as amp_api
from hypd.aws import cloudformation as cfn_api
from hypd.aws import ec2 as ec2_api
from hypd.aws import eks as eks_api
from hypd.aws import fsx as fsx_api
from hypd.aws import iam as iam_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.capacity.autoscaling import role_name as autoscaling_role_name
from hypd.clusters.models import HYPD_TAG_KEY
from hypd.create.network_stack import stack_name
from hypd.features.catalog import FEATURES, INSTALLED_BY_TAG, role_name, workspace_alias
from hypd.features.tls_bucket import read as read_tls_bucket
from hypd.network import TAG_ROLE
from hypd.teardown.plan import Resource

CFN_STACK_TAG = "aws:cloudformation:stack-name"
GONE = frozenset({"DELETED", "DELETE_COMPLETE"})
FEATURE_ADDONS = tuple(str(f.addon) for f in FEATURES.values() if f.addon)


def tagged(tags: Mapping[str, str], tag: str) -> bool:
    return tags.get(HYPD_TAG_KEY) == tag


def feature_first(names: Iterable[str]) -> list[str]:
    """Add-on names in deletion order: the features' first (they use the shared ones)."""
    names = list(names)
    return [n for n in FEATURE_ADDONS if n in names] + sorted(
        n for n in names if n not in FEATURE_ADDONS)


def addons(eks: Any, eks_name: str) -> list[Resource]:
    """The EKS cluster's add-ons, in deletion order."""
    found = []
    for name in feature_first(eks_api.list_addon_names(eks, eks_name)):
        raw = eks_api.find_addon(eks, eks_name, name)
        if raw is None:  # gone since it was listed
            continue
        installed_by = (raw.get("tags") or {}).get(INSTALLED_BY_TAG)
        bucket = _tls_bucket(raw)
        found.append(Resource("EksAddon", name, raw.get("addonArn"),
                              {"status": raw.get("status"),
                               **({"installedBy": installed_by} if installed_by else {}),
                               **({"tlsCertificateBucket": bucket} if bucket else {})}))
    return found


def _tls_bucket(addon: Mapping[str, Any]) -> str | None:
    """The user's bucket an inference add-on keeps its TLS certificates in, if it names one."""
    try:
        values = json.loads(str(addon.get("configurationValues") or "{}"))
    except ValueError:
        return None
    bucket = values.get("tlsCertificateS3Bucket") if isinstance(values, dict) else None
    return str(bucket) if bucket else None


def associations(eks: Any, eks_name: str) -> list[Resource]:
    """The EKS cluster's pod identity associations (``owned``: an add-on's, which goes with
    it; EKS refuses to delete it alone)."""
    return [
        Resource("PodIdentityAssociation", str(a.get("associationId")), a.get("associationArn"),
                 {"namespace": a.get("namespace"), "serviceAccount": a.get("serviceAccount"),
                  **({"owned": True} if a.get("ownerArn") else {})})
        for a in eks_api.list_pod_identity_associations(eks, eks_name)]


def quotas(sagemaker: Any, cluster_arn: str) -> list[Resource]:
    """The HyperPod cluster's compute quotas (task governance's teams)."""
    return [Resource("ComputeQuota", str(q.get("Name")), q.get("ComputeQuotaArn"),
                     {"id": q.get("ComputeQuotaId"), "status": q.get("Status")})
            for q in sagemaker_api.list_compute_quotas(sagemaker, cluster_arn)]


def scheduler_configs(sagemaker: Any, cluster_arn: str) -> list[Resource]:
    """The HyperPod cluster's scheduler configs."""
    return [Resource("ClusterSchedulerConfig", str(c.get("Name")),
                     c.get("ClusterSchedulerConfigArn"),
                     {"id": c.get("ClusterSchedulerConfigId"), "status": c.get("Status")})
            for c in sagemaker_api.list_scheduler_configs(sagemaker, cluster_arn)]


def tagged_oidc_providers(iam: Any, tag: str) -> list[Resource]:
    """The OIDC providers hypd made for the cluster (tagged ``hypd:tag``)."""
    return [Resource("OidcProvider", p.url, p.arn) for p in iam_api.list_oidc_providers(iam)
            if tagged(p.tags, tag)]


def tagged_file_systems(fsx: Any, tag: str) -> list[Resource]:
    """The FSx file systems tagged ``hypd:tag`` = `tag`, whatever their lifecycle."""
    found = []
    for system in fsx_api.list_file_systems(fsx):
        tags = {t["Key"]: t.get("Value", "") for t in system.get("Tags") or []}
        if tagged(tags, tag):
            found.append(Resource("FsxFileSystem", str(system["FileSystemId"]),
                                  system.get("ResourceARN"),
                                  {"lifecycle": system.get("Lifecycle")}))
    return found


def network_of(cfn: Any, ec2: Any, tag: str, vpc_id: str | None
               ) -> tuple[list[Resource], Resource | None]:
    """What hypd's network function made in the cluster's VPC outside the network stack (VPC
    endpoints, compute subnets, route tables: tagged ``hypd:role``, in deletion order), and
    the stack ``hypd-{tag}-network`` unless it is gone."""
    stack = cfn_api.describe_stack(cfn, stack_name(tag))
    vpc_id = (stack.outputs.get("VpcId") if stack else None) or vpc_id
    made: list[Resource] = []
    if vpc_id:
        role = {"tag-key": TAG_ROLE}
        for endpoint in ec2_api.list_vpc_endpoints(ec2, vpc_id, filters=role):
            tags = {t["Key"]: t.get("Value", "") for t in endpoint.get("Tags") or []}
            if CFN_STACK_TAG not in tags and str(endpoint.get("State")).lower() not in (
                    "deleted", "deleting"):
                made.append(Resource("VpcEndpoint", str(endpoint["VpcEndpointId"]),
                                     detail={"vpcId": vpc_id}))
        for subnet in ec2_api.list_subnets(ec2, vpc_id, filters=role):
            if CFN_STACK_TAG not in subnet.tags:
                made.append(Resource("Subnet", subnet.subnet_id,
                                     detail={"vpcId": vpc_id,
                                             "availabilityZone": subnet.availability_zone}))
        for table in ec2_api.list_route_tables(ec2, vpc_id, filters=role):
            if CFN_STACK_TAG not in table.tags and not table.main:
                made.append(Resource("RouteTable", table.route_table_id,
                                     detail={"vpcId": vpc_id}))
    found = (Resource("CloudFormationStack", stack.name, stack.stack_id,
                      {"status": stack.status, **({"vpcId": vpc_id} if vpc_id else {})})
             if stack is not None and stack.status not in GONE else None)
    return made, found


def cluster_roles(iam: Any, tag: str) -> list[Resource]:
    """The IAM roles hypd made for the cluster: the features' and autoscaling's."""
    names = [role_name(tag, role) for feature in FEATURES.values() for role in feature.roles]
    names.append(autoscaling_role_name(tag))
    found = []
    for name in dict.fromkeys(names):
        role = iam_api.get_role(iam, name)
        if role is not None:
            found.append(Resource("IamRole", role.name, role.arn))
    return found


def tagged_workspace(amp: Any, tag: str) -> Resource | None:
    """The AMP workspace observability made for the cluster (alias and tag), being deleted
    or not, or None."""
    workspace = amp_api.find_workspace(amp, workspace_alias(tag), deleting=True)
    if workspace is None or not tagged(workspace.get("tags") or {}, tag):
        return None
    return Resource("AmpWorkspace", str(workspace.get("alias")), workspace.get("arn"),
                    {"id": workspace.get("workspaceId"),
                     "status": (workspace.get("status") or {}).get("statusCode")})


def made_tls_bucket(s3: Any, tag: str, name: str) -> bool:
    """Is `name` the TLS bucket hypd made for cluster `tag` (the name hypd gives it and its
    tags)? False: gone, or not hypd's (a bucket the user named is kept)."""
    found = read_tls_bucket(s3, name)
    return found is not None and found.made_for(tag)
