"""HyperPod's managed Karpenter, as far as the Kubernetes API shows it.

When a HyperPod cluster's AutoScaling becomes InService, HyperPod installs Karpenter in its
EKS cluster: the CustomResourceDefinitions of ``CRDS`` (NodePool and NodeClaim of
``karpenter.sh/v1``, HyperpodNodeClass of ``karpenter.sagemaker.amazonaws.com/v1``, all
cluster-scoped) appear, and a controller keeps the status of these objects up to date.
`KarpenterStatus` is that controller (a `store.Controller`); it knows the HyperPod cluster
only through what `observe` last told it (a `HyperPodCluster`), and does nothing before.

* A HyperpodNodeClass gets ``status.conditions`` ``InstanceGroupReady`` (every name in
  ``spec.instanceGroups`` is an instance group of the cluster), ``SubnetsReady`` (each of those
  groups has its subnets in one Availability Zone) and ``Ready`` (both, at most
  ``MAX_INSTANCE_GROUPS`` names, and the cluster's AutoScaling InService), and
  ``status.instanceGroups`` (name, instanceTypes, subnets with zone and zoneId, desiredLabels)
  for the groups that exist.
* A NodePool whose ``spec.template.spec.nodeClassRef`` names a HyperpodNodeClass gets
  ``NodeClassReady`` and ``Ready``: True when that node class exists and is Ready. NodePools of
  other node classes are left alone.

The controller writes ``status.conditions`` (and the node class's ``status.instanceGroups``)
only; a condition keeps its ``lastTransitionTime`` while its status stays, so reconciling an
unchanged world changes nothing. Karpenter's scaling itself (NodeClaims for pending pods,
consolidation, drift) is not emulated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hypd_local.kube.resources import crd_manifest

NODECLASS_GROUP = "karpenter.sagemaker.amazonaws.com"
NODECLASS_KIND = "HyperpodNodeClass"
KARPENTER_GROUP = "karpenter.sh"
NODECLASSES = (NODECLASS_GROUP, "hyperpodnodeclasses")
NODEPOOLS = (KARPENTER_GROUP, "nodepools")
MAX_INSTANCE_GROUPS = 10  # "You can specify up to 10 instance groups in a NodeClass."

Obj = dict[str, Any]


def _crd(group: str, kind: str, plural: str) -> Obj:
    return crd_manifest(group, kind, plural, namespaced=False, categories=("karpenter",))


CRDS: tuple[Obj, ...] = (
    _crd(KARPENTER_GROUP, "NodePool", "nodepools"),
    _crd(KARPENTER_GROUP, "NodeClaim", "nodeclaims"),
    _crd(NODECLASS_GROUP, NODECLASS_KIND, "hyperpodnodeclasses"),
)


@dataclass(frozen=True)
class Subnet:
    id: str
    zone: str | None  # None: the subnet does not exist
    zone_id: str | None = None


@dataclass(frozen=True)
class InstanceGroup:
    name: str
    instance_types: tuple[str, ...]
    subnets: tuple[Subnet, ...]
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HyperPodCluster:
    """What the controller knows of the HyperPod cluster orchestrated by this EKS cluster."""

    name: str
    autoscaling_status: str | None  # DescribeCluster's AutoScaling.Status; None: not enabled
    instance_groups: Mapping[str, InstanceGroup]


class KarpenterStatus:
    """The status controller of HyperpodNodeClasses and the NodePools that use them."""

    resources = frozenset({NODECLASSES, NODEPOOLS})

    def __init__(self) -> None:
        self._observed = False
        self._cluster: HyperPodCluster | None = None

    def observe(self, cluster: HyperPodCluster | None) -> None:
        """The HyperPod cluster as it is now (None: no HyperPod cluster uses this EKS cluster).
        The caller then runs the store's controllers."""
        self._cluster = cluster
        self._observed = True

    def reconcile(
        self, objects: Mapping[tuple[str, str], Mapping[tuple[str, str], Obj]], now: str
    ) -> None:
        if not self._observed:
            return
        cluster = self._cluster
        classes = {name: obj for (_ns, name), obj in objects.get(NODECLASSES, {}).items()}
        for node_class in classes.values():
            _node_class_status(node_class, cluster, now)
        for pool in objects.get(NODEPOOLS, {}).values():
            _node_pool_status(pool, classes, now)


# (type, ok, reason, message)
Condition = tuple[str, bool, str, str]


