"""The events handler with the real stores (moto DynamoDB) and fake SageMaker, Step Functions,
SNS and SQS clients: what each event records, starts, counts and tells."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hypd.aws.dynamodb import Table
from hypd.capacity.inputs import NodeActionInput
from hypd.capacity.start import capacity_operation
from hypd.clusters.models import ClusterSource
from hypd.clusters.store import ClusterStore
from hypd.config import EventSettings
from hypd.health.budget import RepairBudget
from hypd.health.handler import EventServices, handle
from hypd.health.policy import HealthPolicy, PolicyStore
from hypd.health.records import HealthStore, Taken
from hypd.operations.kinds import cluster_lock
from hypd.operations.locks import LockStore
from hypd.operations.models import OperationKind, OperationStatus
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore
from tests.support import emf_documents
from tests.unit.support import FakeClock, cluster_record, hyperpod_arn, load_event

NODE = "i-12345678abcdefghi"
MACHINE = "arn:aws:states:us-west-2:123456789012:stateMachine:hypd-NodeAction"
TOPIC = "arn:aws:sns:us-west-2:123456789012:hypd-HealthNotifications"
DLQ = "https://sqs.us-west-2.amazonaws.com/123456789012/hypd-dlq"


class Fakes:
    """The AWS clients the handler asks for, recording their calls."""

    def __init__(self) -> None:
        self.node_status: dict[str, str] = {NODE: "Failure"}
        """The nodes HyperPod lists, by id, and their instance status."""
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, service: str) -> Any:
        fakes = self

        class Paginator:
            def __init__(self, name: str) -> None:
                self.name = name

            def paginate(self, **kwargs: Any) -> Any:
                fakes.calls.append((service, self.name, kwargs))
                yield getattr(fakes, f"{service}_{self.name}")(**kwargs)

        class Client:
            def get_paginator(self, name: str) -> Paginator:
                return Paginator(name)

            def __getattr__(self, name: str) -> Any:
                def call(**kwargs: Any) -> Any:
                    fakes.calls.append((service, name, kwargs))
                    return getattr(fakes, f"{service}_{name}")(**kwargs)

                return call

        return Client()

    def of(self, service: str, name: str) -> list[dict[str, Any]]:
        return [kw for s, n, kw in self.calls if (s, n) == (service, name)]

    def sagemaker_describe_cluster_node(self, **kwargs: str) -> Any:
        node_id = kwargs["NodeId"]
        if node_id not in self.node_status:
            raise ClientError({"Error": {"Code": "ResourceNotFound", "Message": "no node"}},
                              "DescribeClusterNode")
        return {"NodeDetails": {"InstanceId": node_id, "InstanceGroupName": "gpu",
                                "InstanceStatus": {"Status": self.node_status[node_id]}}}

    def sagemaker_list_cluster_nodes(self, **kwargs: str) -> Any:
        return {"ClusterNodeSummaries": [{"InstanceId": node_id, "InstanceGroupName": "gpu"}
                                         for node_id in self.node_status]}

    def stepfunctions_start_execution(self, **kwargs: Any) -> Any:
        return {"executionArn": f"{MACHINE}:{kwargs['name']}"}

    def sns_publish(self, **kwargs: Any) -> Any:
        return {"MessageId": f"m{len(self.of('sns', 'publish'))}"}

    def sqs_send_message(self, **kwargs: Any) -> Any:
        return {"MessageId": "q"}


@pytest.fixture
def fakes() -> Fakes:
    return Fakes()


@pytest.fixture
def counted() -> list[tuple[str, dict[str, str]]]:
    return []


@pytest.fixture
def services(table: Table, fakes: Fakes, counted: list[Any],
             fixed_clock: FakeClock) -> EventServices:
    def count(name: str, /, **dimensions: str) -> None:
        counted.append((name, dimensions))

    clusters = ClusterStore(table)
    clusters.save(cluster_record("train", hyperpod_arn("hypd-train"),
                                 source=ClusterSource.CREATED))
    return EventServices(
        waiters=WaiterStore(table), health=HealthStore(table), policies=PolicyStore(table),
        budget=RepairBudget(table), clusters=clusters, operations=OperationStore(table),
        locks=LockStore(table), client=fakes,
        settings=EventSettings(table_name="hypd", region="us-west-2", notifications_topic_arn=TOPIC,
                               dead_letter_queue_url=DLQ, node_action_state_machine_arn=MACHINE),
        count=count,
    )


def health_event(n: int = 0, node: str = NODE, **summary: Any) -> dict[str, Any]:
    raw = copy.deepcopy(load_event("eventbridge-hyperpod-node-health.json"))
    raw["id"] = f"evt-{n:04d}-{node}"
    raw["time"] = f"2026-01-15T11:{n // 60:02d}:{n % 60:02d}Z"
    raw["detail"]["InstanceId"] = node
    raw["detail"]["HealthSummary"].update(summary)
    return raw


def names(counted: list[tuple[str, dict[str, str]]]) -> list[str]:
    return [name for name, _ in counted]


def metric(capsys: pytest.CaptureFixture[str], name: str) -> list[dict[str, Any]]:
    """The EMF documents of one metric printed since the last call, checked for their shape."""
    documents = [d for d in emf_documents(capsys.readouterr().out) if name in d]
    for document in documents:
        (directive,) = document["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == "hypd"
        assert directive["Metrics"] == [{"Name": name, "Unit": "Count"}]
        assert "service" not in document
    return documents


def test_under_the_default_policy_an_unhealthy_node_is_recorded_and_notified_only(
    services: EventServices, fakes: Fakes, counted: list[Any]
) -> None:
    result = handle(health_event(), services)
    assert result["taken"] == {"by": "none", "reason": "policy"}
    assert result["notified"] is True
    node = services.health.node("train", NODE)
    assert node is not None
    assert node.latest.status == "Unhealthy"
    assert node.latest.recommended == "replace"
    assert node.latest.taken is not None
    assert node.latest.taken.reason == "policy"
    assert fakes.of("stepfunctions", "start_execution") == []
    (published,) = fakes.of("sns", "publish")
    assert published["TopicArn"] == TOPIC
    assert published["Subject"] == f"hypd train: node {NODE} Unhealthy"
    assert "NvidiaErrorTerminate" in published["Message"]
    assert "hypd took no action (policy)" in published["Message"]
    assert published["MessageAttributes"]["cluster"]["StringValue"] == "train"
    assert ("EventsReceived", {"detailType": "SageMaker HyperPod Cluster Node Health Event"}) in (
        counted)
    assert ("NodeHealthEvents", {"healthStatus": "Unhealthy"}) in counted
    assert ("RepairsSkipped", {"reason": "policy"}) in counted


def test_under_a_replace_policy_a_replace_node_operation_starts(
    services: EventServices, fakes: Fakes, capsys: pytest.CaptureFixture[str]
) -> None:
    services.policies.put("train", HealthPolicy(action="replace"))
    result = handle(health_event(), services)
    taken = result["taken"]
    assert (taken["by"], taken["action"]) == ("hypd", "replace")
    operation = services.operations.get(taken["operationId"])
    assert operation.kind is OperationKind.REPLACE_NODE
    assert operation.status is OperationStatus.PENDING  # its first task makes it RUNNING
    assert operation.input["nodeId"] == NODE
    assert operation.input["group"] == "gpu"
    (started,) = fakes.of("stepfunctions", "start_execution")
    assert started["stateMachineArn"] == MACHINE
    assert started["name"] == operation.id
    (published,) = fakes.of("sns", "publish")
    assert f"hypd started replace-node operation {operation.id}" in published["Message"]
    (repairs,) = metric(capsys, "Repairs")
    assert (repairs["Action"], repairs["Repairs"]) == ("replace", 1)
    assert repairs["operationId"] == operation.id
    node = services.health.node("train", NODE)
    assert node is not None
    assert node.latest.taken is not None
    assert node.latest.taken.operation_id == operation.id


def test_a_repeat_of_the_same_health_is_counted_but_not_notified_or_repaired_twice(
    services: EventServices, fakes: Fakes, fixed_clock: FakeClock
) -> None:
    services.policies.put("train", HealthPolicy(action="replace", node_cooldown_minutes=30))
    handle(health_event(0), services)
    fixed_clock.advance(60)
    handle(health_event(1), services)  # still unhealthy, same reason
    assert len(fakes.of("sns", "publish")) == 1
    assert len(fakes.of("stepfunctions", "start_execution")) == 1
    node = services.health.node("train", NODE)
    assert node is not None
    assert node.latest.taken is not None
    # the operation of the first event holds the cluster's lock: deferred, not cooled down
    assert node.latest.taken.reason in ("busy", "cooldown")


def test_hyperpod_s_own_repair_is_recorded_and_hypd_does_nothing(
    services: EventServices, fakes: Fakes
) -> None:
    services.policies.put("train", HealthPolicy(action="replace"))
    result = handle(health_event(RepairAction="Replace"), services)
    assert result["taken"] == {"by": "hyperpod", "action": "Replace"}
    assert fakes.of("sagemaker", "describe_cluster_node") == []
    assert "HyperPod is repairing it (Replace)" in fakes.of("sns", "publish")[0]["Message"]


def test_a_node_that_is_no_longer_failing_is_not_repaired(
    services: EventServices, fakes: Fakes, counted: list[Any]
) -> None:
    services.policies.put("train", HealthPolicy(action="replace"))
    fakes.node_status[NODE] = "ShuttingDown"
    result = handle(health_event(), services)
    assert result["taken"] == {"by": "none", "action": "replace",
                               "reason": "node-status: ShuttingDown"}
    del fakes.node_status[NODE]
    result = handle(health_event(1, RepairAction="None", HealthStatusReason="other"), services)
    assert result["taken"]["reason"] == "node-status: gone"
    assert fakes.of("stepfunctions", "start_execution") == []


def test_an_older_event_or_a_duplicate_changes_nothing(
    services: EventServices, fakes: Fakes, counted: list[Any]
) -> None:
    services.policies.put("train", HealthPolicy(action="replace"))
    handle(health_event(5, HealthStatus="Healthy", HealthStatusReason="ok"), services)
    result = handle(health_event(3), services)  # older Unhealthy, arriving late
    assert result == {"node": NODE, "outcome": "older"}
    assert handle(health_event(5, HealthStatus="Healthy"), services)["outcome"] == "duplicate"
    node = services.health.node("train", NODE)
    assert node is not None
    assert node.latest.status == "Healthy"
    assert [e.status for e in node.history] == ["Healthy", "Unhealthy"]
    assert fakes.of("stepfunctions", "start_execution") == []
    assert fakes.of("sns", "publish") == []
    assert ("EventsIgnored", {"reason": "older"}) in counted


def execution_ended(operation_id: str, status: str = "SUCCEEDED") -> dict[str, Any]:
    raw = copy.deepcopy(load_event("sfn-execution-status-change.json"))
    raw["detail"].update(name=operation_id, status=status)
    return raw


def test_a_busy_cluster_defers_the_repair_until_its_operation_ends(
    services: EventServices, fakes: Fakes, counted: list[Any]
) -> None:
    services.policies.put("train", HealthPolicy(action="replace", max_actions_per_hour=1))
    running = capacity_operation(OperationKind.REBOOT_NODE, "train",
                                 NodeActionInput(tag="train", node_id="x", group="g",
                                                 action="reboot"))
    services.operations.create(running)
    services.locks.acquire(cluster_lock("train"), running.id, lambda _holder: False)

    result = handle(health_event(), services)
    assert result["taken"] == {"by": "none", "action": "replace", "reason": "busy"}
    assert ("RepairsDeferred", {"action": "replace"}) in counted
    assert fakes.of("stepfunctions", "start_execution") == []
    # the reservation was given back: the deferred repair is not refused by the budget later

    # an execution of another cluster's operation, or of one hypd does not know, resumes nothing
    assert handle(execution_ended("op-unknown"), services)["resumed"] == []

    services.locks.release(cluster_lock("train"), running.id)
    ended = handle(execution_ended(running.id), services)
    (resumed,) = ended["resumed"]
    assert resumed["node"] == NODE
    assert resumed["taken"]["by"] == "hypd"
    (started,) = fakes.of("stepfunctions", "start_execution")
    assert started["name"] == resumed["taken"]["operationId"]
    node = services.health.node("train", NODE)
    assert node is not None
    assert node.latest.taken is not None
    assert node.latest.taken.operation_id == started["name"]
    # told twice: when the node turned unhealthy, and when its repair started
    assert len(fakes.of("sns", "publish")) == 2
    assert "hypd started replace-node" in fakes.of("sns", "publish")[1]["Message"]


@pytest.mark.parametrize("execution", ["{id}", "{id}-r1", "{id}-r12"])
def test_a_deferred_repair_resumes_when_any_execution_of_the_busy_operation_ends(
    services: EventServices, fakes: Fakes, execution: str
) -> None:
    # Given a repair deferred while an operation held the cluster (the first execution of
    # the operation, or the execution of its retry n, which is named {operationId}-r{n})
    services.policies.put("train", HealthPolicy(action="replace"))
    running = capacity_operation(OperationKind.REBOOT_NODE, "train",
                                 NodeActionInput(tag="train", node_id="x", group="g",
                                                 action="reboot"))
    services.operations.create(running)
    services.locks.acquire(cluster_lock("train"), running.id, lambda _holder: False)
    assert handle(health_event(), services)["taken"]["reason"] == "busy"
    services.locks.release(cluster_lock("train"), running.id)

    # When that execution ends
    ended = handle(execution_ended(execution.format(id=running.id)), services)

    # Then the operation's cluster is found and the deferred repair starts
    assert ended["operation"] == running.id
    assert ended["cluster"] == "train"
    (resumed,) = ended["resumed"]
    assert (resumed["node"], resumed["taken"]["by"]) == (NODE, "hypd")
    (started,) = fakes.of("stepfunctions", "start_execution")
    assert started["name"] == resumed["taken"]["operationId"]


def test_deferred_repairs_resume_oldest_first_one_at_a_time(
    services: EventServices, fakes: Fakes, fixed_clock: FakeClock
) -> None:
    services.policies.put("train", HealthPolicy(action="replace", max_actions_per_hour=1))
    for node in ("i-0bbb", "i-0ccc", "i-0ddd"):
        fakes.node_status[node] = "Failure"
    services.locks.acquire(cluster_lock("train"), "op-running", lambda _holder: False)
    handle(health_event(3, node="i-0ccc"), services)
    handle(health_event(1, node="i-0bbb"), services)
    handle(health_event(2, node="i-0ddd"), services)
    services.locks.release(cluster_lock("train"), "op-running")
    running = capacity_operation(OperationKind.REBOOT_NODE, "train",
                                 NodeActionInput(tag="train", node_id="x", group="g",
                                                 action="reboot"))
    services.operations.create(running)

    ended = handle(execution_ended(running.id, status="FAILED"), services)
    assert [r["node"] for r in ended["resumed"]] == ["i-0bbb"]  # the oldest; the cluster is busy
    first = ended["resumed"][0]["taken"]["operationId"]
    services.locks.release(cluster_lock("train"), first)
    ended = handle(execution_ended(first), services)
    # the hour's one repair is taken: the others are refused, and recorded so
    assert [(r["node"], r["taken"]["reason"]) for r in ended["resumed"]] == [
        ("i-0ddd", "rate-limit"), ("i-0ccc", "rate-limit")]
    assert len(fakes.of("stepfunctions", "start_execution")) == 1


def test_the_rate_limit_refuses_repairs_beyond_it(
    services: EventServices, fakes: Fakes, fixed_clock: FakeClock, counted: list[Any]
) -> None:
    services.policies.put("train", HealthPolicy(action="replace", max_actions_per_hour=1))
    fakes.node_status["i-0aaa"] = "Failure"
    first = handle(health_event(0), services)
    operation_id = first["taken"]["operationId"]
    # the first repair ended: the lock is free, only the hour's budget refuses
    services.locks.release("cluster#train", operation_id)
    fixed_clock.advance(120)
    result = handle(health_event(2, node="i-0aaa"), services)
    assert result["taken"] == {"by": "none", "action": "replace", "reason": "rate-limit"}
    assert ("RepairsSkipped", {"reason": "rate-limit"}) in counted
    # an hour later, a new reason for the still-unhealthy node is acted on
    fixed_clock.value += timedelta(hours=1)
    result = handle(health_event(200, node="i-0aaa", HealthStatusReason="again"), services)
    assert result["taken"]["by"] == "hypd"


def test_a_malformed_event_is_counted_and_kept_in_the_dead_letter_queue(
    services: EventServices, fakes: Fakes, counted: list[Any]
) -> None:
    raw = health_event()
    del raw["detail"]["HealthSummary"]
    result = handle(raw, services)
    assert "HealthSummary" in result["malformed"]
    assert ("EventsMalformed", {"detailType": "SageMaker HyperPod Cluster Node Health Event"}) in (
        counted)
    (kept,) = fakes.of("sqs", "send_message")
    assert kept["QueueUrl"] == DLQ
    body = json.loads(kept["MessageBody"])
    assert body["event"] == raw
    assert "HealthSummary" in body["reason"]
    assert services.health.node("train", NODE) is None


def test_an_event_of_a_cluster_hypd_does_not_manage_is_ignored(
    services: EventServices, fakes: Fakes, counted: list[Any]
) -> None:
    raw = health_event()
    raw["detail"]["ClusterName"] = "hypd-unknown"
    assert handle(raw, services) == {"ignored": "unknown-cluster", "cluster": "hypd-unknown"}
    assert fakes.calls == []


def test_error_cluster_events_and_add_on_health_are_kept(services: EventServices) -> None:
    assert handle(load_event("eventbridge-hyperpod-cluster-event.json"), services)["kept"]
    info = load_event("eventbridge-hyperpod-cluster-event.json")
    info["detail"]["EventDetails"].update(EventLevel="Info", EventId="other")
    assert handle(info, services)["kept"] is False
    handle(load_event("eventbridge-eks-addon-health-degraded.json"), services)
    health = services.health.cluster("train")
    assert [e.event_id for e in health.events] == ["a307fae0-6937-40f9-af2f-16eb873d340a"]
    addon = health.addons["amazon-sagemaker-hyperpod-training-operator"]
    assert addon.status == "DEGRADED"


def test_a_state_change_wakes_waiters_and_records_the_cluster_status(
    services: EventServices, fakes: Fakes
) -> None:
    raw = load_event("eventbridge-hyperpod-cluster-state-change.json")
    raw["detail"]["ClusterName"] = "hypd-train"
    services.waiters.park("hypd-train", "op-1", "InService", "token-1")
    fakes.stepfunctions_send_task_success = lambda **kw: {}  # type: ignore[attr-defined]
    result = handle(raw, services)
    assert result["woken"]
    (sent,) = fakes.of("stepfunctions", "send_task_success")
    assert sent["taskToken"] == "token-1"
    assert services.health.cluster("train").status == "InService"


def test_a_healthy_node_is_not_notified(services: EventServices, fakes: Fakes) -> None:
    handle(health_event(HealthStatus="Healthy", HealthStatusReason="ok"), services)
    assert fakes.of("sns", "publish") == []
    node = services.health.node("train", NODE)
    assert node is not None
    assert node.latest.taken is not None
    assert node.latest.taken.by is Taken.NONE
    assert node.latest.taken.reason == "healthy"


# ---------------------------------------------------------------------------- unhealthy nodes
def unhealthy(capsys: pytest.CaptureFixture[str]) -> list[int]:
    """The UnhealthyNodes values of cluster train printed since the last call."""
    documents = metric(capsys, "UnhealthyNodes")
    for document in documents:
        assert document["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Cluster"]]
        assert document["Cluster"] == "train"
    return [d["UnhealthyNodes"] for d in documents]


def test_a_node_hypd_starts_to_replace_is_counted_as_it_was_when_the_event_came(
    services: EventServices, fakes: Fakes, capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a replace policy, and a repair so quick that HyperPod no longer lists the node
    # by the time the handler could list the nodes after starting it
    services.policies.put("train", HealthPolicy(action="replace"))
    started = fakes.stepfunctions_start_execution

    def start_and_replace(**kwargs: Any) -> Any:
        fakes.node_status.pop(NODE)
        return started(**kwargs)

    fakes.stepfunctions_start_execution = start_and_replace  # type: ignore[method-assign]

    # When the node turns unhealthy
    result = handle(health_event(0), services)

    # Then its replacement was started, and the count is the cluster as the event found it
    assert result["taken"]["action"] == "replace"
    assert unhealthy(capsys) == [1]


def test_the_unhealthy_nodes_are_counted_when_a_node_s_status_changes(
    services: EventServices, fakes: Fakes, fixed_clock: FakeClock,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fakes.node_status["i-0aaa"] = "Running"
    handle(health_event(0), services)
    assert unhealthy(capsys) == [1]
    handle(health_event(1, node="i-0aaa"), services)
    assert unhealthy(capsys) == [2]
    # a repeat of a status, a new reason, an older event or a duplicate change no count
    handle(health_event(2, HealthStatusReason="again"), services)
    handle(health_event(0), services)
    assert unhealthy(capsys) == []
    # a node that recovers: counted without listing the nodes when none is left unhealthy
    handle(health_event(3, HealthStatus="Healthy", HealthStatusReason="ok"), services)
    assert unhealthy(capsys) == [1]
    fakes.calls.clear()
    handle(health_event(4, node="i-0aaa", HealthStatus="Healthy", HealthStatusReason="ok"),
           services)
    assert unhealthy(capsys) == [0]
    assert fakes.of("sagemaker", "list_cluster_nodes") == []


def test_a_node_hyperpod_no_longer_lists_is_not_counted_once_an_operation_ends(
    services: EventServices, fakes: Fakes, capsys: pytest.CaptureFixture[str]
) -> None:
    services.policies.put("train", HealthPolicy(action="replace"))
    started = handle(health_event(), services)["taken"]["operationId"]
    assert unhealthy(capsys) == [1]
    # the replacement is done: HyperPod lists a new node instead
    del fakes.node_status[NODE]
    fakes.node_status["i-0new"] = "Running"
    services.locks.release(cluster_lock("train"), started)
    handle(execution_ended(started), services)
    assert unhealthy(capsys) == [0]


def test_counting_the_unhealthy_nodes_never_fails_the_event(
    services: EventServices, fakes: Fakes, capsys: pytest.CaptureFixture[str]
) -> None:
    def refused(**kwargs: Any) -> Any:
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}},
                          "ListClusterNodes")

    fakes.sagemaker_list_cluster_nodes = refused  # type: ignore[method-assign]
    result = handle(health_event(), services)
    assert result["status"] == "Unhealthy"
    assert result["notified"] is True
    assert unhealthy(capsys) == []
