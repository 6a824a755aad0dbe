"""The template's example automation on the local cloud (docs/automation.md): schedules that
scale a group down and up, a rule that retries an operation that failed on a temporary error
within its limit, and a rule that tells an SNS topic of failed operations. Every command comes
through the REST API as an API Gateway target signed with ApiAutomationRole, so each is an
ordinary operation with its record."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import follow
from hypd_cli.local import local_parameters
from hypd_local import LocalCloud
from hypd_local.clock import VirtualClock
from tests.conftest import ROOT
from tests.e2e.test_create_pipeline import create
from tests.published_events import check_published_events

TEMPLATE = ROOT / "template.yaml"
START = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)  # a Monday, noon UTC


def running(**parameters: str) -> Iterator[tuple[LocalCloud, ApiClient]]:
    clock = VirtualClock(START, ticking=False)
    with LocalCloud(TEMPLATE, parameters=local_parameters(TEMPLATE) | parameters,
                    clock=clock) as cloud:
        api = ApiClient(cloud.api_url)
        yield cloud, api
        cloud.wait_for_executions(timeout=60)
        check_published_events(cloud, api)


@pytest.fixture
def scaled() -> Iterator[tuple[LocalCloud, ApiClient]]:
    # Down at 20:00 and up at 07:00, Paris time, on weekdays
    yield from running(NightlyScaleGroup="e2e/gpu", NightlyScaleCounts="0,2",
                       NightlyScaleDownSchedule="cron(0 20 ? * MON-FRI *)",
                       NightlyScaleUpSchedule="cron(0 7 ? * MON-FRI *)",
                       NightlyScaleTimezone="Europe/Paris")


def group_count(api: ApiClient) -> int:
    (group,) = api.get("/clusters/e2e/instance-groups")["instanceGroups"]
    return int(group["count"])


def scale_operations(api: ApiClient) -> list[dict[str, Any]]:
    return [op for op in api.get("/operations", clusterTag="e2e")["operations"]
            if op["kind"] == "update-instance-group"]


def test_the_schedules_scale_the_group_down_at_night_and_up_in_the_morning(
        scaled: tuple[LocalCloud, ApiClient]) -> None:
    cloud, api = scaled
    done = follow(api, cloud, create(api, cloud), timeout=240)
    assert done["status"] == "SUCCEEDED", done
    assert group_count(api) == 1
    cloud.wait_for_executions()

    # When the clock reaches 19:59 Paris time, nothing has happened yet
    cloud.clock.advance_to(datetime(2026, 12, 7, 18, 59, tzinfo=UTC))
    cloud.wait_for_executions()
    assert scale_operations(api) == []

    # At 20:00 Paris (19:00 UTC) the group is scaled down, by an ordinary operation
    cloud.clock.advance_to(datetime(2026, 12, 7, 19, 0, tzinfo=UTC))
    cloud.wait_for_executions(timeout=120)
    (down,) = scale_operations(api)
    assert down["status"] == "SUCCEEDED", down
    assert down["input"]["fields"] == {"count": 0}
    assert down["createdAt"].startswith("2026-12-07T19:00:00")
    assert group_count(api) == 0

    # And at 07:00 Paris the next morning it is scaled up again
    cloud.clock.advance_to(datetime(2026, 12, 8, 6, 0, tzinfo=UTC))
    cloud.wait_for_executions(timeout=120)
    up = [op for op in scale_operations(api) if op["id"] != down["id"]]
    assert [op["input"]["fields"] for op in up] == [{"count": 2}]
    assert up[0]["status"] == "SUCCEEDED", up[0]
    assert group_count(api) == 2
    # The commands went through the API as the automation role, and nothing failed
    delivered = [d for d in cloud.delivery.delivered if "instance-groups" in d.target_arn]
    assert [d.status for d in delivered] == [202, 202]
    assert cloud.delivery.failures == []


def dead_letters(cloud: LocalCloud) -> list[dict[str, Any]]:
    sqs = cloud.client("sqs")
    messages: list[dict[str, Any]] = sqs.receive_message(
        QueueUrl=cloud.resources["OperationEventsDeadLetterQueue"], MaxNumberOfMessages=10
    ).get("Messages", [])
    return messages


def test_a_scale_answered_after_five_seconds_is_one_operation_and_no_dead_letter(
        scaled: tuple[LocalCloud, ApiClient]) -> None:
    cloud, api = scaled
    assert follow(api, cloud, create(api, cloud), timeout=240)["status"] == "SUCCEEDED"
    cloud.wait_for_executions()
    # Given the API's answer to the nightly scale-down arrives 6 s late (EventBridge waits 5)
    cloud.api_front.slow_answers("PATCH", "/clusters/e2e/instance-groups/gpu", 6)

    cloud.clock.advance_to(datetime(2026, 12, 7, 19, 0, tzinfo=UTC))
    cloud.wait_for_executions(timeout=120)

    # Then EventBridge sent the command twice, and the second answer was the first one's: one
    # scale operation, a 202, nothing failed and no dead letter (a 409 before the key)
    (delivered,) = [d for d in cloud.delivery.delivered if "instance-groups" in d.target_arn]
    assert (delivered.status, delivered.attempts) == (202, 2)
    (down,) = scale_operations(api)
    assert down["status"] == "SUCCEEDED", down
    assert cloud.delivery.failures == []
    assert dead_letters(cloud) == []


@pytest.fixture
def retrying() -> Iterator[tuple[LocalCloud, ApiClient]]:
    yield from running(RetryThrottledOperations="1")


def test_a_throttled_failure_is_retried_once_and_no_more(
        retrying: tuple[LocalCloud, ApiClient]) -> None:
    cloud, api = retrying
    # Given EKS throttles every CreateCluster
    cloud.faults.fail("eks", "CreateCluster", code="ThrottlingException", times=None)
    operation_id = create(api, cloud)
    cloud.wait_for_executions(timeout=240)

    # Then the create failed on throttling, was retried once by the rule, failed again, and
    # the rule's second retry was refused by the API at its limit
    operation = api.get(f"/operations/{operation_id}")
    assert operation["status"] == "FAILED"
    assert operation["error"]["code"] == "ThrottlingException"
    assert len(operation["retries"]) == 1
    assert operation["retries"][0]["previousError"]["code"] == "ThrottlingException"
    refused = [f for f in cloud.delivery.failures if "/retry" in f.target_arn]
    assert len(refused) == 1
    assert "409" in refused[0].error_code + refused[0].error_message
    retried = [d for d in cloud.delivery.delivered if "/retry" in d.target_arn]
    assert [d.status for d in retried] == [202]

    # And once EKS recovers, a person's retry (beyond the rule's limit) completes it
    cloud.faults.clear()
    api.post(f"/operations/{operation_id}/retry")
    assert follow(api, cloud, operation_id, timeout=240)["status"] == "SUCCEEDED"


def test_an_automated_retry_answered_after_five_seconds_is_one_retry(
        retrying: tuple[LocalCloud, ApiClient]) -> None:
    cloud, api = retrying
    # Given EKS throttles CreateCluster until the create fails (the eks stage's own retries
    # make 28 calls), and the API answers the rule's retry 6 s late
    cloud.faults.fail("eks", "CreateCluster", code="ThrottlingException", times=28)
    cloud.api_front.slow_answers("POST", "/operations/*/retry", 6)
    operation_id = create(api, cloud)
    cloud.wait_for_executions(timeout=240)

    # Then EventBridge sent the retry twice; the second got the first's answer: one retry, and
    # the operation completed
    operation = api.get(f"/operations/{operation_id}")
    assert operation["status"] == "SUCCEEDED", operation
    assert len(operation["retries"]) == 1
    (delivered,) = [d for d in cloud.delivery.delivered if "/retry" in d.target_arn]
    assert (delivered.status, delivered.attempts) == (202, 2)
    assert cloud.delivery.failures == []


def test_a_permanent_failure_is_not_retried_by_the_rule(
        retrying: tuple[LocalCloud, ApiClient]) -> None:
    cloud, api = retrying
    failed = follow(api, cloud, create(api, cloud, bucket=False), timeout=240)
    cloud.wait_for_executions()
    assert failed["status"] == "FAILED"
    assert api.get(f"/operations/{failed['id']}")["retries"] == []
    assert [d for d in cloud.delivery.delivered if "/retry" in d.target_arn] == []


@pytest.fixture
def notifying() -> Iterator[tuple[LocalCloud, ApiClient]]:
    yield from running(FailedOperationsTopic="true")


def test_a_failed_create_is_told_to_the_topic(notifying: tuple[LocalCloud, ApiClient]) -> None:
    cloud, api = notifying
    # Given a queue subscribed to the failed-operations topic
    topic = cloud.stack.refs()["FailedOperationsNotifications"]
    sqs = cloud.client("sqs")
    queue = sqs.create_queue(QueueName="watch")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    cloud.client("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn,
                                  Attributes={"RawMessageDelivery": "true"})

    # When a create fails
    failed = follow(api, cloud, create(api, cloud, bucket=False), timeout=240)
    cloud.wait_for_executions()
    assert failed["status"] == "FAILED"

    # Then the topic was told of the operation and of the cluster, readably
    messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    bodies = sorted(m["Body"].strip('"') for m in messages)
    assert len(bodies) == 2
    (operation,) = [b for b in bodies if b.startswith("hypd operation")]
    assert f"hypd operation {failed['id']} (create-cluster) of cluster e2e FAILED" in operation
    assert f"stage storage: {failed['error']['code']}: {failed['error']['message']}" in operation
    assert [b for b in bodies if b.startswith("hypd cluster")] == [
        f"hypd cluster e2e FAILED at {failed['updatedAt'][:19]}Z (operation {failed['id']})"]


def test_the_examples_are_off_by_default(cloud: Any) -> None:
    refs = cloud.stack.refs()
    for example in ("ApiAutomationRole", "RetryTemporaryFailuresRule", "NightlyScaleDown",
                    "ScheduledScaleRule", "FailedOperationsNotifications"):
        assert example not in refs
