"""The verify stage of capacity operations: HyperPod and Kubernetes agree the change happened.

Pure functions over what the task read: the live cluster, ListClusterNodes' summaries and the
Kubernetes nodes (as dicts). Each answers a `Check`: ready, or the problems still open (the
stage reports them when it times out). The waiting rules (deep health checks, the timeout's
allowance for them, the look interval) are the create's verify stage's, re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from hypd.capacity.live import LiveCluster
from hypd.errors import PermanentError
from hypd.instance_groups.nodes import CHECK_SECONDS as CHECK_SECONDS
from hypd.instance_groups.nodes import DEEP_HEALTH_CHECKS as DEEP_HEALTH_CHECKS
from hypd.instance_groups.nodes import NodeView, node_view
from hypd.instance_groups.nodes import check_interval as check_interval
from hypd.instance_groups.nodes import verification_timeout as verification_timeout
from hypd.instance_groups.views import described_labels, described_taints

NODE_PREFIX = "hyperpod-"
"""HyperPod names a node's Kubernetes Node ``hyperpod-<instance id>``."""
NODE_BOOT = timedelta(minutes=8)
NODE_REBOOT = timedelta(minutes=5)
NODE_TERMINATE = timedelta(minutes=3)
GROUP_DELETE = timedelta(minutes=5)
TIMEOUT = timedelta(minutes=45)
"""How long a change may take to show; groups with deep health checks get more
(`verification_timeout`)."""


Nodes = Sequence[Mapping[str, Any]]
"""Nodes as dicts: ListClusterNodes' summaries, or Kubernetes Nodes."""


class VerificationTimedOut(PermanentError):
    code = "VerificationTimedOut"


@dataclass(frozen=True)
class Check:
    ready: bool
    problems: list[str] = field(default_factory=list)
    output: dict[str, Any] = field(default_factory=dict)


def kube_name(instance_id: str) -> str:
    return f"{NODE_PREFIX}{instance_id}"


def _views(kube_nodes: Sequence[Mapping[str, Any]], group: str) -> list[NodeView]:
    return [v for v in (node_view(n) for n in kube_nodes) if v.group == group]


def _node_labels(node: Mapping[str, Any]) -> dict[str, str]:
    return dict(((node.get("metadata") or {}).get("labels")) or {})


def _node_taints(node: Mapping[str, Any]) -> set[tuple[str, str | None, str]]:
    return {
        (str(t.get("key")), t.get("value") or None, str(t.get("effect")))
        for t in ((node.get("spec") or {}).get("taints") or [])
    }


FAILURE = "Failure"
"""HyperPod's status of a node that failed (until it is rebooted, replaced or deleted)."""


