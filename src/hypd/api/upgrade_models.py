"""Response models of /clusters/{tag}/upgrades (the shapes `hypd.upgrades.views` and
`hypd.upgrades.model.Plan.to_json` answer)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hypd.api.models import ApiModel


class VersionSupport(ApiModel):
    version: str
    status: str = Field(description="STANDARD_SUPPORT, EXTENDED_SUPPORT or UNSUPPORTED.")
    release_date: str | None = Field(default=None, alias="releaseDate")
    end_of_standard_support: str | None = Field(default=None, alias="endOfStandardSupport")
    end_of_extended_support: str | None = Field(default=None, alias="endOfExtendedSupport")


class KubernetesVersions(ApiModel):
    version: str = Field(description="The control plane's Kubernetes version now.")
    support: VersionSupport | None = None
    next: VersionSupport | None = Field(default=None,
                                        description="The next minor version EKS offers.")
    available: list[str] = Field(description="Every later version EKS offers.")


class AddonVersions(ApiModel):
    name: str
    version: str
    status: str
    newest_compatible: str | None = Field(
        default=None, alias="newestCompatible",
        description="The newest version compatible with the next Kubernetes version (the "
        "current one on the newest).")
    compatible_with_current: bool = Field(alias="compatibleWithCurrent")
    compatible_with_next: bool | None = Field(default=None, alias="compatibleWithNext")


class ChartVersions(ApiModel):
    installed: str | None = Field(description="The release applied (null: not recorded).")
    rendered_for: str | None = Field(alias="renderedFor")
    bundled: str = Field(description="The release this hypd applies.")
    up_to_date: bool = Field(alias="upToDate")


class NodeGroupSoftware(ApiModel):
    instance_group: str = Field(alias="instanceGroup")
    nodes: int
    image_release: str | None = Field(default=None, alias="imageRelease")
    image_status: str | None = Field(default=None, alias="imageStatus")
    software_update_status: str | None = Field(default=None, alias="softwareUpdateStatus")
    update_available: bool = Field(alias="updateAvailable")


class UpgradeInsight(ApiModel):
    name: str
    kubernetes_version: str = Field(alias="kubernetesVersion")
    status: str
    reason: str
    recommendation: str
    findings: list[str]


class UpgradeBlocker(ApiModel):
    code: str
    message: str
    action: str = Field(description="What to do about it.")
    field: str | None = Field(default=None, description="The request field it is about.")


class UpgradesView(ApiModel):
    tag: str
    kubernetes: KubernetesVersions
    addons: list[AddonVersions]
    chart: ChartVersions | None = None
    nodes: list[NodeGroupSoftware]
    insights: list[UpgradeInsight]
    blockers: list[UpgradeBlocker] = Field(
        description="What blocks an upgrade to the next version with compatible add-ons, the "
        "bundled chart and every group's nodes.")
    warnings: list[str]


class UpgradeStep(ApiModel):
    stage: str = Field(description="control-plane, addons, chart or nodes.")
    name: str
    description: str
    target: dict[str, Any]
    estimate_seconds: int = Field(alias="estimateSeconds")


class UpgradePlan(ApiModel):
    tag: str
    steps: list[UpgradeStep]
    blockers: list[UpgradeBlocker]
    warnings: list[str]
    estimate_seconds: int = Field(alias="estimateSeconds")
    startable: bool = Field(description="No blocker: the same request without dryRun starts.")
