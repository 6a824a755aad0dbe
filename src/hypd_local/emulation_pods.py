"""What the emulated operators (`emulation_operators`, `emulation_endpoints`) need of a cluster
besides themselves: the kube-scheduler's placement of their pods, the kubelet's pod status,
core/v1 Events and the garbage collector of pods whose owner is gone.

Placement follows the default scheduler's filters, in its order, on the stored nodes:
NodeUnschedulable (``spec.unschedulable``), TaintToleration (``NoSchedule`` / ``NoExecute``
taints: the not-ready taint of a node that is not Ready and HyperPod's
``sagemaker.amazonaws.com/node-health-status=Unschedulable*`` taint included), NodeAffinity
(``nodeSelector``), then room. A pod that fits nowhere stays Pending with the scheduler's
condition (PodScheduled False, Unschedulable) and message (``0/3 nodes are available: 1
node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 node(s) didn't match Pod's
node affinity/selector. preemption: ...``) and a ``FailedScheduling`` Warning event.

The emulator's rule for room (made up, documented): a node runs one operator pod at a time (a
HyperPod job or model server asks for the whole instance), reported as ``Insufficient
nvidia.com/gpu`` (or ``Insufficient cpu`` for a pod that asks for no GPU). A node whose health
label is present and not ``Schedulable`` is refused too, as HyperPod's taint does.

Events are named as client-go's recorder names them (``<object>.<UnixNano hex>``), on the
virtual clock. Pods are not garbage collected by the object store: `collect_orphans` deletes
the pods whose ownerReference names an object that is gone (background propagation).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from hypd_local.emulation_workloads import find_object
from hypd_local.kube import KubeApiServer
from hypd_local.kube.errors import KubeError
from hypd_local.kube.resources import ResourceType
from hypd_local.kube.server_nodes import HEALTH_LABEL
from hypd_local.kube.store import rfc3339

Obj = dict[str, Any]

SCHEDULER = "default-scheduler"
KUBELET = "kubelet"
GPU = "nvidia.com/gpu"


# ---------------------------------------------------------------------------- placement
def _tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration["key"] == taint.get("key"):
                return True
        elif (toleration.get("key") == taint.get("key")
              and (toleration.get("value") or "") == (taint.get("value") or "")):
            return True
    return False


def _is_ready(node: Mapping[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


def node_fault(node: Mapping[str, Any] | None) -> str | None:
    """Why a node cannot keep running a pod (gone, not Ready, unhealthy), or None."""
    if node is None:
        return "gone"
    health = (node["metadata"].get("labels") or {}).get(HEALTH_LABEL)
    if health is not None and health != "Schedulable":
        return f"{HEALTH_LABEL}={health}"
    return None if _is_ready(node) else "NotReady"


def _refusal(node: Mapping[str, Any], spec: Mapping[str, Any], busy: set[str]) -> str | None:
    """Why the scheduler does not put a pod with ``spec`` on ``node`` (its words), or None."""
    if (node.get("spec") or {}).get("unschedulable"):
        return "node(s) were unschedulable"
    tolerations = spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(
                tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value', '')}}}"
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return "node(s) didn't match Pod's node affinity/selector"
    health = labels.get(HEALTH_LABEL)
    if health is not None and health != "Schedulable":
        return f"node(s) had untolerated taint {{{HEALTH_LABEL}: {health}}}"
    if node["metadata"]["name"] in busy:
        asks_gpu = any(GPU in ((c.get("resources") or {}).get("requests") or {})
                       or GPU in ((c.get("resources") or {}).get("limits") or {})
                       for c in spec.get("containers") or [])
        return f"Insufficient {GPU if asks_gpu else 'cpu'}"
    return None


def _unschedulable(reasons: list[str], total: int) -> str:
    if total == 0:
        return "no nodes available to schedule pods"
    counts = ", ".join(sorted(f"{n} {reason}" for reason, n in Counter(reasons).items()))
    return (f"0/{total} nodes are available: {counts}. preemption: 0/{total} nodes are "
            f"available: {total} Preemption is not helpful for scheduling.")


class Cluster:
    """One cluster's Kubernetes API as the scheduler, the kubelet and the garbage collector
    see it, for the operators' writes."""

    def __init__(self, server: KubeApiServer, now: datetime) -> None:
        self.server = server
        self.store = server.store
        self.now = now
        self.stamp = rfc3339(now)
        self.pods = self.store.builtin_type("", "pods")
        self.events = self.store.builtin_type("", "events")
        self._event_seq = 0

    # ------------------------------------------------------------------ reads
    def nodes(self) -> dict[str, Obj]:
        items = self.store.list(self.store.builtin_type("", "nodes"), None)[0]
        return {node["metadata"]["name"]: node for node in items}

    def pods_labelled(self, namespace: str, label: str, value: str) -> list[Obj]:
        return self.store.list(self.pods, namespace, label_selector=f"{label}={value}")[0]

    def busy_nodes(self) -> set[str]:
        """Nodes that run a pod (bound and neither Succeeded nor Failed)."""
        return {str(pod["spec"]["nodeName"]) for pod in self.store.list(self.pods, None)[0]
                if (pod.get("spec") or {}).get("nodeName")
                and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")}

    # ------------------------------------------------------------------ scheduling
    def schedule(self, pending: list[Obj]) -> list[tuple[Obj, str]]:
        """Bind what fits of ``pending`` (unbound pods, in order) to free nodes; the pods
        bound, each with its node. The others get the scheduler's condition and event."""
        nodes = self.nodes()
        busy = self.busy_nodes()
        bound: list[tuple[Obj, str]] = []
        for pod in pending:
            reasons: list[str] = []
            chosen = None
            for name, node in sorted(nodes.items()):
                refusal = _refusal(node, pod.get("spec") or {}, busy)
                if refusal is None:
                    chosen = name
                    break
                reasons.append(refusal)
            if chosen is None:
                self._unschedulable(pod, _unschedulable(reasons, len(nodes)))
                continue
            busy.add(chosen)
            bound.append((self._bind(pod, chosen, nodes[chosen]), chosen))
        return bound

    def _unschedulable(self, pod: Obj, message: str) -> None:
        current: Obj = next((c for c in (pod.get("status") or {}).get("conditions") or []
                             if c.get("type") == "PodScheduled"), {})
        if current.get("message") == message:
            return
        self._set_status(pod, {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": message, "lastProbeTime": None, "lastTransitionTime": self.stamp}],
            "qosClass": "BestEffort"}, SCHEDULER)
        self.event(pod, "FailedScheduling", message, warning=True, component=SCHEDULER)

    def _bind(self, pod: Obj, node_name: str, node: Obj) -> Obj:
        meta = pod["metadata"]

        def bind(obj: Obj) -> None:
            obj["spec"]["nodeName"] = node_name

        self.store.mutate(self.pods, meta["namespace"], meta["name"], bind, SCHEDULER)
        self.event(pod, "Scheduled",
                   f"Successfully assigned {meta['namespace']}/{meta['name']} to {node_name}",
                   component=SCHEDULER)
        host_ip = next((a["address"] for a in (node.get("status") or {}).get("addresses") or []
                        if a.get("type") == "InternalIP"), None)
        return self._set_status(pod, self.running_status(pod, host_ip), KUBELET)

    # ------------------------------------------------------------------ the kubelet
    def running_status(self, pod: Obj, host_ip: str | None) -> Obj:
        conditions = [{"type": kind, "status": "True", "lastProbeTime": None,
                       "lastTransitionTime": self.stamp}
                      for kind in ("PodReadyToStartContainers", "Initialized", "Ready",
                                   "ContainersReady", "PodScheduled")]
        containers = [{
            "name": c["name"], "image": c.get("image", ""), "imageID": "",
            "containerID": "containerd://" + hashlib.sha256(
                f"{pod['metadata']['uid']}/{c['name']}".encode()).hexdigest(),
            "ready": True, "started": True, "restartCount": 0,
            "state": {"running": {"startedAt": self.stamp}}}
            for c in (pod.get("spec") or {}).get("containers") or []]
        status: Obj = {"phase": "Running", "conditions": conditions, "startTime": self.stamp,
                       "containerStatuses": containers, "qosClass": "BestEffort"}
        if host_ip:
            status["hostIP"] = host_ip
            status["hostIPs"] = [{"ip": host_ip}]
        return status

    def terminate(self, pod: Obj, exit_code: int) -> None:
        """The pod's containers exited with ``exit_code``: Succeeded (0) or Failed."""
        status = dict(pod.get("status") or {})
        reason = "Completed" if exit_code == 0 else "Error"
        status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
        status["conditions"] = [
            {**c, "status": "False", "reason": "PodCompleted" if exit_code == 0 else "PodFailed",
             "lastTransitionTime": self.stamp}
            if c.get("type") in ("Ready", "ContainersReady") else c
            for c in status.get("conditions") or []]
        status["containerStatuses"] = [
            {**c, "ready": False, "started": False, "state": {"terminated": {
                "exitCode": exit_code, "reason": reason,
                "startedAt": ((c.get("state") or {}).get("running") or {}).get("startedAt"),
                "finishedAt": self.stamp, "containerID": c.get("containerID")}}}
            for c in status.get("containerStatuses") or []]
        self._set_status(pod, status, KUBELET)

    def _set_status(self, pod: Obj, status: Obj, manager: str) -> Obj:
        meta = pod["metadata"]

        def change(obj: Obj) -> None:
            obj["status"] = status

        return self.store.mutate(self.pods, meta["namespace"], meta["name"], change, manager)

    def delete_pods(self, pods: Iterable[Obj]) -> None:
        for pod in pods:
            meta = pod["metadata"]
            self.server.logs.forget(meta["namespace"], meta["name"])
            try:
                self.store.delete(self.pods, meta["namespace"], meta["name"])
            except KubeError as exc:
                if exc.code != 404:
                    raise

    # ------------------------------------------------------------------ events
    def event(self, involved: Mapping[str, Any], reason: str, message: str, *,
              warning: bool = False, component: str) -> None:
        """A core/v1 Event about ``involved`` (client-go's recorder's name and fields)."""
        meta = involved["metadata"]
        nanos = int(self.now.timestamp() * 1_000_000_000)
        while True:
            self._event_seq += 1
            name = f"{meta['name']}.{nanos + self._event_seq:x}"
            if find_object(self.store, self.events, meta["namespace"], name) is None:
                break
        self.store.create(self.events, meta["namespace"], {
            "metadata": {"name": name, "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": involved.get("apiVersion"),
                               "kind": involved.get("kind"), "name": meta["name"],
                               "namespace": meta["namespace"], "uid": meta.get("uid"),
                               "resourceVersion": meta.get("resourceVersion")},
            "reason": reason, "message": message,
            "type": "Warning" if warning else "Normal",
            "source": {"component": component},
            "firstTimestamp": self.stamp, "lastTimestamp": self.stamp, "count": 1,
            "reportingComponent": component, "reportingInstance": "",
        }, component)

    # ------------------------------------------------------------------ garbage collection
    def collect_orphans(self) -> None:
        """Delete the pods whose controlling owner (ownerReferences) is gone."""
        owners: dict[tuple[str, str], ResourceType | None] = {}
        for pod in self.store.list(self.pods, None)[0]:
            meta = pod["metadata"]
            for ref in meta.get("ownerReferences") or []:
                key = (str(ref.get("apiVersion")), str(ref.get("kind")))
                if key not in owners:
                    owners[key] = self._type_of(*key)
                rtype = owners[key]
                if rtype is None:  # the owner's type is not served (its CRD went): gone too
                    self.delete_pods([pod])
                    break
                owner = find_object(self.store, rtype, meta["namespace"], str(ref.get("name")))
                if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
                    self.delete_pods([pod])
                    break

    def _type_of(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        return next((t for t in self.store.all_types()
                     if (t.group, t.version, t.kind) == (group, version, kind)), None)


def owner_reference(owner: Mapping[str, Any]) -> Obj:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
            "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}


def new_pod(name: str, owner: Mapping[str, Any], labels: Mapping[str, str],
            template: Mapping[str, Any]) -> Obj:
    """A pod of ``owner`` from a pod template (its labels merged with ``labels``)."""
    meta = template.get("metadata") or {}
    return {"metadata": {"name": name, "namespace": owner["metadata"]["namespace"],
                         "labels": {**(meta.get("labels") or {}), **labels},
                         "annotations": dict(meta.get("annotations") or {}),
                         "ownerReferences": [owner_reference(owner)]},
            "spec": {"schedulerName": SCHEDULER, "restartPolicy": "Never",
                     **dict(template.get("spec") or {})}}
