"""The events handler: one HyperPod or EKS event in, state, wakes, repairs and messages out.

`handle` reads the event (`read_event`); a malformed one is counted, logged and copied to the
dead-letter queue with its reason, and nothing else happens. Then by detail-type:

* state change: the parked task tokens of the cluster are completed (`on_cluster_state_change`)
  and the cluster's last state recorded;
* node health: the entry is placed in the node's health (newer wins); for the newest, the
  policy decides, the guards reserve, a reboot-node or replace-node operation starts, and an
  unhealthy node (or a repair) is notified;
* cluster event: a Warn or Error is kept in the cluster's recent events;
* add-on event: the add-on's latest health.

Every AWS error it does not expect propagates: Lambda retries the event twice, then it goes to
the dead-letter queue. A repair that finds its cluster busy with another operation gives its
reservation back and raises `RepairDeferred` (temporary) to be retried the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

from hypd import clock
from hypd.aws import sagemaker as sagemaker_api
from hypd.aws import sns
from hypd.aws.errors import NETWORK_ERRORS, translate
from hypd.capacity.changes import ACTION_STATUSES
from hypd.capacity.inputs import NodeActionInput
from hypd.capacity.start import capacity_operation, start_capacity
from hypd.clusters.store import ClusterStore
from hypd.create.waiters import WaiterStore, on_cluster_state_change
from hypd.errors import ConflictError, PermanentError, TemporaryError
from hypd.health import notify
from hypd.health.budget import Repair, RepairBudget
from hypd.health.events import (
    AddonDetail,
    ClusterEventDetail,
    Event,
    Malformed,
    NodeHealthDetail,
    StateChangeDetail,
    read_event,
)
from hypd.health.policy import PolicyStore, decide
from hypd.health.records import (
    AddonHealth,
    ClusterEvent,
    HealthEntry,
    HealthStore,
    NodeHealth,
    Outcome,
    Taken,
    TakenAction,
    keep_addon,
    keep_cluster_event,
    keep_status,
)
from hypd.observability import Count
from hypd.operations.locks import LockStore
from hypd.operations.models import OperationKind
from hypd.operations.store import OperationStore

KEPT_LEVELS = frozenset({"Warn", "Error"})
REPAIR_KINDS = {"reboot": OperationKind.REBOOT_NODE, "replace": OperationKind.REPLACE_NODE}


class RepairDeferred(TemporaryError):
    """The repair's cluster runs another operation: the event is retried later."""

    code = "RepairDeferred"


@dataclass(frozen=True)
class EventSettings:
    region: str | None
    notifications_topic_arn: str | None
    dead_letter_queue_url: str | None
    node_action_state_machine_arn: str | None


@dataclass
class EventServices:
    waiters: WaiterStore
    health: HealthStore
    policies: PolicyStore
    budget: RepairBudget
    clusters: ClusterStore
    operations: OperationStore
    locks: LockStore
    client: Callable[[str], Any]
    settings: EventSettings
    count: Count


def handle(raw: Any, services: EventServices, logger: Logger | None = None) -> dict[str, Any]:
    """Handle one EventBridge event (see the module docstring); returns what was done."""
    log = logger or Logger(child=True)
    try:
        event = read_event(raw)
    except Malformed as exc:
        services.count("EventsMalformed", detailType=exc.detail_type or "unknown")
        log.warning("malformed event", reason=exc.reason)
        keep_malformed(services, raw, exc.reason)
        return {"malformed": exc.reason}
    services.count("EventsReceived", detailType=event.detail_type)
    detail = event.detail
    if isinstance(detail, StateChangeDetail):
        return on_state_change(services, raw, event, detail)
    tag = event.tag
    if tag is None or services.clusters.find(tag) is None:
        services.count("EventsIgnored", reason="unknown-cluster")
        return {"ignored": "unknown-cluster", "cluster": event.cluster_name}
    if isinstance(detail, NodeHealthDetail):
        return on_node_health(services, event, tag, detail, log)
    if isinstance(detail, ClusterEventDetail):
        return on_cluster_event(services, event, tag, detail)
    assert isinstance(detail, AddonDetail)
    return on_addon(services, event, tag, detail)


