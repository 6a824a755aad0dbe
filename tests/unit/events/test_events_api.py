"""GET /events through functions/api/app.py in-process (moto DynamoDB): the recorded events as
EventBridge delivers them, newest last, followed with `next`; bad input is a 400 naming the
field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from hypd.aws.dynamodb import Table
from hypd.events.derive import derive
from hypd.events.model import ClusterStateChange, Event
from hypd.events.store import SETTLE, EventStore
from hypd.operations import lifecycle
from hypd.operations.models import OperationKind
from hypd.operations.store import OperationStore
from tests.unit.events.schemas import validator
from tests.unit.support import ACCOUNT, REGION, FakeClock, FakeLambdaContext, load_event
from tests.unit.test_api_handler import Response, api_event, assert_validation_error, load_api

pytestmark = pytest.mark.usefixtures("fresh_imports")


@dataclass
class Api:
    module: Any

    def call(self, method: str, path: str, **kwargs: Any) -> Response:
        raw = self.module.handler(api_event(method, path, **kwargs), FakeLambdaContext("hypd-api"))
        headers = {name: values[-1] for name, values in raw["multiValueHeaders"].items()}
        return Response(raw["statusCode"], json.loads(raw["body"]), headers)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table,
        fixed_clock: FakeClock) -> Api:
    """functions/api/app.py's handler (GET /events starts nothing: no state machine)."""
    unused = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:Unused"
    return Api(load_api(monkeypatch, template, table, unused))


def list_events(api: Api, **query: str) -> Response:
    return api.call("GET", "/events", query=query or None)


def record_operation(table: Table, tag: str) -> Event:
    operation = lifecycle.new_operation(OperationKind.CREATE_CLUSTER, cluster_tag=tag)
    (event,) = derive(None, OperationStore._encode(operation))
    EventStore(table).record([event], source="hypd")
    return event


def record_cluster(table: Table, tag: str, time: str) -> Event:
    detail = ClusterStateChange(event_id=f"CLUSTER#{tag}|CLUSTER|{time}", tag=tag,
                                status="ACTIVE", links={"cluster": f"/clusters/{tag}"})
    event = Event.of(detail, [f"arn:aws:sagemaker:us-west-2:123456789012:cluster/{tag}"], time)
    EventStore(table).record([event], source="hypd")
    return event


def test_the_recorded_events_are_listed_as_eventbridge_delivers_them(
    api: Api, table: Table, fixed_clock: FakeClock
) -> None:
    # Given an operation event and a cluster event recorded a second apart
    operation = record_operation(table, "train")
    fixed_clock.advance(1)
    cluster = record_cluster(table, "train", "2026-01-15T10:00:01.000Z")
    fixed_clock.advance(SETTLE.total_seconds())
    # When they are listed
    response = list_events(api)
    # Then each is the envelope of its schema, newest last
    assert response.status == 200, response.body
    events = response.body["events"]
    assert [e["detail-type"] for e in events] == ["hypd Operation State Change",
                                                  "hypd Cluster State Change"]
    assert events[0]["detail"] == operation.detail
    assert events[1] == {"id": cluster.detail["eventId"], "time": "2026-01-15T10:00:01.000Z",
                         "source": "hypd", "detail-type": "hypd Cluster State Change",
                         "resources": cluster.resources, "detail": cluster.detail}
    for event in events:
        validator(event["detail-type"]).validate(event)
    assert response.body["next"]


def test_a_follower_passes_next_as_since(
    api: Api, table: Table, fixed_clock: FakeClock
) -> None:
    record_operation(table, "train")
    fixed_clock.advance(SETTLE.total_seconds())
    cursor = list_events(api).body["next"]
    # nothing new: the same cursor back
    assert list_events(api, since=cursor).body == {"events": [], "next": cursor}
    # something new: only that
    record_cluster(table, "train", "2026-01-15T10:00:02.000Z")
    fixed_clock.advance(SETTLE.total_seconds())
    later = list_events(api, since=cursor).body
    assert [e["detail-type"] for e in later["events"]] == ["hypd Cluster State Change"]
    assert later["next"] != cursor


def test_events_are_filtered_by_cluster_type_and_limit(
    api: Api, table: Table, fixed_clock: FakeClock
) -> None:
    record_operation(table, "train")
    fixed_clock.advance(0.001)
    record_cluster(table, "train", "2026-01-15T10:00:00.000Z")
    fixed_clock.advance(0.001)
    record_cluster(table, "serve", "2026-01-15T10:00:00.000Z")
    fixed_clock.advance(SETTLE.total_seconds())

    def listed(**query: str) -> list[tuple[str, Any]]:
        response = list_events(api, **query)
        assert response.status == 200, response.body
        return [(e["detail-type"].split()[1], e["detail"].get("clusterTag") or e["detail"]["tag"])
                for e in response.body["events"]]

    assert listed(cluster="train") == [("Operation", "train"), ("Cluster", "train")]
    assert listed(detailType="hypd Cluster State Change") == [("Cluster", "train"),
                                                             ("Cluster", "serve")]
    assert listed(limit="1") == [("Cluster", "serve")]
    assert listed(cluster="none") == []
    assert list_events(api).body["next"] is not None


def test_nothing_recorded_is_an_empty_list_without_a_cursor(api: Api) -> None:
    response = list_events(api)
    assert response.status == 200
    assert response.body == {"events": [], "next": None}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "201"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"cluster": "bad tag"}, "cluster"),
        ({"detailType": "operation"}, "detailType"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-02-30T00:00:00Z"}, "since"),  # the right shape, not a day
        ({"since": "2026-01-15T10:00:00Z#" + "x" * 401}, "since"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    api: Api, query: dict[str, str], field: str
) -> None:
    assert_validation_error(list_events(api, **query), field)


def test_the_sample_event_is_answered(api: Api, table: Table, fixed_clock: FakeClock) -> None:
    # events/api-list-events.json: a cluster's operation events, as API Gateway sends them
    record_operation(table, "demo")
    record_cluster(table, "demo", "2026-01-15T10:00:00.000Z")
    fixed_clock.advance(SETTLE.total_seconds())

    raw = api.module.handler(load_event("api-list-events.json"), FakeLambdaContext("hypd-api"))

    assert raw["statusCode"] == 200, raw["body"]
    events = json.loads(raw["body"])["events"]
    assert [(e["detail-type"], e["detail"]["clusterTag"]) for e in events] == [
        ("hypd Operation State Change", "demo")]
