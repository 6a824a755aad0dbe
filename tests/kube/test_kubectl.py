"""The emulated cluster's Kubernetes API as the real kubectl (v1.37, from the pinned Lambda
layer) sees it: what a user types, and what the API refuses."""

from __future__ import annotations

import json

from hypd_local.kube import KubeApiServer
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
