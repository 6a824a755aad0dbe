"""The emulated cluster's Kubernetes API as the real kubectl (v1.37, from the pinned Lambda
layer) sees it: what a user types, and what the API refuses."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client as k8s

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
