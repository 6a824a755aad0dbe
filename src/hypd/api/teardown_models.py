"""Models of the teardown routes (docs/teardown.md; camelCase on the wire)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, StrictBool

from hypd.api.models import ApiModel


class PlannedResource(ApiModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    type: str = Field(description="What it is: HyperPodCluster, EksCluster, IamRole, ...")
    name: str
    arn: str | None = None


class KeptResource(PlannedResource):
    reason: str = Field(description="Why the teardown leaves it.")


class TeardownStep(ApiModel):
    stage: str = Field(description="The delete-cluster stage that deletes these resources.")
    resources: list[PlannedResource]


class TeardownBlocker(ApiModel):
    code: str
    message: str
    details: dict[str, Any] | None = None


class TeardownPlan(ApiModel):
    tag: str
    deletable: bool = Field(description="No blocker: DELETE /clusters/{tag} would start.")
    force: bool = Field(description="The plan with ?force=true (running workloads stopped).")
    steps: list[TeardownStep] = Field(description="In order; see parallel.")
    parallel: list[list[str]] = Field(
        description="Stages that run side by side once the HyperPod cluster is gone.")
    kept: list[KeptResource]
    blockers: list[TeardownBlocker]


class ProtectionRequest(ApiModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    enabled: StrictBool = Field(description="Refuse DELETE /clusters/{tag} while true.")


class ProtectionView(ApiModel):
    tag: str
    enabled: bool


class ClusterForgotten(ApiModel):
    tag: str
    forgotten: bool = Field(description="The record is gone; every resource is as it was.")
