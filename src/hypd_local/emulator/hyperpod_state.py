"""State of the HyperPod emulator: time lines, clusters, instance groups, nodes, durations.

A resource's status is never stored as "the current value": each resource keeps a time line of
``(time, value)`` steps on the virtual clock and its status at ``t`` is the value of the last
step at or before ``t`` (``None`` = the resource does not exist). Reads are therefore lazy and
exact at any virtual time; ``tick()`` walks the steps that have come due since the last tick to
emit their events exactly once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class HyperPodDurations:
    """How long things take in virtual time (tests and the demo shorten or lengthen them)."""

    cluster_create: timedelta = timedelta(minutes=15)
    cluster_update: timedelta = timedelta(minutes=2)
    cluster_delete: timedelta = timedelta(minutes=10)
    """DeleteCluster keeps the cluster Deleting this long, then it is gone (made up: AWS
    documents no duration; deletions take minutes)."""
    node_boot: timedelta = timedelta(minutes=8)
    deep_health_check: timedelta = timedelta(minutes=75)
    """After boot, a node of a group with OnStartDeepHealthChecks stays DeepHealthCheckInProgress
    (Unschedulable in Kubernetes) this long: AWS gives about 60-90 minutes."""
    node_reboot: timedelta = timedelta(minutes=5)
    node_terminate: timedelta = timedelta(minutes=3)
    group_delete: timedelta = timedelta(minutes=5)
    software_update: timedelta = timedelta(minutes=30)
    autoscaling_enable: timedelta = timedelta(minutes=5)
    autoscaling_disable: timedelta = timedelta(minutes=3)
    auto_repair_start: timedelta = timedelta(minutes=1)
    capacity_failure: timedelta = timedelta(minutes=5)
    tiered_storage_update: timedelta = timedelta(minutes=5)
    """An UpdateCluster that changes TieredStorageConfig keeps the cluster Updating at least
    this long (the memory-management daemon is installed or removed on every node)."""
    governance_create: timedelta = timedelta(minutes=1)
    """A scheduler config or compute quota stays Creating this long (then Created, or
    CreateFailed without the task governance add-on)."""
    governance_update: timedelta = timedelta(minutes=1)
    governance_delete: timedelta = timedelta(seconds=30)
    eni_linger: timedelta = timedelta(minutes=5)
    """A node's network interface stays this long after the node is gone (made up: AWS
    documents that SageMaker's interfaces outlive their instances, not for how long)."""

    def with_changes(self, **changes: timedelta) -> HyperPodDurations:
        return replace(self, **changes)


@dataclass
class Step(Generic[T]):
    at: datetime
    seq: int
    value: T | None


class Timeline(Generic[T]):
    """Steps sorted by time; ``emitted`` counts the steps whose events went out."""

    def __init__(self) -> None:
        self.steps: list[Step[T]] = []
        self.emitted = 0

    def at(self, t: datetime) -> T | None:
        value: T | None = None
        for step in self.steps:
            if step.at > t:
                break
            value = step.value
        return value

    def since(self, t: datetime) -> datetime | None:
        """When the value in effect at ``t`` took effect."""
        when: datetime | None = None
        for step in self.steps:
            if step.at > t:
                break
            when = step.at
        return when

    def schedule(
        self, now: datetime, seq: Callable[[], int], *steps: tuple[datetime, T | None]
    ) -> None:
        """Replace whatever was planned after ``now`` by ``steps`` (times >= now, ascending)."""
        keep = [s for s in self.steps if s.at <= now]
        self.steps = keep
        self.emitted = min(self.emitted, len(keep))
        for at, value in steps:
            self.steps.append(Step(max(at, now), seq(), value))

    def last(self) -> T | None:
        return self.steps[-1].value if self.steps else None

    def ends_gone(self) -> bool:
        return bool(self.steps) and self.steps[-1].value is None

    def next_after(self, t: datetime) -> datetime | None:
        """The time of the first step strictly after ``t`` (None: nothing planned after it)."""
        for step in self.steps:
            if step.at > t:
                return step.at
        return None

    def due(self, now: datetime) -> list[tuple[T | None, Step[T]]]:
        """(previous value, step) for every step not yet emitted whose time has come."""
        out: list[tuple[T | None, Step[T]]] = []
        for i in range(self.emitted, len(self.steps)):
            step = self.steps[i]
            if step.at > now:
                break
            prev = self.steps[i - 1].value if i > 0 else None
            out.append((prev, step))
        self.emitted += len(out)
        return out


