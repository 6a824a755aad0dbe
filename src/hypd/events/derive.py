"""One write of the table -> the events of the transitions it records (pure, no AWS).

A stream record carries the item before and after the write (DynamoDB's attribute-value JSON,
`NEW_AND_OLD_IMAGES`). Only three kinds of item make events, and only when what the event is
about changed: an operation's status, a cluster record's status, a node's health (or a repair
recorded with it). A write that leaves those alone, as a retried task's or a redelivered
event's does, makes none, so each transition is published once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypd.clusters.models import Cluster
from hypd.events.model import (
    ClusterStateChange,
    ErrorDetail,
    Event,
    NodeHealthChange,
    OperationStateChange,
    Repair,
)
from hypd.health.records import NodeHealth
from hypd.operations.models import Operation, StageStatus
from hypd.table import PK, SK

Image = Mapping[str, Any]
"""An item as the stream shows it: attribute name -> attribute value ({"S": ...})."""


def derive(old: Image | None, new: Image | None, sequence: str | None = None) -> list[Event]:
    """The events of one stream record (INSERT: no ``old``; REMOVE: no ``new``, no event);
    ``sequence``: the record's ``SequenceNumber``, which names a write of an item that has no
    version (`_event_id`)."""
    if new is None:
        return []
    pk, sk = _string(new, PK), _string(new, SK)
    if pk.startswith("OP#") and sk == "OP":
        return _operation(old, new, sequence)
    if pk.startswith("CLUSTER#") and sk == "CLUSTER":
        return _cluster(old, new, sequence)
    if pk.startswith("CLUSTER#") and sk.startswith("NODE#"):
        return _node(old, new, sequence)
    return []


def _operation(old: Image | None, new: Image, sequence: str | None) -> list[Event]:
    after = Operation.model_validate(_body(new))
    before = Operation.model_validate(_body(old)) if old is not None else None
    if before is not None and before.status == after.status:
        return []
    detail = OperationStateChange(
        event_id=_event_id(new, after.updated_at, sequence),
        operation_id=after.id,
        kind=after.kind,
        cluster_tag=after.cluster_tag,
        status=after.status,
        previous_status=before.status if before is not None else None,
        stage=_stage(after),
        error=ErrorDetail(code=after.error.code, message=after.error.message)
        if after.error is not None else None,
        links=_links(operation_id=after.id, tag=after.cluster_tag),
    )
    return [Event.of(detail, [after.execution_arn] if after.execution_arn else [],
                     after.updated_at)]


def _stage(operation: Operation) -> str | None:
    """The stage that failed, else the one running."""
    for wanted in (StageStatus.FAILED, StageStatus.RUNNING):
        for stage in operation.stages:
            if stage.status is wanted:
                return stage.name
    return None


def _cluster(old: Image | None, new: Image, sequence: str | None) -> list[Event]:
    after = Cluster.model_validate(_body(new))
    before = Cluster.model_validate(_body(old)) if old is not None else None
    previous = before.status if before is not None else None
    if after.status is None or after.status == previous:
        return []  # a discovered cluster has no status of hypd's
    detail = ClusterStateChange(
        event_id=_event_id(new, after.updated_at, sequence, after.status.value),
        tag=after.tag,
        status=after.status,
        previous_status=previous,
        operation_id=after.last_operation_id,
        links=_links(operation_id=after.last_operation_id, tag=after.tag),
    )
    arn = after.hyperpod.arn if after.hyperpod is not None else None
    return [Event.of(detail, [arn] if arn else [], after.updated_at)]


def _node(old: Image | None, new: Image, sequence: str | None) -> list[Event]:
    after = NodeHealth.model_validate(_body(new))
    before = NodeHealth.model_validate(_body(old)) if old is not None else None
    previous = before.latest if before is not None else None
    taken = after.latest.taken
    repaired = taken is not None and taken.action is not None and (
        previous is None or previous.taken != taken)
    if previous is not None and previous.status == after.latest.status and not repaired:
        return []
    detail = NodeHealthChange(
        event_id=_event_id(new, after.updated_at, sequence),
        tag=after.tag,
        node_id=after.node_id,
        instance_group=after.instance_group,
        health=after.latest.status,
        previous_health=previous.status if previous is not None else None,
        reason=after.latest.reason,
        repair=Repair(by=taken.by.value, action=taken.action, operation_id=taken.operation_id)
        if repaired and taken is not None else None,
        links=_links(tag=after.tag, node=after.node_id),
    )
    return [Event.of(detail, time=after.updated_at)]


def _links(*, operation_id: str | None = None, tag: str | None = None,
           node: str | None = None) -> dict[str, str]:
    """The API paths of what the event is about (relative to the API's base URL)."""
    links: dict[str, str] = {}
    if operation_id:
        links["operation"] = f"/operations/{operation_id}"
    if tag:
        links["cluster"] = f"/clusters/{tag}"
    if tag and node:
        links["node"] = f"/clusters/{tag}/nodes/{node}/health"
    return links


def _event_id(image: Image, updated_at: str, sequence: str | None,
              status: str | None = None) -> str:
    """The item's key and the write's name, the same on every delivery of the one write: the
    item's version; for an item with no version (a cluster record, a node's health), the
    stream record's sequence number. Not its update time: two writes of a cluster record can
    share a millisecond (a failure, the rule's retry of it and the retry's failure, while the
    clock stands still), and so can two FAILED writes. Without a sequence (an image read
    elsewhere than the stream), the update time and ``status``."""
    base = f"{_string(image, PK)}|{_string(image, SK)}|"
    version = (image.get("version") or {}).get("N")
    if version:
        return f"{base}v{version}"
    if sequence:
        return f"{base}s{sequence}"
    return base + updated_at + (f"|{status}" if status else "")


def _string(image: Image, name: str) -> str:
    return str((image.get(name) or {}).get("S", ""))


def _body(image: Image) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(_string(image, "body") or "{}")
    return body
