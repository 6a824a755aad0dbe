"""Rules and schedules that drive a REST API: EventBridge's API Gateway targets and EventBridge
Scheduler, on a frozen virtual clock (every time asserted is a virtual one)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from botocore.exceptions import ClientError

from hypd_local import LocalCloud
from hypd_local.clock import VirtualClock
from hypd_local.scheduler import ScheduledInvocation

from .conftest import FIXTURES

START = datetime(2030, 6, 1, tzinfo=UTC)
ACCOUNT = "123456789012"
REGION = "us-west-2"


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(FIXTURES / "automation.yaml",
                    clock=VirtualClock(START, ticking=False)) as running:
        yield running


@pytest.fixture
def idle(cloud: LocalCloud) -> Iterator[LocalCloud]:
    cloud.wait_for_executions(timeout=30)
    yield cloud
    cloud.wait_for_executions(timeout=30)


def put(cloud: LocalCloud, detail_type: str, detail: dict[str, Any],
        source: str = "fixture.automation") -> None:
    answer = cloud.client("events").put_events(Entries=[{
        "Source": source, "DetailType": detail_type, "Detail": json.dumps(detail)}])
    assert answer["FailedEntryCount"] == 0


def requests(cloud: LocalCloud, where: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """The proxy events the command API received that ``where`` selects, in arrival order."""
    items = cloud.client("dynamodb").query(
        TableName=cloud.resources["Requests"], KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "REQUEST"}})["Items"]
    events = [json.loads(item["event"]["S"]) for item in items]
    return [event for event in events if where(event)]


def with_marker(marker: str) -> Callable[[dict[str, Any]], bool]:
    return lambda event: marker in (event.get("body") or "") + (event.get("path") or "")


def dead_letters(cloud: LocalCloud) -> list[dict[str, Any]]:
    """Every message in the dead-letter queue (read and deleted)."""
    sqs = cloud.client("sqs")
    url = cloud.resources["DeadLetters"]
    found: list[dict[str, Any]] = []
    while True:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                       MessageAttributeNames=["All"]).get("Messages", [])
        if not messages:
            return found
        for message in messages:
            found.append({"body": message["Body"], "attributes": {
                k: v["StringValue"] for k, v in message.get("MessageAttributes", {}).items()}})
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def api_id(cloud: LocalCloud) -> str:
    return str(cloud.resources["CommandsApi"])


def role_name(cloud: LocalCloud, logical_id: str) -> str:
    return str(cloud.resources[logical_id])


# ---------------------------------------------------------------------- API Gateway targets
def test_an_api_target_reaches_its_route_signed_as_the_rule_role(idle: LocalCloud) -> None:
    # Given a rule whose target is PATCH /clusters/*/instance-groups/* with the invoker role
    marker = f"tag-{uuid.uuid4().hex[:8]}"

    # When an event matches it
    put(idle, "Scale", {"tag": marker, "group": "workers", "command": {"count": 3}})
    idle.wait_for_executions(timeout=30)

    # Then the route got the path values, query, header and body, from the role's session
    (request,) = requests(idle, with_marker(marker))
    assert request["resource"] == "/clusters/{tag}/instance-groups/{group}"
    assert request["httpMethod"] == "PATCH"
    assert request["pathParameters"] == {"tag": marker, "group": "workers"}
    assert request["queryStringParameters"] == {"dryRun": "false"}
    assert request["headers"]["X-Fixture-Caller"] == "rule"
    assert json.loads(request["body"]) == {"count": 3}
    identity = request["requestContext"]["identity"]
    assert identity["userArn"].startswith(
        f"arn:aws:sts::{ACCOUNT}:assumed-role/{role_name(idle, 'InvokerRole')}/")
    assert identity["accessKey"]
    delivered = [d for d in idle.delivery.delivered if marker in json.dumps(d.payload)
                 or d.target_arn.endswith("instance-groups/*")]
    assert delivered[-1].status == 202


def test_a_target_without_a_role_is_refused_as_unsigned(idle: LocalCloud) -> None:
    # Given a target with no RoleArn: EventBridge sends the request unsigned
    marker = f"tag-{uuid.uuid4().hex[:8]}"

    put(idle, "Unsigned", {"tag": marker, "group": "workers"})
    idle.wait_for_executions(timeout=30)

    # Then the AWS_IAM method refuses it, the handler never runs, and the event is dead-lettered
    assert requests(idle, with_marker(marker)) == []
    failure = idle.delivery_failures[-1]
    assert (failure.target_id, failure.status, failure.attempts) == ("UnsignedCommand", 403, 1)
    assert "Missing Authentication Token" in failure.error_message
    (letter,) = [m for m in dead_letters(idle) if marker in m["body"]]
    assert letter["attributes"]["RULE_ARN"].endswith(f":rule/{idle.resources['UnsignedRule']}")
    assert letter["attributes"]["ERROR_CODE"] == "HTTP 403"
    assert letter["attributes"]["RETRY_ATTEMPTS"] == "0"


def test_a_role_without_execute_api_invoke_is_refused(idle: LocalCloud) -> None:
    # Given a rule whose role may only GET
    marker = f"tag-{uuid.uuid4().hex[:8]}"

    put(idle, "Denied", {"tag": marker, "group": "workers"})
    idle.wait_for_executions(timeout=30)

    # Then API Gateway's IAM check refuses the PATCH on the concrete method ARN
    assert requests(idle, with_marker(marker)) == []
    failure = idle.delivery_failures[-1]
    assert (failure.target_id, failure.status, failure.attempts) == ("DeniedCommand", 403, 1)
    method_arn = (f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{api_id(idle)}/v1/PATCH/clusters/"
                  f"{marker}/instance-groups/workers")
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/{role_name(idle, 'ReaderRole')}/"
    message = json.loads(failure.error_message)["Message"]
    assert message.startswith(f"User: {session}")
    assert message.endswith(f"is not authorized to perform: execute-api:Invoke on resource: "
                            f"{method_arn}")
    assert [m for m in dead_letters(idle) if marker in m["body"]]


def test_a_5xx_is_retried_within_the_retry_policy(idle: LocalCloud) -> None:
    # Given a route that always answers 503 and a target allowing two retries
    before = idle.clock.now()
    marker = "status/503"
    seen = len(requests(idle, with_marker(marker)))

    put(idle, "Status", {"code": "503"})
    idle.wait_for_executions(timeout=30)

    # Then three requests were made, 1 s then 2 s apart in virtual time, and it failed for good
    assert len(requests(idle, with_marker(marker))) == seen + 3
    failure = idle.delivery_failures[-1]
    assert (failure.status, failure.attempts, failure.exhausted) == (
        503, 3, "MaximumRetryAttempts")
    assert idle.clock.now() - before == timedelta(seconds=3)
    (letter,) = [m for m in dead_letters(idle) if m["attributes"].get("ERROR_CODE") == "HTTP 503"]
    assert letter["attributes"]["RETRY_ATTEMPTS"] == "2"
    assert letter["attributes"]["EXHAUSTED_RETRY_CONDITION"] == "MaximumRetryAttempts"


@pytest.mark.parametrize("code", ["400", "404"])
def test_other_4xx_answers_are_not_retried(idle: LocalCloud, code: str) -> None:
    marker = f"status/{code}"
    seen = len(requests(idle, with_marker(marker)))

    put(idle, "Status", {"code": code})
    idle.wait_for_executions(timeout=30)

    assert len(requests(idle, with_marker(marker))) == seen + 1
    failure = idle.delivery_failures[-1]
    assert (failure.status, failure.attempts, failure.exhausted) == (int(code), 1, None)
    dead_letters(idle)


def test_a_429_is_retried(idle: LocalCloud) -> None:
    seen = len(requests(idle, with_marker("status/429")))

    put(idle, "Status", {"code": "429"})
    idle.wait_for_executions(timeout=30)

    assert len(requests(idle, with_marker("status/429"))) == seen + 3
    dead_letters(idle)


def test_a_header_eventbridge_does_not_permit_is_refused(idle: LocalCloud) -> None:
    # Given a target whose HeaderParameters name X-Amz-Target
    seen = len(requests(idle, with_marker("status/200")))

    put(idle, "BadHeader", {"x": 1})
    idle.wait_for_executions(timeout=30)

    # Then no request is made and the delivery fails at once
    assert len(requests(idle, with_marker("status/200"))) == seen
    failure = idle.delivery_failures[-1]
    assert (failure.target_id, failure.error_code, failure.status) == (
        "BadHeaderCommand", "InvalidHeaderParameter", None)
    assert "X-Amz-Target" in failure.error_message
    dead_letters(idle)


# ---------------------------------------------------------------------- EventBridge Scheduler
def bus_target(cloud: LocalCloud, role: str, detail: dict[str, Any],
               **extra: Any) -> dict[str, Any]:
    return {
        "Arn": f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default",
        "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/{role_name(cloud, role)}",
        "EventBridgeParameters": {"Source": "fixture.tick", "DetailType": "Tick"},
        "Input": json.dumps(detail),
        **extra,
    }


def create(cloud: LocalCloud, expression: str, *, timezone: str = "UTC",
           role: str = "ScheduleRole", **extra: Any) -> str:
    name = f"s-{uuid.uuid4().hex[:10]}"
    target = bus_target(cloud, role, {"schedule": name}, **extra.pop("target", {}))
    arn = cloud.client("scheduler").create_schedule(
        Name=name, ScheduleExpression=expression, ScheduleExpressionTimezone=timezone,
        FlexibleTimeWindow={"Mode": "OFF"}, Target=target, **extra)["ScheduleArn"]
    return str(arn)


def fired(cloud: LocalCloud, arn: str) -> list[ScheduledInvocation]:
    cloud.wait_for_executions(timeout=30)
    return [i for i in cloud.scheduler.invocations if i.schedule_arn == arn]


def test_a_rate_schedule_fires_at_creation_and_every_period(idle: LocalCloud) -> None:
    # Given a rate schedule with no StartDate, made now
    created = idle.clock.now()
    arn = create(idle, "rate(5 minutes)")

    # Then it fires at once, not again until five minutes later, then again
    assert [i.scheduled_time for i in fired(idle, arn)] == [created]
    idle.clock.advance(299)
    assert len(fired(idle, arn)) == 1
    idle.clock.advance(1)
    invocations = fired(idle, arn)
    assert [i.scheduled_time for i in invocations] == [created, created + timedelta(minutes=5)]
    assert all(i.ok for i in invocations)
    idle.client("scheduler").delete_schedule(Name=arn.rsplit("/", 1)[1])


def test_a_cron_schedule_fires_at_its_wall_time_in_its_time_zone(idle: LocalCloud) -> None:
    # Given a schedule at 09:15 every day in Paris
    paris = ZoneInfo("Europe/Paris")
    now = idle.clock.now()
    local = now.astimezone(paris)
    expected = local.replace(hour=9, minute=15, second=0, microsecond=0)
    if expected <= local:
        expected += timedelta(days=1)
    expected_utc = expected.astimezone(UTC)
    arn = create(idle, "cron(15 9 * * ? *)", timezone="Europe/Paris")

    # Then nothing fires a second before, and one invocation at 09:15 Paris time
    idle.clock.advance_to(expected_utc - timedelta(seconds=1))
    assert fired(idle, arn) == []
    idle.clock.advance_to(expected_utc)
    assert [i.scheduled_time for i in fired(idle, arn)] == [expected_utc]
    assert expected_utc.astimezone(paris).strftime("%H:%M") == "09:15"
    idle.client("scheduler").delete_schedule(Name=arn.rsplit("/", 1)[1])


def test_a_one_time_schedule_fires_once_and_deletes_itself(idle: LocalCloud) -> None:
    # Given an at() schedule two hours from now, New York time, deleted after completion
    new_york = ZoneInfo("America/New_York")
    when = (idle.clock.now() + timedelta(hours=2)).astimezone(new_york).replace(microsecond=0)
    arn = create(idle, f"at({when.strftime('%Y-%m-%dT%H:%M:%S')})",
                 timezone="America/New_York", ActionAfterCompletion="DELETE")

    idle.clock.advance_to(when - timedelta(seconds=1))
    assert fired(idle, arn) == []
    idle.clock.advance_to(when + timedelta(hours=1))

    assert [i.scheduled_time for i in fired(idle, arn)] == [when.astimezone(UTC)]
    with pytest.raises(ClientError) as raised:
        idle.client("scheduler").get_schedule(Name=arn.rsplit("/", 1)[1])
    assert raised.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_a_disabled_schedule_never_fires(idle: LocalCloud) -> None:
    arn = create(idle, "rate(1 minute)", State="DISABLED")

    idle.clock.advance(600)

    assert fired(idle, arn) == []
    idle.client("scheduler").delete_schedule(Name=arn.rsplit("/", 1)[1])


def test_a_schedule_whose_role_may_not_put_events_fails(idle: LocalCloud) -> None:
    # Given a one-time schedule whose role lacks events:PutEvents, with no retries
    when = (idle.clock.now() + timedelta(minutes=10)).replace(microsecond=0)
    arn = create(idle, f"at({when.strftime('%Y-%m-%dT%H:%M:%S')})", role="NoPutScheduleRole",
                 target={"RetryPolicy": {"MaximumRetryAttempts": 0},
                         "DeadLetterConfig": {"Arn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:"
                                              + idle.resources["DeadLetters"].rsplit("/", 1)[1]}})

    idle.clock.advance_to(when)

    # Then the invocation fails on IAM's denial and goes to the dead-letter queue
    (invocation,) = fired(idle, arn)
    assert invocation.error_code == "AccessDeniedException"
    assert "events:PutEvents" in invocation.error_message
    assert invocation.exhausted == "MaximumRetryAttempts"
    (letter,) = [m for m in dead_letters(idle) if m["attributes"].get("SCHEDULE_ARN") == arn]
    assert letter["attributes"]["ERROR_CODE"] == "AccessDeniedException"
    assert letter["attributes"]["SCHEDULED_TIME"] == when.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert json.loads(letter["body"]) == {"schedule": arn.rsplit("/", 1)[1]}


@pytest.mark.parametrize("expression", [
    "cron(* * * * * *)", "cron(0 9 * *)", "rate(0 minutes)", "rate(5 weeks)",
    "at(2030-13-01T00:00:00)", "every day",
])
def test_scheduler_refuses_an_invalid_expression(idle: LocalCloud, expression: str) -> None:
    with pytest.raises(ClientError) as raised:
        create(idle, expression)
    assert raised.value.response["Error"]["Code"] == "ValidationException"


def test_the_template_schedule_chain_ends_at_the_route(idle: LocalCloud) -> None:
    # Given the template's schedule (02:30 New York) -> bus -> rule -> API target
    new_york = ZoneInfo("America/New_York")
    schedule = idle.stack.resources["NightlyScaleDown"]
    group = idle.resources["Commands"]
    assert schedule.attributes["Arn"] == (
        f"arn:aws:scheduler:{REGION}:{ACCOUNT}:schedule/{group}/{schedule.ref}")
    assert idle.client("scheduler").get_schedule(
        Name=schedule.ref, GroupName=group)["Arn"] == schedule.attributes["Arn"]
    local = idle.clock.now().astimezone(new_york)
    expected = local.replace(hour=2, minute=30, second=0, microsecond=0)
    if expected <= local:
        expected += timedelta(days=1)
    at = expected.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    # When the clock reaches it
    idle.clock.advance_to(expected)
    idle.wait_for_executions(timeout=30)

    # Then the scale-down command reached the route, signed as the rule's role
    (request,) = requests(idle, lambda e: at in (e.get("body") or ""))
    assert request["pathParameters"] == {"tag": "nightly", "group": "workers"}
    assert json.loads(request["body"]) == {"count": 1, "at": at}
    assert request["requestContext"]["requestTimeEpoch"] == int(expected.timestamp() * 1000)
    assert f"assumed-role/{role_name(idle, 'InvokerRole')}/" in (
        request["requestContext"]["identity"]["userArn"])