@dataclass(frozen=True)
class Health:
    status: str  # Healthy | Unhealthy
    reason: str = ""
    action: str = "None"  # Reboot | Replace | None: the repair the node needs
    repairing: bool = True
    """HyperPod repairs it itself (NodeRecovery Automatic); else it only recommends."""


HEALTHY = Health("Healthy")


@dataclass
class Node:
    instance_id: str
    logical_id: str | None
    group: str
    instance_type: str
    zone: str
    ip: str
    launch_time: datetime
    status: Timeline[str] = field(default_factory=Timeline)
    message: Timeline[str] = field(default_factory=Timeline)
    health: Timeline[Health] = field(default_factory=Timeline)
    software: Timeline[datetime] = field(default_factory=Timeline)


@dataclass
class Group:
    name: str
    spec: dict[str, Any]
    instance_type: str
    zone: str
    status: Timeline[str] = field(default_factory=Timeline)
    target: Timeline[int] = field(default_factory=Timeline)


@dataclass
class Notice:
    """A scheduled ``SageMaker HyperPod Cluster Event`` not tied to a status step."""

    at: datetime
    seq: int
    level: str
    description: str
    group: str | None
    resource_type: str = "InstanceGroup"


@dataclass
class Cluster:
    name: str
    arn: str
    created: datetime
    spec: dict[str, Any]
    tags: list[dict[str, str]]
    groups: dict[str, Group] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    status: Timeline[str] = field(default_factory=Timeline)
    failure: Timeline[str] = field(default_factory=Timeline)
    autoscaling: dict[str, Any] | None = None
    autoscaling_status: Timeline[str] = field(default_factory=Timeline)
    autoscaling_failure: Timeline[str] = field(default_factory=Timeline)
    tiered_storage: Timeline[dict[str, Any]] = field(default_factory=Timeline)
    """TieredStorageConfig as DescribeCluster reports it: an update's takes effect when the
    update finishes."""
    notices: list[Notice] = field(default_factory=list)
    notices_emitted: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)
    """The cluster events emitted so far (ClusterEventDetail shape), for ListClusterEvents."""

    @property
    def continuous(self) -> bool:
        return self.spec.get("NodeProvisioningMode") == "Continuous"

    def next_change(self, t: datetime) -> datetime | None:
        """The earliest step or notice of this cluster, its groups and nodes after ``t``."""
        lines: list[Timeline[Any]] = [self.status, self.failure, self.autoscaling_status,
                                      self.autoscaling_failure, self.tiered_storage]
        for g in self.groups.values():
            lines += [g.status, g.target]
        for n in self.nodes.values():
            lines += [n.status, n.message, n.health, n.software]
        times = [at for line in lines if (at := line.next_after(t)) is not None]
        times += [n.at for n in self.notices if n.at > t]
        return min(times, default=None)

    def live_groups(self, t: datetime) -> list[Group]:
        return [g for g in self.groups.values() if g.status.at(t) is not None]

    def live_nodes(self, t: datetime) -> list[Node]:
        return [n for n in self.nodes.values() if n.status.at(t) is not None]


@dataclass
class Governed:
    """A task governance resource: a cluster scheduler config (cluster policy) or a compute
    quota (compute allocation). Each version's settings are kept (DescribeX takes a version);
    ``pending`` is the status its current step ends in, and when."""

    kind: str
    """The ARN's resource type: ``cluster-scheduler-config`` or ``compute-quota``."""
    ident: str
    arn: str
    name: str
    cluster_arn: str
    created: datetime
    tags: list[dict[str, str]]
    versions: list[dict[str, Any]]
    status: str
    modified: datetime
    created_by: str | None = None
    modified_by: str | None = None
    failure: str | None = None
    pending: tuple[datetime, str] | None = None
    doomed: str | None = None
    """Why the creation under way will fail, known when it was asked for."""

    @property
    def version(self) -> int:
        return len(self.versions)

    @property
    def current(self) -> dict[str, Any]:
        return self.versions[-1]

