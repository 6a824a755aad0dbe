"""Workloads as clients see them, from the objects the cluster's API server holds (pure).

A training job's phase is the type of its last condition whose status is "True" (what `hyp
list` reports), Pending before any, Deleting once its deletion started. Its nodes are every node
a pod of the job was scheduled on (the scheduler's ``Scheduled`` events), joined with hypd's
health records of those nodes: a fault HyperPod or hypd repaired while the job ran shows beside
the restart it caused. An endpoint is ready when the operator's deployment is DeploymentComplete.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from hypd.health.records import HealthEntry, NodeHealth
from hypd.workloads.manifests import (
    CONTAINER,
    JUMPSTART_MODEL,
    PRIORITY_LABEL,
    QUEUE_LABEL,
)

Obj = Mapping[str, Any]
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
READY_STATE = "DeploymentComplete"
FAILED_STATE = "DeploymentFailed"
REGISTERED_STATE = "CreationCompleted"
NODE_PREFIX = "hyperpod-"
_ASSIGNED = re.compile(r"^Successfully assigned (?P<pod>\S+) to (?P<node>\S+)")


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _status(obj: Obj) -> Mapping[str, Any]:
    return obj.get("status") or {}


def instance_id(node: str | None) -> str | None:
    """HyperPod's node id (the EC2 instance id) of a node named ``hyperpod-<id>``."""
    if node and node.startswith(NODE_PREFIX):
        return node[len(NODE_PREFIX):]
    return None


def phase(job: Obj) -> str:
    if _meta(job).get("deletionTimestamp"):
        return "Deleting"
    true = [c for c in _status(job).get("conditions") or [] if c.get("status") == "True"]
    return str(true[-1].get("type")) if true else "Pending"


def _condition(c: Mapping[str, Any]) -> dict[str, Any]:
    return {k: c[k] for k in ("type", "status", "reason", "message", "lastTransitionTime")
            if c.get(k) is not None}


def _event(e: Obj) -> dict[str, Any]:
    return {
        "time": e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp")
        or _meta(e).get("creationTimestamp"),
        "type": e.get("type"),
        "reason": e.get("reason"),
        "message": e.get("message"),
        "object": f"{(e.get('involvedObject') or {}).get('kind')}/"
                  f"{(e.get('involvedObject') or {}).get('name')}",
        **({"count": e["count"]} if e.get("count") else {}),
    }


def _pod(pod: Obj) -> dict[str, Any]:
    status = _status(pod)
    node = (pod.get("spec") or {}).get("nodeName")
    containers = status.get("containerStatuses") or []
    view: dict[str, Any] = {
        "name": _meta(pod).get("name"),
        "phase": status.get("phase") or "Pending",
        "node": node,
        "instanceId": instance_id(node),
        "ready": any(c.get("type") == "Ready" and c.get("status") == "True"
                     for c in status.get("conditions") or [])
        or (bool(containers) and all(c.get("ready") for c in containers)),
        "restarts": sum(int(c.get("restartCount") or 0) for c in containers),
    }
    if status.get("startTime"):
        view["startTime"] = status["startTime"]
    waiting = [c for c in status.get("conditions") or []
               if c.get("type") == "PodScheduled" and c.get("status") == "False"]
    if waiting:
        view["message"] = waiting[0].get("message")
    return view


def scheduled_nodes(events: Iterable[Obj]) -> list[tuple[str, str]]:
    """(time, node) of each ``Scheduled`` event, oldest first."""
    found = []
    for e in events:
        if e.get("reason") != "Scheduled":
            continue
        match = _ASSIGNED.match(str(e.get("message") or ""))
        if match:
            found.append((str(_event(e)["time"] or ""), match.group("node")))
    return sorted(found)


