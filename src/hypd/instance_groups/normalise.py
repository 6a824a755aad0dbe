"""The one normaliser: DescribeCluster instance groups -> UpdateCluster instance groups.

UpdateCluster takes a `ClusterInstanceGroupSpecification` per group, and a member left out of a
resubmitted group may be reset by the service. DescribeCluster returns a different shape,
`ClusterInstanceGroupDetails`: read-only members (CurrentCount, Status, ActiveOperations, ...) the
spec lacks, and Current*/Desired* pairs where the spec has one member. Every resubmission goes
through `resubmittable_group`, which builds the spec from ONE explicit allowlist,
`RESUBMITTED_MEMBERS` (spec member -> how it is derived from the details). Members of either shape
that are deliberately not carried are listed, with the reason, in `DROPPED_SPEC_MEMBERS` and
`DROPPED_DETAILS_MEMBERS`. The unit tests compare these lists with the installed botocore model,
so a botocore upgrade that adds a member fails until someone decides where it goes.

Rules, from the botocore sagemaker model documentation:

* InstanceCount <- TargetCount, never CurrentCount: CurrentCount lags a scale in progress, and
  resubmitting it would undo that scale.
* Where details carry a Current*/Desired* pair, the Desired* member is resubmitted (falling back to
  Current* when Desired* is absent). Desired* is the declared state the service is reconciling
  towards ("as specified in the most recent update request"; for images, "If a rollback occurs,
  the current image ID and desired image ID swap values", so Desired is always the target).
  Resubmitting Current* would revert a pending label/taint change, a patch reschedule, a flexible
  group's type change, or an AMI rollout of UpdateClusterSoftware.
* ImageReleaseVersion is carried too: the spec documents "If omitted, the latest available
  version is used", so leaving it out could turn a scale into a silent AMI upgrade.
* InstanceType and InstanceRequirements are mutually exclusive in the spec: a group whose details
  carry instance requirements (a flexible group) is resubmitted without InstanceType.

Pure: no AWS calls, no botocore at runtime; inputs are never mutated and outputs share no objects
with them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hypd.errors import PermanentError, ValidationError
from hypd.instance_groups.errors import ImmutableField, InstanceGroupNotFound

Details = Mapping[str, Any]


@dataclass(frozen=True)
class Rule:
    """How one spec member is derived: the details members it reads, and the derivation.

    `derive` returns None when the member is to be left out of the spec.
    """

    sources: tuple[str, ...]
    derive: Callable[[Details], Any]


def _verbatim(source: str) -> Rule:
    """The same shape on both sides: copied as is."""
    return Rule((source,), lambda details: copy.deepcopy(details.get(source)))


def desired_or_current(container: Mapping[str, Any], desired: str, current: str) -> Any:
    """The declared value of a Current*/Desired* pair: Desired, else Current (a copy)."""
    value = container.get(desired)
    if value is None:
        value = container.get(current)
    return copy.deepcopy(value)


def desired_or_current_rule(desired: str, current: str) -> Rule:
    return Rule((desired, current), lambda details: desired_or_current(details, desired, current))


# ---------------------------------------------------------------- nested shapes that differ
# ClusterInstanceRequirements (spec) <- ClusterInstanceRequirementDetails (details).
INSTANCE_REQUIREMENTS_MEMBERS: Mapping[str, tuple[str, str]] = {
    "InstanceTypes": ("DesiredInstanceTypes", "CurrentInstanceTypes"),
}

# ClusterKubernetesConfig (spec) <- ClusterKubernetesConfigDetails (details).
KUBERNETES_CONFIG_MEMBERS: Mapping[str, tuple[str, str]] = {
    "Labels": ("DesiredLabels", "CurrentLabels"),
    "Taints": ("DesiredTaints", "CurrentTaints"),
}

# ClusterAutoPatchConfig (spec) <- ClusterAutoPatchConfigDetails (details). A one-tuple is
# copied verbatim; a pair is (desired, current).
AUTO_PATCH_CONFIG_MEMBERS: Mapping[str, tuple[str] | tuple[str, str]] = {
    "PatchingStrategy": ("PatchingStrategy",),
    "PatchSchedule": ("DesiredPatchSchedule", "CurrentPatchSchedule"),
    "DeploymentConfig": ("DeploymentConfig",),
    "IdleWaitWindowInSeconds": ("IdleWaitWindowInSeconds",),
    "DrainPolicy": ("DrainPolicy",),
}


def _instance_requirements(details: Details) -> dict[str, Any] | None:
    found = details.get("InstanceRequirements")
    if not found:
        return None
    desired, current = INSTANCE_REQUIREMENTS_MEMBERS["InstanceTypes"]
    types = desired_or_current(found, desired, current)
    # InstanceTypes is required (1-20 items): with none known there is nothing to resubmit.
    return {"InstanceTypes": types} if types else None


def _instance_type(details: Details) -> Any:
    if _instance_requirements(details) is not None:
        return None  # mutually exclusive with InstanceRequirements
    return details.get("InstanceType")


def _kubernetes_config(details: Details) -> dict[str, Any] | None:
    found = details.get("KubernetesConfig")
    if found is None:
        return None
    spec: dict[str, Any] = {}
    for member, (desired, current) in KUBERNETES_CONFIG_MEMBERS.items():
        value = desired_or_current(found, desired, current)
        if value is not None:  # an empty map/list is a declared "none" and is kept
            spec[member] = value
    return spec or None


def _auto_patch_config(details: Details) -> dict[str, Any] | None:
    found = details.get("AutoPatchConfig")
    # PatchingStrategy is required by the spec; the service cannot hold a config without one.
    if not found or found.get("PatchingStrategy") is None:
        return None
    spec: dict[str, Any] = {}
    for member, sources in AUTO_PATCH_CONFIG_MEMBERS.items():
        if len(sources) == 2:
            value = desired_or_current(found, sources[0], sources[1])
        else:
            value = copy.deepcopy(found.get(sources[0]))
        if value is not None:
            spec[member] = value
    return spec


# ---------------------------------------------------------------- the allowlist
RESUBMITTED_MEMBERS: Mapping[str, Rule] = {
    "InstanceGroupName": _verbatim("InstanceGroupName"),
    "InstanceCount": _verbatim("TargetCount"),
    "MinInstanceCount": _verbatim("MinCount"),
    "InstanceType": Rule(("InstanceType",), _instance_type),
    "InstanceRequirements": Rule(("InstanceRequirements",), _instance_requirements),
    "LifeCycleConfig": _verbatim("LifeCycleConfig"),
    "ExecutionRole": _verbatim("ExecutionRole"),
    "ThreadsPerCore": _verbatim("ThreadsPerCore"),
    "InstanceStorageConfigs": _verbatim("InstanceStorageConfigs"),
    "OnStartDeepHealthChecks": _verbatim("OnStartDeepHealthChecks"),
    "TrainingPlanArn": _verbatim("TrainingPlanArn"),
    "OverrideVpcConfig": _verbatim("OverrideVpcConfig"),
    "ScheduledUpdateConfig": _verbatim("ScheduledUpdateConfig"),
    "ImageId": desired_or_current_rule("DesiredImageId", "CurrentImageId"),
    "ImageReleaseVersion": desired_or_current_rule(
        "DesiredImageReleaseVersion", "CurrentImageReleaseVersion"
    ),
    "AutoPatchConfig": Rule(("AutoPatchConfig",), _auto_patch_config),
    "KubernetesConfig": Rule(("KubernetesConfig",), _kubernetes_config),
    "SlurmConfig": _verbatim("SlurmConfig"),
    "CapacityRequirements": _verbatim("CapacityRequirements"),
    "NetworkInterface": _verbatim("NetworkInterface"),
}

# Spec members deliberately never resubmitted. Every spec member is derivable from the details
# today, so this is empty; a new spec member lands here (with its reason) or in the allowlist.
DROPPED_SPEC_MEMBERS: Mapping[str, str] = {}

# Details members that no rule reads, and why.
DROPPED_DETAILS_MEMBERS: Mapping[str, str] = {
    "CurrentCount": "observed count; lags a scale in progress (InstanceCount is TargetCount)",
    "InstanceTypeDetails": "observed per-type counts of a flexible group; read-only",
    "Status": "read-only group status",
    "TrainingPlanStatus": "read-only status of the training plan",
    "ImageVersionStatus": "read-only AMI freshness report",
    "ActiveOperations": "read-only counts of operations in flight",
    "TargetStateCount": "read-only count of nodes on the desired image",
    "SoftwareUpdateStatus": "read-only status of an UpdateClusterSoftware run",
    "ActiveSoftwareUpdateConfig": "the running UpdateClusterSoftware deployment; not a spec member",
}

REQUIRED_SPEC_MEMBERS = ("InstanceGroupName", "InstanceCount", "ExecutionRole")

# ---------------------------------------------------------------- what a change may touch
# Changeable by UpdateCluster on an existing group (AWS docs: count and lifecycle configuration;
# model docs: Kubernetes labels/taints are a declared state the cluster reconciles, a flexible
# group's desired types and a patch schedule come from "the most recent update request").
MUTABLE_MEMBERS: frozenset[str] = frozenset(
    {
        "InstanceCount",
        "MinInstanceCount",
        "LifeCycleConfig",
        "KubernetesConfig",
        "InstanceRequirements",
        "AutoPatchConfig",
    }
)

_FIXED_AT_CREATION = "it is fixed at creation"
_NOT_DOCUMENTED_MUTABLE = "it is fixed at creation (not documented as changeable by UpdateCluster)"
_SOFTWARE_UPDATE = "the group's AMI is changed by UpdateClusterSoftware, not by a group update"

# Every other spec member, with the reason a change to it is refused.
FIXED_MEMBERS: Mapping[str, str] = {
    "InstanceGroupName": "it names the group; a new name is a new group",
    "InstanceType": _FIXED_AT_CREATION,
    "ExecutionRole": _FIXED_AT_CREATION,
    "ThreadsPerCore": _FIXED_AT_CREATION,
    "CapacityRequirements": _FIXED_AT_CREATION,
    "NetworkInterface": _FIXED_AT_CREATION,
    "TrainingPlanArn": _FIXED_AT_CREATION,
    "OverrideVpcConfig": _NOT_DOCUMENTED_MUTABLE,
    "InstanceStorageConfigs": _NOT_DOCUMENTED_MUTABLE,
    "OnStartDeepHealthChecks": _NOT_DOCUMENTED_MUTABLE,
    "ScheduledUpdateConfig": _NOT_DOCUMENTED_MUTABLE,
    "SlurmConfig": _NOT_DOCUMENTED_MUTABLE,
    "ImageId": _SOFTWARE_UPDATE,
    "ImageReleaseVersion": _SOFTWARE_UPDATE,
}

_COUNT_MEMBERS = ("InstanceCount", "MinInstanceCount")
_MAX_INSTANCE_COUNT = 6758  # ClusterInstanceCount max in the model


# ---------------------------------------------------------------- public API
def resubmittable_group(details: Details) -> dict[str, Any]:
    """One DescribeCluster `ClusterInstanceGroupDetails` as an UpdateCluster group spec.

    Raises PermanentError when the details lack a member the spec requires (DescribeCluster
    always returns them for a real group, so this means the input is not what it claims).
    """
    spec: dict[str, Any] = {}
    for member, rule in RESUBMITTED_MEMBERS.items():
        value = rule.derive(details)
        if value is not None:
            spec[member] = value
    missing = [member for member in REQUIRED_SPEC_MEMBERS if member not in spec]
    if missing:
        name = details.get("InstanceGroupName", "<unnamed>")
        raise PermanentError(
            f"Instance group {name} as described lacks {', '.join(missing)}; "
            "it cannot be resubmitted",
            details={"instanceGroup": name, "missing": missing},
        )
    return spec


def changed_groups(
    described_cluster: Mapping[str, Any], changes: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The UpdateCluster `InstanceGroups` of a change: each group `changes` names, as described
    (through the allowlist), with its change applied.

    `changes` maps a group name to spec members (e.g. {"InstanceCount": 4}) to set on that group
    only. Groups the change does not name are not resubmitted: UpdateCluster updates the groups
    it lists and leaves the others as they are. A member outside `MUTABLE_MEMBERS` is refused
    with a ValidationError naming it, unless the value equals what the group already has (a
    no-op). A name the cluster lacks is a NotFoundError. Groups keep DescribeCluster's order.
    """
    described = {
        details.get("InstanceGroupName"): details
        for details in described_cluster.get("InstanceGroups", [])
    }
    unknown = sorted(set(changes) - set(described))
    if unknown:
        raise InstanceGroupNotFound(
            f"Instance group {unknown[0]} is not in the cluster",
            details={"instanceGroups": unknown},
        )
    groups: list[dict[str, Any]] = []
    for name, details in described.items():
        if name in changes:
            group = resubmittable_group(details)
            _apply(group, changes[name])
            groups.append(group)
    return groups


