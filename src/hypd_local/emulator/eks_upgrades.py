"""EKS day-two upgrades: UpdateClusterVersion, DescribeClusterVersions, upgrade insights.

- **UpdateClusterVersion** moves a cluster one Kubernetes minor version up (the user guide,
  "Update existing cluster to new Kubernetes version": one minor version at a time, no
  downgrade). Anything else (the same version, a downgrade, a jump of two) is
  InvalidParameterException ("Unsupported Kubernetes minor version update from X to Y", EKS's
  wording), as is a version the catalogue does not offer. A cluster that is not ACTIVE (an
  update of any kind in progress makes it UPDATING) is refused with ResourceInUseException.
  An UPGRADE_READINESS insight in ERROR for the target version refuses the update with
  InvalidStateException ("Amazon EKS detected upgrade readiness issues ... Pass the force
  flag", the exception's documentation) unless ``force`` is true. The update (type
  VersionUpdate, params Version and PlatformVersion) keeps the cluster UPDATING for
  `EksDurations.cluster_version_update`, then the cluster is ACTIVE at the new ``version``
  and the version's ``platformVersion``. Add-ons keep their versions: EKS does not update them
  (the user guide tells you to update them yourself). ``clientRequestToken`` replays the first
  update. ``rollbackConfig`` is accepted and ignored.
- **DescribeClusterVersions** answers the catalogue's versions with the published calendar
  (`eks_catalog.VERSION_SUPPORT`); the support status is the one on the virtual clock's day.
- **ListInsights / DescribeInsight**: every cluster has the UPGRADE_READINESS insights of
  `INSIGHTS`, for the next minor version (the current one on the newest version), PASSING
  unless a test planted a finding (`plant_insight`, or ``POST /_local/faults/eks/insight``).
  EKS refreshes insights every 24 hours (the user guide, "Cluster insights"): lastRefreshTime
  is the last 24-hour mark since the cluster came up. StartInsightsRefresh is not emulated.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from hypd_local.emulator.eks_catalog import SERVER_RELEASES
from hypd_local.emulator.eks_clusters import Clusters
from hypd_local.emulator.eks_model import PAGES as _PAGES
from hypd_local.emulator.eks_model import (
    _Cluster,
    _in_use,
    _invalid_parameter,
    _invalid_state,
    _not_found,
    _Update,
    _uuid,
)
from hypd_local.emulator.service import operation

INSIGHTS: Mapping[str, tuple[str, str]] = {
    "deprecated-apis": (
        "Deprecated APIs removed in Kubernetes v{version}",
        "Checks for usage of deprecated APIs that are scheduled for removal in Kubernetes "
        "v{version}. Upgrading your cluster before migrating to the updated APIs supported by "
        "v{version} could cause application impact."),
    "addon-compatibility": (
        "EKS add-on version compatibility",
        "Checks version of installed EKS add-ons to ensure they are compatible with the next "
        "version of Kubernetes."),
    "kubelet-version-skew": (
        "Kubelet version skew",
        "Checks for kubelet versions of worker nodes in the cluster to see if upgrade would "
        "cause noncompliance with supported Kubernetes kubelet version skew policy."),
    "cluster-health": (
        "Cluster health issues",
        "Checks for any cluster health issues that prevent successful upgrade to the next "
        "Kubernetes version on EKS."),
}
"""The default UPGRADE_READINESS insights (key -> name, description), after the insights the
EKS user guide lists; the wording is the emulator's."""

INSIGHT_STATUSES = ("PASSING", "WARNING", "ERROR", "UNKNOWN")
_REFRESH = timedelta(hours=24)