def running(nodes: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [n for n in nodes if (n.get("InstanceStatus") or {}).get("Status") == "Running"]


def group_check(
    live: LiveCluster,
    name: str,
    count: int,
    nodes: Sequence[Mapping[str, Any]],
    kube_nodes: Sequence[Mapping[str, Any]],
) -> Check:
    """The group has `count` nodes Running in HyperPod, each joined Kubernetes Ready and
    schedulable, with the group's labels and taints; no more, no fewer."""
    details = live.group(name)
    if details is None:
        return Check(False, [f"instance group {name} is not in the cluster"])
    problems: list[str] = []
    target = int(details.get("TargetCount") or 0)
    current = int(details.get("CurrentCount") or 0)
    if target != count:
        problems.append(f"HyperPod's target count is {target}, not {count}")
    if current != count:
        problems.append(f"{current} of {count} instances are up")
    if details.get("Status") != "InService":
        problems.append(f"the group is {details.get('Status')}")
    up = running(nodes)
    if len(up) != count or len(nodes) != count:
        problems.append(f"{len(up)} of {count} nodes Running ({len(nodes)} in the group)")
    ids = {str(n["InstanceId"]) for n in up}
    by_name = {
        str((n.get("metadata") or {}).get("name")): n
        for n in kube_nodes
        if node_view(n).group == name
    }
    joined = [by_name[kube_name(i)] for i in sorted(ids) if kube_name(i) in by_name]
    views = [node_view(n) for n in joined]
    if len(views) < len(ids):
        problems.append(f"{len(views)} of {len(ids)} Running nodes joined Kubernetes")
    extra = sorted(set(by_name) - {kube_name(i) for i in ids})
    if extra:
        problems.append(f"Kubernetes still has nodes that left the group: {', '.join(extra)}")
    unschedulable = [f"{v.name} (ready={v.ready}, health={v.health})" for v in views
                     if not v.schedulable]
    if unschedulable:
        problems.append(f"not schedulable: {', '.join(unschedulable)}")
    labels = described_labels(details)
    taints = {(t.key, t.value, t.effect.value) for t in described_taints(details)}
    for node in joined:
        node_name = (node.get("metadata") or {}).get("name")
        missing = {k: v for k, v in labels.items() if _node_labels(node).get(k) != v}
        if missing:
            problems.append(f"{node_name} lacks the group's labels {missing}")
        absent = taints - _node_taints(node)
        if absent:
            problems.append(f"{node_name} lacks the group's taints {sorted(absent)}")
    return Check(
        not problems,
        problems,
        {
            "instanceGroup": name,
            "count": count,
            "nodes": [v.model_dump(mode="json", by_alias=True) for v in views],
        },
    )


def group_gone_check(
    live: LiveCluster, name: str, kube_nodes: Sequence[Mapping[str, Any]]
) -> Check:
    problems: list[str] = []
    details = live.group(name)
    if details is not None:
        problems.append(f"instance group {name} is still {details.get('Status')}")
    left = [v.name for v in _views(kube_nodes, name)]
    if left:
        problems.append(f"Kubernetes still has its nodes {', '.join(left)}")
    return Check(not problems, problems, {"deleted": name})


def _node(
    node_id: str, group: str, nodes: Nodes, kube_nodes: Nodes
) -> tuple[Mapping[str, Any] | None, str | None, dict[str, NodeView]]:
    """The node in HyperPod (or None), its status, and the group's Kubernetes nodes by name."""
    node = {str(n["InstanceId"]): n for n in nodes}.get(node_id)
    status = ((node or {}).get("InstanceStatus") or {}).get("Status")
    return node, status, {v.name: v for v in _views(kube_nodes, group)}


def _gone(node_id: str, node: Mapping[str, Any] | None, status: str | None,
          kube: Mapping[str, NodeView]) -> list[str]:
    problems: list[str] = []
    if node is not None:
        problems.append(f"node {node_id} is still {status}")
    if kube_name(node_id) in kube:
        problems.append(f"Kubernetes still has node {kube_name(node_id)}")
    return problems


def node_rebooted(
    node_id: str, group: str, live: LiveCluster, nodes: Nodes, kube_nodes: Nodes
) -> Check:
    """The node is Running and Ready again."""
    _found, status, kube = _node(node_id, group, nodes, kube_nodes)
    problems: list[str] = []
    if status != "Running":
        problems.append(f"node {node_id} is {status or 'gone'}, not Running")
    view = kube.get(kube_name(node_id))
    if view is None or not view.schedulable:
        problems.append(f"Kubernetes node {kube_name(node_id)} is not Ready and schedulable")
    return Check(not problems, problems, {"nodeId": node_id, "status": status})


def node_deleted(
    node_id: str, group: str, live: LiveCluster, nodes: Nodes, kube_nodes: Nodes
) -> Check:
    """The node is gone from HyperPod and Kubernetes."""
    problems = _gone(node_id, *_node(node_id, group, nodes, kube_nodes))
    return Check(not problems, problems, {"nodeId": node_id, "deleted": True})


def node_replaced(
    node_id: str, group: str, live: LiveCluster, nodes: Nodes, kube_nodes: Nodes
) -> Check:
    """The node is gone and the group is back at its count with every node Running and
    joined, but for other nodes that have failed (another node's fault is not this
    replacement's to wait for)."""
    node, status, kube = _node(node_id, group, nodes, kube_nodes)
    problems = _gone(node_id, node, status, kube)
    details = live.group(group) or {}
    target = int(details.get("TargetCount") or 0)
    members = [n for n in nodes if n.get("InstanceGroupName") == group]
    up = running(members)
    # A replacement is Pending, then Running: only Failure nodes are others' faults.
    failed = sum(1 for n in members if (n.get("InstanceStatus") or {}).get("Status") == FAILURE)
    expected = target - failed
    if len(up) < expected:
        problems.append(f"{len(up)} of {target} nodes of group {group} Running"
                        + (f" ({failed} failed)" if failed else ""))
    joined = [v for v in kube.values() if v.schedulable]
    if len(joined) < expected:
        problems.append(f"{len(joined)} of {target} nodes of group {group} schedulable")
    replacements = sorted(str(n["InstanceId"]) for n in up)
    return Check(
        not problems, problems, {"nodeId": node_id, "replaced": True, "groupNodes": replacements}
    )


def boot_time(deep_health_checks: bool) -> timedelta:
    """How long new nodes take to be up: their boot, and their deep health checks."""
    return NODE_BOOT + (DEEP_HEALTH_CHECKS if deep_health_checks else timedelta(0))


def first_look(seconds: timedelta) -> int:
    return max(CHECK_SECONDS, int(seconds.total_seconds()))


def timed_out_message(problems: Sequence[str], waited: float, event: str | None) -> str:
    text = f"after {int(waited)} s: " + "; ".join(problems)
    if event:
        text += f"; HyperPod's latest error for it: {event}"
    return text

