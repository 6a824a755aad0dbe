"""HyperPod's network interfaces: one per instance, in its group's subnet, with the group's
security groups; it outlives its node (or, when the node goes with its cluster, the cluster) by
``HyperPodDurations.eni_linger`` (see `hypd_local.emulator.interfaces`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hypd_local.emulator.hyperpod_events import HyperPodEvents
from hypd_local.emulator.hyperpod_state import Cluster, Node
from hypd_local.emulator.interfaces import Interface

DESCRIPTION = "Amazon SageMaker HyperPod {cluster} {instance}"
"""The description of a node's interface (made up: AWS does not document SageMaker's)."""


class HyperPodNetwork(HyperPodEvents):
    """`network_interfaces` and the times they go, in `next_due`; the interfaces of nodes
    purged from the state are kept aside until they go."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lingering: dict[str, tuple[Interface, datetime]] = {}
        self._zones: dict[str, str | None] = {}  # a subnet's zone never changes

    def network_interfaces(self) -> list[Interface]:
        """The interfaces of every node launched by now and not released yet."""
        with self._lock:
            now = self._now()
            kept = self._kept(now)
            found = {i.key: i for i, until in kept.values() if until > now}
            for c in self._clusters.values():
                for node in c.nodes.values():
                    if node.launch_time > now or self._released(c, node, now):
                        continue
                    interface = self._interface(c, node)
                    if interface is not None:
                        found.setdefault(interface.key, interface)
            return list(found.values())

    def next_due(self) -> datetime | None:
        with self._lock:
            now = self._now()
            times = [t for c in self._clusters.values() for n in c.nodes.values()
                     if (t := self._release_time(c, n)) is not None and t > now]
            times += [until for _i, until in self._kept(now).values() if until > now]
            earlier = super().next_due()
            if earlier is not None:
                times.append(earlier)
            return min(times, default=None)

    def _purge(self, now: datetime) -> None:
        kept = self._kept(now)
        for c in self._clusters.values():
            for node in c.nodes.values():
                until = self._release_time(c, node)
                if until is None or until <= now or node.status.at(now) is not None:
                    continue
                interface = self._interface(c, node)
                if interface is not None:
                    kept[interface.key] = (interface, until)
        super()._purge(now)

    def _kept(self, now: datetime) -> dict[str, tuple[Interface, datetime]]:
        """The interfaces of purged nodes not released by ``now``."""
        for key in [k for k, (_i, until) in self._lingering.items() if until <= now]:
            del self._lingering[key]
        return self._lingering

    def _release_time(self, c: Cluster, node: Node) -> datetime | None:
        """When the node's interface goes: ``eni_linger`` after the node is gone, or after its
        cluster is when the node went with it (None: the node is not on its way out)."""
        if not node.status.ends_gone():
            return None
        gone = node.status.steps[-1].at
        if c.status.ends_gone() and len(c.status.steps) >= 2:
            deleting = c.status.steps[-2].at  # the Deleting step DeleteCluster scheduled
            if gone >= deleting:
                gone = max(gone, c.status.steps[-1].at)
        return gone + self.durations.eni_linger

    def _released(self, c: Cluster, node: Node, now: datetime) -> bool:
        gone = self._release_time(c, node)
        return gone is not None and gone <= now

    def _interface(self, c: Cluster, node: Node) -> Interface | None:
        """The node's interface: in the subnet of its zone among its group's subnets (the
        group's OverrideVpcConfig, else the cluster's VpcConfig), with their security groups;
        None without subnets."""
        g = c.groups.get(node.group)
        vpc: dict[str, Any] = ((g.spec.get("OverrideVpcConfig") if g is not None else None)
                               or c.spec.get("VpcConfig") or {})
        subnets: list[str] = list(vpc.get("Subnets") or [])
        if not subnets:
            return None
        in_zone = [s for s in subnets if self._zone(s) == node.zone]
        return Interface(f"hyperpod:{c.arn}:{node.instance_id}", (in_zone or subnets)[0],
                         tuple(vpc.get("SecurityGroupIds") or []),
                         DESCRIPTION.format(cluster=c.name, instance=node.instance_id))

    def _zone(self, subnet: str) -> str | None:
        if subnet not in self._zones and self._subnet_zone is not None:
            self._zones[subnet] = self._subnet_zone(subnet)
        return self._zones.get(subnet)
