"""HyperPod's EventBridge events and cluster events.

``tick()`` emits the events of every status change that has come due, exactly once and in time
order: cluster state changes, node health events and, for continuous-provisioning clusters,
cluster events (node status changes and notices such as a capacity shortage), which
ListClusterEvents and DescribeClusterEvent then answer. Every operation ticks before and after
it runs (`operation`), so a read sees the state at ``clock.now()``.

A tick at the time of the last one, with no change made since (`revision`), has nothing to do
and returns at once: a reader of many clusters (the local cloud's Kubernetes sync) pays one
pass over the clusters per clock move, not one per call.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from hypd_local.emulator.errors import ResourceNotFound
from hypd_local.emulator.hyperpod_core import PAGES as _PAGES
from hypd_local.emulator.hyperpod_core import HyperPodCore, _epoch_ms
from hypd_local.emulator.hyperpod_state import Cluster, Health, Node, Notice
from hypd_local.emulator.service import operation

SOURCE = "aws.sagemaker"
STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
CLUSTER_EVENT = "SageMaker HyperPod Cluster Event"

# ListClusterEvents filters: request member -> event member (exact match).
_EVENT_FILTERS = (("InstanceGroupName", "InstanceGroupName"), ("NodeId", "InstanceId"),
                  ("ResourceType", "ResourceType"), ("OperationId", "OperationId"))


class HyperPodEvents(HyperPodCore):
    """Events as changes come due; ListClusterEvents, DescribeClusterEvent."""

    # Every operation runs after emitting whatever came due, then emits the events of the
    # changes it made effective at once (e.g. ``Updating``).
    _settled: tuple[datetime, int] | None = None
    """The clock's time and `revision` when the last tick ran."""

    def _before_operation(self) -> None:
        self._tick_locked()

    def _after_operation(self) -> None:
        self._tick_locked()

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
        if self._settled == (now, self.revision):
            return 0
        self._settled = (now, self.revision)
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

    # --- cluster events -----------------------------------------------------------------------

    @operation
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
        return _PAGES.listing("Events", rows, req)

    @operation
    def describe_cluster_event(self, req: dict[str, Any]) -> dict[str, Any]:
        now = self._now()
        c = self._cluster(req["ClusterName"], now)
        for event in c.events:
            if event["EventId"] == req["EventId"]:
                return {"EventDetails": copy.deepcopy(event)}
        raise ResourceNotFound(f"Event '{req['EventId']}' not found in cluster '{c.name}'.")
