"""Managed Karpenter autoscaling: prerequisites, the cluster role, the Kubernetes objects.

Pure: the checks read a `LiveCluster`; the role's documents and the manifests are plain dicts.
The tasks (`hypd.capacity.tasks`) make the AWS and Kubernetes calls.

From the HyperPod docs: autoscaling needs continuous provisioning and automatic node recovery;
HyperPod assumes the cluster role (trusting ``hyperpod.sagemaker.amazonaws.com``) to add and
remove nodes (``sagemaker:BatchAddClusterNodes`` / ``BatchDeleteClusterNodes``); a
``HyperpodNodeClass`` lists up to 10 existing instance groups, each in one zone, without deep
health checks and not on a training plan (reserved capacity); a Karpenter ``NodePool`` refers to
the NodeClass. Karpenter scales a group with nodes down to zero when idle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.capacity.live import LiveCluster
from hypd.capacity.requests import MAX_NODE_CLASS_GROUPS, AutoscalingRequest
from hypd.clusters.create_request import Problem, cluster_role_name
from hypd.clusters.models import HYPD_TAG_KEY

DEFAULT_CONSOLIDATE_AFTER = "5m"
DEFAULT_CONSOLIDATION_POLICY = "WhenEmptyOrUnderutilized"
DISRUPTION_BUDGET = "10%"
"""At most this share of the pool's nodes is disrupted at once."""

NODE_CLASS_API = "karpenter.sagemaker.amazonaws.com/v1"
NODE_CLASS_KIND = "HyperpodNodeClass"
NODE_POOL_API = "karpenter.sh/v1"
NODE_POOL_KIND = "NodePool"
OBJECT_NAME = "hypd"
"""The NodeClass and the NodePool hypd provisions (one of each per cluster)."""
MANAGED_BY = {"app.kubernetes.io/managed-by": "hypd"}

HEALTH_AGENT_NAMESPACE = "aws-hyperpod"
HEALTH_AGENT_NAME = "health-monitoring-agent"
"""The HyperPod health-monitoring agent (a DaemonSet of the dependency chart): a documented
prerequisite of autoscaling."""

ROLE_PATH = "/hypd/"
ROLE_POLICY_NAME = "hyperpod-autoscaling"

HYPERPOD_SERVICE = "hyperpod.sagemaker.amazonaws.com"
NODE_ACTIONS = ("sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes")


class AutoscalingSettings(BaseModel):
    """What hypd keeps for a cluster's autoscaling: the groups and the NodePool's disruption."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    instance_groups: tuple[str, ...] = Field(alias="instanceGroups")
    consolidate_after: str = Field(alias="consolidateAfter")
    consolidation_policy: str = Field(alias="consolidationPolicy")


class RoleOutput(BaseModel):
    """What an enable's role stage records: the cluster role, and what had to be written."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    role_name: str = Field(alias="roleName")
    role_arn: str = Field(alias="roleArn")
    changed: list[str] = Field(default_factory=list)


def resolve_settings(
    request: AutoscalingRequest, current: AutoscalingSettings | None
) -> AutoscalingSettings | None:
    """The settings an enable request asks for: the fields it sends, else the current ones,
    else the defaults. None when no groups are known (a first enable must name them)."""
    groups = request.instance_groups or (list(current.instance_groups) if current else None)
    if not groups:
        return None
    return AutoscalingSettings(
        instance_groups=tuple(groups),
        consolidate_after=request.consolidate_after
        or (current.consolidate_after if current else DEFAULT_CONSOLIDATE_AFTER),
        consolidation_policy=request.consolidation_policy
        or (current.consolidation_policy if current else DEFAULT_CONSOLIDATION_POLICY),
    )


# ---------------------------------------------------------------------------- prerequisites
def cluster_problems(live: LiveCluster) -> list[str]:
    """The cluster-level prerequisites that `live` misses."""
    problems: list[str] = []
    mode = live.described.get("NodeProvisioningMode") or "not set"
    if mode != "Continuous":
        problems.append(
            f"NodeProvisioningMode is {mode}; managed Karpenter needs Continuous provisioning"
        )
    recovery = live.described.get("NodeRecovery") or "not set"
    if recovery != "Automatic":
        problems.append(f"NodeRecovery is {recovery}; managed Karpenter needs Automatic")
    return problems


