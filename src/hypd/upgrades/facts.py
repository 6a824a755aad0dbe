"""One read of everything an upgrade plan needs, through the adapters (docs/upgrades.md):
EKS (the cluster, the versions it offers, its upgrade insights, its add-ons and their
compatible versions), SageMaker (the HyperPod groups' software), the cluster's Kubernetes API
(the chart's record, PodDisruptionBudgets that allow no disruption) and the cluster's lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hypd.aws import eks, sagemaker
from hypd.create import dependency_chart
from hypd.errors import ConflictError
from hypd.kubernetes.apply import list_objects
from hypd.upgrades.model import (
    Addon,
    Chart,
    Disruption,
    Insight,
    KubernetesVersion,
    NodeGroup,
    UpgradeFacts,
)


@dataclass(frozen=True)
class Sources:
    """Where the facts come from."""

    client: Callable[[str], Any]
    """A boto3 client per service."""
    kubernetes: Callable[[str], Any]
    """The Kubernetes API client of an EKS cluster, by name."""
    running_operation: Callable[[], tuple[str, str] | None]
    """(id, kind) of the operation holding the cluster's lock, or None."""
    bundled_chart: str | None
    """`chart.chart_release` of the chart this hypd applies (None: not configured here)."""


def _versions(raw: Iterable[Mapping[str, Any]]) -> tuple[KubernetesVersion, ...]:
    return tuple(
        KubernetesVersion(
            version=str(v["clusterVersion"]),
            status=str(v.get("versionStatus") or "STANDARD_SUPPORT"),
            release_date=v.get("releaseDate"),
            end_of_standard_support=v.get("endOfStandardSupportDate"),
            end_of_extended_support=v.get("endOfExtendedSupportDate"),
        )
        for v in raw if v.get("clusterVersion")
    )


def _findings(insight: Mapping[str, Any]) -> tuple[str, ...]:
    summary = insight.get("categorySpecificSummary") or {}
    found = []
    for detail in summary.get("deprecationDetails") or []:
        usage = detail.get("usage") or "an API"
        replaced = detail.get("replacedWith")
        users = ", ".join(str(c.get("userAgent")) for c in detail.get("clientStats") or []
                          if c.get("userAgent"))
        found.append(f"{usage} is removed in {detail.get('stopServingVersion') or 'it'}"
                     + (f" (use {replaced})" if replaced else "")
                     + (f", called by {users}" if users else ""))
    for detail in summary.get("addonCompatibilityDetails") or []:
        found.append(f"add-on {detail.get('name')} has no version compatible with it")
    for resource in insight.get("resources") or []:
        kube = resource.get("kubernetesResourceUri") or resource.get("arn")
        if kube:
            found.append(str(kube))
    return tuple(found)


def _insights(raw: Iterable[Mapping[str, Any]]) -> tuple[Insight, ...]:
    return tuple(
        Insight(
            id=str(i["id"]), name=str(i.get("name") or i["id"]),
            kubernetes_version=str(i.get("kubernetesVersion") or ""),
            status=str((i.get("insightStatus") or {}).get("status") or "UNKNOWN"),
            reason=str((i.get("insightStatus") or {}).get("reason") or ""),
            recommendation=str(i.get("recommendation") or ""),
            findings=_findings(i),
        )
        for i in raw
    )


def _addons(eks_client: Any, eks_name: str) -> tuple[Addon, ...]:
    addons = []
    for name in eks.list_addon_names(eks_client, eks_name):
        found = eks.find_addon(eks_client, eks_name, name)
        if found is None:
            continue
        compatible = eks.addon_versions(eks_client, name)
        addons.append(Addon(name=name, version=str(found.get("addonVersion") or ""),
                            status=str(found.get("status") or ""),
                            compatible={k: tuple(v) for k, v in compatible.items()}))
    return tuple(addons)


def _groups(raw: Mapping[str, Any] | None) -> tuple[NodeGroup, ...]:
    return tuple(
        NodeGroup(
            name=str(g["InstanceGroupName"]), nodes=int(g.get("CurrentCount") or 0),
            image_release=g.get("CurrentImageReleaseVersion") or g.get("CurrentImageId"),
            desired_release=g.get("DesiredImageReleaseVersion") or g.get("DesiredImageId"),
            image_status=g.get("ImageVersionStatus"),
            update_status=g.get("SoftwareUpdateStatus"),
        )
        for g in (raw or {}).get("InstanceGroups") or []
    )


def _disruptions(api: Any) -> tuple[Disruption, ...]:
    """Budgets that let no pod go (``status.disruptionsAllowed`` 0 with pods expected): a
    drain of a node with one of their pods waits for ever. A budget the disruption controller
    has not computed yet has no status and is not counted."""
    found = []
    for pdb in list_objects(api, "policy/v1", "PodDisruptionBudget"):
        status = pdb.get("status") or {}
        if "disruptionsAllowed" not in status:
            continue
        if int(status.get("disruptionsAllowed") or 0) == 0 and int(
                status.get("expectedPods") or 0) > 0:
            meta = pdb.get("metadata") or {}
            found.append(Disruption(namespace=str(meta.get("namespace") or "default"),
                                    name=str(meta.get("name") or "")))
    return tuple(found)


def read(sources: Sources, tag: str, eks_name: str | None, hyperpod_name: str | None,
         now: datetime, *, created_by_hypd: bool = True) -> UpgradeFacts:
    """Everything the plan reads, as it is now.

    Raises:
        ConflictError: the cluster has no EKS cluster (yet, or any more).
    """
    eks_client = sources.client("eks")
    cluster = eks.find_cluster(eks_client, eks_name) if eks_name else None
    if cluster is None or not eks_name:
        raise ConflictError(f"cluster {tag} has no EKS cluster to upgrade",
                            details={"tag": tag})
    status = str(cluster.get("status") or "")
    hyperpod = (sagemaker.find_cluster(sources.client("sagemaker"), hyperpod_name)
                if hyperpod_name else None)
    api = sources.kubernetes(eks_name) if status in ("ACTIVE", "UPDATING") else None
    chart = None
    if sources.bundled_chart is not None:
        installed, rendered_for = dependency_chart.read(api) if api is not None else (None, None)
        chart = Chart(bundled=sources.bundled_chart, installed=installed,
                      rendered_for=rendered_for)
    return UpgradeFacts(
        tag=tag, eks_name=eks_name, hyperpod_name=hyperpod_name if hyperpod else None,
        kubernetes_version=str(cluster.get("version") or ""), eks_status=status, now=now,
        versions=_versions(eks.describe_cluster_versions(eks_client)),
        insights=_insights(eks.upgrade_insights(eks_client, eks_name)),
        addons=_addons(eks_client, eks_name),
        chart=chart,
        groups=_groups(hyperpod),
        disruptions=_disruptions(api) if api is not None and hyperpod else (),
        running_operation=sources.running_operation(),
        hyperpod_status=str(hyperpod.get("ClusterStatus")) if hyperpod else None,
        created_by_hypd=created_by_hypd,
    )
