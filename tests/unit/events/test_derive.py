"""One table write -> the events of its transitions: one per status change, none for a write
that changes no status (a retried task, a redelivered event)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypd.aws.dynamodb import encode_item
from hypd.clusters.models import Cluster, ClusterSource, ClusterStatus
from hypd.events.derive import derive
from hypd.events.model import (
    CLUSTER_STATE_CHANGE,
    DETAILS,
    NODE_HEALTH_CHANGE,
    OPERATION_STATE_CHANGE,
)
from hypd.health.records import HealthEntry, NodeHealth, Taken, TakenAction
from hypd.operations import lifecycle
from hypd.operations.models import ErrorInfo, Operation, OperationKind
from hypd.operations.store import OperationStore
from hypd.table import lock_key, node_health_key
from tests.unit.events.schemas import envelope, validator

EXECUTION = "arn:aws:states:us-west-2:123456789012:execution:hypd-create:op"


def image(operation: Operation) -> dict[str, Any]:
    return OperationStore._encode(operation)


def changed(operation: Operation, change: Callable[[Operation], Any]) -> Operation:
    copy = operation.model_copy(deep=True)
    change(copy)
    copy.version += 1
    return copy


def valid(events: list[Any]) -> None:
    """Each event's detail is its model's, and the whole event its checked-in schema's."""
    for event in events:
        DETAILS[event.detail_type].model_validate(event.detail)
        validator(event.detail_type).validate(envelope(event))


def test_a_new_operation_is_one_event_without_a_previous_status() -> None:
    operation = lifecycle.new_operation(OperationKind.CREATE_CLUSTER, cluster_tag="train")

    (event,) = derive(None, image(operation))

    assert event.detail_type == OPERATION_STATE_CHANGE
    assert event.detail["status"] == "PENDING"
    assert event.detail["previousStatus"] is None
    assert event.detail["kind"] == "create-cluster"
    assert event.detail["links"] == {"operation": f"/operations/{operation.id}",
                                     "cluster": "/clusters/train"}
    assert event.detail["eventId"] == f"OP#{operation.id}|OP|v1"
    valid([event])


def test_a_status_change_is_one_event_and_a_rewrite_without_one_is_none() -> None:
    pending = lifecycle.new_operation(OperationKind.CREATE_CLUSTER, cluster_tag="train")
    running = changed(pending, lambda op: lifecycle.begin(op, EXECUTION))
    first = running.stages[0].name
    in_stage = changed(running, lambda op: lifecycle.start_stage(op, first))

    (event,) = derive(image(pending), image(running))
    assert (event.detail["previousStatus"], event.detail["status"]) == ("PENDING", "RUNNING")
    assert event.resources == [EXECUTION]
    # a stage starting, a look, a retried task's write: the operation's status is the same
    assert derive(image(running), image(in_stage)) == []
    assert derive(image(in_stage), image(in_stage)) == []


def test_a_failure_names_the_stage_and_the_error() -> None:
    running = changed(lifecycle.new_operation(OperationKind.CREATE_CLUSTER, cluster_tag="t"),
                      lambda op: lifecycle.begin(op, EXECUTION))
    first = running.stages[0].name
    error = ErrorInfo(code="ThrottlingException", message="Rate exceeded")

    def fail(op: Operation) -> None:
        lifecycle.start_stage(op, first)
        lifecycle.record_stage_error(op, first, error)
        lifecycle.fail(op, error)

    failed = changed(running, fail)
    (event,) = derive(image(running), image(failed))

    assert event.detail["status"] == "FAILED"
    assert event.detail["stage"] == first
    assert event.detail["error"] == {"code": "ThrottlingException", "message": "Rate exceeded"}
    valid([event])


def cluster(status: ClusterStatus | None, updated: str) -> dict[str, Any]:
    record = Cluster(tag="train", source=ClusterSource.CREATED, anchor_arn="arn:aws:eks:x",
                     created_at="2026-12-03T10:00:00Z", updated_at=updated, status=status,
                     last_operation_id="op-" + "0" * 32)
    return encode_item({"PK": "CLUSTER#train", "SK": "CLUSTER"},
                       record.model_dump(mode="json", by_alias=True))


