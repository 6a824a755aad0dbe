"""The upgrade request (``POST /clusters/{tag}/upgrades``) and the operation's input.

What a request does not name stays as it is (docs/upgrades.md). Limits come from botocore's
models: EKS UpdateClusterVersion's ``version``, SageMaker UpdateClusterSoftware's
``DeploymentConfig`` (``CapacitySizeConfig.Value`` at least 1, ``WaitIntervalInSeconds``
0-3600, ``AutoRollbackConfiguration`` 1-10 alarms, alarm names as CloudWatch allows). These are
models: they import nothing of hypd but the create's Kubernetes version pattern.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from hypd.clusters.create_request import KUBERNETES_VERSION_PATTERN

ALARM_NAME_PATTERN = r"^[^\x00-\x1f\x7f]{1,255}$"
"""CloudWatch's alarm names: 1-255 characters, no control characters."""
GROUP_NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
"""botocore's ClusterInstanceGroupName."""
ADDON_NAME_PATTERN = r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$"
"""An EKS add-on name (the console's rule)."""


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class BatchType(StrEnum):
    COUNT = "count"
    PERCENTAGE = "percentage"


HYPERPOD_BATCH_TYPES = {BatchType.COUNT: "INSTANCE_COUNT",
                        BatchType.PERCENTAGE: "CAPACITY_PERCENTAGE"}


class BatchSize(_Model):
    """How many nodes HyperPod updates at a time (its ``MaximumBatchSize``)."""

    type: BatchType = Field(description="count: a number of nodes; percentage: a share of the "
                            "group's nodes.")
    value: int = Field(ge=1, le=10_000, description="The count, or the percentage (1-100).")

    @model_validator(mode="after")
    def _percent(self) -> Self:
        if self.type is BatchType.PERCENTAGE and self.value > 100:
            raise ValueError("value: a percentage is at most 100")
        return self


class NodesTarget(_Model):
    """Roll the nodes onto the newest HyperPod software with a rolling deployment."""

    instance_groups: list[str] | None = Field(
        default=None, alias="instanceGroups", min_length=1, max_length=100,
        description="The instance groups to update; omitted: every group.")
    batch: BatchSize | None = Field(
        default=None, description="Nodes updated at a time; omitted: HyperPod's default.")
    wait_seconds: int | None = Field(
        default=None, alias="waitSeconds", ge=0, le=3600,
        description="Wait between batches (HyperPod's WaitIntervalInSeconds).")
    rollback_alarms: list[str] | None = Field(
        default=None, alias="rollbackAlarms", min_length=1, max_length=10,
        description="CloudWatch alarms whose ALARM state rolls the update back "
        "(AutoRollbackConfiguration).")

    @model_validator(mode="after")
    def _names(self) -> Self:
        for index, name in enumerate(self.instance_groups or ()):
            if not re.match(GROUP_NAME_PATTERN, name):
                raise ValueError(f"instanceGroups[{index}]: {name!r} is not an instance group "
                                 "name (letters, digits and hyphens, at most 63)")
        for index, name in enumerate(self.rollback_alarms or ()):
            if not re.match(ALARM_NAME_PATTERN, name):
                raise ValueError(f"rollbackAlarms[{index}]: an alarm name has 1-255 "
                                 "characters and no control characters")
        if self.instance_groups and len(set(self.instance_groups)) != len(self.instance_groups):
            raise ValueError("instanceGroups: a group is named twice")
        return self


class UpgradeRequest(_Model):
    """``POST /clusters/{tag}/upgrades``: the versions to move to."""

    kubernetes_version: str | None = Field(
        default=None, alias="kubernetesVersion", pattern=KUBERNETES_VERSION_PATTERN,
        description="A later Kubernetes minor version EKS offers (1.34); two versions ahead "
        "is two control-plane steps.")
    addons: Literal["compatible"] | dict[str, str] | None = Field(
        default=None,
        description="compatible: every add-on to the newest version compatible with the "
        "target Kubernetes version; or the version per add-on name.")
    chart: Literal["bundled"] | None = Field(
        default=None, description="bundled: the HyperPod dependencies chart this hypd ships, "
        "rendered for the target Kubernetes version.")
    nodes: NodesTarget | None = Field(
        default=None, description="Roll the nodes onto the newest HyperPod software.")
    force: StrictBool = Field(
        default=False, description="Upgrade although an EKS upgrade insight reports ERROR "
        "(EKS's own force flag).")

    @model_validator(mode="after")
    def _something(self) -> Self:
        if isinstance(self.addons, dict):
            if not self.addons:
                raise ValueError("addons: name at least one add-on, or send \"compatible\"")
            for name, version in self.addons.items():
                if not re.match(ADDON_NAME_PATTERN, name):
                    raise ValueError(f"addons: {name!r} is not an add-on name")
                if not version or len(version) > 100:
                    raise ValueError(f"addons.{name}: a version such as v1.19.0-eksbuild.1")
        if (self.kubernetes_version is None and self.addons is None and self.chart is None
                and self.nodes is None):
            raise ValueError("name a target: kubernetesVersion, addons, chart or nodes")
        return self


class UpgradeInput(_Model):
    """An upgrade-cluster operation's input: the cluster, the request as sent, and the plan it
    was started with (each task does its step of it; a retry resumes at the first step not
    done, and a step whose version is already there is done)."""

    tag: str
    eks_name: str = Field(alias="eksName")
    hyperpod_name: str | None = Field(default=None, alias="hyperPodName")
    request: UpgradeRequest
    plan: dict[str, object] = Field(description="`plan.Plan.to_json()` at the start.")
