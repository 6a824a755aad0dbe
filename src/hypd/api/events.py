"""Routes: /events (hypd's own recent events, docs/automation.md "Clients")."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hypd.api.context import services
from hypd.api.errors import ERROR_RESPONSES, json_response
from hypd.api.event_models import EventList
from hypd.clusters.models import CLUSTER_TAG_PATTERN
from hypd.events.store import DEFAULT_LIMIT, MAX_LIMIT, SINCE_PATTERN, DetailType

router = APIGatewayRouter()


@router.get(
    "/events",
    summary="List hypd's recent events, newest last",
    description=(
        "The events hypd published to EventBridge in the last 14 days (hypd Operation State "
        "Change, hypd Cluster State Change, hypd Node Health Change), each as EventBridge "
        "delivers it, in the order hypd recorded them. Without `since`, the last `limit`; "
        "with it, the first `limit` recorded after it. To follow, pass the answer's `next` "
        "as `since` to the next call. An event is listed about two seconds after hypd "
        "recorded it, so a follower never skips one."
    ),
    operation_id="listEvents",
    tags=["events"],
    responses={
        200: json_response("EventList", "The events, newest last, and the cursor to follow."),
        400: ERROR_RESPONSES[400],
        503: ERROR_RESPONSES[503],
    },
)
def list_events(
    cluster: Annotated[
        str | None,
        Query(pattern=CLUSTER_TAG_PATTERN, description="Only the events of this cluster tag."),
    ] = None,
    since: Annotated[
        str | None,
        Query(pattern=SINCE_PATTERN, max_length=512,
              description="Only the events recorded after this: an ISO time with its offset "
              "(2026-01-15T10:00:00Z), or the `next` of a previous answer."),
    ] = None,
    detail_type: Annotated[
        DetailType | None, Query(alias="detailType", description="Only events of this type.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
) -> EventList:
    page = services().event_store().list_recent(
        cluster=cluster, since=since, limit=limit, detail_type=detail_type)
    return EventList.model_validate({"events": page.events, "next": page.next})
