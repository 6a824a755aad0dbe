"""What HyperPod does to a cluster's Kubernetes API: the CRDs it installs, the nodes it joins,
labels, taints, marks ready or not and removes, and the state managed Karpenter reports."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from hypd_local.kube.errors import KubeError
from hypd_local.kube.karpenter import HyperPodCluster
from hypd_local.kube.resources import CRD_GROUP, CRD_PLURAL, ResourceType
from hypd_local.kube.server_base import ServerState
from hypd_local.kube.store import rfc3339
from hypd_local.kube.version import git_version

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"

DEEP_HEALTH_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"

INSTANCE_GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"

UNSCHEDULABLE_STATUSES = frozenset(
    {"Unschedulable", "UnschedulablePendingReplacement", "UnschedulablePendingReboot"}
)

NOT_READY_TAINT = "node.kubernetes.io/not-ready"

_NODE_MANAGER = "kubelet"


def _taint_id(taint: Mapping[str, Any]) -> tuple[str, str]:
    """A node's taints are unique by key and effect."""
    return str(taint.get("key") or ""), str(taint.get("effect") or "")


class NodeLifecycle(ServerState):
    """The nodes of the cluster, as HyperPod's instances join and leave it."""

    def ensure_crds(self, crds: Iterable[Mapping[str, Any]], manager: str) -> None:
        """Create the CustomResourceDefinitions that do not exist yet (existing ones are kept
        as they are)."""
        crd_type = self.store.builtin_type(CRD_GROUP, CRD_PLURAL)
        for crd in crds:
            try:
                self.store.create(crd_type, None, dict(crd), manager)
            except KubeError as exc:
                if exc.code != 409:
                    raise

    def observe_hyperpod(self, cluster: HyperPodCluster | None) -> None:
        """Tell the Karpenter status controller how the HyperPod cluster is now, and run it."""
        self.karpenter.observe(cluster)
        self.store.run_controllers(self.karpenter)

    # ---------------------------------------------------------------- nodes
    def _nodes(self) -> ResourceType:
        return self.store.builtin_type("", "nodes")

    def join_node(self, name: str, labels: Mapping[str, str],
                  taints: Iterable[Mapping[str, str]] = (), ready: bool = True, *,
                  provider_id: str | None = None,
                  capacity: Mapping[str, str] | None = None,
                  addresses: Iterable[Mapping[str, str]] = ()) -> dict[str, Any]:
        """A node registers (as the kubelet does) with its labels, taints, conditions and
        addresses (``InternalIP``, ``InternalDNS``; ``Hostname`` is its name)."""
        now = rfc3339(self.clock.now())
        all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                      "kubernetes.io/arch": "amd64", **labels}
        resources = dict(capacity or {"cpu": "8", "memory": "32Gi", "pods": "110"})
        kubelet = git_version(self.kubernetes_version, self.platform_version)
        node: dict[str, Any] = {
            "metadata": {"name": name, "labels": all_labels},
            "spec": {"taints": [dict(t) for t in taints]},
            "status": {
                "capacity": resources,
                "allocatable": dict(resources),
                "conditions": [
                    {"type": kind, "status": "False", "reason": f"KubeletHasNo{kind}",
                     "lastHeartbeatTime": now, "lastTransitionTime": now, "message": ""}
                    for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")
                ],
                "addresses": [*(dict(a) for a in addresses),
                              {"type": "Hostname", "address": name}],
                "nodeInfo": {"kubeletVersion": kubelet, "kubeProxyVersion": kubelet,
                             "operatingSystem": "linux", "architecture": "amd64",
                             "osImage": "Amazon Linux 2023", "kernelVersion": "6.1.0",
                             "containerRuntimeVersion": "containerd://1.7.0",
                             "machineID": uuid.uuid5(uuid.NAMESPACE_DNS, name).hex,
                             "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
                             "bootID": str(uuid.uuid5(uuid.NAMESPACE_OID, name))},
            },
        }
        if provider_id:
            node["spec"]["providerID"] = provider_id
        self._set_ready(node, ready, now)
        self._sync_health_taint(node)
        if not node["spec"]["taints"]:
            del node["spec"]["taints"]
        return self.store.create(self._nodes(), None, node, _NODE_MANAGER, keep_status=True)

    def update_node(self, name: str, *, labels: Mapping[str, str | None] | None = None,
                    taints: Iterable[Mapping[str, str]] = (),
                    remove_taints: Iterable[Mapping[str, str]] = (),
                    ready: bool | None = None) -> dict[str, Any]:
        """Change a joined node in one write (one new resourceVersion, none when nothing
        changes): set labels (``None`` removes one); remove the taints with the key and effect
        of one of ``remove_taints``, then add ``taints``, replacing those with the same key and
        effect; set the Ready condition (not-ready taint included) unless ``ready`` is None. An
        Unschedulable* health status label taints the node
        ``sagemaker.amazonaws.com/node-health-status=<status>:NoSchedule``."""
        now = rfc3339(self.clock.now())
        added = [dict(t) for t in taints]
        dropped = {_taint_id(t) for t in [*remove_taints, *added]}

        def change(node: dict[str, Any]) -> None:
            current = node["metadata"].setdefault("labels", {})
            for key, value in (labels or {}).items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            spec = node.setdefault("spec", {})
            kept = [t for t in spec.get("taints") or [] if _taint_id(t) not in dropped]
            spec["taints"] = kept + added
            if ready is not None:
                self._set_ready(node, ready, now)
            self._sync_health_taint(node)
            if not node["spec"]["taints"]:
                del node["spec"]["taints"]

        return self.store.mutate(self._nodes(), None, name, change, _NODE_MANAGER)

    def update_node_labels(self, name: str, labels: Mapping[str, str | None]) -> dict[str, Any]:
        """Set (or, with ``None``, remove) node labels (see `update_node`)."""
        return self.update_node(name, labels=labels)

    def set_node_ready(self, name: str, ready: bool) -> dict[str, Any]:
        return self.update_node(name, ready=ready)

    def set_node_taints(self, name: str, taints: Iterable[Mapping[str, str]]) -> dict[str, Any]:
        wanted = [dict(t) for t in taints]

        def change(node: dict[str, Any]) -> None:
            node.setdefault("spec", {})["taints"] = wanted
            self._sync_health_taint(node)

        return self.store.mutate(self._nodes(), None, name, change, _NODE_MANAGER)

    def remove_node(self, name: str) -> None:
        try:
            self.store.delete(self._nodes(), None, name)
        except KubeError as exc:
            if exc.code != 404:
                raise

    @staticmethod
    def _set_ready(node: dict[str, Any], ready: bool, now: str) -> None:
        conditions = [c for c in node["status"].get("conditions", []) if c["type"] != "Ready"]
        previous = next((c for c in node["status"].get("conditions", [])
                         if c["type"] == "Ready"), None)
        status = "True" if ready else "False"
        changed = previous is None or previous["status"] != status
        conditions.append({
            "type": "Ready",
            "status": status,
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "message": "kubelet is posting ready status" if ready else "node is not ready",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now if changed or previous is None
            else previous["lastTransitionTime"],
        })
        node["status"]["conditions"] = conditions
        taints = [t for t in node.setdefault("spec", {}).get("taints") or []
                  if t.get("key") != NOT_READY_TAINT]
        if not ready:
            taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule"})
        node["spec"]["taints"] = taints

    @staticmethod
    def _sync_health_taint(node: dict[str, Any]) -> None:
        health = (node["metadata"].get("labels") or {}).get(HEALTH_LABEL)
        taints = [t for t in node.setdefault("spec", {}).get("taints") or []
                  if t.get("key") != HEALTH_LABEL]
        if health in UNSCHEDULABLE_STATUSES:
            taints.append({"key": HEALTH_LABEL, "value": health, "effect": "NoSchedule"})
        node["spec"]["taints"] = taints
