"""The events handler: one HyperPod or EKS event in, state, wakes, repairs and messages out.

`handle` reads the event (`read_event`); a malformed one is counted, logged and copied to the
dead-letter queue with its reason, and nothing else happens. Then by detail-type:

* state change: the parked task tokens of the cluster are completed (`on_cluster_state_change`)
  and the cluster's last state recorded;
* node health: the entry is placed in the node's health (newer wins); for the newest, the
  policy decides, the guards reserve, a reboot-node or replace-node operation starts, and an
  unhealthy node (or a repair) is notified;
* cluster event: a Warn or Error is kept in the cluster's recent events;
* add-on event: the add-on's latest health;
* the end of an operation's execution (its cluster is free again): the repairs deferred because
  the cluster was busy are decided again, oldest first, until one starts.

When a node's health status changes (before any repair of it starts: the cluster as the event
found it), and when an operation on its cluster ends, the cluster's unhealthy nodes are
counted (the `UnhealthyNodes` metric); a repair hypd starts is counted as `Repairs`
(`hypd.observability`).

A repair that finds its cluster busy with another operation gives its reservation back and is
recorded as deferred (`busy`): one operation at a time runs on a cluster, and a repair waits
for the running one to end rather than for Lambda's retries. Every AWS error the handler does
not expect propagates: Lambda retries the event twice, then it goes to the dead-letter queue.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger

from hypd import clock, observability
from hypd.aws import sagemaker as sagemaker_api
from hypd.aws import sns, sqs
from hypd.capacity.changes import ACTION_STATUSES
from hypd.capacity.inputs import NodeActionInput
from hypd.capacity.start import capacity_operation
from hypd.clusters.create_request import hyperpod_cluster_name
from hypd.clusters.store import ClusterStore
from hypd.config import EventSettings
from hypd.errors import AwsResourceNotFound, ConflictError, PermanentError
from hypd.health import notify
from hypd.health.budget import Repair, RepairBudget
from hypd.health.events import (
    HEALTHY,
    AddonDetail,
    ClusterEventDetail,
    Event,
    ExecutionEndedDetail,
    HealthSummary,
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
from hypd.operations.lifecycle import operation_id_of_execution
from hypd.operations.locks import LockStore
from hypd.operations.models import OperationKind
from hypd.operations.starter import Starter
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore, on_cluster_state_change

KEPT_LEVELS = frozenset({"Warn", "Error"})
REPAIR_KINDS = {"reboot": OperationKind.REBOOT_NODE, "replace": OperationKind.REPLACE_NODE}
BUSY = "busy"
"""The reason of a repair deferred until the cluster's running operation ends."""


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

    def starter(self, node_action_state_machine_arn: str) -> Starter:
        """Starts repairs: node actions, on the node-action state machine."""
        return Starter(
            operations=self.operations,
            locks=self.locks,
            clusters=self.clusters,
            sfn_client=lambda: self.client("stepfunctions"),
            state_machine_arn=lambda _kind: node_action_state_machine_arn,
        )


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
    if isinstance(detail, ExecutionEndedDetail):
        return on_operation_ended(services, detail, log)
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
    sqs.send_message(
        services.client("sqs"), url, body, {"reason": reason},
        doing="keeping a malformed event in the dead-letter queue",
    )


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
    node, outcome, previous = services.health.record_node(
        tag, detail.instance_id, entry, instance_group=detail.instance_group_name
    )
    services.count("NodeHealthEvents", healthStatus=summary.health_status)
    latest = node.latest
    # A duplicate of the newest event that was not decided yet (a crash, or a retry of a
    # deferred repair) is decided now; any other duplicate or older event changes nothing.
    undecided = latest.event_id == event_id and (
        latest.taken is None or latest.taken.reason == BUSY
    )
    if outcome is not Outcome.LATEST and not (outcome is Outcome.DUPLICATE and undecided):
        services.count("EventsIgnored", reason=outcome.value)
        return {"node": detail.instance_id, "outcome": outcome.value}
    if previous is None or previous.status != latest.status:
        # Counted before any repair starts: the cluster as this event found it (a repair
        # that ends quickly would otherwise take the node out of HyperPod's list first).
        count_unhealthy(services, tag, log)
    taken = act(services, tag, event.cluster_name, node)
    node = services.health.set_taken(tag, detail.instance_id, event_id, taken) or node
    result: dict[str, Any] = {
        "node": detail.instance_id,
        "outcome": outcome.value,
        "status": summary.health_status,
        "taken": taken.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    if should_notify(previous, node.latest):
        result["notified"] = tell(services, node)
    log.info("node health", extra=result)
    return result


def count_unhealthy(
    services: EventServices, tag: str, log: Logger, recorded: list[NodeHealth] | None = None
) -> None:
    """Emit the cluster's unhealthy nodes (`UnhealthyNodes`): the nodes whose latest health is
    not Healthy and that HyperPod still lists (a node it replaced is gone, not unhealthy; the
    nodes are listed only when a recorded one is unhealthy). Never raises: a metric must not
    fail the event."""
    try:
        nodes = services.health.nodes(tag) if recorded is None else recorded
        unhealthy = {n.node_id for n in nodes if n.latest.status != HEALTHY}
        if unhealthy:
            try:
                listed = sagemaker_api.list_cluster_nodes(
                    services.client("sagemaker"), hyperpod_cluster_name(tag)
                )
            except AwsResourceNotFound:
                listed = []
            unhealthy &= {str(n.get("InstanceId")) for n in listed}
    except Exception as exc:  # a metric must never fail the event
        log.warning("unhealthy nodes not counted", cluster=tag, error=str(exc))
        return
    observability.unhealthy_nodes(tag, len(unhealthy))


def tell(services: EventServices, node: NodeHealth) -> bool:
    """Publish the node's latest health to the notifications topic (False: none is set)."""
    topic = services.settings.notifications_topic_arn
    if not topic:
        return False
    message = notify.unhealthy(node.tag, node.node_id, node.instance_group, node.latest)
    sns.publish(services.client("sns"), topic, message.subject, message.message,
                message.attributes)
    services.count("NotificationsSent", healthStatus=node.latest.status)
    return True


def should_notify(previous: HealthEntry | None, latest: HealthEntry) -> bool:
    """A node is told of when it turns unhealthy (its status changes to one that is not
    Healthy) and whenever hypd starts a repair; a repeat of its state, or a new reason for the
    same status, is recorded and counted only, so a storm or a flapping reason is not a flood of
    messages."""
    if latest.status == HEALTHY:
        return False
    if latest.taken is not None and latest.taken.by is Taken.HYPD:
        return True
    return previous is None or previous.status != latest.status


def act(services: EventServices, tag: str, cluster_name: str, node: NodeHealth) -> TakenAction:
    """What is done about the node's newest health: HyperPod's repair, hypd's, or nothing."""
    latest = node.latest
    summary = HealthSummary(
        health_status=latest.status,
        health_status_reason=latest.reason,
        repair_action=latest.repair_action,
        recommendation=latest.recommendation,
    )
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
        services.client("sagemaker"), cluster_name, node.node_id
    )
    status = ((described or {}).get("InstanceStatus") or {}).get("Status")
    if status not in ACTION_STATUSES[repair]:
        services.count("RepairsSkipped", reason="node-status")
        return TakenAction(by=Taken.NONE, action=repair,
                           reason=f"node-status: {status or 'gone'}")
    group = str((described or {}).get("InstanceGroupName") or node.instance_group or "")
    operation = capacity_operation(
        REPAIR_KINDS[repair], tag,
        NodeActionInput(tag=tag, node_id=node.node_id, group=group, action=repair),
    )
    machine = services.settings.node_action_state_machine_arn
    if not machine:
        raise PermanentError("NODE_ACTION_STATE_MACHINE_ARN is not configured for this function")
    reservation = Repair(at=clock.now_iso(), node_id=node.node_id, action=repair,
                         operation_id=operation.id)
    refused = services.budget.reserve(tag, reservation, policy)
    if refused is not None:
        services.count("RepairsSkipped", reason=refused.value)
        return TakenAction(by=Taken.NONE, action=repair, reason=refused.value)
    try:
        services.starter(machine).launch(operation)
    except ConflictError:
        # Another operation runs on the cluster: the repair waits for it to end
        # (on_operation_ended), and takes no slot of the hour meanwhile.
        services.budget.release(tag, reservation)
        services.count("RepairsDeferred", action=repair)
        return TakenAction(by=Taken.NONE, action=repair, reason=BUSY)
    observability.repair_started(repair, tag, operation.id)
    return TakenAction(by=Taken.HYPD, action=repair, operation_id=operation.id)


