"""What a capacity operation records as its input: the request, resolved by the API.

The API validates a request against the live cluster and the catalogue, then records exactly
what the operation is to do; the tasks read it back (a retry does the same thing again), each
kind with its strategy's model (`hypd.capacity.strategies`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hypd.capacity.autoscaling import AutoscalingSettings
from hypd.clusters.create_request import ResolvedInstanceGroup, hyperpod_cluster_name
from hypd.operations.models import OperationKind


class CapacityInput(BaseModel):
    """What every capacity operation records: its cluster, and the warnings its request
    raised."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    tag: str
    warnings: list[str] = Field(default_factory=list)

    @property
    def cluster_name(self) -> str:
        return hyperpod_cluster_name(self.tag)


class AddGroupInput(CapacityInput):
    group: ResolvedInstanceGroup
    availability_zone: str = Field(alias="availabilityZone")
    availability_zone_source: Literal["request", "training-plan", "cluster"] = Field(
        alias="availabilityZoneSource"
    )


class UpdateGroupInput(CapacityInput):
    group: str
    changes: dict[str, Any]
    """Spec members to set (the normaliser's terms)."""
    fields: dict[str, Any]
    """The same change in the API's terms, as the client asked."""
    previous_count: int = Field(alias="previousCount")
    """The group's target count when the change was asked."""


class DeleteGroupInput(CapacityInput):
    group: str


class NodeActionInput(CapacityInput):
    node_id: str = Field(alias="nodeId")
    group: str
    action: Literal["reboot", "replace", "delete"]


class AutoscalingInput(CapacityInput):
    enabled: bool
    settings: AutoscalingSettings | None = None


NODE_ACTIONS: dict[OperationKind, Literal["reboot", "replace", "delete"]] = {
    OperationKind.REBOOT_NODE: "reboot",
    OperationKind.REPLACE_NODE: "replace",
    OperationKind.DELETE_NODE: "delete",
}
"""The action each node kind asks HyperPod for (what its input records)."""


def record(model: BaseModel) -> dict[str, Any]:
    """An input as the operation records it (camelCase JSON)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
