"""Health events end to end on the local cloud: an emulated node fault reaches hypd through
EventBridge (no polling) and ends in the recorded health, the metric, the notification and,
under a replace policy, a replace-node operation that succeeds."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

import pytest
import requests

from hypd_cli.api_client import ApiClient, ApiError
from tests.e2e.capacity import (
    CLUSTER,
    REASON,
    TAG,
    created_cluster,
    make_unhealthy,
    run,
    stages,
)
from tests.e2e.iam_calls import Calls, assert_allowed, calls_by_function
from tests.support import emf_documents as metrics
from tests.support import emf_sum as counted
from tests.support import fail_calls, group_body

__all__ = ["calls_by_function"]  # the fixture

NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"


def nodes(api: ApiClient) -> list[str]:
    return [n["nodeId"] for n in api.call("listNodes", tag=TAG)["nodes"]]


def subscribe(cloud: Any) -> str:
    """An SQS queue subscribed to the health topic, as a user would subscribe; its URL."""
    sqs, sns = cloud.client("sqs"), cloud.client("sns")
    url = sqs.create_queue(QueueName="health-inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    topic = cloud.stack.topics["HealthNotificationsTopic"].arn
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn,
                  Attributes={"RawMessageDelivery": "false"})
    return str(url)


def received(cloud: Any, url: str) -> list[dict[str, Any]]:
    """Every notification in the queue (the SNS envelopes' subject and message)."""
    sqs = cloud.client("sqs")
    found: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
        if not batch:
            return found
        for message in batch:
            found.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def test_an_unhealthy_node_is_recorded_notified_and_replaced_under_a_replace_policy(
    api: ApiClient, cloud: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    created_cluster(api, cloud, group_body(count=2))
    inbox = subscribe(cloud)
    policy = api.call("setHealthPolicy", tag=TAG, body={"action": "replace"})
    assert policy["policy"] == {"action": "replace", "maxActionsPerHour": 2,
                                "nodeCooldownMinutes": 60}
    sick, well = nodes(api)
    # what the create still delivers (its execution's end reaches the events function, which
    # reports the cluster's health) is over before the metrics of this test are read
    cloud.wait_for_executions(timeout=120)
    capfd.readouterr()

    make_unhealthy(cloud, sick)

    # the recorded health: the summary and the node's history
    history = api.call("getNodeHealth", tag=TAG, nodeId=sick)
    latest = history["latest"]
    assert (latest["status"], latest["reason"], latest["recommended"]) == (
        "Unhealthy", REASON, "replace")
    assert latest["repairAction"] == "None"
    taken = latest["taken"]
    assert (taken["by"], taken["action"]) == ("hypd", "replace")

    # the repair is an operation with its own record, and it succeeds
    replaced = run(api, cloud, {"operationId": taken["operationId"]})
    assert replaced["status"] == "SUCCEEDED", replaced.get("error")
    assert replaced["kind"] == "replace-node"
    assert replaced["input"]["nodeId"] == sick
    now = nodes(api)
    assert sick not in now
    assert well in now
    assert len(now) == 2

    summary = api.call("getClusterHealth", tag=TAG)
    assert summary["unhealthy"] == []
    assert [n["nodeId"] for n in summary["gone"]] == [sick]
    assert summary["counts"] == {"Healthy": 2}
    assert summary["policy"]["action"] == "replace"

    # the notification a subscriber gets
    (note,) = received(cloud, inbox)
    assert note["Subject"] == f"hypd {TAG}: node {sick} Unhealthy"
    assert REASON in note["Message"]
    assert f"hypd started replace-node operation {taken['operationId']}" in note["Message"]
    assert note["MessageAttributes"]["cluster"]["Value"] == TAG

    # the metrics (the operation's end has reached the events function too)
    cloud.wait_for_executions(timeout=120)
    documents = metrics(capfd.readouterr().out)
    assert counted(documents, "EventsReceived", detailType=NODE_HEALTH) >= 1
    assert counted(documents, "NodeHealthEvents", healthStatus="Unhealthy") == 1
    assert counted(documents, "Repairs", Action="replace") == 1
    assert counted(documents, "NotificationsSent") == 1
    assert counted(documents, "OperationsStarted", Kind="replace-node") == 1
    assert counted(documents, "OperationsSucceeded", Kind="replace-node") == 1
    timed = {d["Stage"] for d in documents
             if "StageDuration" in d and d["Kind"] == "replace-node"}
    assert timed == {s["name"] for s in replaced["stages"] if s["status"] == "SUCCEEDED"}
    # one unhealthy node when it turned unhealthy; none once it was replaced
    unhealthy = [d["UnhealthyNodes"] for d in documents
                 if "UnhealthyNodes" in d and d["Cluster"] == TAG]
    assert unhealthy[0] == 1
    assert unhealthy[-1] == 0


def test_under_the_default_policy_a_node_is_only_recorded_and_notified(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud, group_body(count=2))
    inbox = subscribe(cloud)
    sick, _well = nodes(api)

    make_unhealthy(cloud, sick, action="Reboot", reason="KernelPanic")

    summary = api.call("getClusterHealth", tag=TAG)
    assert summary["policyIsDefault"] is True
    assert summary["counts"] == {"Healthy": 1, "Unhealthy": 1}
    (node,) = summary["unhealthy"]
    assert node["nodeId"] == sick
    assert node["instanceGroup"] == "workers"  # as HyperPod lists it
    assert node["latest"]["recommended"] == "reboot"
    taken = node["latest"]["taken"]
    assert (taken["by"], taken["reason"], taken["operationId"]) == ("none", "policy", None)
    operations = api.call("listOperations")["operations"]
    assert [o["kind"] for o in operations] == ["create-cluster"]
    (note,) = received(cloud, inbox)
    assert "hypd took no action (policy)" in note["Message"]
    # the node stays failed until someone acts: HyperPod was told not to repair it
    described = cloud.client("sagemaker").describe_cluster_node(ClusterName=CLUSTER,
                                                                NodeId=sick)
    assert described["NodeDetails"]["InstanceStatus"]["Status"] == "Failure"

    # the add-ons the create installed reported their health through EKS's events
    addons = summary["addons"]
    assert addons
    assert {a["status"] for a in addons.values()} == {"ACTIVE"}
    name = sorted(addons)[0]
    answer = requests.post(
        f"{cloud.local_url}/_local/faults/eks/addon-degraded",
        json={"clusterName": CLUSTER, "addonName": name,
              "issueCode": "InsufficientNumberOfReplicas"},
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    cloud.wait_for_executions(timeout=120)
    degraded = api.call("getClusterHealth", tag=TAG)["addons"][name]
    assert degraded["status"] == "DEGRADED"
    assert degraded["event"] == "EKS Addon Health Degraded"
    assert [i["code"] for i in degraded["issues"]] == ["InsufficientNumberOfReplicas"]


def node_health(node_id: str, n: int) -> dict[str, Any]:
    """The detail of a HyperPod node health event recommending a replacement it does not take."""
    return {
        "ClusterName": CLUSTER,
        "ClusterArn": f"arn:aws:sagemaker:us-west-2:123456789012:cluster/{CLUSTER}",
        "InstanceId": node_id,
        "Tags": {},
        "HealthSummary": {
            "HealthStatus": "Unhealthy",
            "HealthStatusReason": f"{REASON} (report {n % 3})",
            "RepairAction": "None",
            "Recommendation": "Please Replace the Faulty Node.",
        },
    }


def test_an_event_storm_cannot_churn_the_cluster(
    api: ApiClient, cloud: Any, capfd: pytest.CaptureFixture[str],
    calls_by_function: Calls,
) -> None:
    created_cluster(api, cloud, group_body(count=4))
    api.call("setHealthPolicy", tag=TAG,
             body={"action": "replace", "maxActionsPerHour": 2, "nodeCooldownMinutes": 60})
    inbox = subscribe(cloud)
    targets = nodes(api)
    cloud.wait_for_executions(timeout=120)  # the create's deliveries are over
    capfd.readouterr()

    storm, malformed = 300, 25
    for n in range(storm):
        cloud.emit_event("aws.sagemaker", NODE_HEALTH, node_health(targets[n % 4], n))
        if n % 12 == 0 and n // 12 < malformed:
            broken = node_health(targets[0], n)
            del broken["HealthSummary"]["HealthStatus"]
            cloud.emit_event("aws.sagemaker", NODE_HEALTH, broken)
    cloud.wait_for_executions(timeout=600)

    # exactly maxActionsPerHour repairs, of distinct nodes, each an operation that succeeded
    repairs = [o for o in api.call("listOperations")["operations"] if o["kind"] != "create-cluster"]
    assert len(repairs) == 2
    assert {o["kind"] for o in repairs} == {"replace-node"}
    assert len({o["input"]["nodeId"] for o in repairs}) == 2
    for operation in repairs:
        assert run(api, cloud, {"operationId": operation["id"]})["status"] == "SUCCEEDED"
    repaired = {o["input"]["nodeId"] for o in repairs}
    left = [n for n in targets if n not in repaired]
    assert len(nodes(api)) == 4
    assert not repaired & set(nodes(api))

    # the nodes left unhealthy say why nothing was done
    summary = api.call("getClusterHealth", tag=TAG)
    assert sorted(n["nodeId"] for n in summary["unhealthy"]) == sorted(left)
    for node in summary["unhealthy"]:
        assert node["latest"]["taken"]["reason"] in ("rate-limit", "cooldown"), node
    assert sorted(n["nodeId"] for n in summary["gone"]) == sorted(repaired)
    history = api.call("getNodeHealth", tag=TAG, nodeId=left[0])
    assert 1 < len(history["history"]) <= 50

    # malformed events: counted, kept with their reason, and nothing else disturbed
    documents = metrics(capfd.readouterr().out)
    assert counted(documents, "EventsMalformed", detailType=NODE_HEALTH) == malformed
    assert counted(documents, "NodeHealthEvents") == storm
    assert counted(documents, "Repairs", Action="replace") == 2
    dlq = cloud.stack.queues["OperationEventsDeadLetterQueue"].url
    kept = [json.loads(m["Body"]) for m in drain(cloud, dlq)]
    assert len(kept) == malformed
    assert all("HealthStatus" in k["reason"] for k in kept)
    assert cloud.async_failures == []
    assert cloud.delivery_failures == []

    # a subscriber hears of each node once when it turns unhealthy, and of each repair hypd
    # starts (a deferred one when it starts): never of the storm itself
    notes = received(cloud, inbox)
    started = [n for n in notes if "hypd started replace-node" in n["Message"]]
    assert len(started) == 2
    told = Counter(n["MessageAttributes"]["node"]["Value"] for n in notes)
    assert set(told) == set(targets)
    assert all(told[n] <= 2 for n in repaired), told
    assert all(told[n] == 1 for n in left), told

    # every call of the path (records, transactions, node reads, repairs started, deferred
    # repairs resumed, notifications, malformed events kept) is allowed by the policies
    assert {"sqs:SendMessage", "sns:Publish", "states:StartExecution",
            "sagemaker:DescribeClusterNode", "dynamodb:TransactWriteItems"} <= (
        calls_by_function["ClusterEventsFunction"])
    assert_allowed(calls_by_function, ("ClusterEventsFunction", "ApiFunction"))


def drain(cloud: Any, url: str) -> list[dict[str, Any]]:
    sqs = cloud.client("sqs")
    found: list[dict[str, Any]] = []
    while batch := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in batch:
            found.append(message)
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return found


def test_a_duplicate_delivery_is_handled_once(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud, group_body(count=2))
    api.call("setHealthPolicy", tag=TAG, body={"action": "replace"})
    sick = nodes(api)[0]
    event = {
        "version": "0", "id": "5e0c3a1b-dup", "detail-type": NODE_HEALTH,
        "source": "aws.sagemaker", "account": "123456789012", "time": "2026-01-15T12:00:00Z",
        "region": "us-west-2", "resources": [], "detail": node_health(sick, 0),
    }
    first = cloud.invoke("ClusterEventsFunction", event)
    again = cloud.invoke("ClusterEventsFunction", event)
    assert first["taken"]["by"] == "hypd"
    assert again == {"node": sick, "outcome": "duplicate"}
    cloud.wait_for_executions(timeout=120)
    repairs = [o for o in api.call("listOperations")["operations"] if o["kind"] == "replace-node"]
    assert len(repairs) == 1
    # A node id that is not an instance id is refused by name, as by the node action routes.
    with pytest.raises(ApiError) as refused:
        api.call("getNodeHealth", tag=TAG, nodeId="i-node1")
    assert refused.value.status == 400
    assert "nodeId" in str(refused.value.details) + refused.value.message


def test_a_repair_deferred_by_a_retried_operation_starts_when_the_retry_ends(
    api: ApiClient, cloud: Any
) -> None:
    # Given a scale that failed, under a replace policy
    created_cluster(api, cloud, group_body(count=2))
    api.call("setHealthPolicy", tag=TAG, body={"action": "replace"})
    sick = nodes(api)[0]
    with fail_calls(cloud, "sagemaker", "update_cluster", "ValidationException", times=1):
        failed = run(api, cloud, api.call("updateInstanceGroup", tag=TAG, name="workers",
                                          body={"count": 3}))
    assert failed["status"] == "FAILED"
    cloud.wait_for_executions(timeout=120)  # the end of its first execution is handled

    # When its retry (execution {operationId}-r1) holds the cluster as HyperPod recommends
    # replacing a node, and then ends
    release, entered = threading.Event(), threading.Event()
    with fail_calls(cloud, "sagemaker", "update_cluster", None, times=1, block=release,
                    entered=entered):
        api.post(f"/operations/{failed['id']}/retry")
        assert entered.wait(timeout=60)  # the retry is inside its hyperpod stage
        event = {
            "version": "0", "id": "7d1e4b2c-retry", "detail-type": NODE_HEALTH,
            "source": "aws.sagemaker", "account": "123456789012",
            "time": "2026-01-15T12:00:00Z", "region": "us-west-2", "resources": [],
            "detail": node_health(sick, 0),
        }
        deferred = cloud.invoke("ClusterEventsFunction", event)
        release.set()
        retried = run(api, cloud, {"operationId": failed["id"]})
    cloud.wait_for_executions(timeout=120)

    # Then the repair waited for the retry, and started when the retry's execution ended
    assert deferred["taken"] == {"by": "none", "action": "replace", "reason": "busy"}
    assert retried["status"] == "SUCCEEDED", retried.get("error")
    assert stages(retried)["hyperpod"]["attempts"] == 2
    assert retried["executionArn"].endswith(f":{failed['id']}-r1")
    taken = api.call("getNodeHealth", tag=TAG, nodeId=sick)["latest"]["taken"]
    assert (taken["by"], taken["action"]) == ("hypd", "replace"), taken
    replaced = run(api, cloud, {"operationId": taken["operationId"]})
    assert replaced["status"] == "SUCCEEDED", replaced.get("error")
    assert replaced["kind"] == "replace-node"
    assert sick not in nodes(api)
    assert cloud.async_failures == []
