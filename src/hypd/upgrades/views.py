"""``GET /clusters/{tag}/upgrades``: the versions now, what is available, what blocks (pure)."""

from __future__ import annotations

from typing import Any

from hypd.upgrades.inputs import NodesTarget, UpgradeRequest
from hypd.upgrades.model import UpgradeFacts
from hypd.upgrades.plan import minor, newest_compatible, plan


def next_version(facts: UpgradeFacts) -> str | None:
    """The next minor version EKS offers, if any."""
    wanted = f"1.{minor(facts.kubernetes_version) + 1}"
    found = facts.version(wanted)
    return wanted if found is not None and found.status != "UNSUPPORTED" else None


def _support(facts: UpgradeFacts, version: str | None) -> dict[str, Any] | None:
    found = facts.version(version) if version else None
    return found.to_json() if found else None


def upgrades_view(facts: UpgradeFacts) -> dict[str, Any]:
    """What a user reads before upgrading: each version now and what it could move to, the
    insights, and the blockers of an upgrade to the next minor version with compatible
    add-ons, the bundled chart and every group's nodes."""
    following = next_version(facts)
    later = sorted((v for v in facts.versions
                    if minor(v.version) > minor(facts.kubernetes_version)
                    and v.status != "UNSUPPORTED"), key=lambda v: minor(v.version))
    request = UpgradeRequest(kubernetes_version=following, addons="compatible",
                             chart="bundled" if facts.chart else None,
                             nodes=NodesTarget() if facts.hyperpod_name else None)
    whole = plan(facts, request)
    target = following or facts.kubernetes_version
    return {
        "tag": facts.tag,
        "kubernetes": {
            "version": facts.kubernetes_version,
            "support": _support(facts, facts.kubernetes_version),
            "next": _support(facts, following),
            "available": [v.version for v in later],
        },
        "addons": [{
            "name": addon.name, "version": addon.version, "status": addon.status,
            "newestCompatible": newest_compatible(addon, target),
            "compatibleWithCurrent": addon.version in (
                addon.compatible.get(facts.kubernetes_version) or ()),
            "compatibleWithNext": (addon.version in (addon.compatible.get(following) or ())
                                   if following else None),
        } for addon in facts.addons],
        "chart": ({"installed": facts.chart.installed, "renderedFor": facts.chart.rendered_for,
                   "bundled": facts.chart.bundled,
                   "upToDate": facts.chart.installed == facts.chart.bundled
                   and facts.chart.rendered_for == facts.kubernetes_version}
                  if facts.chart else None),
        "nodes": [{
            "instanceGroup": group.name, "nodes": group.nodes,
            "imageRelease": group.image_release, "imageStatus": group.image_status,
            "softwareUpdateStatus": group.update_status,
            "updateAvailable": group.image_status in ("UpdateAvailable",
                                                      "SecurityUpdateRequired", "EndOfLife"),
        } for group in facts.groups],
        "insights": [{
            "name": i.name, "kubernetesVersion": i.kubernetes_version, "status": i.status,
            "reason": i.reason, "recommendation": i.recommendation,
            "findings": list(i.findings),
        } for i in facts.insights],
        "blockers": [b.to_json() for b in whole.blockers],
        "warnings": list(whole.warnings),
    }
