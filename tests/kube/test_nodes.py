"""HyperPod nodes joining the cluster's Kubernetes API, and the per-cluster registry."""

from __future__ import annotations

from typing import Any, cast

import pytest
from kubernetes import client as k8s

from hypd_local.clock import VirtualClock
from hypd_local.kube import AccessDecision, KubeApiRegistry, KubeApiServer

HEALTH = "sagemaker.amazonaws.com/node-health-status"


def _ready(node: Any) -> str:
    return str(next(c.status for c in node.status.conditions if c.type == "Ready"))


def test_nodes_join_change_and_leave(server: KubeApiServer, admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    labels = {"node.kubernetes.io/instance-type": "ml.p5.48xlarge",
              "sagemaker.amazonaws.com/instance-group-name": "workers",
              HEALTH: "Schedulable",
              "sagemaker.amazonaws.com/deep-health-check-status": "Passed"}
    server.join_node("hyperpod-i-0123456789abcdef0", labels,
                     provider_id="aws:///us-west-2a/i-0123456789abcdef0")
    server.join_node("hyperpod-i-0fedcba9876543210", {**labels, HEALTH: "Schedulable"},
                     ready=False)
    node = core.read_node("hyperpod-i-0123456789abcdef0")
    assert node.metadata.labels["node.kubernetes.io/instance-type"] == "ml.p5.48xlarge"
    assert _ready(node) == "True"
    assert not node.spec.taints
    workers = core.list_node(label_selector="sagemaker.amazonaws.com/instance-group-name=workers,"
                                            f"{HEALTH}=Schedulable")
    assert len(workers.items) == 2
    not_ready = core.read_node("hyperpod-i-0fedcba9876543210")
    assert _ready(not_ready) == "False"
    assert [t.key for t in not_ready.spec.taints] == ["node.kubernetes.io/not-ready"]

    server.update_node_labels("hyperpod-i-0123456789abcdef0",
                              {HEALTH: "UnschedulablePendingReplacement"})
    node = core.read_node("hyperpod-i-0123456789abcdef0")
    assert node.metadata.labels[HEALTH] == "UnschedulablePendingReplacement"
    assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [
        (HEALTH, "UnschedulablePendingReplacement", "NoSchedule")]
    assert core.list_node(label_selector=f"{HEALTH}=Schedulable").items[0].metadata.name == (
        "hyperpod-i-0fedcba9876543210")
    server.set_node_ready("hyperpod-i-0fedcba9876543210", True)
    assert _ready(core.read_node("hyperpod-i-0fedcba9876543210")) == "True"
    server.update_node_labels("hyperpod-i-0123456789abcdef0", {HEALTH: "Schedulable"})
    assert not core.read_node("hyperpod-i-0123456789abcdef0").spec.taints
    server.remove_node("hyperpod-i-0123456789abcdef0")
    server.remove_node("hyperpod-i-0123456789abcdef0")  # idempotent
    assert [n.metadata.name for n in core.list_node().items] == ["hyperpod-i-0fedcba9876543210"]


def test_registry_starts_and_stops_one_server_per_cluster(sts_endpoint: str) -> None:
    clock = VirtualClock(ticking=False)

    def nobody(_arn: str) -> AccessDecision | None:
        return None

    with KubeApiRegistry(clock, sts_endpoint=sts_endpoint) as registry:
        url_a = registry.ensure("a", nobody)
        assert registry.ensure("a", nobody) == url_a
        url_b = registry.ensure("b", nobody)
        assert url_a != url_b
        assert url_a.startswith("https://127.0.0.1:")
        server = registry.get("a")
        assert server is not None
        assert server.certificate_authority_data
        registry.remove("a")
        assert "a" not in registry
        assert registry.get("a") is None
        registry.remove("a")
    assert "b" not in registry


def test_plain_http_option(sts_endpoint: str) -> None:
    clock = VirtualClock(ticking=False)
    with KubeApiServer("plain", lambda _arn: None, clock, sts_endpoint=sts_endpoint,
                       tls_enabled=False) as server:
        assert server.url.startswith("http://")
        assert server.certificate_authority_data is None
        configuration = k8s.Configuration()
        configuration.host = server.url
        with k8s.ApiClient(configuration) as api_client, pytest.raises(
            k8s.exceptions.ApiException
        ) as caught:
            cast(Any, k8s.CoreV1Api(api_client)).list_node()
        assert caught.value.status == 401


def test_update_node_changes_labels_and_taints_in_one_write(
    server: KubeApiServer, admin: k8s.ApiClient
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    gpu = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    server.join_node("hyperpod-i-0123456789abcdef0", {"team": "ml"}, [gpu], ready=False)
    core.patch_node("hyperpod-i-0123456789abcdef0",
                    {"spec": {"taints": [*core.read_node("hyperpod-i-0123456789abcdef0")
                                         .to_dict()["spec"]["taints"],
                                         {"key": "mine", "effect": "NoExecute"}]}})
    before = core.read_node("hyperpod-i-0123456789abcdef0").metadata.resource_version

    server.update_node("hyperpod-i-0123456789abcdef0", labels={"team": None, "tier": "a"},
                       taints=[{"key": "tier", "value": "a", "effect": "PreferNoSchedule"}],
                       remove_taints=[gpu], ready=True)

    node = core.read_node("hyperpod-i-0123456789abcdef0")
    assert int(node.metadata.resource_version) == int(before) + 1
    assert "team" not in node.metadata.labels
    assert node.metadata.labels["tier"] == "a"
    assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [
        ("mine", None, "NoExecute"), ("tier", "a", "PreferNoSchedule")]
    assert _ready(node) == "True"
