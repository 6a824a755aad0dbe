"""The EKS emulator: clusters, add-ons with prerequisites, configuration and pod identity
associations, access entries, add-on events.

A plain class (docs/emulator.md, "Contracts"): one method per EKS operation named in snake_case,
taking the validated input dict (model member names) and returning the output dict (model member
names, aware datetimes). It never sleeps and never reads the wall clock: every scheduled
transition (cluster CREATING -> ACTIVE, add-on CREATING -> ACTIVE, ...) is a timer on the virtual
clock, applied in time order by `tick`, which every operation calls first. So a read always sees
the state at ``clock.now()`` and every event is emitted once, in order, stamped with the virtual
time at which its transition happened.

What it emits (source ``aws.eks``, the detail-types the EventBridge reference lists for EKS):
``EKS Addon Creation Succeeded`` / ``EKS Addon Creation Failed`` (creation ended ACTIVE /
CREATE_FAILED), ``EKS Addon Update Succeeded``, ``EKS Addon Deletion Succeeded``,
``EKS Addon Health Degraded`` (ACTIVE -> DEGRADED, also when a creation ends DEGRADED) and
``EKS Addon Health Restored`` (DEGRADED -> ACTIVE). EKS publishes no cluster-status events and
neither does this emulator. AWS does not document the detail of these events; ours is
``{clusterName, clusterArn, addonName, addonArn, addonVersion, status, health, eventTime}``.

`EksEmulator` is put together from one module per part of the service, on the base the HyperPod
emulator shares (`service`): `eks_state` (state, timers, event delivery, idempotency tokens),
`eks_clusters`, `eks_upgrades` (UpdateClusterVersion, DescribeClusterVersions, upgrade
insights), `eks_addons` (with `eks_schemas` and `eks_config`: add-on configuration
schemas and their check), `eks_pod_identity` (pod identity associations), `eks_access`
(access entries, and who a principal is in a cluster's Kubernetes API); this module adds the
fault hooks and what the local cloud reads of the state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from hypd_local.emulator.eks_access import ACCESS_ENTRY_TYPES
from hypd_local.emulator.eks_addons import (
    ADDON_CREATION_FAILED,
    ADDON_CREATION_SUCCEEDED,
    ADDON_DELETION_SUCCEEDED,
    ADDON_HEALTH_DEGRADED,
    ADDON_HEALTH_RESTORED,
    ADDON_ISSUE_CODES,
    ADDON_UPDATE_FAILED,
    ADDON_UPDATE_SUCCEEDED,
    SOURCE,
)
from hypd_local.emulator.eks_catalog import AddonCatalog
from hypd_local.emulator.eks_clusters import CLUSTER_ISSUE_CODES
from hypd_local.emulator.eks_model import (
    AccessDecision,
    Clock,
    EksDurations,
    Emit,
    PolicyGrant,
)
from hypd_local.emulator.eks_state import UNSUPPORTED_ZONES
from hypd_local.emulator.eks_upgrades import Upgrades
from hypd_local.emulator.service import operation

__all__ = [
    "ACCESS_ENTRY_TYPES", "ADDON_CREATION_FAILED", "ADDON_CREATION_SUCCEEDED",
    "ADDON_DELETION_SUCCEEDED", "ADDON_HEALTH_DEGRADED", "ADDON_HEALTH_RESTORED",
    "ADDON_ISSUE_CODES", "ADDON_UPDATE_FAILED", "ADDON_UPDATE_SUCCEEDED", "CLUSTER_ISSUE_CODES",
    "SOURCE", "UNSUPPORTED_ZONES", "AccessDecision", "AddonCatalog", "Clock", "EksDurations",
    "EksEmulator", "Emit", "PolicyGrant", "emitted_detail_types",
]


class EksEmulator(Upgrades):
    """Emulated EKS control plane for one account and Region (see module docstring)."""

    # ------------------------------------------------------------------ fault hooks

    @operation
    def fail_next_cluster(self, name: str | None = None, message: str = "") -> None:
        """The next CreateCluster (of ``name``, or of any name) ends FAILED instead of ACTIVE."""
        self._fail_next.add(name, message or "Cluster creation failed (injected fault).")

    @operation
    def set_unsupported_zones(self, zones: Iterable[str]) -> None:
        """The zones where CreateCluster refuses subnets from now on (replacing the Region's
        default, `UNSUPPORTED_ZONES`)."""
        self.unsupported_zones = set(zones)

    @operation
    def stall_next_cluster(self, name: str | None = None, seconds: float | None = None) -> None:
        """The next CreateCluster (of ``name``, or of any name) stays CREATING for ``seconds``
        instead of the usual 8-12 minutes; None: until `release_cluster`."""
        self._stall_next.add(name, seconds)

    @operation
    def release_cluster(self, name: str) -> None:
        """A cluster stalled until released finishes its creation now."""
        now = self._now()
        stalled = self._stalled_clusters.pop(name, None)
        if stalled is not None:
            cluster, failure = stalled
            self._at(now, lambda t: self._finish_cluster_create(cluster, failure, t))
            self._advance()

    @operation
    def stall_addon(self, cluster: str, addon: str, seconds: float | None = None) -> None:
        """The add-on's creation (the next one, if it is not being created yet) stays
        CREATING for ``seconds`` instead of `EksDurations.addon_create`; None: until
        `release_addon`."""
        self._pending_addon_stalls[(cluster, addon)] = seconds

    @operation
    def release_addon(self, cluster: str, addon: str) -> None:
        """An add-on stalled until released finishes its creation now."""
        now = self._now()
        self._pending_addon_stalls.pop((cluster, addon), None)
        record = self._stalled_addons.pop((cluster, addon), None)
        if record is not None:
            self._at(now, lambda t: self._finish_addon_create(record, t))
            self._advance()

    @operation
    def degrade_addon(
        self, cluster: str, addon: str, issue_code: str = "InsufficientNumberOfReplicas",
        message: str = "",
    ) -> None:
        """Turn an add-on DEGRADED with one health issue (now, or when its creation ends)."""
        if issue_code not in ADDON_ISSUE_CODES:
            raise ValueError(f"{issue_code!r} is not an AddonIssueCode")
        issue = {"code": issue_code, "message": message or f"{addon} is degraded (injected fault).",
                 "resourceIds": []}
        now = self._now()
        record = self._cluster(cluster).addons.get(addon)
        if record is None or record.status == "CREATING":
            self._pending_degrade[(cluster, addon)] = issue
            return
        record.injected_issues = [issue]
        self._reevaluate(record, now)

    @operation
    def restore_addon(self, cluster: str, addon: str) -> None:
        """Clear an injected degradation; the add-on returns to ACTIVE if nothing else is wrong."""
        now = self._now()
        self._pending_degrade.pop((cluster, addon), None)
        record = self._cluster(cluster).addons.get(addon)
        if record is not None:
            record.injected_issues = []
            self._reevaluate(record, now)

    def set_durations(self, durations: EksDurations | None = None, **changes: float) -> None:
        """Replace the durations (whole object and/or fields); applies to future transitions."""
        with self._lock:
            base = durations or self.durations
            self.durations = replace(base, **changes)  # type: ignore[arg-type]

    @operation
    def set_endpoint(
        self, cluster_name: str, url: str, certificate_authority: str | None = None
    ) -> None:
        """Where the local cloud serves the cluster's Kubernetes API (DescribeCluster endpoint)
        and, when it serves TLS, the base64 PEM of its CA (`certificateAuthority.data`)."""
        self._endpoints[cluster_name] = url
        if certificate_authority is not None:
            self._certificate_authorities[cluster_name] = certificate_authority

    # ------------------------------------------------------------------ introspection

    @operation
    def cluster_names(self) -> list[str]:
        self._advance()
        return sorted(self._clusters)

    @operation
    def addon_names(self, cluster_name: str) -> list[str]:
        self._advance()
        return sorted(self._cluster(cluster_name).addons)

    @operation
    def preserved_addons(self, cluster_name: str) -> set[str]:
        """The add-ons deleted with ``preserve``: their software is still in the cluster."""
        self._advance()
        return set(self._cluster(cluster_name).preserved)

    # ------------------------------------------------------------------ authorisation facts
    # What IAM reads of a resource to authorise a request on it: its ARN and tags (None: it
    # does not exist, and IAM authorises the ARN the request would have named).

    @operation
    def cluster_facts(self, name: str) -> tuple[str, dict[str, str]] | None:
        cluster = self._clusters.get(name)
        if cluster is None:
            return None
        return cluster.arn, dict(cluster.spec.get("tags") or {})

    @operation
    def addon_facts(self, cluster_name: str, addon_name: str
                    ) -> tuple[str, dict[str, str]] | None:
        cluster = self._clusters.get(cluster_name)
        addon = cluster.addons.get(addon_name) if cluster is not None else None
        return (addon.arn, dict(addon.tags)) if addon is not None else None

    @operation
    def pod_identity_facts(self, cluster_name: str, association_id: str
                           ) -> tuple[str, dict[str, str]] | None:
        cluster = self._clusters.get(cluster_name)
        association = (cluster.associations.get(association_id) if cluster is not None
                       else None)
        return (association.arn, dict(association.tags)) if association is not None else None

    @operation
    def access_entry_facts(self, cluster_name: str, principal_arn: str
                           ) -> tuple[str, dict[str, str]] | None:
        cluster = self._clusters.get(cluster_name)
        entry = cluster.access_entries.get(principal_arn) if cluster is not None else None
        return (entry.arn, dict(entry.tags)) if entry is not None else None


def emitted_detail_types() -> Iterable[str]:
    """Every detail-type the emulator can emit (all under source ``aws.eks``)."""
    return (ADDON_CREATION_SUCCEEDED, ADDON_CREATION_FAILED, ADDON_UPDATE_SUCCEEDED,
            ADDON_DELETION_SUCCEEDED, ADDON_HEALTH_DEGRADED, ADDON_HEALTH_RESTORED)
