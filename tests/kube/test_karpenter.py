"""Managed Karpenter's CRDs and the status of HyperpodNodeClasses and NodePools."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from hypd_local.clock import VirtualClock
from hypd_local.kube import KubeApiServer
from hypd_local.kube.karpenter import CRDS, HyperPodCluster, InstanceGroup, Subnet

NODECLASS = ("karpenter.sagemaker.amazonaws.com", "v1", "hyperpodnodeclasses")
NODEPOOL = ("karpenter.sh", "v1", "nodepools")
SUBNET_A = Subnet("subnet-0aaa", "us-west-2a", "usw2-az1")
SUBNET_B = Subnet("subnet-0bbb", "us-west-2b", "usw2-az2")


def hyperpod(*groups: InstanceGroup, autoscaling: str | None = "InService") -> HyperPodCluster:
    return HyperPodCluster("hp1", autoscaling, {g.name: g for g in groups})


def workers(*subnets: Subnet, name: str = "workers") -> InstanceGroup:
    return InstanceGroup(name, ("ml.c5.2xlarge",), subnets or (SUBNET_A,), {"team": "ml"})


@pytest.fixture
def custom(server: KubeApiServer, admin: k8s.ApiClient) -> Any:
    """CustomObjectsApi on a cluster where HyperPod installed Karpenter for `hp1`."""
    server.ensure_crds(CRDS, "sagemaker-hyperpod")
    server.observe_hyperpod(hyperpod(workers()))
    return k8s.CustomObjectsApi(admin)


def node_class(custom: Any, groups: list[str], name: str = "hypd") -> dict[str, Any]:
    body = {"apiVersion": "karpenter.sagemaker.amazonaws.com/v1", "kind": "HyperpodNodeClass",
            "metadata": {"name": name}, "spec": {"instanceGroups": groups}}
    made: dict[str, Any] = custom.create_cluster_custom_object(*NODECLASS, body)
    return made


def node_pool(custom: Any, ref: dict[str, str], name: str = "hypd") -> dict[str, Any]:
    body = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": []}}}}
    made: dict[str, Any] = custom.create_cluster_custom_object(*NODEPOOL, body)
    return made


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["message"]) for c in obj["status"]["conditions"]}


def read(custom: Any, kind: tuple[str, str, str], name: str = "hypd") -> dict[str, Any]:
    found: dict[str, Any] = custom.get_cluster_custom_object(*kind, name)
    return found


HYPERPOD_REF = {"group": "karpenter.sagemaker.amazonaws.com", "kind": "HyperpodNodeClass",
                "name": "hypd"}


def test_the_crds_make_the_kinds_discoverable(server: KubeApiServer, admin: k8s.ApiClient
                                               ) -> None:
    apis: Any = k8s.CustomObjectsApi(admin)
    server.ensure_crds(CRDS, "sagemaker-hyperpod")
    server.ensure_crds(CRDS, "sagemaker-hyperpod")  # idempotent

    karpenter = apis.get_api_resources("karpenter.sh", "v1").resources
    sagemaker = apis.get_api_resources("karpenter.sagemaker.amazonaws.com", "v1").resources
    kinds = {(r.name, r.kind, r.namespaced) for r in [*karpenter, *sagemaker]}
    assert {("nodepools", "NodePool", False), ("nodeclaims", "NodeClaim", False),
            ("hyperpodnodeclasses", "HyperpodNodeClass", False)} <= kinds


def test_a_node_class_of_existing_groups_is_ready(custom: Any) -> None:
    made = node_class(custom, ["workers"])

    assert conditions(made) == {"InstanceGroupReady": ("True", ""), "SubnetsReady": ("True", ""),
                                "Ready": ("True", "")}
    assert made["status"]["instanceGroups"] == [{
        "name": "workers", "instanceTypes": ["ml.c5.2xlarge"],
        "subnets": [{"id": "subnet-0aaa", "zone": "us-west-2a", "zoneId": "usw2-az1"}],
        "desiredLabels": {"team": "ml"}}]
    ready = made["status"]["conditions"][-1]
    assert ready["observedGeneration"] == 1
    assert ready["reason"] == "Ready"
    assert made["spec"] == {"instanceGroups": ["workers"]}


def test_missing_groups_are_named(custom: Any) -> None:
    made = node_class(custom, ["workers", "gpu", "spare"])

    found = conditions(made)
    assert found["InstanceGroupReady"][0] == "False"
    assert "gpu, spare" in found["InstanceGroupReady"][1]
    assert found["Ready"][0] == "False"
    assert "InstanceGroupReady is False" in found["Ready"][1]
    assert [g["name"] for g in made["status"]["instanceGroups"]] == ["workers"]


def test_subnets_in_two_zones_are_not_ready(server: KubeApiServer, custom: Any) -> None:
    server.observe_hyperpod(hyperpod(workers(SUBNET_A, SUBNET_B)))

    found = conditions(node_class(custom, ["workers"]))

    assert found["SubnetsReady"][0] == "False"
    assert "us-west-2a, us-west-2b" in found["SubnetsReady"][1]
    assert found["InstanceGroupReady"][0] == "True"
    assert found["Ready"][0] == "False"


def test_more_than_ten_groups_are_not_ready(server: KubeApiServer, custom: Any) -> None:
    names = [f"g{i}" for i in range(11)]
    server.observe_hyperpod(hyperpod(*(workers(name=n) for n in names)))

    found = conditions(node_class(custom, names))

    assert found["InstanceGroupReady"][0] == "True"
    assert found["Ready"][0] == "False"
    assert "at most 10" in found["Ready"][1]


def test_ready_follows_the_autoscaling_status(server: KubeApiServer, custom: Any) -> None:
    node_class(custom, ["workers"])

    server.observe_hyperpod(hyperpod(workers(), autoscaling="Deleting"))

    found = conditions(read(custom, NODECLASS))
    assert found["Ready"] == ("False", "autoscaling of HyperPod cluster hp1 is Deleting")
    server.observe_hyperpod(None)
    found = conditions(read(custom, NODECLASS))
    assert "no HyperPod cluster" in found["InstanceGroupReady"][1]


def test_an_unchanged_world_changes_nothing(server: KubeApiServer, clock: VirtualClock,
                                            custom: Any) -> None:
    node_class(custom, ["workers"])
    node_pool(custom, HYPERPOD_REF)
    before = [read(custom, NODECLASS), read(custom, NODEPOOL)]

    clock.advance(600)
    for _ in range(3):
        server.observe_hyperpod(hyperpod(workers()))

    assert [read(custom, NODECLASS), read(custom, NODEPOOL)] == before


def test_a_transition_keeps_other_conditions_times(server: KubeApiServer, clock: VirtualClock,
                                                   custom: Any) -> None:
    node_class(custom, ["workers"])
    first = {c["type"]: c for c in read(custom, NODECLASS)["status"]["conditions"]}
    clock.advance(600)

    server.observe_hyperpod(hyperpod(workers(SUBNET_A, SUBNET_B)))

    later = {c["type"]: c for c in read(custom, NODECLASS)["status"]["conditions"]}
    assert later["InstanceGroupReady"] == first["InstanceGroupReady"]
    assert later["SubnetsReady"]["lastTransitionTime"] > first["SubnetsReady"][
        "lastTransitionTime"]


def test_the_controller_writes_status_only(custom: Any) -> None:
    node_class(custom, ["gpu"])
    assert conditions(read(custom, NODECLASS))["Ready"][0] == "False"

    patched = custom.patch_cluster_custom_object(*NODECLASS, "hypd",
                                                 {"spec": {"instanceGroups": ["workers"]}})

    assert patched["spec"] == {"instanceGroups": ["workers"]}
    assert patched["metadata"]["generation"] == 2
    assert conditions(patched)["Ready"] == ("True", "")
    assert {c["observedGeneration"] for c in patched["status"]["conditions"]} == {2}


def test_a_node_pool_is_ready_when_its_node_class_is(server: KubeApiServer, custom: Any) -> None:
    pool = node_pool(custom, HYPERPOD_REF)
    assert conditions(pool) == {
        "NodeClassReady": ("False", "HyperpodNodeClass hypd not found"),
        "Ready": ("False", "HyperpodNodeClass hypd not found")}

    node_class(custom, ["workers"])

    assert conditions(read(custom, NODEPOOL)) == {"NodeClassReady": ("True", ""),
                                                  "Ready": ("True", "")}
    server.observe_hyperpod(hyperpod(workers(SUBNET_A, SUBNET_B)))
    found = conditions(read(custom, NODEPOOL))
    assert found["NodeClassReady"][0] == "False"
    assert "HyperpodNodeClass hypd is not ready: SubnetsReady is False" in found["Ready"][1]


def test_a_node_pool_of_another_node_class_is_left_alone(custom: Any) -> None:
    pool = node_pool(custom, {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                              "name": "default"})
    assert "status" not in pool


def test_without_a_hyperpod_cluster_observed_the_controller_is_idle(
    server: KubeApiServer, admin: k8s.ApiClient
) -> None:
    server.ensure_crds(CRDS, "someone")
    made = node_class(k8s.CustomObjectsApi(admin), ["workers"])
    assert "status" not in made