class Upgrades(Clusters):
    """UpdateClusterVersion, DescribeClusterVersions, ListInsights, DescribeInsight."""

    # ------------------------------------------------------------------ versions

    @operation
    def update_cluster_version(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["name"])
        replayed = self._replayed("UpdateClusterVersion", params)
        if replayed is not None and replayed in cluster.updates:
            return {"update": cluster.updates[replayed].describe()}
        target: str = params["version"]
        if cluster.status != "ACTIVE":
            in_progress = any(u.status == "InProgress" and u.addon_name is None
                              for u in cluster.updates.values())
            raise _in_use(
                f"Cluster {cluster.name} has an update in progress"
                if in_progress else
                f"Cluster {cluster.name} is in {cluster.status} state; its version can only "
                "be updated while it is ACTIVE.", clusterName=cluster.name)
        if target not in self.catalog.kubernetes_versions:
            raise _invalid_parameter(f"unsupported Kubernetes version {target}",
                                     clusterName=cluster.name)
        if self.catalog.next_version(cluster.version) != target:
            raise _invalid_parameter(
                f"Unsupported Kubernetes minor version update from {cluster.version} to "
                f"{target}", clusterName=cluster.name)
        blocking = [i for i in self._insights(cluster, now)
                    if i["kubernetesVersion"] == target
                    and i["insightStatus"]["status"] == "ERROR"]
        if blocking and not params.get("force"):
            raise _invalid_state(
                "Amazon EKS detected upgrade readiness issues. Call the ListInsights API to "
                "view detected upgrade blocking issues. Pass the force flag when updating to "
                "override upgrade readiness errors.", clusterName=cluster.name)
        platform = self.catalog.platform_version(target)
        update = _Update(
            id=_uuid(f"update:{cluster.arn}:{len(cluster.updates)}:{now.isoformat()}"),
            type="VersionUpdate",
            params=[{"type": "Version", "value": target},
                    {"type": "PlatformVersion", "value": platform}],
            created_at=now,
        )
        cluster.updates[update.id] = update
        cluster.status = "UPDATING"
        self._remember("UpdateClusterVersion", params, update.id)

        def finish(_t: datetime) -> None:
            if self._clusters.get(cluster.name) is not cluster:
                update.status = "Cancelled"
                return
            cluster.version = target
            cluster.spec["platformVersion"] = platform
            update.status = "Successful"
            if cluster.status == "UPDATING":
                cluster.status = "ACTIVE"

        self._at(now + timedelta(seconds=self.durations.cluster_version_update), finish)
        return {"update": update.describe()}

    @operation
    def describe_cluster_versions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster_type = params.get("clusterType") or "eks"
        wanted = set(params.get("clusterVersions") or ())
        status_filter = params.get("versionStatus")
        legacy_filter = params.get("status")
        found = []
        for version in reversed(self.catalog.kubernetes_versions):  # newest first
            support = self.catalog.version_support.get(version)
            if support is None:
                continue
            if now >= support.end_of_extended_support:
                status = "UNSUPPORTED"
            elif now >= support.end_of_standard_support:
                status = "EXTENDED_SUPPORT"
            else:
                status = "STANDARD_SUPPORT"
            default = version == self.catalog.default_kubernetes_version
            if wanted and version not in wanted:
                continue
            if params.get("defaultOnly") and not default:
                continue
            if status_filter and status != status_filter:
                continue
            legacy = status.lower().replace("_", "-")
            if legacy_filter and legacy != legacy_filter:
                continue
            if status == "UNSUPPORTED" and not (params.get("includeAll") or wanted
                                                or status_filter or legacy_filter):
                continue
            release = SERVER_RELEASES.get(version)
            entry: dict[str, Any] = {
                "clusterVersion": version,
                "clusterType": cluster_type,
                "defaultPlatformVersion": self.catalog.platform_version(version),
                "defaultVersion": default,
                "releaseDate": support.release,
                "endOfStandardSupportDate": support.end_of_standard_support,
                "endOfExtendedSupportDate": support.end_of_extended_support,
                "status": legacy,
                "versionStatus": status,
            }
            if release is not None:
                entry["kubernetesPatchVersion"] = release.patch
            found.append(entry)
        return _PAGES.listing("clusterVersions", found, params)

    # ------------------------------------------------------------------ insights

    def _insight_version(self, cluster: _Cluster) -> str:
        return self.catalog.next_version(cluster.version) or cluster.version

    def _insights(self, cluster: _Cluster, now: datetime) -> list[dict[str, Any]]:
        """Every insight of the cluster, in full (the Insight shape), in `INSIGHTS` order."""
        version = self._insight_version(cluster)
        since = cluster.active_since or cluster.created_at
        refreshed = since + _REFRESH * max(0, (now - since) // _REFRESH)
        out = []
        for key, (name, description) in INSIGHTS.items():
            finding = cluster.findings.get(key)
            if finding is not None and finding["kubernetesVersion"] != version:
                finding = None  # planted for a version the cluster has moved past
            insight: dict[str, Any] = {
                "id": _uuid(f"insight:{cluster.arn}:{key}:{version}"),
                "name": name.format(version=version),
                "category": "UPGRADE_READINESS",
                "kubernetesVersion": version,
                "lastRefreshTime": max(refreshed, finding["at"]) if finding else refreshed,
                "lastTransitionTime": finding["at"] if finding else since,
                "description": description.format(version=version),
                "insightStatus": {"status": "PASSING",
                                  "reason": "No issues detected for this check."},
                "recommendation": "No action required.",
                "additionalInfo": {},
                "resources": [],
                "categorySpecificSummary": {"deprecationDetails": [],
                                            "addonCompatibilityDetails": []},
            }
            if finding is not None:
                insight["insightStatus"] = {"status": finding["status"],
                                            "reason": finding["reason"]}
                insight["recommendation"] = finding["recommendation"]
                insight["additionalInfo"] = dict(finding["additionalInfo"])
                insight["resources"] = [dict(r) for r in finding["resources"]]
                insight["categorySpecificSummary"] = {
                    "deprecationDetails": [dict(d) for d in finding["deprecationDetails"]],
                    "addonCompatibilityDetails": [
                        dict(d) for d in finding["addonCompatibilityDetails"]],
                }
            out.append(insight)
        return out

    @operation
    def list_insights(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["clusterName"])
        wanted = params.get("filter") or {}
        categories = set(wanted.get("categories") or ())
        versions = set(wanted.get("kubernetesVersions") or ())
        statuses = set(wanted.get("statuses") or ())
        summaries = []
        for insight in self._insights(cluster, now):
            if ((categories and insight["category"] not in categories)
                    or (versions and insight["kubernetesVersion"] not in versions)
                    or (statuses and insight["insightStatus"]["status"] not in statuses)):
                continue
            summaries.append({k: insight[k] for k in (
                "id", "name", "category", "kubernetesVersion", "lastRefreshTime",
                "lastTransitionTime", "description", "insightStatus")})
        return _PAGES.listing("insights", summaries, params)

    @operation
    def describe_insight(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["clusterName"])
        for insight in self._insights(cluster, now):
            if insight["id"] == params["id"]:
                return {"insight": insight}
        raise _not_found(f"No insight found for ID: {params['id']}", clusterName=cluster.name)

    # ------------------------------------------------------------------ test hooks

    @operation
    def plant_insight(
        self, cluster_name: str, insight: str = "deprecated-apis", status: str = "ERROR",
        *, reason: str = "", recommendation: str = "",
        deprecation_details: list[dict[str, Any]] | None = None,
        addon_compatibility_details: list[dict[str, Any]] | None = None,
        resources: list[dict[str, Any]] | None = None,
        additional_info: dict[str, str] | None = None,
    ) -> str:
        """Give the cluster's insight ``insight`` (a key of `INSIGHTS`) a finding for the next
        Kubernetes version, now; ``status`` PASSING clears it. Returns the insight's id."""
        if insight not in INSIGHTS:
            raise ValueError(f"{insight!r} is not one of {sorted(INSIGHTS)}")
        if status not in INSIGHT_STATUSES:
            raise ValueError(f"{status!r} is not an InsightStatusValue")
        now = self._now()
        cluster = self._cluster(cluster_name)
        version = self._insight_version(cluster)
        if status == "PASSING":
            cluster.findings.pop(insight, None)
        else:
            cluster.findings[insight] = {
                "kubernetesVersion": version, "status": status, "at": now,
                "reason": reason or f"{INSIGHTS[insight][0].format(version=version)}: "
                                    "issues detected (planted).",
                "recommendation": recommendation or "Resolve the issues before upgrading.",
                "deprecationDetails": list(deprecation_details or []),
                "addonCompatibilityDetails": list(addon_compatibility_details or []),
                "resources": list(resources or []),
                "additionalInfo": dict(additional_info or {}),
            }
        return _uuid(f"insight:{cluster.arn}:{insight}:{version}")