def keep_malformed(services: EventServices, raw: Any, reason: str) -> None:
    """Copy a malformed event to the dead-letter queue with its reason (kept 14 days)."""
    url = services.settings.dead_letter_queue_url
    if not url:
        return
    try:
        body = json.dumps({"reason": reason, "event": raw}, default=str)
    except (TypeError, ValueError):
        body = json.dumps({"reason": reason, "event": repr(raw)})
    try:
        services.client("sqs").send_message(
            QueueUrl=url,
            MessageBody=body[:262_000],  # SQS: 256 KiB at most
            MessageAttributes={"reason": {"DataType": "String", "StringValue": reason[:256]}},
        )
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, "keeping a malformed event in the dead-letter queue") from exc


# ---------------------------------------------------------------------------- state change
def on_state_change(
    services: EventServices, raw: Any, event: Event, detail: StateChangeDetail
) -> dict[str, Any]:
    woken = on_cluster_state_change(raw, services.waiters, lambda: services.client("stepfunctions"))
    tag = event.tag
    if tag is not None and services.clusters.find(tag) is not None:
        time, event_id = event.order
        services.health.update_cluster(
            tag,
            lambda h: keep_status(h, detail.cluster_status, time, event_id,
                                  detail.failure_message),
        )
    return woken


# ---------------------------------------------------------------------------- node health
def on_node_health(
    services: EventServices, event: Event, tag: str, detail: NodeHealthDetail, log: Logger
) -> dict[str, Any]:
    summary = detail.health_summary
    time, event_id = event.order
    entry = HealthEntry(
        event_id=event_id,
        time=time,
        status=summary.health_status,
        reason=summary.health_status_reason,
        repair_action=summary.repair_action,
        recommendation=summary.recommendation,
        recommended=summary.recommended,
    )
    before = services.health.node(tag, detail.instance_id)
    node, outcome = services.health.record_node(
        tag, detail.instance_id, entry, instance_group=detail.instance_group_name
    )
    services.count("NodeHealthEvents", healthStatus=summary.health_status)
    latest = node.latest
    # A duplicate of the newest event that was not decided yet (a crash, or a retry of a
    # deferred repair) is decided now; any other duplicate or older event changes nothing.
    undecided = latest.event_id == event_id and (
        latest.taken is None or latest.taken.reason == "busy"
    )
    if outcome is not Outcome.LATEST and not (outcome is Outcome.DUPLICATE and undecided):
        services.count("EventsIgnored", reason=outcome.value)
        return {"node": detail.instance_id, "outcome": outcome.value}
    taken = act(services, tag, node, summary_event=event, detail=detail)
    node = services.health.set_taken(tag, detail.instance_id, event_id, taken) or node
    result: dict[str, Any] = {
        "node": detail.instance_id,
        "outcome": outcome.value,
        "status": summary.health_status,
        "taken": taken.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    if should_notify(before, node.latest):
        message = notify.unhealthy(tag, detail.instance_id, node.instance_group, node.latest)
        topic = services.settings.notifications_topic_arn
        if topic:
            sns.publish(services.client("sns"), topic, message.subject, message.message,
                        message.attributes)
            services.count("NotificationsSent", healthStatus=summary.health_status)
            result["notified"] = True
    log.info("node health", **result)
    return result


def should_notify(before: NodeHealth | None, latest: HealthEntry) -> bool:
    """An unhealthy node is told once per change: when it turns unhealthy (or its reason
    changes), and whenever hypd starts a repair; repeats of the same state are only counted."""
    if latest.status == "Healthy":
        return False
    if latest.taken is not None and latest.taken.by is Taken.HYPD:
        return True
    previous = before.latest if before is not None else None
    return previous is None or (previous.status, previous.reason) != (
        latest.status, latest.reason
    )


def act(
    services: EventServices,
    tag: str,
    node: NodeHealth,
    *,
    summary_event: Event,
    detail: NodeHealthDetail,
) -> TakenAction:
    """What is done about the node's newest health: HyperPod's repair, hypd's, or nothing."""
    summary = detail.health_summary
    if summary.repaired_by_hyperpod:
        return TakenAction(by=Taken.HYPERPOD, action=summary.repair_action)
    policy = services.policies.get(tag)
    decision = decide(policy, summary)
    if decision.repair is None:
        if decision.reason == "policy":
            services.count("RepairsSkipped", reason="policy")
        return TakenAction(by=Taken.NONE, reason=decision.reason)
    repair = decision.repair
    described = sagemaker_api.describe_cluster_node(
        services.client("sagemaker"), summary_event.cluster_name, detail.instance_id
    )
    status = ((described or {}).get("InstanceStatus") or {}).get("Status")
    if status not in ACTION_STATUSES[repair]:
        services.count("RepairsSkipped", reason="node-status")
        return TakenAction(by=Taken.NONE, action=repair,
                           reason=f"node-status: {status or 'gone'}")
    group = str((described or {}).get("InstanceGroupName") or node.instance_group or "")
    kind = REPAIR_KINDS[repair]
    operation = capacity_operation(
        kind, tag, NodeActionInput(tag=tag, node_id=detail.instance_id, group=group,
                                   action=repair)
    )
    machine = services.settings.node_action_state_machine_arn
    if not machine:
        raise PermanentError("NODE_ACTION_STATE_MACHINE_ARN is not configured for this function")
    reservation = Repair(at=clock.now_iso(), node_id=detail.instance_id, action=repair,
                         operation_id=operation.id)
    refused = services.budget.reserve(tag, reservation, policy)
    if refused is not None:
        services.count("RepairsSkipped", reason=refused.value)
        return TakenAction(by=Taken.NONE, action=repair, reason=refused.value)
    try:
        start_capacity(
            operation,
            operations=services.operations,
            locks=services.locks,
            sfn_client=lambda: services.client("stepfunctions"),
            state_machine_arn=machine,
        )
    except ConflictError as exc:
        services.budget.release(tag, reservation)
        services.count("RepairsSkipped", reason="busy")
        services.health.set_taken(
            tag, detail.instance_id, node.latest.event_id,
            TakenAction(by=Taken.NONE, action=repair, reason="busy"),
        )
        raise RepairDeferred(
            f"repair ({repair}) of node {detail.instance_id} of cluster {tag} deferred: "
            f"{exc.message}",
            details={"nodeId": detail.instance_id},
        ) from exc
    services.count("RepairActions", action=repair)
    return TakenAction(by=Taken.HYPD, action=repair, operation_id=operation.id)


# ---------------------------------------------------------------------------- cluster events
def on_cluster_event(
    services: EventServices, event: Event, tag: str, detail: ClusterEventDetail
) -> dict[str, Any]:
    found = detail.event_details
    if found.event_level not in KEPT_LEVELS:
        return {"event": found.event_id, "kept": False}
    time, _event_id = event.order
    kept = ClusterEvent(
        event_id=found.event_id,
        time=time,
        level=found.event_level,
        resource_type=found.resource_type,
        instance_group=found.instance_group_name,
        instance_id=found.instance_id,
        description=found.description,
    )
    services.health.update_cluster(tag, lambda h: keep_cluster_event(h, kept))
    return {"event": found.event_id, "kept": True, "level": found.event_level}


def on_addon(
    services: EventServices, event: Event, tag: str, detail: AddonDetail
) -> dict[str, Any]:
    time, _id = event.order
    addon = AddonHealth(status=detail.status, issues=detail.issues, event=event.detail_type,
                        time=time)
    services.health.update_cluster(tag, lambda h: keep_addon(h, detail.addon_name, addon))
    return {"addon": detail.addon_name, "status": detail.status}