def test_a_cluster_record_s_status_change_is_one_event() -> None:
    creating = cluster(ClusterStatus.CREATING, "2026-12-03T10:00:00Z")
    active = cluster(ClusterStatus.ACTIVE, "2026-12-03T10:30:00Z")

    (event,) = derive(creating, active)

    assert event.detail_type == CLUSTER_STATE_CHANGE
    assert (event.detail["previousStatus"], event.detail["status"]) == ("CREATING", "ACTIVE")
    assert event.detail["operationId"] == "op-" + "0" * 32
    assert event.detail["eventId"] == "CLUSTER#train|CLUSTER|2026-12-03T10:30:00Z|ACTIVE"
    valid([event])
    assert derive(active, cluster(ClusterStatus.ACTIVE, "2026-12-03T11:00:00Z")) == []
    assert derive(None, cluster(None, "2026-12-03T10:00:00Z")) == []  # discovered: no status


def node(status: str, event_id: str, taken: TakenAction | None = None) -> dict[str, Any]:
    entry = HealthEntry(event_id=event_id, time="2026-12-03T10:00:00Z", status=status,
                        reason="GPU health check failed" if status != "Healthy" else None,
                        taken=taken)
    record = NodeHealth(tag="train", node_id="i-0abc", instance_group="gpu", latest=entry,
                        updated_at=f"2026-12-03T10:00:{event_id[-2:]}Z")
    return encode_item(node_health_key("train", "i-0abc"),
                       record.model_dump(mode="json", by_alias=True), version=int(event_id[-2:]))


def test_a_node_health_change_and_a_repair_are_events_a_repeat_is_not() -> None:
    healthy = node("Healthy", "e-01")
    sick = node("Unhealthy", "e-02")
    again = node("Unhealthy", "e-03")
    repairing = node("Unhealthy", "e-04",
                     TakenAction(by=Taken.HYPD, action="replace", operation_id="op-" + "1" * 32))

    (change,) = derive(healthy, sick)
    assert change.detail_type == NODE_HEALTH_CHANGE
    assert (change.detail["previousHealth"], change.detail["health"]) == ("Healthy", "Unhealthy")
    assert change.detail["repair"] is None
    assert derive(sick, again) == []  # the same health reported again
    (repair,) = derive(again, repairing)
    assert repair.detail["repair"] == {"by": "hypd", "action": "replace",
                                       "operationId": "op-" + "1" * 32}
    valid([change, repair])


def test_other_items_and_removals_make_none() -> None:
    operation = lifecycle.new_operation(OperationKind.CREATE_CLUSTER, cluster_tag="train")
    assert derive(image(operation), None) == []
    lock = encode_item(lock_key("cluster#train"), {"owner": operation.id}, version=1)
    assert derive(None, lock) == []


def test_each_event_carries_the_time_its_transition_was_written() -> None:
    # the record's updatedAt: the same on every delivery of the write
    pending = lifecycle.new_operation(OperationKind.CREATE_CLUSTER, cluster_tag="train")
    (operation_event,) = derive(None, image(pending))
    (cluster_event,) = derive(None, cluster(ClusterStatus.CREATING, "2026-12-03T10:00:00Z"))
    (node_event,) = derive(None, node("Unhealthy", "e-07"))

    assert operation_event.time == pending.updated_at
    assert cluster_event.time == "2026-12-03T10:00:00Z"
    assert node_event.time == "2026-12-03T10:00:07Z"


def test_writes_of_a_cluster_record_in_one_millisecond_are_told_apart_by_their_sequence() -> None:
    # A failed create, the rule's retry of it and the retry's failure, all while the clock
    # stands still: the same updatedAt and, twice, the same status.
    creating = cluster(ClusterStatus.CREATING, "2026-12-07T12:02:26.132Z")
    failed = cluster(ClusterStatus.FAILED, "2026-12-07T12:02:26.132Z")

    (first,) = derive(creating, failed, "1001")
    (retried,) = derive(failed, creating, "1002")
    (second,) = derive(creating, failed, "1003")
    (redelivered,) = derive(creating, failed, "1001")

    ids = [e.detail["eventId"] for e in (first, retried, second)]
    assert ids == ["CLUSTER#train|CLUSTER|s1001", "CLUSTER#train|CLUSTER|s1002",
                   "CLUSTER#train|CLUSTER|s1003"]
    assert redelivered.detail["eventId"] == first.detail["eventId"]  # a redelivery: the same
    # An operation's version names its write, whatever the stream's sequence
    operation = lifecycle.new_operation(OperationKind.CREATE_CLUSTER, cluster_tag="train")
    (event,) = derive(None, image(operation), "1004")
    assert event.detail["eventId"] == f"OP#{operation.id}|OP|v{operation.version}"
