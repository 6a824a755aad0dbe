"""The one builder of a new instance group's `ClusterInstanceGroupSpecification`.

Both paths that make groups use it: the create pipeline's CreateCluster request and the
add-instance-group operation's UpdateCluster request. The spec is built from the decision-grade
request alone (a `ResolvedInstanceGroup`: capacity resolved against the catalogue) plus what the
control plane decided (the execution role, the group's subnet when it is not the cluster's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypd.clusters.create_request import CapacityType, ResolvedInstanceGroup, Taint


def group_spec(
    group: ResolvedInstanceGroup,
    *,
    execution_role_arn: str,
    override_subnet: str | None,
    security_group_id: str,
) -> dict[str, Any]:
    """One ClusterInstanceGroupSpecification (botocore member names)."""
    spec: dict[str, Any] = {
        "InstanceGroupName": group.name,
        "InstanceType": group.instance_type,
        "InstanceCount": group.count,
        "ExecutionRole": execution_role_arn,
    }
    capacity = group.resolved_capacity
    if capacity.type is CapacityType.TRAINING_PLAN:
        spec["TrainingPlanArn"] = capacity.training_plan_arn
    elif capacity.type is CapacityType.SPOT:
        spec["CapacityRequirements"] = {"Spot": {}}
    else:
        spec["CapacityRequirements"] = {"OnDemand": {}}
    if group.deep_health_checks:
        spec["OnStartDeepHealthChecks"] = [check.value for check in group.deep_health_checks]
    if group.efa_only:
        spec["NetworkInterface"] = {"InterfaceType": "efa-only"}
    kubernetes = kubernetes_config(group.labels, group.taints)
    if kubernetes:
        spec["KubernetesConfig"] = kubernetes
    if override_subnet:
        spec["OverrideVpcConfig"] = {
            "SecurityGroupIds": [security_group_id],
            "Subnets": [override_subnet],
        }
    return spec


def taint_spec(taint: Taint) -> dict[str, Any]:
    """One ClusterKubernetesTaint (a taint without a value has no Value member)."""
    return {
        "Key": taint.key,
        **({"Value": taint.value} if taint.value else {}),
        "Effect": taint.effect.value,
    }


def kubernetes_config(
    labels: Mapping[str, str], taints: Sequence[Taint], *, keep_empty: bool = False
) -> dict[str, Any]:
    """A ClusterKubernetesConfig of a group's labels and taints.

    At creation an empty map or list is left out; a change (`keep_empty`) declares "none" with
    an empty one, so the cluster removes what it had applied.
    """
    config: dict[str, Any] = {}
    if labels or keep_empty:
        config["Labels"] = dict(labels)
    if taints or keep_empty:
        config["Taints"] = [taint_spec(taint) for taint in taints]
    return config
