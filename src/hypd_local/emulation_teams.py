"""What HyperPod task governance puts into an EKS cluster's Kubernetes API for each team.

A compute quota (``ComputeQuotaTarget.TeamName``) that is ``Created`` (and while it is updated
or being deleted) has, in the Kubernetes API of its HyperPod cluster's EKS cluster:

- the namespace ``hyperpod-ns-<team>`` (the HyperPod CLI's walkthrough);
- in it, the Kueue LocalQueue ``hyperpod-ns-<team>-localqueue``, the queue jobs name in
  ``kueue.x-k8s.io/queue-name`` (the awsome-distributed-training examples);
- the Kueue ClusterQueue ``hyperpod-ns-<team>-clusterqueue`` the LocalQueue points to.

The queues are made only when the API serves Kueue's CRDs (``localqueues`` /
``clusterqueues.kueue.x-k8s.io``, in the version the CRD stores; the task governance add-on
brings them): without them only the namespace is made, and the queues follow on the first sync
after the CRDs appear. When the quota is ``Deleted`` (or its EKS cluster's API goes away) the
objects the sync made go, the queues first; a namespace that existed before is never deleted.

The ClusterQueue's spec is the emulator's sketch of HyperPod's translation, not its exact
output: a ``namespaceSelector`` for the team's namespace, ``preemption.withinClusterQueue``
from ``PreemptTeamTasks`` (default LowerPriority), ``fairSharing.weight`` from
``FairShareWeight`` and one resource group with a flavor per ``ComputeQuotaResources``
instance type (``Accelerators`` as ``nvidia.com/gpu``, or ``aws.amazon.com/neuron`` on
Trainium; ``VCpu`` as ``cpu``; ``MemoryInGiB`` as ``memory``; ``Count`` alone adds nothing).
Each object carries the annotation ``sagemaker.amazonaws.com/compute-quota-arn``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypd_local.emulator.hyperpod import HyperPodEmulator
from hypd_local.kube import KubeApiRegistry
from hypd_local.kube.errors import KubeError
from hypd_local.kube.resources import ResourceType
from hypd_local.kube.server import KubeApiServer

KUEUE_GROUP = "kueue.x-k8s.io"
TEAM_STATUSES = frozenset({"Created", "Updating", "Updated", "UpdateFailed", "Deleting",
                           "DeleteFailed"})
"""The quota statuses in which its team's objects exist."""
QUOTA_ANNOTATION = "sagemaker.amazonaws.com/compute-quota-arn"
MANAGER = "sagemaker-hyperpod-task-governance"


def team_namespace(team: str) -> str:
    return f"hyperpod-ns-{team}"


def local_queue(team: str) -> str:
    return f"hyperpod-ns-{team}-localqueue"


def cluster_queue(team: str) -> str:
    return f"hyperpod-ns-{team}-clusterqueue"


def _accelerator(instance_type: str) -> str:
    return "aws.amazon.com/neuron" if instance_type.startswith("ml.trn") else "nvidia.com/gpu"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def cluster_queue_spec(quota: Mapping[str, Any]) -> dict[str, Any]:
    """The ClusterQueue spec of a compute quota (ListComputeQuotas' summary)."""
    team = quota["ComputeQuotaTarget"]["TeamName"]
    config = quota.get("ComputeQuotaConfig") or {}
    flavors: list[tuple[str, dict[str, str]]] = []
    for resource in config.get("ComputeQuotaResources") or []:
        amounts: dict[str, str] = {}
        if resource.get("Accelerators") is not None:
            amounts[_accelerator(resource["InstanceType"])] = str(resource["Accelerators"])
        if resource.get("VCpu") is not None:
            amounts["cpu"] = _number(resource["VCpu"])
        if resource.get("MemoryInGiB") is not None:
            amounts["memory"] = f"{_number(resource['MemoryInGiB'])}Gi"
        flavors.append((resource["InstanceType"], amounts))
    covered = sorted({name for _t, amounts in flavors for name in amounts})
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": team_namespace(team)}},
        "preemption": {"withinClusterQueue": config.get("PreemptTeamTasks", "LowerPriority")},
        "fairSharing": {"weight": str(quota["ComputeQuotaTarget"].get("FairShareWeight", 0))},
        "stopPolicy": "None" if quota.get("ActivationState", "Enabled") == "Enabled" else "Hold",
    }
    if covered:
        spec["resourceGroups"] = [{
            "coveredResources": covered,
            "flavors": [{"name": itype, "resources": [
                {"name": name, "nominalQuota": amounts.get(name, "0")} for name in covered]}
                for itype, amounts in flavors],
        }]
    return spec


