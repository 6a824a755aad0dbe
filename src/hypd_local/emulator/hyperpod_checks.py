"""HyperPod's checks of a CreateCluster or UpdateCluster: instance groups (types, zones,
subnets, training plans, EFA), the EKS cluster, quotas and plan capacity, what an update may
not change, execution and cluster roles."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from hypd_local.emulator.errors import ResourceLimitExceeded, ValidationException
from hypd_local.emulator.hyperpod_events import HyperPodEvents
from hypd_local.emulator.hyperpod_iam import Role, execution_role_problem
from hypd_local.emulator.hyperpod_state import Group


class HyperPodChecks(HyperPodEvents):
    """Validation shared by create and update (raises ValidationException naming the field)."""

    def _zones_of(self, subnets: Iterable[str]) -> list[str] | None:
        if self._subnet_zone is None:
            return None
        zones: list[str] = []
        for subnet in subnets:
            zone = self._subnet_zone(subnet)
            if zone is None:
                raise ValidationException(f"The subnet ID '{subnet}' does not exist.")
            if zone not in zones:
                zones.append(zone)
        return zones

    def _check_group(
        self, spec: dict[str, Any], vpc: dict[str, Any] | None, now: datetime
    ) -> tuple[str, str]:
        """Semantic checks of one group spec; returns (instance type, zone)."""
        name = spec["InstanceGroupName"]
        itype = spec.get("InstanceType")
        requirements = spec.get("InstanceRequirements")
        if itype is None and requirements is None:
            raise ValidationException(
                f"Instance group '{name}': one of InstanceType or InstanceRequirements is required."
            )
        if itype is not None and requirements is not None:
            raise ValidationException(
                f"Instance group '{name}': InstanceType and InstanceRequirements are mutually "
                "exclusive."
            )
        candidates: list[str] = (
            [itype] if itype else list((requirements or {}).get("InstanceTypes", []))
        )
        if spec.get("MinInstanceCount", 0) > spec["InstanceCount"]:
            raise ValidationException(
                f"Instance group '{name}': MinInstanceCount cannot exceed InstanceCount."
            )
        taints = (spec.get("KubernetesConfig") or {}).get("Taints")
        if taints and spec.get("OnStartDeepHealthChecks"):
            raise ValidationException(
                f"Instance group '{name}': KubernetesConfig.Taints cannot be set on an instance "
                "group with OnStartDeepHealthChecks."
            )
        network = (spec.get("NetworkInterface") or {}).get("InterfaceType")
        if network is not None:
            for t in candidates:
                info = self.catalog.instance_types.get(t)
                if info is None or not info.efa:
                    raise ValidationException(
                        f"Instance group '{name}': NetworkInterface.InterfaceType '{network}' "
                        f"requires an EFA-capable instance type; {t} does not support EFA."
                    )
        subnets = (spec.get("OverrideVpcConfig") or vpc or {}).get("Subnets", [])
        zones = self._zones_of(subnets)
        plan_arn = spec.get("TrainingPlanArn")
        if plan_arn is not None:
            plan = next((p for p in self._plans.values() if p.arn == plan_arn), None)
            if plan is None:
                raise ValidationException(
                    f"Instance group '{name}': training plan '{plan_arn}' does not exist."
                )
            status = plan.status(now)
            if status not in ("Active", "Scheduled"):
                raise ValidationException(
                    f"Instance group '{name}': training plan '{plan.seed.name}' is {status}."
                )
            if candidates != [plan.seed.instance_type]:
                raise ValidationException(
                    f"Instance group '{name}': InstanceType must be {plan.seed.instance_type}, the "
                    f"instance type of training plan '{plan.seed.name}'."
                )
            zone = plan.seed.availability_zone
            if zones is not None and zone not in zones:
                raise ValidationException(
                    f"Instance group '{name}': training plan '{plan.seed.name}' reserves capacity "
                    f"in {zone}, but the subnets are in {', '.join(zones)}."
                )
            return plan.seed.instance_type, zone
        search = zones if zones is not None else self.catalog.zones_in(self.region)
        for t in candidates:
            for zone in search:
                if self.catalog.offers(zone, t):
                    return t, zone
        if zones is None and not search:  # a region the catalogue does not know: accept
            return candidates[0], f"{self.region}a"
        raise ValidationException(
            f"Instance group '{name}': instance type {' or '.join(candidates)} is not supported "
            f"in the availability zone(s) {', '.join(search)} of the specified subnets."
        )

    def _check_eks(self, orchestrator: dict[str, Any] | None) -> None:
        eks = (orchestrator or {}).get("Eks")
        if eks is None:
            return
        arn = eks["ClusterArn"]
        status = self._eks_lookup(arn)
        if status is None:
            raise ValidationException(f"The EKS cluster '{arn}' does not exist.")
        if status != "ACTIVE":
            raise ValidationException(
                f"The EKS cluster '{arn}' is in {status} status; it must be ACTIVE."
            )

    def _check_tiered_storage(
        self, config: dict[str, Any] | None, orchestrator: dict[str, Any] | None
    ) -> None:
        """Managed tiered checkpointing: EKS-orchestrated clusters only; the Mode and the
        memory percentage as the model allows (the middleware validated them already; a
        direct call is checked the same way)."""
        if config is None:
            return
        if not (orchestrator or {}).get("Eks"):
            raise ValidationException(
                "TieredStorageConfig is supported only for clusters orchestrated by Amazon EKS "
                "(Orchestrator.Eks)."
            )
        mode = config.get("Mode")
        if mode not in ("Enable", "Disable"):
            raise ValidationException(
                f"TieredStorageConfig.Mode must be Enable or Disable, not {mode!r}."
            )
        percentage = config.get("InstanceMemoryAllocationPercentage")
        if percentage is not None and (
            isinstance(percentage, bool) or not isinstance(percentage, int)
            or not 0 <= percentage <= 100
        ):
            raise ValidationException(
                "TieredStorageConfig.InstanceMemoryAllocationPercentage must be an integer from "
                f"0 to 100, not {percentage!r}."
            )

    def _check_capacity(
        self, changes: list[tuple[str | None, dict[str, Any], str]], now: datetime
    ) -> None:
        """changes: (cluster arn or None, group spec, instance type) whose counts would apply."""
        keys = {(arn, s["InstanceGroupName"]) for arn, s, _t in changes}
        by_type: dict[str, int] = {}
        by_plan: dict[str, int] = {}
        for c in self._clusters.values():
            for g in c.live_groups(now):
                if (c.arn, g.name) in keys:
                    continue
                count = g.target.at(now) or 0
                if g.spec.get("TrainingPlanArn"):
                    by_plan[g.spec["TrainingPlanArn"]] = by_plan.get(g.spec["TrainingPlanArn"], 0)
                    by_plan[g.spec["TrainingPlanArn"]] += count
                else:
                    by_type[g.instance_type] = by_type.get(g.instance_type, 0) + count
        for _arn, spec, itype in changes:
            plan_arn = spec.get("TrainingPlanArn")
            if plan_arn:
                by_plan[plan_arn] = by_plan.get(plan_arn, 0) + spec["InstanceCount"]
            else:
                by_type[itype] = by_type.get(itype, 0) + spec["InstanceCount"]
        for _arn, spec, itype in changes:
            plan_arn = spec.get("TrainingPlanArn")
            if plan_arn:
                plan = next(p for p in self._plans.values() if p.arn == plan_arn)
                if by_plan[plan_arn] > plan.seed.instance_count:
                    available = plan.seed.instance_count - (
                        by_plan[plan_arn] - spec["InstanceCount"]
                    )
                    raise ValidationException(
                        f"Instance group '{spec['InstanceGroupName']}': InstanceCount "
                        f"{spec['InstanceCount']} exceeds the {max(available, 0)} available "
                        f"instance(s) of training plan '{plan.seed.name}'."
                    )
            elif by_type[itype] > self.catalog.quota(itype):
                raise ResourceLimitExceeded(
                    f"The account-level service limit '{itype} for cluster usage' is "
                    f"{self.catalog.quota(itype)} Instances, with current utilization of "
                    f"{by_type[itype] - spec['InstanceCount']} Instances and a request delta of "
                    f"{spec['InstanceCount']} Instances. Please use AWS Service Quotas to request "
                    "an increase for this quota."
                )

    def _check_immutable(self, old: Group, spec: dict[str, Any]) -> None:
        name = old.name
        for key in ("InstanceType", "ExecutionRole", "ThreadsPerCore", "TrainingPlanArn"):
            if key in spec and spec[key] != old.spec.get(key):
                raise ValidationException(
                    f"Instance group '{name}': {key} cannot be updated (from "
                    f"'{old.spec.get(key)}' to '{spec[key]}'); create a new instance group "
                    "instead."
                )

        def capacity_type(s: dict[str, Any]) -> str:
            return "Spot" if "Spot" in (s.get("CapacityRequirements") or {}) else "OnDemand"

        if "CapacityRequirements" in spec and capacity_type(spec) != capacity_type(old.spec):
            raise ValidationException(
                f"Instance group '{name}': CapacityRequirements cannot be updated (capacity type "
                f"{capacity_type(old.spec)} to {capacity_type(spec)})."
            )
        old_net = (old.spec.get("NetworkInterface") or {}).get("InterfaceType")
        if "NetworkInterface" in spec and spec["NetworkInterface"].get("InterfaceType") != old_net:
            raise ValidationException(
                f"Instance group '{name}': NetworkInterface cannot be updated."
            )
        if "InstanceRequirements" in spec and spec["InstanceRequirements"] != old.spec.get(
            "InstanceRequirements"
        ):
            raise ValidationException(
                f"Instance group '{name}': InstanceRequirements cannot be updated."
            )

    def _execution_role_problem(self, groups: list[dict[str, Any]], spec: dict[str, Any]
                                ) -> str | None:
        """Why a group's instances could not run with its execution role (the cluster then
        fails, as HyperPod's does when its instances cannot attach their interfaces)."""
        if self._role_lookup is None:
            return None
        eks_arn = ((spec.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
        for group in groups:
            arn = group["ExecutionRole"]
            problem = execution_role_problem(
                self._role_lookup(arn), arn, group["InstanceGroupName"],
                partition=self.partition, region=self.region, account=self.account_id,
                eks_arn=eks_arn)
            if problem is not None:
                return problem
        return None

    def _autoscaling_role(
        self, mode: str | None, role_arn: str | None, node_recovery: str
    ) -> Role | None:
        """Check the documented prerequisites of enabling AutoScaling; returns the cluster role
        (None when roles are not looked up). Raises ValidationException naming what is wrong."""
        if mode != "Continuous":
            raise ValidationException(
                "AutoScaling can only be enabled when NodeProvisioningMode is Continuous."
            )
        if not role_arn:
            raise ValidationException("ClusterRole is required to enable AutoScaling.")
        if node_recovery != "Automatic":
            raise ValidationException(
                "AutoScaling can only be enabled when NodeRecovery is Automatic."
            )
        if self._role_lookup is None:
            return None
        role = self._role_lookup(role_arn)
        if role is None:
            raise ValidationException(f"The ClusterRole '{role_arn}' does not exist.")
        return role
