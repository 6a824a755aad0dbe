"""What task governance's compute quotas put into the EKS cluster's Kubernetes API: the team's
namespace, and its Kueue LocalQueue and ClusterQueue when Kueue's CRDs are served."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hypd_local.clock import VirtualClock
from hypd_local.emulation_teams import (
    QUOTA_ANNOTATION,
    TeamSync,
    cluster_queue_spec,
)
from hypd_local.emulator.hyperpod import HyperPodEmulator
from hypd_local.kube import KubeApiRegistry
from hypd_local.kube.errors import KubeError
from hypd_local.kube.server import KubeApiServer
from tests.emulator.test_hyperpod_support import (
    ACCOUNT,
    REGION,
    START,
    Checked,
    cluster_request,
    group,
)

EKS = "hp-eks"


def kueue_crd(kind: str, plural: str, scope: str) -> dict[str, Any]:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    versions: list[dict[str, Any]] = [
        {"name": name, "served": True, "storage": name == "v1beta2",
         "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}
        for name in ("v1beta1", "v1beta2")]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.kueue.x-k8s.io"},
            "spec": {"group": "kueue.x-k8s.io", "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               "listKind": f"{kind}List"},
                     "versions": versions}}


KUEUE_CRDS = (kueue_crd("LocalQueue", "localqueues", "Namespaced"),
              kueue_crd("ClusterQueue", "clusterqueues", "Cluster"))


class Sync(TeamSync):
    def __init__(self, hyperpod: HyperPodEmulator) -> None:
        self.hyperpod = hyperpod
        self._teams = {}


class World:
    def __init__(self, registry: KubeApiRegistry, clock: VirtualClock) -> None:
        self.clock = clock
        self.emu = HyperPodEmulator(clock, lambda *a: None, ACCOUNT, REGION)
        self.api = Checked(self.emu)
        self.cluster = self.api.create_cluster(**cluster_request(groups=[group()]))["ClusterArn"]
        clock.advance(3600)
        self.registry = registry
        registry.ensure(EKS, lambda _arn: None)
        server = registry.get(EKS)
        assert server is not None
        self.server: KubeApiServer = server
        self.sync = Sync(self.emu)

    def run(self, seconds: float = 0) -> None:
        if seconds:
            self.clock.advance(seconds)
        self.sync._sync_teams(self.registry, {EKS}, {self.cluster: EKS})

    def quota(self, team: str, **config: Any) -> str:
        return str(self.api.create_compute_quota(
            Name=team, ClusterArn=self.cluster,
            ComputeQuotaTarget={"TeamName": team, "FairShareWeight": 25},
            ComputeQuotaConfig=config or {"ComputeQuotaResources": [
                {"InstanceType": "ml.g5.8xlarge", "Accelerators": 1, "VCpu": 8.0,
                 "MemoryInGiB": 32.0}]})["ComputeQuotaId"])

    def get(self, group: str, plural: str, namespace: str | None, name: str
            ) -> dict[str, Any] | None:
        store = self.server.store
        types = [t for t in store.all_types() if t.group == group and t.plural == plural]
        if not types:
            return None
        try:
            return store.get(next(t for t in types if t.storage), namespace, name)
        except KubeError:
            return None

    def namespace(self, name: str) -> dict[str, Any] | None:
        return self.get("", "namespaces", None, name)


@pytest.fixture
def world() -> Iterator[World]:
    clock = VirtualClock(START, ticking=False)
    registry = KubeApiRegistry(clock, sts_endpoint=None, tls_enabled=False)
    try:
        yield World(registry, clock)
    finally:
        registry.stop_all()


def test_without_kueue_crds_a_created_quota_makes_only_the_namespace(world: World) -> None:
    ident = world.quota("team-a")
    world.run()
    assert world.namespace("hyperpod-ns-team-a") is None  # still Creating
    world.run(60)
    namespace = world.namespace("hyperpod-ns-team-a")
    assert namespace is not None
    assert namespace["metadata"]["annotations"][QUOTA_ANNOTATION].endswith(ident)
    assert world.get("kueue.x-k8s.io", "localqueues", "hyperpod-ns-team-a",
                     "hyperpod-ns-team-a-localqueue") is None
    # the CRDs arrive later (the add-on's): the queues follow on the next sync
    world.server.ensure_crds(KUEUE_CRDS, "eks")
    world.run()
    local = world.get("kueue.x-k8s.io", "localqueues", "hyperpod-ns-team-a",
                      "hyperpod-ns-team-a-localqueue")
    assert local is not None
    assert local["apiVersion"] == "kueue.x-k8s.io/v1beta2"  # the stored version
    assert local["spec"] == {"clusterQueue": "hyperpod-ns-team-a-clusterqueue"}


def test_queues_follow_the_quota_and_go_with_it(world: World) -> None:
    world.server.ensure_crds(KUEUE_CRDS, "eks")
    ident = world.quota("team-a")
    world.run(60)
    queue = world.get("kueue.x-k8s.io", "clusterqueues", None, "hyperpod-ns-team-a-clusterqueue")
    assert queue is not None
    assert queue["spec"] == {
        "namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": "hyperpod-ns-team-a"}},
        "preemption": {"withinClusterQueue": "LowerPriority"},
        "fairSharing": {"weight": "25"},
        "stopPolicy": "None",
        "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                            "flavors": [{"name": "ml.g5.8xlarge", "resources": [
                                {"name": "cpu", "nominalQuota": "8"},
                                {"name": "memory", "nominalQuota": "32Gi"},
                                {"name": "nvidia.com/gpu", "nominalQuota": "1"}]}]}],
    }
    world.api.update_compute_quota(ComputeQuotaId=ident, TargetVersion=1,
                                   ActivationState="Disabled")
    world.run(60)
    queue = world.get("kueue.x-k8s.io", "clusterqueues", None, "hyperpod-ns-team-a-clusterqueue")
    assert queue is not None
    assert queue["spec"]["stopPolicy"] == "Hold"
    world.api.delete_compute_quota(ComputeQuotaId=ident)
    world.run()
    assert world.namespace("hyperpod-ns-team-a") is not None  # Deleting: still there
    world.run(30)
    assert world.namespace("hyperpod-ns-team-a") is None
    assert world.get("kueue.x-k8s.io", "clusterqueues", None,
                     "hyperpod-ns-team-a-clusterqueue") is None
    assert world.get("kueue.x-k8s.io", "localqueues", "hyperpod-ns-team-a",
                     "hyperpod-ns-team-a-localqueue") is None


def test_a_namespace_that_existed_before_is_kept(world: World) -> None:
    namespaces = world.server.store.builtin_type("", "namespaces")
    world.server.store.create(namespaces, None, {"metadata": {"name": "hyperpod-ns-mine"}},
                              "someone")
    ident = world.quota("mine")
    world.run(60)
    world.api.delete_compute_quota(ComputeQuotaId=ident)
    world.run(30)
    assert world.namespace("hyperpod-ns-mine") is not None


def test_a_failed_quota_makes_nothing() -> None:
    clock = VirtualClock(START, ticking=False)
    registry = KubeApiRegistry(clock, sts_endpoint=None, tls_enabled=False)
    try:
        world = World(registry, clock)
        world.emu._addon_lookup = lambda _arn, _name: None
        world.quota("team-a")
        world.run(60)
        assert world.namespace("hyperpod-ns-team-a") is None
    finally:
        registry.stop_all()


def test_trainium_accelerators_and_count_only_resources() -> None:
    spec = cluster_queue_spec({
        "ComputeQuotaTarget": {"TeamName": "t"},
        "ComputeQuotaConfig": {"ComputeQuotaResources": [
            {"InstanceType": "ml.trn1.32xlarge", "Accelerators": 16},
            {"InstanceType": "ml.m5.xlarge", "Count": 2}],
            "PreemptTeamTasks": "Never"}})
    assert spec["preemption"] == {"withinClusterQueue": "Never"}
    assert spec["fairSharing"] == {"weight": "0"}
    assert spec["resourceGroups"] == [{
        "coveredResources": ["aws.amazon.com/neuron"],
        "flavors": [{"name": "ml.trn1.32xlarge", "resources": [
                        {"name": "aws.amazon.com/neuron", "nominalQuota": "16"}]},
                    {"name": "ml.m5.xlarge", "resources": [
                        {"name": "aws.amazon.com/neuron", "nominalQuota": "0"}]}]}]
