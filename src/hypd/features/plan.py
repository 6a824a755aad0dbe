"""From a request and what is there to what must change (pure; docs/features.md).

`target` resolves the features a request names into their desired state: ``enabled`` as sent
(else as it is) and the sent settings over the current ones. `changes` says what differs from the
snapshot: empty means the request matches reality (200 ``changed: false``). `check` refuses what
cannot be done, naming the field. Features the request does not name are never in the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypd.clusters.create_request import Problem, catalog_error
from hypd.clusters.feature_request import FeaturesRequest
from hypd.errors import ConflictError
from hypd.features.catalog import FEATURES, Feature
from hypd.features.state import Snapshot, feature_status, settings_of


@dataclass(frozen=True)
class FeatureTarget:
    feature: Feature
    enabled: bool
    settings: dict[str, Any]
    """By API name: the sent ones over the current ones."""


def target(request: FeaturesRequest, snapshot: Snapshot) -> dict[str, FeatureTarget]:
    """The desired state of each feature `request` names (see the module docstring)."""
    out: dict[str, FeatureTarget] = {}
    for name, sent in request.named().items():
        feature = FEATURES[name]
        enabled = snapshot.enabled(feature) if sent.enabled is None else sent.enabled
        settings = {**settings_of(snapshot, feature), **sent.sent_settings()} if enabled else {}
        out[name] = FeatureTarget(feature, enabled, settings)
    return out


def changes(targets: dict[str, FeatureTarget], snapshot: Snapshot) -> dict[str, list[str]]:
    """Feature -> what changes (``enabled``, setting names, ``repair``); empty: nothing to do."""
    out: dict[str, list[str]] = {}
    for name, wanted in targets.items():
        feature = wanted.feature
        now_on = snapshot.enabled(feature)
        if wanted.enabled != now_on:
            out[name] = ["enabled"]
            continue
        if not wanted.enabled:
            continue
        current = settings_of(snapshot, feature)
        differing = [k for k, v in wanted.settings.items() if current.get(k) != v]
        if repairable(snapshot, feature):
            differing.append("repair")
        if differing:
            out[name] = differing
    return out


def repairable(snapshot: Snapshot, feature: Feature) -> bool:
    """Is something of an enabled feature missing that the reconciler makes: its add-on failed,
    a prerequisite add-on, a role, a pod identity association or the TLS bucket hypd made
    gone? (A controller that is unavailable while nodes restart, or an add-on EKS reports
    DEGRADED, is reported, not repaired: nothing hypd makes would change it.)"""
    status, _problems = feature_status(snapshot, feature)
    if status == "FAILED":
        return True
    if feature.addon is None:
        return False
    if any(snapshot.addon(p) is None for p in feature.prerequisites):
        return True
    if any(snapshot.roles.get(r.key) is None for r in feature.roles):
        return True
    if feature.tls_bucket and not snapshot.tls_bucket_made and settings_of(
            snapshot, feature).get("tlsCertificateBucket") == snapshot.hypd_tls_bucket:
        return True
    return any(
        (i.namespace, i.service_account) not in snapshot.associations
        for i in feature.pod_identities
    )


def check(request: FeaturesRequest, snapshot: Snapshot | None) -> None:
    """Refuse a request that cannot be carried out, naming the field (`snapshot` None: for a
    cluster still to be created, where every feature is off).

    Raises:
        ValidationError: settings for a feature left off.
        ConflictError: task governance turned off while teams (compute quotas) exist.
    """
    def on(feature: Feature) -> bool:
        return snapshot is not None and snapshot.enabled(feature)

    for name, sent in request.named().items():
        feature = FEATURES[name]
        enabled = on(feature) if sent.enabled is None else sent.enabled
        settings = sent.sent_settings()
        if settings and not enabled:
            field = f"{name}.{next(iter(settings))}"
            raise catalog_error([Problem(
                field, f"{feature.title} is off; send \"enabled\": true with its settings")])
    governance = request.task_governance
    if (governance is not None and governance.enabled is False and snapshot is not None
            and snapshot.quotas):
        teams = sorted(
            str((q.get("ComputeQuotaTarget") or {}).get("TeamName") or q.get("Name"))
            for q in snapshot.quotas
        )
        raise ConflictError(
            "taskGovernance: teams " + ", ".join(teams) + " still have compute quotas; delete "
            "them first: " + ", ".join(
                f"DELETE /clusters/{snapshot.tag}/teams/{team}" for team in teams),
            details={"field": "taskGovernance.enabled", "teams": teams},
        )


def enabled_after(targets: dict[str, FeatureTarget], snapshot: Snapshot) -> list[Feature]:
    """The features on once `targets` are reached: the targets' and the others as they are."""
    return [
        f
        for f in FEATURES.values()
        if (targets[f.name].enabled if f.name in targets else snapshot.enabled(f))
    ]
