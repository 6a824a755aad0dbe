"""Request and response models of the REST API (camelCase on the wire)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.clusters.models import CLUSTER_TAG_PATTERN, ClusterSource, EksCluster, HyperPodCluster
from hypd.operations.models import (
    OPERATION_ID_PATTERN,
    OperationKind,
    OperationStatus,
    StageStatus,
)


class ApiModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class ErrorBody(ApiModel):
    code: str = Field(description="Machine-readable error code.")
    message: str = Field(description="What went wrong, naming the field when input was bad.")
    details: dict[str, Any] = Field(default_factory=dict)


class DiscoverRequest(ApiModel):
    cluster_names: list[str] | None = Field(
        default=None,
        alias="clusterNames",
        min_length=1,
        max_length=100,
        description=(
            "Import only the EKS or HyperPod clusters with these names (and their linked "
            "clusters). Omit to import every cluster in the account and Region."
        ),
    )


class OperationAccepted(ApiModel):
    operation_id: str = Field(alias="operationId", pattern=OPERATION_ID_PATTERN)
    status: OperationStatus
    kind: OperationKind


class StageView(ApiModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    name: str
    status: StageStatus
    started_at: str | None = Field(default=None, alias="startedAt")
    ended_at: str | None = Field(default=None, alias="endedAt")
    attempts: int
    error: dict[str, str] | None = None
    output: dict[str, Any] | None = None


class OperationView(ApiModel):
    id: str = Field(pattern=OPERATION_ID_PATTERN)
    kind: OperationKind
    cluster_tag: str | None = Field(default=None, alias="clusterTag")
    status: OperationStatus
    stages: list[StageView]
    input: dict[str, Any]
    output: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    execution_arn: str | None = Field(default=None, alias="executionArn")
    created_at: str = Field(alias="createdAt")
    updated_at: str = Field(alias="updatedAt")
    version: int


class OperationList(ApiModel):
    operations: list[OperationView]
    next_token: str | None = Field(default=None, alias="nextToken")


class ClusterView(ApiModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    tag: str = Field(pattern=CLUSTER_TAG_PATTERN)
    source: ClusterSource
    region: str | None = None
    eks: EksCluster | None = None
    hyperpod: HyperPodCluster | None = None
    created_at: str = Field(alias="createdAt")
    updated_at: str = Field(alias="updatedAt")
    last_seen_at: str | None = Field(default=None, alias="lastSeenAt")
    last_operation_id: str | None = Field(default=None, alias="lastOperationId")


class ClusterList(ApiModel):
    clusters: list[ClusterView]
    next_token: str | None = Field(default=None, alias="nextToken")
