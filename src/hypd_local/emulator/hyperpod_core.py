"""The HyperPod emulator's state, and what every part of `HyperPodEmulator` builds on.

`HyperPodCore` holds the clusters (by ARN, in creation order), the training plans, the task
governance resources and the injected faults; statuses are computed lazily from the virtual clock
(``hyperpod_state.Timeline``). Here too: the node life cycles every operation schedules
(launch, terminate, reboot, replace, continuous provisioning) and a cluster's description at a
given time, which DescribeCluster answers and the state-change events carry.
"""

from __future__ import annotations

import base64
import copy
import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from hypd_local.emulator.errors import ResourceNotFound, ValidationException
from hypd_local.emulator.hyperpod_catalog import Catalog, TrainingPlanSeed
from hypd_local.emulator.hyperpod_iam import Role
from hypd_local.emulator.hyperpod_state import (
    HEALTHY,
    Cluster,
    Governed,
    Group,
    HyperPodDurations,
    Node,
)
from hypd_local.emulator.service import Clock, Injections, OffsetPages, ServiceEmulator

# Node statuses whose instance is up (counted in CurrentCount).
_UP = {"Running", "SystemUpdating", "Failure"}

Emit = Callable[[str, str, dict[str, Any], list[str]], None]

PAGES = OffsetPages(
    encode=lambda offset: base64.urlsafe_b64encode(f"o:{offset}".encode()).decode(),
    decode=lambda token: int(
        base64.urlsafe_b64decode(token.encode()).decode().removeprefix("o:")),
    invalid=lambda: ValidationException("The NextToken is invalid."),
    size_member="MaxResults",
    next_member="NextToken",
)
"""SageMaker's pagination: an opaque offset token (ValidationException on a foreign one)."""


def _epoch_ms(value: Any) -> Any:
    """Datetimes -> epoch milliseconds, recursively (EventBridge details carry numbers)."""
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, dict):
        return {k: _epoch_ms(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_epoch_ms(v) for v in value]
    return value


def _zone_id(zone: str) -> str:
    """us-west-2a -> usw2-az1 (the shape AWS zone ids have)."""
    region, letter = zone[:-1], zone[-1]
    parts = region.split("-")
    abbr = parts[0] + "".join(p[0] for p in parts[1:-1]) + parts[-1]
    return f"{abbr}-az{ord(letter) - ord('a') + 1}"


class _Plan:
    def __init__(self, seed: TrainingPlanSeed, arn: str, start: datetime) -> None:
        self.seed = seed
        self.arn = arn
        self.start = start
        self.end = start + timedelta(hours=seed.duration_hours)

    def status(self, t: datetime) -> str:
        if self.seed.status is not None:
            return self.seed.status
        if t < self.start:
            return "Scheduled"
        return "Active" if t < self.end else "Expired"



class HyperPodCore(ServiceEmulator):
    """SageMaker HyperPod clusters, nodes and training plans on a virtual clock: the state."""

    service = "sagemaker"

    def __init__(
        self,
        clock: Clock,
        emit: Emit,
        account_id: str,
        region: str,
        durations: HyperPodDurations | None = None,
        catalog: Catalog | None = None,
        *,
        eks_lookup: Callable[[str], str | None] | None = None,
        subnet_zone: Callable[[str], str | None] | None = None,
        role_lookup: Callable[[str], Role | None] | None = None,
        addon_lookup: Callable[[str, str], str | None] | None = None,
        caller_arn: Callable[[], str | None] | None = None,
    ) -> None:
        super().__init__(clock, account_id, region)
        self._emit = emit
        self.durations = durations or HyperPodDurations()
        self.catalog = catalog or Catalog.default()
        self._eks_lookup = eks_lookup or (lambda _arn: "ACTIVE")
        self._subnet_zone = subnet_zone
        # None: cluster roles are not looked up (nor checked); else the role of an ARN, or None
        # when it does not exist.
        self._role_lookup = role_lookup
        # (EKS cluster ARN, add-on name) -> the add-on's status, None when it is not installed
        self._addon_lookup = addon_lookup or (lambda _arn, _addon: "ACTIVE")
        # who is calling (CreatedBy / LastModifiedBy); None: not known
        self._caller_arn = caller_arn or (lambda: None)
        self._clusters: dict[str, Cluster] = {}  # by ARN, in creation order
        self._seq = 0
        self._ids = 0
        self._fail_next: Injections[str | None] = Injections()
        self._fail_autoscaling: Injections[str | None] = Injections()
        self._ice: set[tuple[str, str]] = set()
        start = self._now()
        self._plans: dict[str, _Plan] = {}
        for seed in self.catalog.training_plans:
            self._add_plan(seed, start)
        self._offerings: dict[str, dict[str, Any]] = {}
        self._governed: dict[str, Governed] = {}  # task governance resources, by id

    # --- plumbing ---------------------------------------------------------------------------

    def _now(self) -> datetime:
        now = self._clock.now()
        if now.tzinfo is None:
            raise ValueError("the clock must return aware datetimes")
        return now.astimezone(UTC)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _hex(self, n: int, salt: str = "") -> str:
        self._ids += 1
        data = f"{self.account_id}:{self.region}:{salt}:{self._ids}".encode()
        return hashlib.sha256(data).hexdigest()[:n]

    def _add_plan(self, seed: TrainingPlanSeed, start: datetime) -> None:
        when = seed.start if isinstance(seed.start, datetime) else start + seed.start
        arn = self._arn(f"training-plan/{seed.name}")
        self._plans[seed.name] = _Plan(seed, arn, when.astimezone(UTC))

    def _cluster(self, name_or_arn: str, now: datetime) -> Cluster:
        for c in self._clusters.values():
            if name_or_arn in (c.name, c.arn) and c.status.at(now) is not None:
                return c
        raise ResourceNotFound(f"Cluster '{name_or_arn}' not found.")

    def _node(self, c: Cluster, ident: str, now: datetime) -> Node | None:
        for n in c.live_nodes(now):
            if ident in (n.instance_id, n.logical_id):
                return n
        return None

    def _plan_use(self, plan_arn: str, t: datetime, skip: tuple[str, str] | None = None) -> int:
        used = 0
        for c in self._clusters.values():
            for g in c.live_groups(t):
                if g.spec.get("TrainingPlanArn") == plan_arn and (c.arn, g.name) != skip:
                    used += g.target.at(t) or 0
        return used

    # --- node life cycles ---------------------------------------------------------------------

    def _launch(self, c: Cluster, g: Group, count: int, at: datetime) -> datetime:
        """Launch ``count`` nodes at ``at``; returns when the last one is Running."""
        ready = at
        deep = bool(g.spec.get("OnStartDeepHealthChecks"))
        for _ in range(count):
            iid = "i-" + self._hex(17, "node")
            n = self._ids
            ip = f"10.{(n >> 16) & 255}.{(n >> 8) & 255}.{n & 255}"
            logical = f"{g.name}-{self._hex(12, 'logical')}" if c.continuous else None
            node = Node(iid, logical, g.name, g.instance_type, g.zone, ip, at)
            boot = at + self.durations.node_boot
            seq = self._next_seq
            if deep:
                end = boot + self.durations.deep_health_check
                node.status.schedule(at, seq, (at, "Pending"), (boot, "DeepHealthCheckInProgress"),
                                     (end, "Running"))
            else:
                end = boot
                node.status.schedule(at, seq, (at, "Pending"), (end, "Running"))
            node.health.schedule(at, seq, (at, HEALTHY))
            c.nodes[iid] = node
            ready = max(ready, end)
        return ready

    def _terminate(self, node: Node, at: datetime) -> datetime:
        gone = at + self.durations.node_terminate
        node.status.schedule(at, self._next_seq, (at, "ShuttingDown"), (gone, None))
        return gone

    def _reboot(self, c: Cluster, node: Node, at: datetime) -> None:
        up = at + self.durations.node_reboot
        seq = self._next_seq
        node.status.schedule(at, seq, (at, "Pending"), (up, "Running"))
        node.message.schedule(at, seq, (at, "Rebooting"), (up, None))
        node.health.schedule(at, seq, (up, HEALTHY))

    def _replace(self, c: Cluster, node: Node, at: datetime) -> None:
        self._terminate(node, at)
        g = c.groups[node.group]
        self._launch(c, g, 1, at)

    def _provision_continuous(self, now: datetime) -> None:
        """Continuous provisioning keeps trying to reach the target count: a group of a
        continuous cluster with fewer nodes than its target (it was short of capacity at create
        or update) launches the missing ones as soon as its instance type has capacity in its
        zone again. They boot like any launch (Pending, then Running after ``node_boot``; deep
        health checks if the group asks for them) and emit the same cluster events. Clusters
        and groups that are failing or being deleted are left alone."""
        for c in self._clusters.values():
            if not c.continuous or c.status.at(now) is None:
                continue
            if c.status.last() in (None, "Failed", "Deleting"):
                continue
            for g in c.groups.values():
                if g.status.at(now) is None or g.status.last() in (None, "Failed", "Deleting"):
                    continue
                if self._capacity_short(g):
                    continue
                # nodes that are up or on their way (not terminating, not gone)
                planned = sum(1 for n in c.nodes.values()
                              if n.group == g.name and n.status.last() is not None)
                missing = (g.target.at(now) or 0) - planned
                if missing > 0:
                    self._launch(c, g, missing, now)

    def _capacity_short(self, g: Group) -> bool:
        return (g.instance_type, g.zone) in self._ice and not g.spec.get("TrainingPlanArn")

    def _ice_message(self, g: Group) -> str:
        return (
            f"Instance group '{g.name}': we currently do not have sufficient capacity for "
            f"{g.instance_type} in {g.zone} (InsufficientInstanceCapacity). Try again later or "
            "choose another availability zone."
        )

    # --- descriptions -------------------------------------------------------------------------

    def _current_count(self, c: Cluster, g: Group, t: datetime) -> int:
        return sum(
            1 for n in c.nodes.values() if n.group == g.name and n.status.at(t) in _UP
        )

    def _group_details(self, c: Cluster, g: Group, t: datetime) -> dict[str, Any]:
        s = g.spec
        out: dict[str, Any] = {
            "CurrentCount": self._current_count(c, g, t),
            "TargetCount": g.target.at(t) or 0,
            "InstanceGroupName": g.name,
        }
        if "MinInstanceCount" in s:
            out["MinCount"] = s["MinInstanceCount"]
        if "InstanceType" in s:
            out["InstanceType"] = s["InstanceType"]
        if "InstanceRequirements" in s:
            current = sorted({n.instance_type for n in c.nodes.values()
                              if n.group == g.name and n.status.at(t) is not None})
            out["InstanceRequirements"] = {
                "DesiredInstanceTypes": list(s["InstanceRequirements"]["InstanceTypes"]),
                **({"CurrentInstanceTypes": current} if current else {}),
            }
        for key in ("LifeCycleConfig", "ExecutionRole", "ThreadsPerCore", "InstanceStorageConfigs",
                    "OnStartDeepHealthChecks", "OverrideVpcConfig", "ScheduledUpdateConfig",
                    "CapacityRequirements", "NetworkInterface"):
            if key in s:
                out[key] = copy.deepcopy(s[key])
        out["Status"] = g.status.at(t)
        if "TrainingPlanArn" in s:
            out["TrainingPlanArn"] = s["TrainingPlanArn"]
            plan = next((p for p in self._plans.values() if p.arn == s["TrainingPlanArn"]), None)
            if plan is not None:
                out["TrainingPlanStatus"] = plan.status(t)
        if "ImageId" in s:
            out["DesiredImageId"] = s["ImageId"]
            out["CurrentImageId"] = s.get("_CurrentImageId", s["ImageId"])
        k8s = s.get("KubernetesConfig")
        if k8s is not None:
            details: dict[str, Any] = {}
            if "Labels" in k8s:
                details["CurrentLabels"] = dict(k8s["Labels"])
                details["DesiredLabels"] = dict(k8s["Labels"])
            if "Taints" in k8s:
                details["CurrentTaints"] = copy.deepcopy(k8s["Taints"])
                details["DesiredTaints"] = copy.deepcopy(k8s["Taints"])
            out["KubernetesConfig"] = details
        return out

    def _describe_at(self, c: Cluster, t: datetime) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ClusterArn": c.arn,
            "ClusterName": c.name,
            "ClusterStatus": c.status.at(t),
            "CreationTime": c.created,
        }
        failure = c.failure.at(t)
        if failure:
            out["FailureMessage"] = failure
        out["InstanceGroups"] = [self._group_details(c, g, t) for g in c.live_groups(t)]
        for key in ("VpcConfig", "Orchestrator"):
            if key in c.spec:
                out[key] = copy.deepcopy(c.spec[key])
        tiered = c.tiered_storage.at(t)
        if tiered is not None:
            out["TieredStorageConfig"] = copy.deepcopy(tiered)
        out["NodeRecovery"] = c.spec.get("NodeRecovery", "Automatic")
        for key in ("NodeProvisioningMode", "ClusterRole"):
            if key in c.spec:
                out[key] = c.spec[key]
        as_status = c.autoscaling_status.at(t)
        if c.autoscaling is not None and as_status is not None:
            out["AutoScaling"] = {**c.autoscaling, "Status": as_status}
            as_failure = c.autoscaling_failure.at(t)
            if as_failure:
                out["AutoScaling"]["FailureMessage"] = as_failure
        return out
