"""Models of GET /events: hypd's recorded events as EventBridge delivers them
(docs/automation.md, "Clients")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from hypd.api.models import ApiModel
from hypd.events.model import ClusterStateChange, NodeHealthChange, OperationStateChange


class _EventView(ApiModel):
    id: str = Field(description="hypd's id of the event: its detail's eventId, the same on a "
                    "redelivery (EventBridge's own id differs per delivery and is not kept).")
    time: str = Field(description="When the transition happened (ISO 8601, UTC).")
    source: str = Field(description="The events' source (hypd unless the stack names another).")
    resources: list[str] = Field(description="ARNs the event is about: the HyperPod cluster, "
                                 "the operation's execution.")


class OperationEventView(_EventView):
    detail_type: Literal["hypd Operation State Change"] = Field(alias="detail-type")
    detail: OperationStateChange


class ClusterEventView(_EventView):
    detail_type: Literal["hypd Cluster State Change"] = Field(alias="detail-type")
    detail: ClusterStateChange


class NodeEventView(_EventView):
    detail_type: Literal["hypd Node Health Change"] = Field(alias="detail-type")
    detail: NodeHealthChange


EventView = Annotated[
    OperationEventView | ClusterEventView | NodeEventView, Field(discriminator="detail_type")
]


class EventList(ApiModel):
    events: list[EventView] = Field(description="Newest last.")
    next: str | None = Field(
        default=None,
        description="Pass it as `since` to read only the events recorded after these; "
        "absent when none were listed and no `since` was given.",
    )
