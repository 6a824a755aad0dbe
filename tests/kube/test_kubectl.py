"""The emulated cluster's Kubernetes API as the real kubectl (v1.37, from the pinned Lambda
layer) sees it: what a user types, and what the API refuses."""

from __future__ import annotations

import json
import re
from typing import Any, cast

from kubernetes import client as k8s

from hypd_local.clock import VirtualClock
from hypd_local.kube import KubeApiServer, karpenter
from tests.kubectl import Kubectl


def test_version_is_the_clusters(kubectl: Kubectl, server: KubeApiServer) -> None:
    version = json.loads(kubectl.run("version", "-o", "json"))
    server_version = version["serverVersion"]
    assert (server_version["major"], server_version["minor"]) == ("1", "33")
    assert server_version["gitVersion"].startswith("v1.33.")
    assert "-eks-" in server_version["gitVersion"]
    assert server_version["platform"] == "linux/amd64"
    assert version["clientVersion"]["gitVersion"].startswith("v1.37.")
    server.kubernetes_version = "1.31"
    text = kubectl.run("version")
    assert "Server Version: v1.31." in text


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def test_watch_nodes_pods_and_custom_resources_by_name(
    kubectl: Kubectl, server: KubeApiServer, admin: k8s.ApiClient
) -> None:
    server.join_node("hyperpod-i-0aaa", {})
    with kubectl.watch("get", "nodes", "--watch", "-o", "name") as watch:
        watch.wait_for("node/hyperpod-i-0aaa")
        server.join_node("hyperpod-i-0bbb", {})
        watch.wait_for("node/hyperpod-i-0bbb")
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespaced_pod("default", _pod("first"))
    with kubectl.watch("get", "pods", "-n", "default", "--watch", "-o", "name") as watch:
        watch.wait_for("pod/first")
        core.create_namespaced_pod("default", _pod("second"))
        watch.wait_for("pod/second")
    server.ensure_crds(karpenter.CRDS, "hyperpod")
    custom: Any = k8s.CustomObjectsApi(admin)
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
            "spec": {"template": {"spec": {}}}}
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool)
    # kubectl lists, prints, then watches from the list's resourceVersion: what is created
    # after the first line is in the watch, however late the watch request comes
    with kubectl.watch("get", "nodepools.karpenter.sh", "--watch", "-o", "name") as watch:
        watch.wait_for("nodepool.karpenter.sh/gpu")
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools",
                                            {**pool, "metadata": {"name": "cpu"}})
        watch.wait_for("nodepool.karpenter.sh/cpu")


