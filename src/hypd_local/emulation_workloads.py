"""EKS add-ons in their cluster's Kubernetes API: part of the Kubernetes sync (`emulation_kube`).

On every tick, for each ACTIVE EKS cluster whose API is served: while an add-on of
`eks_workloads.WORKLOADS` is ACTIVE, DEGRADED, UPDATING or UPDATE_FAILED, its namespace, CRDs,
CSIDriver objects and controller Deployment exist (created when missing, written by the field
manager ``eks``), the Deployment's spec is the add-on version's and its status follows the
cluster's nodes (available with a Ready node, else not). When the add-on is gone, what EKS wrote
for it goes: the Deployment, the CRDs (and with them their custom resources), the CSIDriver
objects, and the namespace if EKS made it, no other add-on uses it and nothing else is left in
it. An add-on deleted with ``preserve`` leaves everything in place, unmanaged, as on AWS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hypd_local.emulator.eks import EksEmulator
from hypd_local.emulator.eks_workloads import (
    MANAGER,
    RUNNING_STATUSES,
    WORKLOADS,
    AddonWorkloads,
    csi_driver_manifest,
    deployment_manifest,
    deployment_status,
    namespace_manifest,
)
from hypd_local.emulator.errors import AwsError
from hypd_local.kube import KubeApiRegistry, KubeApiServer
from hypd_local.kube.errors import KubeError
from hypd_local.kube.resources import CRD_GROUP, CRD_PLURAL, ResourceType
from hypd_local.kube.store import DEFAULT_NAMESPACES, ObjectStore, rfc3339
from hypd_local.partitions import dns_suffix

Obj = dict[str, Any]

_ECR_ACCOUNT = "602401143452"  # where EKS's add-on images are pulled from


def _written_by(obj: Mapping[str, Any], manager: str) -> bool:
    return any(entry.get("manager") == manager
               for entry in (obj.get("metadata") or {}).get("managedFields") or [])


def _has_ready_node(store: ObjectStore) -> bool:
    nodes, _rv, _next = store.list(store.builtin_type("", "nodes"), None)
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for node in nodes for c in (node.get("status") or {}).get("conditions") or [])


def find_object(store: ObjectStore, rtype: ResourceType, namespace: str | None, name: str
         ) -> Obj | None:
    """The stored object, or None when there is none."""
    try:
        return store.get(rtype, namespace, name)
    except KubeError as exc:
        if exc.code != 404:
            raise
        return None


def _create_missing(store: ObjectStore, rtype: ResourceType, namespace: str | None,
                    body: Obj) -> bool:
    """Create the object unless it exists; whether it was created."""
    try:
        store.create(rtype, namespace, body, MANAGER, keep_status=True)
    except KubeError as exc:
        if exc.code != 409:
            raise
        return False
    return True


def _delete_ours(store: ObjectStore, rtype: ResourceType, namespace: str | None,
                 name: str) -> None:
    """Delete the object if EKS wrote it (someone else's is left alone)."""
    current = find_object(store, rtype, namespace, name)
    if current is not None and _written_by(current, MANAGER):
        try:
            store.delete(rtype, namespace, name)
        except KubeError as exc:
            if exc.code != 404:
                raise


def _left_in(store: ObjectStore, namespace: str) -> list[str]:
    """What is in the namespace besides what Kubernetes puts in every one."""
    left = []
    for rtype in store.all_types():
        if not rtype.namespaced:
            continue
        for obj in store.list(rtype, namespace)[0]:
            name = obj["metadata"]["name"]
            if not (rtype.group == "" and rtype.plural == "serviceaccounts"
                    and name == "default"):
                left.append(f"{rtype.plural}/{name}")
    return left


class AddonWorkloadSync:
    """Keeps each cluster's Kubernetes API in line with its EKS add-ons (see module doc)."""

    region: str
    eks: EksEmulator
    _addon_namespaces: dict[str, dict[str, str]]
    """EKS cluster -> add-on -> the namespace its objects were written in."""

    def _sync_addon_workloads(self, kube: KubeApiRegistry, active: Iterable[str]) -> None:
        for cluster in sorted(active):
            server = kube.get(cluster)
            if server is None:
                continue
            try:
                addons = self._addons(cluster)
                preserved = self.eks.preserved_addons(cluster)
            except AwsError:  # the cluster went meanwhile: the next tick removes its API
                continue
            placed = self._addon_namespaces.setdefault(cluster, {})
            available = _has_ready_node(server.store)
            for name, addon in sorted(addons.items()):
                workloads = WORKLOADS.get(name)
                if workloads is None or addon["status"] not in RUNNING_STATUSES:
                    continue
                namespace = ((addon.get("namespaceConfig") or {}).get("namespace")
                             or workloads.namespace)
                placed[name] = namespace
                self._install(server, workloads, namespace, addon, available)
            for name in sorted(set(placed) - set(addons)):
                namespace = placed.pop(name)
                if name not in preserved:
                    self._uninstall(server.store, WORKLOADS[name], namespace,
                                    in_use=set(placed.values()))

    def _addons(self, cluster: str) -> dict[str, Obj]:
        names: list[str] = []
        token: str | None = None
        while True:
            page = self.eks.list_addons({"clusterName": cluster,
                                         **({"nextToken": token} if token else {})})
            names += page.get("addons", [])
            token = page.get("nextToken")
            if not token:
                break
        return {name: self.eks.describe_addon({"clusterName": cluster, "addonName": name})[
            "addon"] for name in names}

    def _install(self, server: KubeApiServer, workloads: AddonWorkloads, namespace: str,
                 addon: Mapping[str, Any], available: bool) -> None:
        store = server.store
        if workloads.deployment is not None or workloads.crds:
            _create_missing(store, store.builtin_type("", "namespaces"), None,
                            namespace_manifest(namespace))
        server.ensure_crds([crd.manifest() for crd in workloads.crds], MANAGER)
        csi_type = store.builtin_type("storage.k8s.io", "csidrivers")
        for driver in workloads.csi_drivers:
            _create_missing(store, csi_type, None, csi_driver_manifest(driver))
        if workloads.deployment is None:
            return
        now = rfc3339(server.clock.now())
        registry = f"{_ECR_ACCOUNT}.dkr.ecr.{self.region}.{dns_suffix(self.region)}"
        wanted = deployment_manifest(workloads.deployment.name, namespace, workloads.addon,
                                     str(addon["addonVersion"]), registry)
        deployments = store.builtin_type("apps", "deployments")
        if find_object(store, deployments, namespace, workloads.deployment.name) is None:
            wanted["metadata"]["generation"] = 1
            wanted["status"] = deployment_status(wanted, available, now)
            _create_missing(store, deployments, namespace, wanted)
            return
        store.mutate(deployments, namespace, workloads.deployment.name,
                     _follow(wanted, available, now), MANAGER)

    @staticmethod
    def _uninstall(store: ObjectStore, workloads: AddonWorkloads, namespace: str,
                   in_use: set[str]) -> None:
        if workloads.deployment is not None:
            _delete_ours(store, store.builtin_type("apps", "deployments"), namespace,
                         workloads.deployment.name)
        crd_type = store.builtin_type(CRD_GROUP, CRD_PLURAL)
        for crd in workloads.crds:
            _delete_ours(store, crd_type, None, crd.name)
        csi_type = store.builtin_type("storage.k8s.io", "csidrivers")
        for driver in workloads.csi_drivers:
            _delete_ours(store, csi_type, None, driver.name)
        if (namespace not in DEFAULT_NAMESPACES and namespace not in in_use
                and not _left_in(store, namespace)):
            _delete_ours(store, store.builtin_type("", "namespaces"), None, namespace)


def _follow(wanted: Obj, available: bool, now: str) -> Callable[[Obj], None]:
    """The change that gives a stored Deployment the add-on's spec and labels, and the status
    its pod has now (no new resourceVersion when nothing changed)."""

    def change(deployment: Obj) -> None:
        metadata = deployment["metadata"]
        metadata["labels"] = {**(metadata.get("labels") or {}), **wanted["metadata"]["labels"]}
        deployment["spec"] = wanted["spec"]
        deployment["status"] = deployment_status(deployment, available, now)

    return change