def _kueue_type(server: KubeApiServer, plural: str) -> ResourceType | None:
    """The served Kueue type of ``plural`` (the CRD's storage version), None when not served."""
    found = [t for t in server.store.all_types() if t.group == KUEUE_GROUP and t.plural == plural]
    return next((t for t in found if t.storage), found[0] if found else None)


def _exists(server: KubeApiServer, rtype: ResourceType, namespace: str | None,
            name: str) -> bool:
    try:
        server.store.get(rtype, namespace, name)
    except KubeError as exc:
        if exc.code == 404:
            return False
        raise
    return True


class TeamSync:
    """Keeps each team's namespace and Kueue queues in line with its compute quota."""

    hyperpod: HyperPodEmulator
    _teams: dict[str, dict[str, set[str]]]

    def _sync_teams(self, kube: KubeApiRegistry, active: set[str],
                    eks_of: Mapping[str, str]) -> None:
        """``eks_of``: HyperPod cluster ARN -> the name of its EKS cluster."""
        wanted: dict[str, dict[str, dict[str, Any]]] = {}
        for quota in _pages(self.hyperpod.list_compute_quotas):
            eks_name = eks_of.get(quota["ClusterArn"])
            if quota["Status"] in TEAM_STATUSES and eks_name in active:
                team = quota["ComputeQuotaTarget"]["TeamName"]
                wanted.setdefault(str(eks_name), {})[team] = quota
        for eks_name in sorted(active):
            server = kube.get(eks_name)
            if server is None:
                continue
            made = self._teams.setdefault(eks_name, {})
            teams = wanted.get(eks_name, {})
            for team, quota in sorted(teams.items()):
                _ensure_team(server, team, quota, made.setdefault(team, set()))
            for team in sorted(set(made) - set(teams)):
                _remove_team(server, team, made.pop(team))
        for gone in set(self._teams) - active:
            del self._teams[gone]


def _ensure_team(server: KubeApiServer, team: str, quota: Mapping[str, Any],
                 made: set[str]) -> None:
    annotations = {QUOTA_ANNOTATION: str(quota["ComputeQuotaArn"])}
    namespace = team_namespace(team)
    namespaces = server.store.builtin_type("", "namespaces")
    if not _exists(server, namespaces, None, namespace):
        server.store.create(namespaces, None, {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": namespace,
                                                            "annotations": annotations}},
                            MANAGER)
        made.add("namespace")
    queues = _kueue_type(server, "clusterqueues")
    if queues is not None:
        spec = cluster_queue_spec(quota)
        name = cluster_queue(team)
        if not _exists(server, queues, None, name):
            server.store.create(queues, None, {
                "apiVersion": queues.api_version, "kind": queues.kind,
                "metadata": {"name": name, "annotations": annotations}, "spec": spec}, MANAGER)
            made.add("clusterqueue")
        elif "clusterqueue" in made:
            server.store.mutate(queues, None, name, _set_spec(spec), MANAGER)
    locals_ = _kueue_type(server, "localqueues")
    if locals_ is not None and not _exists(server, locals_, namespace, local_queue(team)):
        server.store.create(locals_, namespace, {
            "apiVersion": locals_.api_version, "kind": locals_.kind,
            "metadata": {"name": local_queue(team), "namespace": namespace,
                         "annotations": annotations},
            "spec": {"clusterQueue": cluster_queue(team)}}, MANAGER)
        made.add("localqueue")


def _remove_team(server: KubeApiServer, team: str, made: set[str]) -> None:
    namespace = team_namespace(team)
    for what, plural, where, name in (("localqueue", "localqueues", namespace, local_queue(team)),
                                      ("clusterqueue", "clusterqueues", None,
                                       cluster_queue(team))):
        rtype = _kueue_type(server, plural)
        if what in made and rtype is not None and _exists(server, rtype, where, name):
            server.store.delete(rtype, where, name)
    namespaces = server.store.builtin_type("", "namespaces")
    if "namespace" in made and _exists(server, namespaces, None, namespace):
        server.store.delete(namespaces, None, namespace)


def _set_spec(spec: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        obj["spec"] = spec

    return change


def _pages(call: Callable[[dict[str, Any]], dict[str, Any]]) -> list[dict[str, Any]]:
    """Every compute quota that is not Deleted (ListComputeQuotas, all pages)."""
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page = call({"NextToken": token} if token else {})
        items += page.get("ComputeQuotaSummaries", [])
        token = page.get("NextToken")
        if not token:
            return items
