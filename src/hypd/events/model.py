"""The detail types of hypd's own events (docs/automation.md, "Events hypd publishes")."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.clusters.models import ClusterStatus
from hypd.operations.models import OperationKind, OperationStatus

SOURCE = "hypd"
"""The events' source unless the deployment names another (stack parameter EventSource)."""

OPERATION_STATE_CHANGE = "hypd Operation State Change"
CLUSTER_STATE_CHANGE = "hypd Cluster State Change"
NODE_HEALTH_CHANGE = "hypd Node Health Change"


class _Detail(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    event_id: str = Field(
        alias="eventId",
        description="The record and version whose write made the transition: the same on a "
        "redelivery, so a consumer can drop a duplicate.")


class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str
    message: str


class OperationStateChange(_Detail):
    operation_id: str = Field(alias="operationId")
    kind: OperationKind
    cluster_tag: str | None = Field(default=None, alias="clusterTag")
    status: OperationStatus
    previous_status: OperationStatus | None = Field(
        default=None, alias="previousStatus", description="None when the operation is new.")
    stage: str | None = Field(
        default=None, description="The stage running, or the one that failed; None before "
        "the first stage and after the last.")
    error: ErrorDetail | None = None
    links: dict[str, str]


class ClusterStateChange(_Detail):
    tag: str
    status: ClusterStatus
    previous_status: ClusterStatus | None = Field(default=None, alias="previousStatus")
    operation_id: str | None = Field(
        default=None, alias="operationId", description="The operation that made the change.")
    links: dict[str, str]


class Repair(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    by: str = Field(description="hyperpod (it repairs the node itself) or hypd (an operation).")
    action: str | None = None
    operation_id: str | None = Field(default=None, alias="operationId")


class NodeHealthChange(_Detail):
    tag: str
    node_id: str = Field(alias="nodeId")
    instance_group: str | None = Field(default=None, alias="instanceGroup")
    health: str
    previous_health: str | None = Field(default=None, alias="previousHealth")
    reason: str | None = None
    repair: Repair | None = Field(
        default=None, description="The repair recorded with this health change, if any.")
    links: dict[str, str]


DETAILS: dict[str, type[_Detail]] = {
    OPERATION_STATE_CHANGE: OperationStateChange,
    CLUSTER_STATE_CHANGE: ClusterStateChange,
    NODE_HEALTH_CHANGE: NodeHealthChange,
}


@dataclass(frozen=True)
class Event:
    """One event to put on the bus (source and bus come from the deployment)."""

    detail_type: str
    detail: dict[str, Any]
    resources: list[str] = field(default_factory=list)
    time: str | None = None
    """When the transition was recorded (the record's update time, ISO 8601): the event's
    ``time`` on the bus, the same on every delivery of the one write."""

    @classmethod
    def of(cls, detail: _Detail, resources: list[str] | None = None,
           time: str | None = None) -> Event:
        detail_type = next(t for t, model in DETAILS.items() if isinstance(detail, model))
        return cls(detail_type, detail.model_dump(mode="json", by_alias=True),
                   list(resources or []), time)

    @property
    def event_id(self) -> str:
        return str(self.detail["eventId"])


SCHEMA_FILES = {
    OPERATION_STATE_CHANGE: "hypd-operation-state-change.json",
    CLUSTER_STATE_CHANGE: "hypd-cluster-state-change.json",
    NODE_HEALTH_CHANGE: "hypd-node-health-change.json",
}
"""The file of each detail type's schema under events/schemas/ (and of its sample under
events/)."""


def event_schema(detail_type: str) -> dict[str, Any]:
    """The JSON Schema (draft 4, as the EventBridge schema registry's JSONSchemaDraft4 type
    takes it) of a whole event of ``detail_type``: EventBridge's envelope around the detail."""
    detail = DETAILS[detail_type].model_json_schema(
        by_alias=True, ref_template="#/definitions/{model}")
    definitions: dict[str, Any] = detail.pop("$defs", {})
    name = DETAILS[detail_type].__name__
    definitions[name] = detail
    return {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "title": detail_type,
        "type": "object",
        "required": ["detail-type", "source", "detail"],
        "properties": {
            "version": {"type": "string"},
            "id": {"type": "string"},
            "detail-type": {"type": "string", "enum": [detail_type]},
            "source": {"type": "string"},
            "account": {"type": "string"},
            "time": {"type": "string", "format": "date-time"},
            "region": {"type": "string"},
            "resources": {"type": "array", "items": {"type": "string"}},
            "detail": {"$ref": f"#/definitions/{name}"},
        },
        "definitions": _draft4(definitions),
    }


def _draft4(schema: Any) -> Any:
    """Pydantic's schema in draft 4's words: no ``const`` (a one-value ``enum``), no
    ``examples``."""
    if isinstance(schema, dict):
        out = {k: _draft4(v) for k, v in schema.items() if k != "examples"}
        if "const" in out:
            out["enum"] = [out.pop("const")]
        return out
    if isinstance(schema, list):
        return [_draft4(v) for v in schema]
    return schema


def write_schemas(directory: Path) -> list[Path]:
    """Write each detail type's event schema to ``directory`` (events/schemas/)."""
    written = []
    for detail_type, name in SCHEMA_FILES.items():
        path = directory / name
        path.write_text(json.dumps(event_schema(detail_type), indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written


if __name__ == "__main__":  # python -m hypd.events.model: regenerate events/schemas/
    for written in write_schemas(Path(__file__).resolve().parents[3] / "events" / "schemas"):
        print(written)