def _entry(entry: HealthEntry) -> dict[str, Any]:
    view: dict[str, Any] = {"time": entry.time, "status": entry.status}
    for key, value in (("reason", entry.reason), ("repairAction", entry.repair_action),
                       ("recommended", entry.recommended)):
        if value:
            view[key] = value
    if entry.taken is not None:
        view["taken"] = entry.taken.model_dump(mode="json", by_alias=True, exclude_none=True)
    return view


def _faults(record: NodeHealth | None, since: str | None, until: str | None
            ) -> list[dict[str, Any]]:
    """The node's unhealthy entries between `since` and `until` (ISO times), oldest first."""
    if record is None:
        return []
    entries = {e.event_id: e for e in [record.latest, *record.history]}.values()
    start, end = _instant(since), _instant(until)
    return [_entry(e) for e in sorted(entries, key=lambda e: e.order)
            if e.status != "Schedulable" and _within(_instant(e.time), start, end)]


def _instant(text: str | None) -> datetime | None:
    """An ISO 8601 time (``...Z``, with or without fractions) as an aware datetime; None for
    none or one that does not parse (Kubernetes writes whole seconds, EventBridge
    milliseconds: the texts do not compare as strings)."""
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _within(at: datetime | None, start: datetime | None, end: datetime | None) -> bool:
    """Whether `at` is in [start, end] to the second (an unknown bound does not limit)."""
    if at is None:
        return True
    at = at.replace(microsecond=0)
    return (start is None or at >= start) and (end is None or at <= end)


def _nodes(pods: Sequence[dict[str, Any]], events: Sequence[Obj],
           health: Mapping[str, NodeHealth], groups: Mapping[str, str], since: str | None,
           until: str | None) -> list[dict[str, Any]]:
    current = {p["node"] for p in pods if p.get("node")}
    ordered: dict[str, str] = {}
    for time, node in scheduled_nodes(events):
        ordered.setdefault(node, time)
    for node in sorted(current - set(ordered)):
        ordered[node] = ""
    views = []
    for node, first in ordered.items():
        node_id = instance_id(node)
        record = health.get(node_id or "")
        view: dict[str, Any] = {"node": node, "instanceId": node_id, "current": node in current}
        if first:
            view["firstScheduled"] = first
        group = groups.get(node) or (record.instance_group if record is not None else None)
        if group:
            view["instanceGroup"] = group
        if record is not None:
            view["health"] = _entry(record.latest)
        view["faults"] = _faults(record, since, until)
        views.append(view)
    return views


def _container(job: Obj) -> Mapping[str, Any]:
    specs = (job.get("spec") or {}).get("replicaSpecs") or [{}]
    containers = (((specs[0].get("template") or {}).get("spec") or {}).get("containers")) or [{}]
    return next((c for c in containers if c.get("name") == CONTAINER), containers[0])


def job_summary(job: Obj) -> dict[str, Any]:
    """A job as a list shows it."""
    meta, status, spec = _meta(job), _status(job), job.get("spec") or {}
    replica = (spec.get("replicaSpecs") or [{}])[0]
    selector = (((replica.get("template") or {}).get("spec") or {}).get("nodeSelector") or {})
    labels = meta.get("labels") or {}
    view: dict[str, Any] = {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "phase": phase(job),
        "instanceType": selector.get("node.kubernetes.io/instance-type"),
        "nodeCount": replica.get("replicas"),
        "image": _container(job).get("image"),
        "restarts": int(status.get("restartCount") or 0),
        "createdAt": meta.get("creationTimestamp"),
        "managedByHypd": labels.get("app.kubernetes.io/managed-by") == "hypd",
    }
    queue = labels.get(QUEUE_LABEL)
    if queue:
        view["queue"] = queue
    if labels.get(PRIORITY_LABEL):
        view["priority"] = str(labels[PRIORITY_LABEL]).removesuffix("-priority")
    retries = (spec.get("runPolicy") or {}).get("jobMaxRetryCount")
    if retries is not None:
        view["maxRetries"] = retries
    for key in ("startTime", "completionTime"):
        if status.get(key):
            view[key] = status[key]
    return view


