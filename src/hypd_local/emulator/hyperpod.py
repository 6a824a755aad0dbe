"""The SageMaker HyperPod emulator (see docs/emulator.md, "Contracts").

``HyperPodEmulator`` is a plain class with one method per SageMaker operation, named in snake
case, taking the validated input dict (model member names) and returning the output dict
(model member names, aware datetimes). Statuses are computed lazily from the virtual clock
(``hyperpod_state.Timeline``); ``tick()`` emits the EventBridge events of every status change
that has come due, exactly once and in time order. It never sleeps nor reads the wall clock.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

from hypd_local.emulator.errors import (
    ConflictException,
    ResourceInUse,
    ResourceLimitExceeded,
    ResourceNotFound,
    ValidationException,
)
from hypd_local.emulator.hyperpod_catalog import Catalog, TrainingPlanSeed
from hypd_local.emulator.hyperpod_iam import (
    Role,
    autoscaling_role_problem,
    execution_role_problem,
)
from hypd_local.emulator.hyperpod_state import (
    HEALTHY,
    Cluster,
    Group,
    Health,
    HyperPodDurations,
    Node,
    Notice,
)
from hypd_local.partitions import partition_of

__all__ = ["AUTOSCALING_FAILS", "Catalog", "HyperPodDurations", "HyperPodEmulator"]

SOURCE = "aws.sagemaker"
STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
CLUSTER_EVENT = "SageMaker HyperPod Cluster Event"

# Node statuses whose instance is up (counted in CurrentCount).
_UP = {"Running", "SystemUpdating", "Failure"}
_DEFAULT_MAX_RESULTS = 100
_NO_RESTRICTED = "RestrictedInstanceGroups are not supported by this emulator."
AUTOSCALING_FAILS = (
    "AutoScaling could not be enabled: the managed Karpenter controller failed to start."
)
# ListClusterEvents filters: request member -> event member (exact match).
_EVENT_FILTERS = (("InstanceGroupName", "InstanceGroupName"), ("NodeId", "InstanceId"),
                  ("ResourceType", "ResourceType"), ("OperationId", "OperationId"))
# Create-time choices an UpdateCluster group spec may omit (they are kept, not reset).
_KEPT_ON_UPDATE = ("InstanceType", "InstanceRequirements", "ThreadsPerCore",
                   "CapacityRequirements", "NetworkInterface", "TrainingPlanArn", "ImageId",
                   "_CurrentImageId")

P = ParamSpec("P")
R = TypeVar("R")

Emit = Callable[[str, str, dict[str, Any], list[str]], None]


class Clock(Protocol):
    def now(self) -> datetime: ...


def _operation(
    fn: Callable[Concatenate[HyperPodEmulator, P], R],
) -> Callable[Concatenate[HyperPodEmulator, P], R]:
    """Run under the emulator's lock, after emitting whatever came due; then emit the events
    of the changes the operation made effective at once (e.g. ``Updating``)."""

    @functools.wraps(fn)
    def wrapper(self: HyperPodEmulator, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            self._tick_locked()
            result = fn(self, *args, **kwargs)
            self._tick_locked()
            return result

    return cast("Callable[Concatenate[HyperPodEmulator, P], R]", wrapper)


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


class HyperPodEmulator:
    """SageMaker HyperPod clusters, nodes and training plans on a virtual clock."""

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
    ) -> None:
        self._clock = clock
        self._emit = emit
        self.account_id = account_id
        self.region = region
        self.partition = partition_of(region)
        self.durations = durations or HyperPodDurations()
        self.catalog = catalog or Catalog.default()
        self._eks_lookup = eks_lookup or (lambda _arn: "ACTIVE")
        self._subnet_zone = subnet_zone
        # None: cluster roles are not looked up (nor checked); else the role of an ARN, or None
        # when it does not exist.
        self._role_lookup = role_lookup
        self._lock = threading.RLock()
        self._clusters: dict[str, Cluster] = {}  # by ARN, in creation order
        self._seq = 0
        self._ids = 0
        self._fail_next: list[tuple[str | None, str]] = []
        self._fail_autoscaling: list[tuple[str | None, str]] = []
        self._ice: set[tuple[str, str]] = set()
        start = self._now()
        self._plans: dict[str, _Plan] = {}
        for seed in self.catalog.training_plans:
            self._add_plan(seed, start)
        self._offerings: dict[str, dict[str, Any]] = {}

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
        arn = (f"arn:{self.partition}:sagemaker:{self.region}:{self.account_id}:"
               f"training-plan/{seed.name}")
        self._plans[seed.name] = _Plan(seed, arn, when.astimezone(UTC))

    def _cluster(self, name_or_arn: str, now: datetime) -> Cluster:
        for c in self._clusters.values():
            if name_or_arn in (c.name, c.arn) and c.status.at(now) is not None:
                return c
        raise ResourceNotFound(f"Cluster '{name_or_arn}' not found.")

    # --- fault hooks and knobs ----------------------------------------------------------------

    def fail_next_create(
        self,
        cluster_name: str | None = None,
        message: str = "Cluster creation failed: lifecycle script exited with a non-zero code.",
    ) -> None:
        """The next CreateCluster (of ``cluster_name``, or any) ends Failed with ``message``."""
        with self._lock:
            self._fail_next.append((cluster_name, message))

    def fail_next_autoscaling(
        self, cluster_name: str | None = None, message: str = AUTOSCALING_FAILS
    ) -> None:
        """The next enabling of AutoScaling (CreateCluster or UpdateCluster, of ``cluster_name``
        or any cluster) ends with AutoScaling ``Failed`` and ``message`` as its FailureMessage;
        the cluster itself becomes InService as usual."""
        with self._lock:
            self._fail_autoscaling.append((cluster_name, message))

    def insufficient_capacity(self, instance_type: str, zone: str, enabled: bool = True) -> None:
        """AWS has no capacity for ``instance_type`` in ``zone`` until called with False.

        When capacity returns, the groups of continuous-provisioning clusters that are below
        their target there launch the missing nodes at once (see ``_provision_continuous``)."""
        with self._lock:
            self._tick_locked()  # what came due before the change, at the old capacity
            if enabled:
                self._ice.add((instance_type, zone))
            else:
                self._ice.discard((instance_type, zone))
            self._tick_locked()

    def set_durations(
        self, durations: HyperPodDurations | None = None, **changes: timedelta
    ) -> None:
        """Replace the durations (already planned steps keep their times)."""
        with self._lock:
            base = durations or self.durations
            self.durations = base.with_changes(**changes) if changes else base

    @_operation
    def make_node_unhealthy(
        self,
        cluster_name: str,
        node_id: str,
        reason: str = "GPU health check failed",
        action: str = "Replace",
        repair: bool | None = None,
    ) -> None:
        """Node ``node_id`` turns unhealthy now. HyperPod repairs it itself when ``repair``
        (default: when NodeRecovery is Automatic); otherwise its health event's RepairAction is
        None and its Recommendation names the repair, and the node stays in Failure until a
        client reboots or replaces it."""
        if action not in ("Reboot", "Replace"):
            raise ValueError("action must be Reboot or Replace")
        now = self._now()
        c = self._cluster(cluster_name, now)
        node = self._node(c, node_id, now)
        if node is None:
            raise ResourceNotFound(f"Node '{node_id}' not found in cluster '{c.name}'.")
        if repair is None:
            repair = c.spec.get("NodeRecovery", "Automatic") == "Automatic"
        seq = self._next_seq
        node.health.schedule(now, seq, (now, Health("Unhealthy", reason, action, repair)))
        node.status.schedule(now, seq, (now, "Failure"))
        node.message.schedule(now, seq, (now, reason))
        if repair:
            start = now + self.durations.auto_repair_start
            if action == "Reboot":
                self._reboot(c, node, start)
            else:
                self._replace(c, node, start)

    def add_training_plan(self, seed: TrainingPlanSeed) -> str:
        """Seed one more training plan; returns its ARN."""
        with self._lock:
            self._add_plan(seed, self._now())
            return self._plans[seed.name].arn

    # --- events -------------------------------------------------------------------------------

    def tick(self) -> int:
        """Emit the events of every change that came due since the last tick; returns how many."""
        with self._lock:
            return self._tick_locked()

    def next_due(self) -> datetime | None:
        """When the earliest scheduled change strictly after ``clock.now()`` happens (a status,
        health or message step, or a cluster event), or None when nothing is scheduled.
        Training plans change status by the clock alone and emit nothing: they do not count."""
        with self._lock:
            now = self._now()
            times = [t for c in self._clusters.values() if (t := c.next_change(now)) is not None]
            return min(times, default=None)

    def _tick_locked(self) -> int:
        now = self._now()
        self._provision_continuous(now)
        items: list[tuple[datetime, int, str, dict[str, Any], str]] = []
        for c in list(self._clusters.values()):
            for prev, step in c.status.due(now):
                if step.value is not None and step.value != prev:
                    detail = _epoch_ms(self._describe_at(c, step.at))
                    items.append((step.at, step.seq, STATE_CHANGE, detail, c.arn))
            for node in c.nodes.values():
                for prev_h, hstep in node.health.due(now):
                    if hstep.value is None or prev_h is None or hstep.value == prev_h:
                        continue
                    detail = self._health_detail(c, node, hstep.value)
                    items.append((hstep.at, hstep.seq, NODE_HEALTH, detail, c.arn))
                for prev_s, sstep in node.status.due(now):
                    if c.continuous and sstep.value != prev_s:
                        detail = self._node_event(c, node, sstep.value, sstep.at)
                        items.append((sstep.at, sstep.seq, CLUSTER_EVENT, detail, c.arn))
            while c.notices_emitted < len(c.notices) and c.notices[c.notices_emitted].at <= now:
                n = c.notices[c.notices_emitted]
                c.notices_emitted += 1
                items.append((n.at, n.seq, CLUSTER_EVENT, self._notice_detail(c, n), c.arn))
        items.sort(key=lambda item: (item[0], item[1]))
        for at, _seq, detail_type, detail, arn in items:
            if detail_type == CLUSTER_EVENT:
                event = copy.deepcopy(detail["EventDetails"])
                self._clusters[arn].events.append({**event, "EventTime": at})
        self._purge(now)
        for _at, _seq, detail_type, detail, arn in items:
            self._emit(SOURCE, detail_type, detail, [arn])
        return len(items)

    def _purge(self, now: datetime) -> None:
        for arn, c in list(self._clusters.items()):
            for nid, node in list(c.nodes.items()):
                if node.status.at(now) is None and node.status.emitted == len(node.status.steps):
                    del c.nodes[nid]
            for gname, g in list(c.groups.items()):
                if g.status.ends_gone() and g.status.at(now) is None:
                    del c.groups[gname]
            if c.status.ends_gone() and c.status.at(now) is None and (
                c.status.emitted == len(c.status.steps)
            ):
                del self._clusters[arn]

    def _health_detail(self, c: Cluster, node: Node, health: Health) -> dict[str, Any]:
        # The documented shape ("Amazon SageMaker AI events in EventBridge"): the repair
        # HyperPod takes is its RepairAction; one it does not take is only its Recommendation.
        if health.status == "Healthy":
            recommendation = "No action needed."
        elif health.action == "Reboot":
            recommendation = "Please Reboot the Faulty Node."
        else:
            recommendation = "Please Replace the Faulty Node."
        return {
            "ClusterName": c.name,
            "ClusterArn": c.arn,
            "InstanceId": node.instance_id,
            "Tags": {t["Key"]: t.get("Value", "") for t in c.tags},
            "HealthSummary": {
                "HealthStatus": health.status,
                "HealthStatusReason": health.reason or "Healthy",
                "RepairAction": health.action if health.repairing else "None",
                "Recommendation": recommendation,
            },
        }

    def _event_id(self) -> str:
        h = self._hex(32, "event")
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"

    def _node_event(
        self, c: Cluster, node: Node, status: str | None, at: datetime
    ) -> dict[str, Any]:
        descriptions = {
            "Pending": "Instance provisioning started.",
            "DeepHealthCheckInProgress": "Deep health checks started on the instance.",
            "Running": "Instance is running and joined the cluster.",
            "ShuttingDown": "Instance termination started.",
            "SystemUpdating": "Instance software update started.",
            "Failure": "Instance failed health checks.",
            None: "Instance terminated.",
        }
        metadata: dict[str, Any] = {"Instance": {}}
        if node.logical_id:
            metadata["Instance"]["NodeLogicalId"] = node.logical_id
        return {
            "EventDetails": {
                "EventId": self._event_id(),
                "ClusterArn": c.arn,
                "ClusterName": c.name,
                "InstanceGroupName": node.group,
                "InstanceId": node.instance_id,
                "ResourceType": "Instance",
                "EventTime": int(at.timestamp() * 1000),
                "EventLevel": "Error" if status == "Failure" else "Info",
                "Description": descriptions.get(status, f"Instance status {status}."),
                "EventDetails": {"EventMetadata": metadata},
            }
        }

    def _notice_detail(self, c: Cluster, n: Notice) -> dict[str, Any]:
        detail: dict[str, Any] = {
            "EventId": self._event_id(),
            "ClusterArn": c.arn,
            "ClusterName": c.name,
            "ResourceType": n.resource_type,
            "EventTime": int(n.at.timestamp() * 1000),
            "EventLevel": n.level,
            "Description": n.description,
            "EventDetails": {"EventMetadata": {}},
        }
        if n.group:
            detail["InstanceGroupName"] = n.group
            g = c.groups.get(n.group)
            if g is not None:
                detail["EventDetails"]["EventMetadata"]["InstanceGroupScaling"] = {
                    "InstanceCount": self._current_count(c, g, n.at),
                    "TargetCount": g.target.at(n.at) or 0,
                    "FailureMessage": n.description,
                }
        return {"EventDetails": detail}

    # --- validation shared by create and update ---------------------------------------------

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

    def _plan_use(self, plan_arn: str, t: datetime, skip: tuple[str, str] | None = None) -> int:
        used = 0
        for c in self._clusters.values():
            for g in c.live_groups(t):
                if g.spec.get("TrainingPlanArn") == plan_arn and (c.arn, g.name) != skip:
                    used += g.target.at(t) or 0
        return used

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

    def _node(self, c: Cluster, ident: str, now: datetime) -> Node | None:
        for n in c.live_nodes(now):
            if ident in (n.instance_id, n.logical_id):
                return n
        return None

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

    # --- clusters -----------------------------------------------------------------------------

    @_operation
    def create_cluster(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        name = req["ClusterName"]
        if any(c.name == name and c.status.at(now) is not None for c in self._clusters.values()):
            raise ResourceInUse(f"Cluster with name '{name}' already exists.")
        groups = req.get("InstanceGroups") or []
        if not groups and not req.get("RestrictedInstanceGroups"):
            raise ValidationException("At least one instance group must be specified.")
        if req.get("RestrictedInstanceGroups"):
            raise ValidationException(_NO_RESTRICTED)
        names = [g["InstanceGroupName"] for g in groups]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValidationException(f"Duplicate instance group names: {', '.join(dupes)}.")
        self._check_eks(req.get("Orchestrator"))
        continuous = req.get("NodeProvisioningMode") == "Continuous"
        autoscaling = req.get("AutoScaling")
        enabling = autoscaling is not None and autoscaling["Mode"] == "Enable"
        role = (
            self._autoscaling_role(req.get("NodeProvisioningMode"), req.get("ClusterRole"),
                                   req.get("NodeRecovery", "Automatic"))
            if enabling else None
        )
        vpc = req.get("VpcConfig")
        resolved = [self._check_group(spec, vpc, now) for spec in groups]
        self._check_capacity([(None, s, t) for s, (t, _z) in zip(groups, resolved, strict=True)],
                             now)

        arn = (f"arn:{self.partition}:sagemaker:{self.region}:{self.account_id}:"
               f"cluster/{self._hex(12, name)}")
        spec: dict[str, Any] = {
            k: copy.deepcopy(req[k])
            for k in ("VpcConfig", "Orchestrator", "NodeRecovery", "NodeProvisioningMode",
                      "ClusterRole", "TieredStorageConfig")
            if k in req
        }
        c = Cluster(name, arn, now, spec, copy.deepcopy(req.get("Tags") or []))
        self._clusters[arn] = c
        seq = self._next_seq
        c.status.schedule(now, seq, (now, "Creating"))
        fail = _take(self._fail_next, name) or self._execution_role_problem(groups, spec)
        d = self.durations
        for gspec, (itype, zone) in zip(groups, resolved, strict=True):
            g = Group(gspec["InstanceGroupName"], copy.deepcopy(gspec), itype, zone)
            g.status.schedule(now, seq, (now, "Creating"))
            g.target.schedule(now, seq, (now, gspec["InstanceCount"]))
            c.groups[g.name] = g
        short = [g for g in c.groups.values() if self._capacity_short(g)]
        short_names = {g.name for g in short}
        if fail is None and short and not continuous:
            fail = self._ice_message(short[0])
        ready = now + d.cluster_create
        launched: list[Node] = []
        for g in c.groups.values():
            if g.name in short_names:
                if continuous:
                    c.notices.append(Notice(now + d.capacity_failure, self._next_seq(), "Error",
                                            self._ice_message(g), g.name))
                continue
            before = set(c.nodes)
            end = self._launch(c, g, g.target.at(now) or 0, now)
            launched += [c.nodes[i] for i in c.nodes if i not in before]
            if not continuous:
                ready = max(ready, end)
        if fail is not None:
            at = now + d.cluster_create
            for node in launched:
                node.status.schedule(at, self._next_seq, (at, "ShuttingDown"),
                                     (at + d.node_terminate, None))
            for g in c.groups.values():
                g.status.schedule(now, self._next_seq, (at, "Failed"))
            c.failure.schedule(now, self._next_seq, (at, fail))
            c.status.schedule(now, self._next_seq, (at, "Failed"))
            if autoscaling is not None and enabling:
                c.autoscaling = dict(autoscaling)
                c.autoscaling_status.schedule(
                    now, self._next_seq, (now, "Creating"), (at, "Failed")
                )
                c.autoscaling_failure.schedule(now, self._next_seq, (at, fail))
            return {"ClusterArn": arn}
        if autoscaling is not None and enabling:
            ready = max(ready, self._enable_autoscaling(c, autoscaling, role, now))
        seq = self._next_seq
        for g in c.groups.values():
            g.status.schedule(now, seq, (ready, "InService"))
        c.status.schedule(now, seq, (ready, "InService"))
        return {"ClusterArn": arn}

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

    def _enable_autoscaling(
        self, c: Cluster, autoscaling: dict[str, Any], role: Role | None, now: datetime
    ) -> datetime:
        """AutoScaling goes Creating, then InService; or Failed with a FailureMessage when a
        failure was injected or the cluster role fails HyperPod's checks (judged now). Returns
        when it settles."""
        at = now + self.durations.autoscaling_enable
        problem = _take(self._fail_autoscaling, c.name)
        if problem is None and role is not None:
            problem = autoscaling_role_problem(role, c.arn, {t["Key"]: t["Value"]
                                                             for t in c.tags})
        c.autoscaling = dict(autoscaling)
        seq = self._next_seq
        c.autoscaling_status.schedule(
            now, seq, (now, "Creating"), (at, "InService" if problem is None else "Failed")
        )
        c.autoscaling_failure.schedule(now, seq, (now, None), *([(at, problem)] if problem else []))
        return at

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
        for key in ("VpcConfig", "Orchestrator", "TieredStorageConfig"):
            if key in c.spec:
                out[key] = copy.deepcopy(c.spec[key])
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

    @_operation
    def describe_cluster(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        return self._describe_at(self._cluster(req["ClusterName"], now), now)

    @_operation
    def list_clusters(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        rows = []
        for c in self._clusters.values():
            status = c.status.at(now)
            if status is None:
                continue
            if req.get("NameContains") and req["NameContains"] not in c.name:
                continue
            if req.get("CreationTimeAfter") and not c.created > req["CreationTimeAfter"]:
                continue
            if req.get("CreationTimeBefore") and not c.created < req["CreationTimeBefore"]:
                continue
            plans = sorted({g.spec["TrainingPlanArn"] for g in c.live_groups(now)
                            if "TrainingPlanArn" in g.spec})
            if req.get("TrainingPlanArn") and req["TrainingPlanArn"] not in plans:
                continue
            row: dict[str, Any] = {
                "ClusterArn": c.arn,
                "ClusterName": c.name,
                "CreationTime": c.created,
                "ClusterStatus": status,
            }
            if plans:
                row["TrainingPlanArns"] = plans
            rows.append(row)
        if req.get("SortBy") == "NAME":
            rows.sort(key=lambda r: r["ClusterName"])
        else:
            rows.sort(key=lambda r: r["CreationTime"])  # stable: creation order breaks ties
        if req.get("SortOrder") == "Descending":
            rows.reverse()
        return _listing("ClusterSummaries", rows, req)

    @_operation
    def delete_cluster(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        status = c.status.at(now)
        if status not in ("InService", "Failed"):
            raise ConflictException(
                f"Cluster '{c.name}' is in {status} status and cannot be deleted; wait until it "
                "is InService or Failed."
            )
        d = self.durations
        end = now + d.cluster_delete
        seq = self._next_seq
        for node in c.live_nodes(now):
            if node.status.at(now) != "ShuttingDown":
                self._terminate(node, now)
        for g in c.live_groups(now):
            g.status.schedule(now, seq, (now, "Deleting"), (end, None))
        if c.autoscaling is not None and c.autoscaling_status.at(now) is not None:
            c.autoscaling_status.schedule(now, seq, (now, "Deleting"))
            c.autoscaling_failure.schedule(now, seq, (now, None))
        c.status.schedule(now, seq, (now, "Deleting"), (end, None))
        return {"ClusterArn": c.arn}

    @_operation
    def update_cluster(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        status = c.status.at(now)
        if status != "InService":
            raise ConflictException(
                f"Cluster '{c.name}' is in {status} status; it can only be updated when InService."
            )
        if req.get("RestrictedInstanceGroups") or req.get("RestrictedInstanceGroupsConfig"):
            raise ValidationException(_NO_RESTRICTED)
        new_eks = ((req.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
        old_eks = ((c.spec.get("Orchestrator") or {}).get("Eks") or {}).get("ClusterArn")
        if new_eks is not None and new_eks != old_eks:
            raise ValidationException(
                "Orchestrator.Eks.ClusterArn cannot be updated: the EKS cluster of a HyperPod "
                "cluster is immutable."
            )
        specs = req.get("InstanceGroups") or []
        to_delete = list(dict.fromkeys(req.get("InstanceGroupsToDelete") or []))
        live = {g.name: g for g in c.live_groups(now)}
        names = [s["InstanceGroupName"] for s in specs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValidationException(f"Duplicate instance group names: {', '.join(dupes)}.")
        for name in to_delete:
            if name not in live:
                raise ValidationException(
                    f"InstanceGroupsToDelete: instance group '{name}' does not exist in cluster "
                    f"'{c.name}'."
                )
            if name in names:
                raise ValidationException(
                    f"Instance group '{name}' cannot be both updated and deleted."
                )
        if to_delete and len(to_delete) == len(live) and not [n for n in names if n not in live]:
            raise ValidationException("A cluster must keep at least one instance group.")
        # the cluster-level settings after the update
        mode = req.get("NodeProvisioningMode", c.spec.get("NodeProvisioningMode"))
        role_arn = req.get("ClusterRole", c.spec.get("ClusterRole"))
        recovery = req.get("NodeRecovery", c.spec.get("NodeRecovery", "Automatic"))
        enabled = c.autoscaling is not None and c.autoscaling.get("Mode") == "Enable"
        autoscaling = req.get("AutoScaling")
        role: Role | None = None
        if autoscaling is not None and autoscaling["Mode"] == "Enable":
            role = self._autoscaling_role(mode, role_arn, recovery)
        elif enabled and autoscaling is None and recovery != "Automatic":
            raise ValidationException(
                "NodeRecovery must stay Automatic while AutoScaling is enabled; disable "
                "AutoScaling first."
            )
        if (
            "ClusterRole" in req
            and req["ClusterRole"] != c.spec.get("ClusterRole")
            and enabled
        ):
            raise ValidationException(
                "ClusterRole cannot be changed while AutoScaling is enabled; disable AutoScaling "
                "first."
            )
        vpc = c.spec.get("VpcConfig")
        changes: list[tuple[str | None, dict[str, Any], str]] = []
        resolved: dict[str, tuple[str, str]] = {}
        merged_specs: list[dict[str, Any]] = []
        for given in specs:
            name = given["InstanceGroupName"]
            old = live.get(name)
            spec = copy.deepcopy(given)
            if old is not None:
                self._check_immutable(old, given)
                for key in _KEPT_ON_UPDATE:
                    if key in old.spec and key not in spec:
                        spec[key] = copy.deepcopy(old.spec[key])
            merged_specs.append(spec)
            itype, zone = self._check_group(spec, vpc, now)
            if old is not None:
                itype, zone = old.instance_type, old.zone
            resolved[name] = (itype, zone)
            changes.append((c.arn, spec, itype))
        for name in to_delete:
            gone = live[name]
            changes.append((c.arn, {**gone.spec, "InstanceCount": 0}, gone.instance_type))
        self._check_capacity(changes, now)

        # apply
        d = self.durations
        seq = self._next_seq
        for key in ("NodeRecovery", "NodeProvisioningMode", "ClusterRole", "TieredStorageConfig"):
            if key in req:
                c.spec[key] = copy.deepcopy(req[key])
        c.failure.schedule(now, seq, (now, None))
        c.status.schedule(now, seq, (now, "Updating"))
        ready = now + d.cluster_update
        rollback: list[tuple[Group, int, bool]] = []  # (group, old target, added)
        for merged in merged_specs:
            name = merged["InstanceGroupName"]
            itype, zone = resolved[name]
            old = live.get(name)
            count = merged["InstanceCount"]
            if old is None:
                g = Group(name, merged, itype, zone)
                c.groups[name] = g
                g.status.schedule(now, seq, (now, "Creating"))
                g.target.schedule(now, seq, (now, count))
                before = 0
            else:
                g = old
                g.spec = merged
                before = g.target.at(now) or 0
                g.target.schedule(now, seq, (now, count))
                g.status.schedule(now, seq, (now, "Updating"))
            group_ready = now + d.cluster_update
            if count > before:
                if self._capacity_short(g):
                    if c.continuous:
                        c.notices.append(Notice(now + d.capacity_failure, self._next_seq(),
                                                "Error", self._ice_message(g), g.name))
                    else:
                        rollback.append((g, before, old is None))
                else:
                    group_ready = max(group_ready, self._launch(c, g, count - before, now))
            elif count < before:
                up = [n for n in c.live_nodes(now)
                      if n.group == name and n.status.at(now) != "ShuttingDown"]
                for node in list(reversed(up))[: before - count]:
                    group_ready = max(group_ready, self._terminate(node, now))
            if c.continuous and not rollback:
                group_ready = now + d.cluster_update
            g.status.schedule(now, self._next_seq, (group_ready, "InService"))
            ready = max(ready, group_ready)
        for name in to_delete:
            g = live[name]
            end = now + d.group_delete
            for node in c.live_nodes(now):
                if node.group == name and node.status.at(now) != "ShuttingDown":
                    self._terminate(node, now)
            g.status.schedule(now, seq, (now, "Deleting"), (end, None))
            g.target.schedule(now, seq, (now, 0))
            ready = max(ready, end)
        if autoscaling is not None:
            retry = c.autoscaling_status.at(now) == "Failed"
            if autoscaling["Mode"] == "Enable" and (not enabled or retry):
                ready = max(ready, self._enable_autoscaling(c, autoscaling, role, now))
            elif autoscaling["Mode"] == "Disable" and enabled:
                c.autoscaling = dict(autoscaling)
                end = now + d.autoscaling_disable
                c.autoscaling_status.schedule(now, seq, (now, "Deleting"), (end, None))
                c.autoscaling_failure.schedule(now, seq, (now, None))
                ready = max(ready, end)
        if rollback:
            at = now + d.capacity_failure
            back = at + d.node_terminate
            c.failure.schedule(now, self._next_seq, (at, self._ice_message(rollback[0][0])))
            for g, old_target, added in rollback:
                if added:
                    g.status.schedule(now, self._next_seq, (at, "Deleting"), (back, None))
                else:
                    g.target.schedule(now, self._next_seq, (at, old_target))
                    g.status.schedule(now, self._next_seq, (back, "InService"))
            c.status.schedule(now, self._next_seq, (at, "RollingBack"),
                              (max(ready, back), "InService"))
            return {"ClusterArn": c.arn}
        c.status.schedule(now, self._next_seq, (ready, "InService"))
        return {"ClusterArn": c.arn}

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

    # --- nodes --------------------------------------------------------------------------------

    def _node_summary(self, node: Node, t: datetime, logical: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "InstanceGroupName": node.group,
            "InstanceId": node.instance_id,
            "InstanceType": node.instance_type,
            "LaunchTime": node.launch_time,
            "InstanceStatus": self._instance_status(node, t),
            "PrivateDnsHostname": self._dns(node),
        }
        if logical and node.logical_id:
            out["NodeLogicalId"] = node.logical_id
        updated = node.software.at(t)
        if updated is not None:
            out["LastSoftwareUpdateTime"] = updated
        return out

    def _dns(self, node: Node) -> str:
        return f"ip-{node.ip.replace('.', '-')}.{self.region}.compute.internal"

    def _instance_status(self, node: Node, t: datetime) -> dict[str, Any]:
        status: dict[str, Any] = {"Status": node.status.at(t)}
        message = node.message.at(t)
        if message:
            status["Message"] = message
        return status

    @_operation
    def list_cluster_nodes(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        nodes = c.live_nodes(now)
        if req.get("InstanceGroupNameContains"):
            nodes = [n for n in nodes if req["InstanceGroupNameContains"] in n.group]
        if req.get("CreationTimeAfter"):
            nodes = [n for n in nodes if n.launch_time > req["CreationTimeAfter"]]
        if req.get("CreationTimeBefore"):
            nodes = [n for n in nodes if n.launch_time < req["CreationTimeBefore"]]
        if req.get("SortBy") == "NAME":
            nodes.sort(key=lambda n: (n.group, n.instance_id))
        else:
            nodes.sort(key=lambda n: n.launch_time)
        if req.get("SortOrder") == "Descending":
            nodes.reverse()
        rows = [self._node_summary(n, now, bool(req.get("IncludeNodeLogicalIds"))) for n in nodes]
        return _listing("ClusterNodeSummaries", rows, req)

    @_operation
    def describe_cluster_node(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        ident = req.get("NodeId") or req.get("NodeLogicalId")
        if not ident:
            raise ValidationException("Either NodeId or NodeLogicalId must be specified.")
        node = self._node(c, ident, now)
        if node is None:
            raise ResourceNotFound(f"Node '{ident}' not found in cluster '{c.name}'.")
        g = c.groups[node.group]
        out = self._node_summary(node, now, True)
        out["PrivatePrimaryIp"] = node.ip
        out["Placement"] = {
            "AvailabilityZone": node.zone,
            "AvailabilityZoneId": _zone_id(node.zone),
        }
        for key in ("LifeCycleConfig", "OverrideVpcConfig", "ThreadsPerCore",
                    "InstanceStorageConfigs"):
            if key in g.spec:
                out[key] = copy.deepcopy(g.spec[key])
        k8s = g.spec.get("KubernetesConfig")
        if k8s:
            out["KubernetesConfig"] = {
                **({"CurrentLabels": dict(k8s["Labels"]), "DesiredLabels": dict(k8s["Labels"])}
                   if "Labels" in k8s else {}),
                **({"CurrentTaints": copy.deepcopy(k8s["Taints"]),
                    "DesiredTaints": copy.deepcopy(k8s["Taints"])} if "Taints" in k8s else {}),
            }
        out["CapacityType"] = (
            "Spot" if "Spot" in (g.spec.get("CapacityRequirements") or {}) else "OnDemand"
        )
        if "NetworkInterface" in g.spec:
            out["NetworkInterface"] = copy.deepcopy(g.spec["NetworkInterface"])
        return {"NodeDetails": out}

    def _batch(
        self,
        req: dict[str, Any],
        action: Callable[[Cluster, Node, datetime], None],
        allowed: set[str],
        not_found: str,
        bad_status: str,
        code_key: str,
    ) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        if not req.get("NodeIds") and not req.get("NodeLogicalIds"):
            raise ValidationException("Either NodeIds or NodeLogicalIds must be specified.")
        ok: list[str] = []
        failed: list[dict[str, Any]] = []
        ok_logical: list[str] = []
        failed_logical: list[dict[str, Any]] = []
        for key, ids in (("NodeId", req.get("NodeIds") or []),
                         ("NodeLogicalId", req.get("NodeLogicalIds") or [])):
            good = ok if key == "NodeId" else ok_logical
            bad = failed if key == "NodeId" else failed_logical
            for ident in dict.fromkeys(ids):
                node = self._node(c, ident, now)
                if node is None:
                    bad.append({key: ident, code_key: not_found,
                                "Message": f"Node '{ident}' was not found in cluster '{c.name}'."})
                    continue
                status = node.status.at(now)
                if status not in allowed:
                    bad.append({key: ident, code_key: bad_status,
                                "Message": f"Node '{ident}' is in {status} status."})
                    continue
                action(c, node, now)
                good.append(ident)
        out: dict[str, Any] = {}
        if ok:
            out["Successful"] = ok
        if failed:
            out["Failed"] = failed
        if ok_logical:
            out["SuccessfulNodeLogicalIds"] = ok_logical
        if failed_logical:
            out["FailedNodeLogicalIds"] = failed_logical
        return out

    @_operation
    def batch_delete_cluster_nodes(self, req: dict[str, Any]) -> dict[str, Any]:
        def delete(c: Cluster, node: Node, now: datetime) -> None:
            g = c.groups[node.group]
            g.target.schedule(now, self._next_seq, (now, max((g.target.at(now) or 0) - 1, 0)))
            self._terminate(node, now)

        return self._batch(req, delete, {"Running", "Failure", "Pending",
                                         "DeepHealthCheckInProgress"},
                           "NodeIdNotFound", "InvalidNodeStatus", "Code")

    @_operation
    def batch_reboot_cluster_nodes(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._batch(req, self._reboot, {"Running", "Failure"},
                           "InstanceIdNotFound", "InvalidInstanceStatus", "ErrorCode")

    @_operation
    def batch_replace_cluster_nodes(self, req: dict[str, Any]) -> dict[str, Any]:
        return self._batch(req, self._replace, {"Running", "Failure"},
                           "InstanceIdNotFound", "InvalidInstanceStatus", "ErrorCode")

    @_operation
    def update_cluster_software(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        status = c.status.at(now)
        if status != "InService":
            raise ConflictException(
                f"Cluster '{c.name}' is in {status} status; its software can only be updated "
                "when InService."
            )
        live = {g.name: g for g in c.live_groups(now)}
        wanted = [s["InstanceGroupName"] for s in req.get("InstanceGroups") or []] or list(live)
        for name in wanted:
            if name not in live:
                raise ValidationException(
                    f"Instance group '{name}' does not exist in cluster '{c.name}'."
                )
        end = now + self.durations.software_update
        seq = self._next_seq
        for name in wanted:
            g = live[name]
            if "ImageId" in req:
                g.spec["_CurrentImageId"] = g.spec.get("ImageId", "default")
                g.spec["ImageId"] = req["ImageId"]
            g.status.schedule(now, seq, (now, "SystemUpdating"), (end, "InService"))
            for node in c.live_nodes(now):
                if node.group == name and node.status.at(now) == "Running":
                    node.status.schedule(now, seq, (now, "SystemUpdating"), (end, "Running"))
                    node.software.schedule(now, seq, (end, end))
        c.status.schedule(now, seq, (now, "SystemUpdating"), (end, "InService"))
        return {"ClusterArn": c.arn}

    # --- cluster events -----------------------------------------------------------------------

    @_operation
    def list_cluster_events(self, req: dict[str, Any]) -> dict[str, Any]:
        """The ``SageMaker HyperPod Cluster Event``s emitted so far (newest first unless
        ``SortOrder`` is Ascending), filtered and paginated."""
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        events = [e for e in c.events if all(
            e.get(member) == req[key] for key, member in _EVENT_FILTERS if key in req
        )]
        if req.get("EventTimeAfter"):
            events = [e for e in events if e["EventTime"] > req["EventTimeAfter"]]
        if req.get("EventTimeBefore"):
            events = [e for e in events if e["EventTime"] < req["EventTimeBefore"]]
        events.sort(key=lambda e: e["EventTime"])
        if req.get("SortOrder", "Descending") == "Descending":
            events.reverse()
        rows = [{k: copy.deepcopy(v) for k, v in e.items() if k != "EventDetails"}
                for e in events]
        return _listing("Events", rows, req)

    @_operation
    def describe_cluster_event(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        for event in c.events:
            if event["EventId"] == req["EventId"]:
                return {"EventDetails": copy.deepcopy(event)}
        raise ResourceNotFound(f"Event '{req['EventId']}' not found in cluster '{c.name}'.")

    # --- tags ---------------------------------------------------------------------------------

    def _tagged(self, arn: str, now: datetime) -> Cluster:
        c = self._clusters.get(arn)
        if c is None or c.status.at(now) is None:
            raise ResourceNotFound(f"Resource '{arn}' not found.")
        return c

    def cluster_facts(self, name_or_arn: str) -> tuple[str, dict[str, str]] | None:
        """A cluster's ARN and tags, for authorising a request on it; None when there is none
        (IAM then authorises the request against ``cluster/*``)."""
        with self._lock:
            now = self._now()
            for c in self._clusters.values():
                if name_or_arn in (c.name, c.arn) and c.status.at(now) is not None:
                    return c.arn, {t["Key"]: t["Value"] for t in c.tags}
        return None

    def training_plan_arn(self, name_or_arn: str) -> str | None:
        with self._lock:
            for plan in self._plans.values():
                if name_or_arn in (plan.seed.name, plan.arn):
                    return plan.arn
        return None

    @_operation
    def list_tags(self, req: dict[str, Any]) -> dict[str, Any]:
        c = self._tagged(req["ResourceArn"], self._now())
        return {"Tags": copy.deepcopy(c.tags)}

    @_operation
    def add_tags(self, req: dict[str, Any]) -> dict[str, Any]:
        c = self._tagged(req["ResourceArn"], self._now())
        merged = {t["Key"]: t["Value"] for t in c.tags}
        merged.update({t["Key"]: t["Value"] for t in req["Tags"]})
        if len(merged) > 50:
            raise ValidationException("A resource can have at most 50 tags.")
        c.tags = [{"Key": k, "Value": v} for k, v in merged.items()]
        return {"Tags": copy.deepcopy(req["Tags"])}

    @_operation
    def delete_tags(self, req: dict[str, Any]) -> dict[str, Any]:
        c = self._tagged(req["ResourceArn"], self._now())
        drop = set(req["TagKeys"])
        c.tags = [t for t in c.tags if t["Key"] not in drop]
        return {}

    # --- training plans -----------------------------------------------------------------------

    def _plan_summary(self, plan: _Plan, t: datetime, full: bool) -> dict[str, Any]:
        seed = plan.seed
        status = plan.status(t)
        in_use = self._plan_use(plan.arn, t)
        out: dict[str, Any] = {
            "TrainingPlanArn": plan.arn,
            "TrainingPlanName": seed.name,
            "Status": status,
            "DurationHours": seed.duration_hours,
            "DurationMinutes": 0,
            "StartTime": plan.start,
            "EndTime": plan.end,
            "UpfrontFee": seed.upfront_fee,
            "CurrencyCode": seed.currency_code,
            "TotalInstanceCount": seed.instance_count,
            "AvailableInstanceCount": max(seed.instance_count - in_use, 0),
            "InUseInstanceCount": in_use,
            "TargetResources": list(seed.target_resources),
            "ReservedCapacitySummaries": [{
                "ReservedCapacityArn": (f"arn:{self.partition}:sagemaker:{self.region}:"
                                        f"{self.account_id}:reserved-capacity/{seed.name}-rc"),
                "ReservedCapacityType": "Instance",
                "InstanceType": seed.instance_type,
                "TotalInstanceCount": seed.instance_count,
                "Status": status,
                "AvailabilityZone": seed.availability_zone,
                "AvailabilityZoneId": _zone_id(seed.availability_zone),
                "DurationHours": seed.duration_hours,
                "DurationMinutes": 0,
                "StartTime": plan.start,
                "EndTime": plan.end,
            }],
        }
        if full:
            out["UnhealthyInstanceCount"] = 0
            out["AvailableSpareInstanceCount"] = 0
        return out

    @_operation
    def describe_training_plan(self, req: dict[str, Any]) -> dict[str, Any]:
        ident = req["TrainingPlanName"]
        for plan in self._plans.values():
            if ident in (plan.seed.name, plan.arn):
                return self._plan_summary(plan, self._now(), True)
        raise ResourceNotFound(f"Training plan '{ident}' not found.")

    @_operation
    def list_training_plans(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        rows = [self._plan_summary(p, now, False) for p in self._plans.values()]
        if req.get("StartTimeAfter"):
            rows = [r for r in rows if r["StartTime"] > req["StartTimeAfter"]]
        if req.get("StartTimeBefore"):
            rows = [r for r in rows if r["StartTime"] < req["StartTimeBefore"]]
        for f in req.get("Filters") or []:
            if f["Name"] == "Status":
                rows = [r for r in rows if r["Status"] == f["Value"]]
        key = {"TrainingPlanName": "TrainingPlanName", "Status": "Status"}.get(
            req.get("SortBy", ""), "StartTime"
        )
        rows.sort(key=lambda r: r[key])
        if req.get("SortOrder") == "Descending":
            rows.reverse()
        return _listing("TrainingPlanSummaries", rows, req)

    @_operation
    def search_training_plan_offerings(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        hours = int(req.get("DurationHours") or 24)
        count = int(req.get("InstanceCount") or 1)
        targets = list(req.get("TargetResources") or ["hyperpod-cluster"])
        found: list[dict[str, Any]] = []
        for seed in self.catalog.offerings:
            if seed.availability_zone[:-1] != self.region:
                continue
            if req.get("InstanceType") and seed.instance_type != req["InstanceType"]:
                continue
            if count > seed.max_count:
                continue
            start = now + seed.lead_time
            if req.get("StartTimeAfter") and req["StartTimeAfter"] > start:
                start = req["StartTimeAfter"]
            start = start.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
            end = start + timedelta(hours=hours)
            if req.get("EndTimeBefore") and end > req["EndTimeBefore"]:
                continue
            digest = hashlib.sha256(
                f"{seed.instance_type}|{seed.availability_zone}|{count}|{start}|{hours}".encode()
            ).hexdigest()
            offering_id = f"tpo-{digest[:24]}"
            offering: dict[str, Any] = {
                "TrainingPlanOfferingId": offering_id,
                "TargetResources": targets,
                "DurationHours": hours,
                "DurationMinutes": 0,
                "UpfrontFee": f"{seed.hourly_fee_per_instance * count * hours:.2f}",
                "CurrencyCode": seed.currency_code,
                "ReservedCapacityOfferings": [{
                    "ReservedCapacityType": "Instance",
                    "InstanceType": seed.instance_type,
                    "InstanceCount": count,
                    "AvailabilityZone": seed.availability_zone,
                    "DurationHours": hours,
                    "DurationMinutes": 0,
                    "StartTime": start,
                    "EndTime": end,
                }],
            }
            if req.get("StartTimeAfter"):
                offering["RequestedStartTimeAfter"] = req["StartTimeAfter"]
            if req.get("EndTimeBefore"):
                offering["RequestedEndTimeBefore"] = req["EndTimeBefore"]
            self._offerings[offering_id] = offering
            found.append(offering)
        return {"TrainingPlanOfferings": found}


def _take(pending: list[tuple[str | None, str]], name: str) -> str | None:
    """The message of the first injected failure aimed at ``name`` (or at any cluster),
    consumed."""
    for i, (target, message) in enumerate(pending):
        if target is None or target == name:
            del pending[i]
            return message
    return None


def _listing(key: str, rows: list[dict[str, Any]], req: dict[str, Any]) -> dict[str, Any]:
    """A listing's answer: the page of ``rows`` under ``key``, and NextToken if more follow."""
    page, token = _paginate(rows, req)
    out: dict[str, Any] = {key: page}
    if token:
        out["NextToken"] = token
    return out


def _paginate(
    rows: list[dict[str, Any]], req: dict[str, Any]
) -> tuple[list[dict[str, Any]], str]:
    start = 0
    token = req.get("NextToken")
    if token:
        try:
            start = int(base64.urlsafe_b64decode(token.encode()).decode().removeprefix("o:"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValidationException("The NextToken is invalid.") from exc
        if start < 0 or start > len(rows):
            raise ValidationException("The NextToken is invalid.")
    size = int(req.get("MaxResults") or _DEFAULT_MAX_RESULTS)
    end = start + size
    nxt = base64.urlsafe_b64encode(f"o:{end}".encode()).decode() if end < len(rows) else ""
    return rows[start:end], nxt
