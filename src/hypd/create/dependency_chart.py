"""The HyperPod dependencies chart in a cluster: applied, and which one it is.

One function applies it, for the create's dependencies stage and an upgrade's chart stage
alike: `apply` renders the chart the setting names for the cluster's Region and Kubernetes
version (`chart.render_chart`), applies it (server-side apply), then records what it applied.

The chart is rendered (``helm template``) and applied, not installed as a helm release, so
nothing in the cluster names its version; after every apply hypd writes the ConfigMap
``kube-system/hypd-dependency-chart`` with the chart's release (`chart.chart_release`) and the
Kubernetes version it was rendered for. A cluster made before hypd kept the record has none:
its chart is unknown and an upgrade re-applies it.
"""

from __future__ import annotations

from typing import Any

from hypd.create import chart
from hypd.kubernetes.apply import AppliedObject, apply_manifests, read_object

RELEASE = "hyperpod-dependencies"
NAMESPACE = "kube-system"
RECORD = "hypd-dependency-chart"


def apply(api: Any, setting: str, *, region: str | None, kubernetes_version: str,
          applied_at: str) -> list[AppliedObject]:
    """Render, apply and record the chart `setting` names; what was applied, in order."""
    manifests = chart.render_chart(
        chart.chart_source(setting), release=RELEASE, namespace=NAMESPACE,
        values=chart.chart_values(region), kube_version=kubernetes_version)
    applied = apply_manifests(api, manifests, namespace=NAMESPACE)
    apply_manifests(api, [{
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": RECORD, "namespace": NAMESPACE,
                     "labels": {"app.kubernetes.io/managed-by": "hypd"}},
        "data": {"release": chart.chart_release(setting),
                 "kubernetesVersion": kubernetes_version, "appliedAt": applied_at},
    }], namespace=NAMESPACE)
    return applied


def read(api: Any) -> tuple[str | None, str | None]:
    """(release, rendered for Kubernetes version) as recorded; (None, None) when there is no
    record."""
    found = read_object(api, "v1", "ConfigMap", RECORD, NAMESPACE)
    data = (found or {}).get("data") or {}
    return data.get("release"), data.get("kubernetesVersion")
