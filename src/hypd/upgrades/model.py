"""What an upgrade plan is made from (`UpgradeFacts`, read by `facts.read`) and what it is made
of (`Plan`: steps, blockers, warnings). Plain data: no AWS, no Kubernetes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class KubernetesVersion:
    """One version DescribeClusterVersions lists, with its support calendar."""

    version: str
    status: str
    """STANDARD_SUPPORT, EXTENDED_SUPPORT or UNSUPPORTED (``versionStatus``)."""
    release_date: datetime | None = None
    end_of_standard_support: datetime | None = None
    end_of_extended_support: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        def day(value: datetime | None) -> str | None:
            return value.date().isoformat() if value else None

        return {"version": self.version, "status": self.status,
                "releaseDate": day(self.release_date),
                "endOfStandardSupport": day(self.end_of_standard_support),
                "endOfExtendedSupport": day(self.end_of_extended_support)}


@dataclass(frozen=True)
class Insight:
    """An EKS UPGRADE_READINESS insight (ListInsights, DescribeInsight for one not PASSING)."""

    id: str
    name: str
    kubernetes_version: str
    status: str
    reason: str = ""
    recommendation: str = ""
    findings: tuple[str, ...] = ()
    """What the insight names: deprecated APIs and their replacement, resources, add-ons."""


@dataclass(frozen=True)
class Addon:
    """An installed EKS add-on and the versions compatible with each Kubernetes version the
    plan may move to (DescribeAddonVersions, newest first)."""

    name: str
    version: str
    status: str
    compatible: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Chart:
    """The HyperPod dependencies chart: what is installed (hypd's record in the cluster) and
    what this hypd ships."""

    bundled: str
    installed: str | None = None
    rendered_for: str | None = None
    """The Kubernetes version the installed chart was rendered for."""


@dataclass(frozen=True)
class NodeGroup:
    """A HyperPod instance group's software (DescribeCluster's group fields)."""

    name: str
    nodes: int
    image_release: str | None = None
    """CurrentImageReleaseVersion."""
    desired_release: str | None = None
    image_status: str | None = None
    """ImageVersionStatus: UpToDate, UpdateAvailable, SecurityUpdateRequired, EndOfLife."""
    update_status: str | None = None
    """SoftwareUpdateStatus of the last or running software update."""


@dataclass(frozen=True)
class Disruption:
    """A PodDisruptionBudget that allows no disruption of pods on nodes a rollout replaces."""

    namespace: str
    name: str
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpgradeFacts:
    tag: str
    eks_name: str
    hyperpod_name: str | None
    kubernetes_version: str
    eks_status: str
    now: datetime
    versions: tuple[KubernetesVersion, ...] = ()
    insights: tuple[Insight, ...] = ()
    addons: tuple[Addon, ...] = ()
    chart: Chart | None = None
    groups: tuple[NodeGroup, ...] = ()
    disruptions: tuple[Disruption, ...] = ()
    running_operation: tuple[str, str] | None = None
    """(operation id, kind) of the operation that holds the cluster's lock."""
    hyperpod_status: str | None = None
    created_by_hypd: bool = True
    """A cluster hypd created (its functions' roles may change only ``hypd-*`` clusters)."""

    def version(self, version: str) -> KubernetesVersion | None:
        return next((v for v in self.versions if v.version == version), None)


@dataclass(frozen=True)
class Blocker:
    """What stops an upgrade, and what to do about it."""

    code: str
    message: str
    action: str
    field: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "action": self.action,
                **({"field": self.field} if self.field else {})}


@dataclass(frozen=True)
class Step:
    """One step of a plan: what changes, from what to what, and how long it should take."""

    stage: str
    """control-plane, addons, chart, nodes."""
    name: str
    description: str
    target: Mapping[str, Any]
    estimate_seconds: int

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "name": self.name, "description": self.description,
                "target": dict(self.target), "estimateSeconds": self.estimate_seconds}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        return cls(stage=str(data["stage"]), name=str(data["name"]),
                   description=str(data["description"]), target=dict(data["target"]),
                   estimate_seconds=int(data["estimateSeconds"]))


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    blockers: tuple[Blocker, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def estimate_seconds(self) -> int:
        return sum(step.estimate_seconds for step in self.steps)

    def of(self, stage: str) -> tuple[Step, ...]:
        return tuple(step for step in self.steps if step.stage == stage)

    def to_json(self) -> dict[str, Any]:
        return {"steps": [s.to_json() for s in self.steps],
                "blockers": [b.to_json() for b in self.blockers],
                "warnings": list(self.warnings),
                "estimateSeconds": self.estimate_seconds}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        return cls(
            steps=tuple(Step.from_json(s) for s in data.get("steps") or ()),
            blockers=tuple(Blocker(**dict(b))
                           for b in data.get("blockers") or ()),
            warnings=tuple(str(w) for w in data.get("warnings") or ()),
        )
