"""Which HyperPod dependencies chart a cluster has: hypd's record in the cluster itself.

The chart is rendered (``helm template``) and applied, not installed as a helm release, so
nothing in the cluster names its version; after every apply hypd writes the ConfigMap
``kube-system/hypd-dependency-chart`` with the chart's release (`chart.chart_release`) and the
Kubernetes version it was rendered for. A cluster made before hypd kept the record has none:
its chart is unknown and an upgrade re-applies it.
"""

from __future__ import annotations

from typing import Any

from hypd.kubernetes.apply import apply_manifests, read_object

NAME = "hypd-dependency-chart"
NAMESPACE = "kube-system"


def read(api: Any) -> tuple[str | None, str | None]:
    """(release, rendered for Kubernetes version) as recorded; (None, None) when there is no
    record."""
    found = read_object(api, "v1", "ConfigMap", NAME, NAMESPACE)
    data = (found or {}).get("data") or {}
    return data.get("release"), data.get("kubernetesVersion")


def record(api: Any, release: str, kubernetes_version: str, applied_at: str) -> None:
    apply_manifests(api, [{
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
                     "labels": {"app.kubernetes.io/managed-by": "hypd"}},
        "data": {"release": release, "kubernetesVersion": kubernetes_version,
                 "appliedAt": applied_at},
    }], namespace=NAMESPACE)