def _columns(text: str) -> list[list[str]]:
    """kubectl's table output, split into cells (cells hold no double spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_get_nodes_ready_and_the_wide_columns(kubectl: Kubectl, server: KubeApiServer,
                                              clock: VirtualClock) -> None:
    server.join_node("hyperpod-i-0ready", {"node.kubernetes.io/instance-type": "ml.g5.8xlarge"},
                     addresses=[{"type": "InternalIP", "address": "10.1.2.3"}])
    server.join_node("hyperpod-i-0booting", {}, ready=False)
    server.join_node("hyperpod-i-0drained", {"node-role.kubernetes.io/gpu": ""})
    server.store.mutate(server.store.builtin_type("", "nodes"), None, "hyperpod-i-0drained",
                        lambda node: node["spec"].update(unschedulable=True), "kubectl")
    clock.advance(5 * 60)
    table = _columns(kubectl.run("get", "nodes"))
    assert table[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = {row[0]: row for row in table[1:]}
    assert rows["hyperpod-i-0ready"][1:4] == ["Ready", "<none>", "5m"]
    assert rows["hyperpod-i-0ready"][4].startswith("v1.33.4-eks-")
    assert rows["hyperpod-i-0booting"][1] == "NotReady"
    assert rows["hyperpod-i-0drained"][1:3] == ["Ready,SchedulingDisabled", "gpu"]
    wide = _columns(kubectl.run("get", "nodes", "-o", "wide"))
    assert wide[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP",
                       "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    row = next(r for r in wide if r[0] == "hyperpod-i-0ready")
    assert row[5:7] == ["10.1.2.3", "<none>"]
    # --sort-by wants whole objects in the rows (includeObject=Object)
    names = [r[0] for r in _columns(kubectl.run("get", "nodes", "--sort-by=.metadata.name"))[1:]]
    assert names == sorted(names)
    labelled = _columns(kubectl.run("get", "node", "hyperpod-i-0ready", "-L",
                                    "node.kubernetes.io/instance-type"))
    assert labelled[1][-1] == "ml.g5.8xlarge"


def test_get_pods_status_restarts_and_namespaces(kubectl: Kubectl, admin: k8s.ApiClient,
                                                 clock: VirtualClock) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespaced_pod("default", _pod("web"))
    core.create_namespace({"metadata": {"name": "jobs"}})
    crashing = core.create_namespaced_pod("jobs", _pod("crashing"))
    crashing_status = {
        "phase": "Running", "podIP": "10.0.0.7",
        "containerStatuses": [{
            "name": "main", "image": "busybox", "imageID": "", "ready": False,
            "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "finishedAt": clock.now().strftime(
                "%Y-%m-%dT%H:%M:%SZ")}}}]}
    core.patch_namespaced_pod_status("crashing", "jobs", {"status": crashing_status})
    core.patch_namespaced_pod("crashing", "jobs", {"spec": {"nodeName": "hyperpod-i-0aaa"}})
    assert crashing.metadata.name == "crashing"
    clock.advance(90)
    table = _columns(kubectl.run("get", "pods", "-A", "-o", "wide"))
    assert table[0] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                        "NOMINATED NODE", "READINESS GATES"]
    rows = {row[1]: row for row in table[1:]}
    assert rows["web"][0] == "default"
    assert rows["web"][2:5] == ["0/1", "Pending", "0"]
    assert rows["crashing"][0] == "jobs"
    assert rows["crashing"][2:5] == ["0/1", "CrashLoopBackOff", "3 (90s ago)"]
    assert rows["crashing"][6:8] == ["10.0.0.7", "hyperpod-i-0aaa"]


WIDGETS_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer"}, "color": {"type": "string"}}},
                "status": {"type": "object", "properties": {"conditions": {
                    "type": "array", "items": {"type": "object", "properties": {
                        "type": {"type": "string"}, "status": {"type": "string"}}}}}}}}},
            "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                {"name": "Ready", "type": "string",
                 "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
                {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
        }],
    },
}


def test_custom_resources_print_the_crds_columns(kubectl: Kubectl, admin: k8s.ApiClient,
                                                 server: KubeApiServer,
                                                 clock: VirtualClock) -> None:
    cast(Any, k8s.ApiextensionsV1Api(admin)).create_custom_resource_definition(WIDGETS_CRD)
    custom: Any = k8s.CustomObjectsApi(admin)
    custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", {
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
        "spec": {"size": 3, "color": "blue"}})
    custom.patch_namespaced_custom_object_status("example.com", "v1", "default", "widgets",
                                                 "w1", {"status": {"conditions": [
                                                     {"type": "Ready", "status": "True"}]}})
    clock.advance(120)
    assert _columns(kubectl.run("get", "widgets")) == [
        ["NAME", "SIZE", "READY", "AGE"], ["w1", "3", "True", "2m"]]
    assert _columns(kubectl.run("get", "widgets", "-o", "wide")) == [
        ["NAME", "SIZE", "READY", "COLOR", "AGE"], ["w1", "3", "True", "blue", "2m"]]
    # Karpenter's CRDs define no columns: Name and Age
    server.ensure_crds(karpenter.CRDS, "hyperpod")
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
        "spec": {"template": {"spec": {}}}})
    assert _columns(kubectl.run("get", "nodepools"))[0] == ["NAME", "AGE"]
    # a CRD itself: the default table
    assert _columns(kubectl.run("get", "crd", "widgets.example.com"))[0] == ["NAME",
                                                                            "CREATED AT"]


def test_watch_prints_table_rows_as_nodes_change(kubectl: Kubectl,
                                                 server: KubeApiServer) -> None:
    server.join_node("hyperpod-i-0aaa", {})
    with kubectl.watch("get", "nodes", "--watch") as watch:
        assert re.split(r"\s{2,}", watch.wait_for("NAME")) == ["NAME", "STATUS", "ROLES", "AGE",
                                                              "VERSION"]
        watch.wait_for(lambda line: line.startswith("hyperpod-i-0aaa") and " Ready " in line)
        server.set_node_ready("hyperpod-i-0aaa", False)
        watch.wait_for(lambda line: line.startswith("hyperpod-i-0aaa") and "NotReady" in line)
        server.join_node("hyperpod-i-0bbb", {})
        watch.wait_for(lambda line: line.startswith("hyperpod-i-0bbb") and " Ready " in line)