def _apply(group: dict[str, Any], change: Mapping[str, Any]) -> None:
    name = group["InstanceGroupName"]
    for member, value in change.items():
        if member in MUTABLE_MEMBERS:
            continue
        if member in FIXED_MEMBERS:
            if group.get(member) == value:
                continue  # restating the current value is not a change
            raise ImmutableField(
                f"{member} of instance group {name} cannot be changed: {FIXED_MEMBERS[member]}",
                details={"instanceGroup": name, "field": member},
            )
        raise ValidationError(
            f"{member} is not an instance group setting",
            details={"instanceGroup": name, "field": member},
        )
    for member in _COUNT_MEMBERS:
        if member in change:
            _check_count(name, member, change[member])
    for member, value in change.items():
        if value is None:
            if member in REQUIRED_SPEC_MEMBERS:
                raise ValidationError(
                    f"{member} of instance group {name} cannot be removed",
                    details={"instanceGroup": name, "field": member},
                )
            group.pop(member, None)
        else:
            group[member] = copy.deepcopy(value)
    if "InstanceType" in group and "InstanceRequirements" in group:
        raise ValidationError(
            f"Instance group {name} has a fixed InstanceType; InstanceRequirements applies only "
            "to a group created with instance requirements",
            details={"instanceGroup": name, "field": "InstanceRequirements"},
        )


def _check_count(name: str, member: str, value: Any) -> None:
    if value is not None and (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 0 <= value <= _MAX_INSTANCE_COUNT
    ):
        raise ValidationError(
            f"{member} of instance group {name} must be a whole number from 0 to "
            f"{_MAX_INSTANCE_COUNT}",
            details={"instanceGroup": name, "field": member},
        )