def job_view(job: Obj, pods: Sequence[Obj], events: Sequence[Obj],
             health: Mapping[str, NodeHealth],
             groups: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One job with its pods, the nodes it ran on (and their faults while it ran), its
    conditions and events. `events`: the namespace's events of the job and of its pods;
    `groups`: the instance group of each node (by name) that still exists, from its label
    (else the health record's, when it has one)."""
    view = job_summary(job)
    pod_views = sorted((_pod(p) for p in pods), key=lambda p: str(p["name"]))
    names = {f"HyperPodPyTorchJob/{view['name']}"} | {f"Pod/{p['name']}" for p in pod_views}
    prefix = f"Pod/{view['name']}-"
    own = [e for e in events
           if _event(e)["object"] in names or str(_event(e)["object"]).startswith(prefix)]
    since = view.get("startTime") or view.get("createdAt")
    view["conditions"] = [_condition(c) for c in _status(job).get("conditions") or []]
    view["pods"] = pod_views
    view["nodes"] = _nodes(pod_views, own, health, groups or {}, since,
                           view.get("completionTime"))
    view["events"] = sorted((_event(e) for e in own if e.get("reason") != "Scheduled"),
                            key=lambda e: str(e["time"] or ""))
    return view


# ---------------------------------------------------------------------------- endpoints
def endpoint_view(obj: Obj) -> dict[str, Any]:
    meta, status, spec = _meta(obj), _status(obj), obj.get("spec") or {}
    kind = obj.get("kind")
    deployment = status.get("deploymentStatus") or {}
    replicas = deployment.get("status") or {}
    sagemaker = (status.get("endpoints") or {}).get("sagemaker") or {}
    if kind == JUMPSTART_MODEL.kind:
        model = spec.get("model") or {}
        instance_type = (spec.get("server") or {}).get("instanceType")
        endpoint_name = (spec.get("sageMakerEndpoint") or {}).get("name") or None
        source: dict[str, Any] = {"jumpStart": {k: model[k] for k in
                                                ("modelId", "modelVersion", "acceptEula")
                                                if k in model}}
    else:
        instance_type = spec.get("instanceType")
        endpoint_name = spec.get("endpointName") or None
        worker = spec.get("worker") or {}
        source = {"model": {"image": worker.get("image"),
                            "port": (worker.get("modelInvocationPort") or {}).get("containerPort"),
                            "source": spec.get("modelSourceConfig")}}
    state = "Deleting" if meta.get("deletionTimestamp") and not status.get("state") else (
        status.get("state") or "DeploymentPending")
    view: dict[str, Any] = {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "type": "jumpstart" if kind == JUMPSTART_MODEL.kind else "custom",
        "state": state,
        "ready": deployment.get("deploymentObjectOverallState") == READY_STATE,
        "instanceType": instance_type,
        "replicas": spec.get("replicas", 1),
        "readyReplicas": int(replicas.get("readyReplicas") or 0),
        "availableReplicas": int(replicas.get("availableReplicas") or 0),
        "createdAt": meta.get("creationTimestamp"),
        "managedByHypd": (meta.get("labels") or {}).get("app.kubernetes.io/managed-by") == "hypd",
        **source,
        "conditions": [_condition(c) for c in status.get("conditions") or []],
    }
    message = deployment.get("message") or deployment.get("reason")
    if message:
        view["message"] = message
    if endpoint_name:
        view["sageMaker"] = {
            "endpointName": endpoint_name,
            **({"state": sagemaker["state"]} if sagemaker.get("state") else {}),
            **({"endpointArn": sagemaker["endpointArn"]} if sagemaker.get("endpointArn") else {}),
        }
    return view


def registered(view: Mapping[str, Any]) -> bool:
    """The endpoint's SageMaker endpoint exists (it can be invoked)."""
    return (view.get("sageMaker") or {}).get("state") == REGISTERED_STATE

