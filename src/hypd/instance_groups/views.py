"""An instance group in hypd's terms: DescribeCluster's group details -> the API's view.

The view speaks the request's language (count, capacity type, EFA-only, dedicated subnet,
labels, taints), so a client reads a group in the shape it created it, and a PATCH is compared
with it field by field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.clusters.create_request import CapacityType, Taint
from hypd.instance_groups.normalise import desired_or_current


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class CapacityView(_Model):
    type: CapacityType
    training_plan_arn: str | None = Field(default=None, alias="trainingPlanArn")
    training_plan_status: str | None = Field(default=None, alias="trainingPlanStatus")


class InstanceGroupView(_Model):
    name: str
    instance_type: str | None = Field(
        default=None, alias="instanceType", description="Absent for a flexible group."
    )
    instance_types: list[str] = Field(
        default_factory=list,
        alias="instanceTypes",
        description="A flexible group's desired types (InstanceRequirements).",
    )
    count: int = Field(description="The target count (TargetCount).")
    current_count: int = Field(alias="currentCount", description="Instances up now.")
    min_count: int | None = Field(default=None, alias="minCount")
    status: str | None = None
    capacity: CapacityView
    deep_health_checks: list[str] = Field(default_factory=list, alias="deepHealthChecks")
    efa_only: bool = Field(alias="efaOnly")
    availability_zone: str | None = Field(default=None, alias="availabilityZone")
    subnet_ids: list[str] = Field(alias="subnetIds")
    dedicated_subnet: bool = Field(alias="dedicatedSubnet")
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    execution_role: str | None = Field(default=None, alias="executionRole")
    threads_per_core: int | None = Field(default=None, alias="threadsPerCore")
    autoscaled: bool = Field(
        default=False, description="Whether managed Karpenter scales this group."
    )


def capacity_type(details: Mapping[str, Any]) -> CapacityType:
    """How a group is paid for: a training plan, Spot, or On-Demand (HyperPod's default)."""
    if details.get("TrainingPlanArn"):
        return CapacityType.TRAINING_PLAN
    if "Spot" in (details.get("CapacityRequirements") or {}):
        return CapacityType.SPOT
    return CapacityType.ON_DEMAND


def described_taints(details: Mapping[str, Any]) -> list[Taint]:
    config = details.get("KubernetesConfig") or {}
    raw = desired_or_current(config, "DesiredTaints", "CurrentTaints") or []
    return [
        Taint.model_validate(
            {"key": t["Key"], "value": t.get("Value") or None, "effect": t["Effect"]}
        )
        for t in raw
    ]


def described_labels(details: Mapping[str, Any]) -> dict[str, str]:
    config = details.get("KubernetesConfig") or {}
    labels = desired_or_current(config, "DesiredLabels", "CurrentLabels")
    return dict(labels or {})


def group_view(
    details: Mapping[str, Any],
    *,
    availability_zone: str | None,
    subnet_ids: Sequence[str],
    dedicated: bool,
    autoscaled: bool = False,
) -> InstanceGroupView:
    """The view of one DescribeCluster group; the network facts come from EC2 (the caller)."""
    requirements = details.get("InstanceRequirements") or {}
    return InstanceGroupView(
        name=str(details["InstanceGroupName"]),
        instance_type=details.get("InstanceType"),
        instance_types=list(
            desired_or_current(requirements, "DesiredInstanceTypes", "CurrentInstanceTypes") or []
        ),
        count=int(details.get("TargetCount") or 0),
        current_count=int(details.get("CurrentCount") or 0),
        min_count=details.get("MinCount"),
        status=details.get("Status"),
        capacity=CapacityView(
            type=capacity_type(details),
            training_plan_arn=details.get("TrainingPlanArn"),
            training_plan_status=details.get("TrainingPlanStatus"),
        ),
        deep_health_checks=list(details.get("OnStartDeepHealthChecks") or []),
        efa_only=(details.get("NetworkInterface") or {}).get("InterfaceType") == "efa-only",
        availability_zone=availability_zone,
        subnet_ids=list(subnet_ids),
        dedicated_subnet=dedicated,
        labels=described_labels(details),
        taints=described_taints(details),
        execution_role=details.get("ExecutionRole"),
        threads_per_core=details.get("ThreadsPerCore"),
        autoscaled=autoscaled,
    )
