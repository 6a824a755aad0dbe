"""hypd's own events on the local cloud: one per status change of each operation and cluster,
in order, each valid against its registered schema, and none lost or doubled when EventBridge
refuses a request (tests/published_events.py checks the same after every e2e test)."""

from __future__ import annotations

from typing import Any

from hypd.events.model import CLUSTER_STATE_CHANGE, OPERATION_STATE_CHANGE
from hypd_cli.api_client import ApiClient
from hypd_cli.demo import follow
from tests.e2e.test_create_pipeline import create
from tests.published_events import check_published_events, published


def transitions(cloud: Any, detail_type: str, key: str, value: str) -> list[tuple[Any, Any]]:
    return [(e["detail"].get("previousStatus"), e["detail"]["status"])
            for e in published(cloud, detail_type) if e["detail"].get(key) == value]


def test_a_create_publishes_each_transition_of_its_operation_and_cluster_once(
        api: ApiClient, cloud: Any) -> None:
    # When a cluster is created
    operation_id = create(api, cloud)
    done = follow(api, cloud, operation_id, timeout=240)
    assert done["status"] == "SUCCEEDED", done
    cloud.wait_for_executions()

    # Then its operation's events are its transitions, once each, in order
    assert transitions(cloud, OPERATION_STATE_CHANGE, "operationId", operation_id) == [
        (None, "PENDING"), ("PENDING", "RUNNING"), ("RUNNING", "SUCCEEDED")]
    # And the cluster's
    assert transitions(cloud, CLUSTER_STATE_CHANGE, "tag", "e2e") == [
        (None, "CREATING"), ("CREATING", "ACTIVE")]
    # And each names the operation's execution and links to what it is about
    events = [e for e in published(cloud, OPERATION_STATE_CHANGE)
              if e["detail"]["operationId"] == operation_id]
    final = events[-1]
    assert final["resources"] == [done["executionArn"]]
    assert final["detail"]["links"] == {"operation": f"/operations/{operation_id}",
                                        "cluster": "/clusters/e2e"}
    assert final["detail"]["kind"] == "create-cluster"
    # And each event's time is when its record changed (the same on any redelivery)
    assert final["time"] == done["updatedAt"][:19] + "Z"
    check_published_events(cloud, api)

    # And GET /events gives back what the bus received for the cluster, in order, once its
    # settling window has passed
    cloud.clock.advance(5)
    listed = api.get("/events", cluster="e2e", limit=200)["events"]
    on_bus = [e for e in published(cloud) if e["detail"].get("clusterTag", e["detail"].get(
        "tag")) == "e2e"]
    assert [e["detail"]["eventId"] for e in listed] == [e["detail"]["eventId"] for e in on_bus]
    assert [e["detail-type"] for e in listed] == [e["detail-type"] for e in on_bus]


def test_a_failure_and_its_retry_are_published_with_the_error_and_the_stage(
        api: ApiClient, cloud: Any) -> None:
    # Given a create that fails on a missing bucket
    failed = follow(api, cloud, create(api, cloud, bucket=False), timeout=240)
    assert failed["status"] == "FAILED"
    cloud.wait_for_executions()
    (event,) = [e for e in published(cloud, OPERATION_STATE_CHANGE)
                if e["detail"]["status"] == "FAILED"]
    assert event["detail"]["stage"] == "storage"
    assert event["detail"]["error"]["code"] == failed["error"]["code"]
    assert transitions(cloud, CLUSTER_STATE_CHANGE, "tag", "e2e")[-1] == ("CREATING", "FAILED")

    # When it is retried once the bucket exists
    cloud.client("s3").create_bucket(Bucket="hypd-e2e-data", CreateBucketConfiguration={
        "LocationConstraint": cloud.region})
    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)
    assert done["status"] == "SUCCEEDED", done
    cloud.wait_for_executions()

    # Then the retry's transitions follow the failure's
    assert transitions(cloud, OPERATION_STATE_CHANGE, "operationId", failed["id"]) == [
        (None, "PENDING"), ("PENDING", "RUNNING"), ("RUNNING", "FAILED"),
        ("FAILED", "PENDING"), ("PENDING", "RUNNING"), ("RUNNING", "SUCCEEDED")]
    assert transitions(cloud, CLUSTER_STATE_CHANGE, "tag", "e2e")[-2:] == [
        ("FAILED", "CREATING"), ("CREATING", "ACTIVE")]


def test_events_eventbridge_refuses_are_published_on_the_mappings_retry_and_not_doubled(
        api: ApiClient, cloud: Any) -> None:
    # Given EventBridge refuses the publisher's next two PutEvents requests
    cloud.faults.fail("events", "PutEvents", code="InternalException", times=2)
    # When a cluster is created
    done = follow(api, cloud, create(api, cloud), timeout=240)
    assert done["status"] == "SUCCEEDED", done
    cloud.wait_for_executions()

    # Then every transition was published all the same, once (the chain check), and nothing
    # was given up
    assert transitions(cloud, OPERATION_STATE_CHANGE, "operationId", done["id"]) == [
        (None, "PENDING"), ("PENDING", "RUNNING"), ("RUNNING", "SUCCEEDED")]
    assert cloud.stream_failures == []
    assert cloud.faults.pending() == []
    check_published_events(cloud, api)
