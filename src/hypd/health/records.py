"""Node health and cluster health, as the events said them: newer wins, bounded history.

One item per node (`CLUSTER#{tag}` / `NODE#{nodeId}`) holds its latest health and its last
`HISTORY_MAX` entries, newest first; one item per cluster (`CLUSTER#{tag}` / `HEALTH`) its last
state change, its last `EVENTS_MAX` Warn/Error cluster events and its add-ons' health. Every
write is conditional on the version read (`optimistic`), so concurrent invocations never lose
an update, and the order of events is their own (time, then id), never their arrival: an older
event enters the history in its place without changing the latest, and an event id already
recorded changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from hypd import clock
from hypd.aws.dynamodb import Table, decode_body, encode_item, optimistic, versioned
from hypd.table import cluster_health_key, node_health_key, node_health_prefix

HISTORY_MAX = 50
EVENTS_MAX = 20
ATTEMPTS = 10
M = TypeVar("M", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class Taken(StrEnum):
    """Who repaired the node, or why nobody did."""

    HYPERPOD = "hyperpod"
    """HyperPod is repairing it itself (its RepairAction)."""
    HYPD = "hypd"
    """hypd started a reboot-node or replace-node operation."""
    NONE = "none"


class TakenAction(_Model):
    by: Taken
    action: str | None = None
    operation_id: str | None = Field(default=None, alias="operationId")
    reason: str | None = Field(
        default=None,
        description="Why nothing was done: healthy, policy, not-recommended, node-status, "
        "cooldown, rate-limit, busy.",
    )


class HealthEntry(_Model):
    event_id: str = Field(alias="eventId")
    time: str
    status: str
    reason: str | None = None
    repair_action: str | None = Field(default=None, alias="repairAction")
    """HyperPod's RepairAction (None: it is not repairing the node itself)."""
    recommendation: str | None = None
    recommended: str | None = Field(default=None, description="reboot, replace or none")
    taken: TakenAction | None = None

    @property
    def order(self) -> tuple[str, str]:
        return self.time, self.event_id


class NodeHealth(_Model):
    tag: str
    node_id: str = Field(alias="nodeId")
    instance_group: str | None = Field(default=None, alias="instanceGroup")
    latest: HealthEntry
    history: list[HealthEntry] = Field(default_factory=list)
    """Newest first, at most HISTORY_MAX (the latest is the first)."""
    updated_at: str = Field(alias="updatedAt")


class Outcome(StrEnum):
    LATEST = "latest"
    """The event is the node's newest: its health changed to it."""
    OLDER = "older"
    """An older event than the latest: kept in the history only."""
    DUPLICATE = "duplicate"
    """Recorded already: nothing changed."""
    EXPIRED = "expired"
    """Older than every entry the bounded history keeps: nothing changed."""


class ClusterEvent(_Model):
    event_id: str = Field(alias="eventId")
    time: str
    level: str
    resource_type: str | None = Field(default=None, alias="resourceType")
    instance_group: str | None = Field(default=None, alias="instanceGroup")
    instance_id: str | None = Field(default=None, alias="instanceId")
    description: str | None = None


class AddonHealth(_Model):
    status: str | None = None
    issues: list[dict[str, Any]] = Field(default_factory=list)
    event: str
    time: str


class ClusterHealth(_Model):
    tag: str
    status: str | None = None
    status_time: str | None = Field(default=None, alias="statusTime")
    status_event_id: str | None = Field(default=None, alias="statusEventId")
    failure_message: str | None = Field(default=None, alias="failureMessage")
    events: list[ClusterEvent] = Field(default_factory=list)
    """The latest Warn and Error cluster events, newest first, at most EVENTS_MAX."""
    addons: dict[str, AddonHealth] = Field(default_factory=dict)
    updated_at: str | None = Field(default=None, alias="updatedAt")


class Recorded(NamedTuple):
    node: NodeHealth
    outcome: Outcome
    previous: HealthEntry | None
    """The node's latest before the event (None: the event is its first)."""


def place(history: list[HealthEntry], entry: HealthEntry) -> tuple[list[HealthEntry], Outcome]:
    """`history` (newest first) with `entry` in its place, and where it went."""
    if any(e.event_id == entry.event_id for e in history):
        return history, Outcome.DUPLICATE
    placed = sorted([*history, entry], key=lambda e: e.order, reverse=True)[:HISTORY_MAX]
    if entry not in placed:
        return history, Outcome.EXPIRED
    return placed, Outcome.LATEST if placed[0] is entry else Outcome.OLDER


class HealthStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # ------------------------------------------------------------------ nodes
    def node(self, tag: str, node_id: str) -> NodeHealth | None:
        item = self._table.get(node_health_key(tag, node_id))
        return NodeHealth.model_validate(decode_body(item)) if item else None

    def nodes(self, tag: str) -> list[NodeHealth]:
        partition, prefix = node_health_prefix(tag)
        return [
            NodeHealth.model_validate(decode_body(item))
            for item in self._table.query_prefix(partition, prefix)
        ]

    def record_node(
        self, tag: str, node_id: str, entry: HealthEntry, instance_group: str | None = None
    ) -> Recorded:
        """Place one event's entry in the node's health (one read, one conditional write)."""

        def change(
            current: NodeHealth | None,
        ) -> tuple[NodeHealth | None, tuple[Outcome, HealthEntry | None]]:
            if current is None:
                return NodeHealth(
                    tag=tag, node_id=node_id, instance_group=instance_group, latest=entry,
                    history=[entry], updated_at=clock.now_iso(),
                ), (Outcome.LATEST, None)
            history, outcome = place(current.history, entry)
            if outcome in (Outcome.DUPLICATE, Outcome.EXPIRED):
                return None, (outcome, current.latest)
            return current.model_copy(update={
                "history": history,
                "latest": history[0],
                "instance_group": current.instance_group or instance_group,
                "updated_at": clock.now_iso(),
            }), (outcome, current.latest)

        node, (outcome, previous) = self._update(node_health_key(tag, node_id), NodeHealth,
                                                 change)
        return Recorded(node, outcome, previous)

    def set_taken(
        self, tag: str, node_id: str, event_id: str, taken: TakenAction
    ) -> NodeHealth | None:
        """Record what was done about one event of the node."""

        def change(current: NodeHealth | None) -> tuple[NodeHealth | None, None]:
            if current is None:
                return None, None
            history = [
                e.model_copy(update={"taken": taken}) if e.event_id == event_id else e
                for e in current.history
            ]
            return current.model_copy(
                update={"history": history, "latest": history[0], "updated_at": clock.now_iso()}
            ), None

        key = node_health_key(tag, node_id)
        found: NodeHealth | None = self._update(key, NodeHealth, change)[0]
        return found

    # ------------------------------------------------------------------ the cluster
    def cluster(self, tag: str) -> ClusterHealth:
        item = self._table.get(cluster_health_key(tag))
        return ClusterHealth.model_validate(decode_body(item)) if item else ClusterHealth(tag=tag)

    def update_cluster(
        self, tag: str, mutate: Callable[[ClusterHealth], ClusterHealth | None]
    ) -> ClusterHealth:
        """Apply `mutate` (None: nothing to change) to the cluster's health."""

        def change(current: ClusterHealth | None) -> tuple[ClusterHealth | None, None]:
            changed = mutate(current or ClusterHealth(tag=tag))
            if changed is None:
                return None, None
            return changed.model_copy(update={"updated_at": clock.now_iso()}), None

        found, _none = self._update(cluster_health_key(tag), ClusterHealth, change)
        return found or ClusterHealth(tag=tag)

    # ------------------------------------------------------------------ the one write path
    def _update(
        self,
        key: dict[str, str],
        model: type[M],
        change: Callable[[M | None], tuple[M | None, Any]],
    ) -> tuple[Any, Any]:
        def attempt() -> tuple[Any, Any]:
            item = self._table.get(key)
            current = model.model_validate(decode_body(item)) if item else None
            changed, result = change(current)
            if changed is None:
                return current, result
            read = versioned(item)
            self._table.put_versioned(
                encode_item(key, changed.model_dump(mode="json", by_alias=True),
                            version=read + 1),
                read,
            )
            return changed, result

        return optimistic(attempt, attempts=ATTEMPTS, what=f"health item {key}")


def keep_cluster_event(health: ClusterHealth, event: ClusterEvent) -> ClusterHealth | None:
    """The cluster's health with one more Warn/Error event (None: had it already)."""
    if any(e.event_id == event.event_id for e in health.events):
        return None
    events = sorted([*health.events, event], key=lambda e: (e.time, e.event_id),
                    reverse=True)[:EVENTS_MAX]
    return health.model_copy(update={"events": events})


def keep_status(
    health: ClusterHealth, status: str, time: str, event_id: str, failure: str | None
) -> ClusterHealth | None:
    """The cluster's health with a state change, unless it has a newer one."""
    if health.status_time is not None and (time, event_id) <= (
        health.status_time, health.status_event_id or ""
    ):
        return None
    return health.model_copy(update={
        "status": status, "status_time": time, "status_event_id": event_id,
        "failure_message": failure or None,
    })


def keep_addon(health: ClusterHealth, name: str, addon: AddonHealth) -> ClusterHealth | None:
    """The cluster's health with an add-on's latest health, unless it has a newer one."""
    current = health.addons.get(name)
    if current is not None and current.time > addon.time:
        return None
    if current == addon:
        return None
    return health.model_copy(update={"addons": {**health.addons, name: addon}})