def group_problems(live: LiveCluster, names: Sequence[str]) -> list[Problem]:
    """Why each named group cannot be scaled by Karpenter (field ``instanceGroups[i]``)."""
    problems: list[Problem] = []
    if len(names) > MAX_NODE_CLASS_GROUPS:
        problems.append(
            Problem(
                "instanceGroups",
                f"a HyperpodNodeClass lists at most {MAX_NODE_CLASS_GROUPS} groups",
            )
        )
    for index, name in enumerate(names):
        where = f"instanceGroups[{index}]"
        details = live.group(name)
        if details is None:
            known = ", ".join(str(g.get("InstanceGroupName")) for g in live.groups)
            problems.append(Problem(where, f"no instance group {name} (groups: {known})"))
            continue
        if details.get("TrainingPlanArn"):
            problems.append(
                Problem(
                    where,
                    f"{name} uses a training plan: Karpenter scales on-demand and spot groups "
                    "only, not reserved capacity",
                )
            )
        if details.get("OnStartDeepHealthChecks"):
            problems.append(
                Problem(
                    where,
                    f"{name} has deep health checks, which Karpenter does not support (they "
                    "keep new nodes out of service for over an hour)",
                )
            )
        if len(live.group_zones(details)) > 1:
            problems.append(
                Problem(where, f"{name} has subnets in several zones; Karpenter needs one")
            )
    return problems


def warnings(live: LiveCluster, names: Sequence[str]) -> list[str]:
    """What the caller should know but need not fix."""
    found: list[str] = []
    for name in names:
        details = live.group(name)
        count = int((details or {}).get("TargetCount") or 0)
        if count:
            found.append(
                f"instance group {name} has {count} instances: Karpenter scales it down to "
                "zero when they are idle"
            )
    return found


# ---------------------------------------------------------------------------- the role
def role_name(tag: str) -> str:
    """``hypd-{tag}-autoscaling``, or a hash-shortened form that fits IAM's 64 characters."""
    return cluster_role_name(tag, "autoscaling", "as")


def trust_policy() -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": HYPERPOD_SERVICE},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def role_policy(cluster_arn: str) -> dict[str, Any]:
    """The documented permissions, for this one cluster."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ScaleThisCluster",
                "Effect": "Allow",
                "Action": list(NODE_ACTIONS),
                "Resource": cluster_arn,
            }
        ],
    }


def role_tags(tag: str) -> dict[str, str]:
    return {HYPD_TAG_KEY: tag}


# ---------------------------------------------------------------------------- manifests
def node_class(settings: AutoscalingSettings) -> dict[str, Any]:
    return {
        "apiVersion": NODE_CLASS_API,
        "kind": NODE_CLASS_KIND,
        "metadata": {"name": OBJECT_NAME, "labels": dict(MANAGED_BY)},
        "spec": {"instanceGroups": list(settings.instance_groups)},
    }


def node_pool(settings: AutoscalingSettings, instance_types: Sequence[str]) -> dict[str, Any]:
    """A NodePool on hypd's NodeClass: the groups' instance types, nodes that never expire, and
    consolidation that removes idle nodes (an idle group scales toward zero)."""
    requirement: dict[str, Any] = {"key": "node.kubernetes.io/instance-type"}
    if instance_types:
        requirement.update(operator="In", values=sorted(set(instance_types)))
    else:
        requirement["operator"] = "Exists"
    return {
        "apiVersion": NODE_POOL_API,
        "kind": NODE_POOL_KIND,
        "metadata": {"name": OBJECT_NAME, "labels": dict(MANAGED_BY)},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {
                        "group": NODE_CLASS_API.split("/")[0],
                        "kind": NODE_CLASS_KIND,
                        "name": OBJECT_NAME,
                    },
                    "expireAfter": "Never",
                    "requirements": [requirement],
                }
            },
            "disruption": {
                "consolidationPolicy": settings.consolidation_policy,
                "consolidateAfter": settings.consolidate_after,
                "budgets": [{"nodes": DISRUPTION_BUDGET}],
            },
        },
    }


def instance_types(live: LiveCluster, names: Sequence[str]) -> list[str]:
    """The instance types of the named groups (a flexible group's desired types)."""
    found: list[str] = []
    for name in names:
        details = live.group(name) or {}
        if details.get("InstanceType"):
            found.append(str(details["InstanceType"]))
        requirements = details.get("InstanceRequirements") or {}
        found += list(
            requirements.get("DesiredInstanceTypes") or requirements.get("CurrentInstanceTypes")
            or []
        )
    return found


def ready_problem(obj: Mapping[str, Any] | None, what: str) -> str | None:
    """Why a NodeClass or NodePool is not Ready (None when it is)."""
    if obj is None:
        return f"{what} does not exist"
    conditions = (obj.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None:
        return f"{what} has no Ready condition yet"
    if ready.get("status") == "True":
        return None
    failing = [
        f"{c.get('type')}: {c.get('message') or c.get('reason') or c.get('status')}"
        for c in conditions
        if c.get("status") != "True"
    ]
    return f"{what} is not Ready ({'; '.join(failing)})"


def spec_matches(obj: Mapping[str, Any] | None, manifest: Mapping[str, Any]) -> bool:
    """Whether the object's spec holds every field of the manifest's (the API server may add
    defaults of its own)."""
    return obj is not None and _contains(obj.get("spec"), manifest.get("spec"))


def _contains(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(
            _contains(actual.get(k), v) for k, v in wanted.items()
        )
    return bool(actual == wanted)