# ---------------------------------------------------------------------------- operation ends
def on_operation_ended(
    services: EventServices, detail: ExecutionEndedDetail, log: Logger
) -> dict[str, Any]:
    """An operation's execution ended: its cluster is free, so the repairs deferred while it
    ran are decided again, oldest first, until one starts (and holds the cluster again).

    Every execution of an operation counts: the first (`{id}`) and each retry's (`{id}-r{n}`).
    """
    operation_id = operation_id_of_execution(detail.name)
    operation = services.operations.find(operation_id)
    tag = operation.cluster_tag if operation is not None else None
    if tag is None:
        return {"operation": operation_id, "resumed": []}
    resumed: list[dict[str, Any]] = []
    recorded = services.health.nodes(tag)
    deferred = sorted(
        (n for n in recorded
         if n.latest.taken is not None and n.latest.taken.reason == BUSY),
        key=lambda n: n.latest.order,
    )
    cluster_name = hyperpod_cluster_name(tag)
    for node in deferred:
        taken = act(services, tag, cluster_name, node)
        updated = services.health.set_taken(tag, node.node_id, node.latest.event_id, taken)
        resumed.append({"node": node.node_id,
                        "taken": taken.model_dump(mode="json", by_alias=True,
                                                  exclude_none=True)})
        if taken.by is Taken.HYPD and updated is not None:
            tell(services, updated)
        if taken.by is Taken.HYPD or taken.reason == BUSY:
            break  # the cluster is busy again: the others wait for this one
    # The operation may have replaced or deleted a node: the count again.
    count_unhealthy(services, tag, log, recorded)
    result = {"operation": operation_id, "execution": detail.name, "cluster": tag,
              "status": detail.status, "resumed": resumed}
    if resumed:
        log.info("deferred repairs", extra=result)
    return result


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