def _node_class_status(obj: Obj, cluster: HyperPodCluster | None, now: str) -> None:
    listed = _path(obj, "spec", "instanceGroups")
    names = [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
    groups = cluster.instance_groups if cluster is not None else {}
    found = [groups[n] for n in names if n in groups]
    missing = [n for n in names if n not in groups]
    if cluster is None:
        groups_ready = ("InstanceGroupReady", False, "InstanceGroupNotFound",
                        "no HyperPod cluster is orchestrated by this EKS cluster")
    elif not names:
        groups_ready = ("InstanceGroupReady", False, "InstanceGroupNotFound",
                        "spec.instanceGroups names no instance group")
    elif missing:
        groups_ready = ("InstanceGroupReady", False, "InstanceGroupNotFound",
                        f"instance group(s) {', '.join(missing)} not found in HyperPod cluster "
                        f"{cluster.name}")
    else:
        groups_ready = ("InstanceGroupReady", True, "InstanceGroupReady", "")
    problems = [p for p in map(_zone_problem, found) if p]
    subnets_ready: Condition = (
        ("SubnetsReady", False, "SubnetsNotInOneZone", "; ".join(problems)) if problems
        else ("SubnetsReady", True, "SubnetsReady", "")
    )
    not_ready = [f"{c[0]} is False: {c[3]}" for c in (groups_ready, subnets_ready) if not c[1]]
    if len(names) > MAX_INSTANCE_GROUPS:
        not_ready.append(f"spec.instanceGroups lists {len(names)} instance groups; at most "
                         f"{MAX_INSTANCE_GROUPS} are allowed")
    if cluster is not None and cluster.autoscaling_status != "InService":
        state = cluster.autoscaling_status or "not enabled"
        not_ready.append(f"autoscaling of HyperPod cluster {cluster.name} is {state}")
    ready: Condition = (
        ("Ready", False, "NotReady", "; ".join(not_ready)) if not_ready
        else ("Ready", True, "Ready", "")
    )
    status = _set_conditions(obj, [groups_ready, subnets_ready, ready], now)
    status["instanceGroups"] = [_group_status(g) for g in found]


def _zone_problem(group: InstanceGroup) -> str:
    unknown = [s.id for s in group.subnets if s.zone is None]
    if unknown:
        return f"instance group {group.name}: subnet(s) {', '.join(unknown)} not found"
    zones = sorted({s.zone for s in group.subnets if s.zone})
    if len(zones) != 1:
        where = ", ".join(zones) or "no subnets"
        return (f"instance group {group.name}: its subnets must be in one Availability Zone "
                f"(found {where})")
    return ""


def _group_status(group: InstanceGroup) -> Obj:
    out: Obj = {
        "name": group.name,
        "instanceTypes": list(group.instance_types),
        "subnets": [
            {k: v for k, v in (("id", s.id), ("zone", s.zone), ("zoneId", s.zone_id)) if v}
            for s in group.subnets
        ],
    }
    if group.labels:
        out["desiredLabels"] = dict(group.labels)
    return out


def _node_pool_status(obj: Obj, classes: Mapping[str, Obj], now: str) -> None:
    ref = _path(obj, "spec", "template", "spec", "nodeClassRef")
    if not isinstance(ref, dict) or (ref.get("group"), ref.get("kind")) != (
        NODECLASS_GROUP, NODECLASS_KIND
    ):
        return  # a node class of another Karpenter: not ours to judge
    name = str(ref.get("name") or "")
    node_class = classes.get(name)
    ready = _condition(node_class, "Ready") if node_class is not None else None
    if node_class is None:
        wanted: Condition = ("NodeClassReady", False, "NodeClassNotFound",
                             f"{NODECLASS_KIND} {name} not found")
    elif ready is None or ready.get("status") != "True":
        why = (ready or {}).get("message") or "its status is not known yet"
        wanted = ("NodeClassReady", False, "NodeClassNotReady",
                  f"{NODECLASS_KIND} {name} is not ready: {why}")
    else:
        wanted = ("NodeClassReady", True, "NodeClassReady", "")
    overall: Condition = (
        ("Ready", True, "Ready", "") if wanted[1]
        else ("Ready", False, wanted[2], wanted[3])
    )
    _set_conditions(obj, [wanted, overall], now)


def _set_conditions(obj: Obj, wanted: list[Condition], now: str) -> Obj:
    """Write ``wanted`` as ``status.conditions``; returns the status. A condition whose status
    does not change keeps its lastTransitionTime."""
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    previous = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    generation = obj["metadata"].get("generation", 1)
    conditions = []
    for ctype, ok, reason, message in wanted:
        value = "True" if ok else "False"
        old = previous.get(ctype) or {}
        since = old.get("lastTransitionTime") if old.get("status") == value else None
        conditions.append({"type": ctype, "status": value, "reason": reason,
                           "message": message, "lastTransitionTime": since or now,
                           "observedGeneration": generation})
    status["conditions"] = conditions
    return status


def _condition(obj: Obj, ctype: str) -> Obj | None:
    for condition in _path(obj, "status", "conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == ctype:
            return condition
    return None


def _path(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj
