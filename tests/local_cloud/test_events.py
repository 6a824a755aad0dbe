"""EventBridge: Lambda and Step Functions targets, dead letters, execution status events."""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypd_local import LocalCloud


def recorded(cloud: LocalCloud) -> list[dict[str, Any]]:
    """Events the fixture listener recorded in the table."""
    items = cloud.client("dynamodb").query(
        TableName=cloud.resources["FixtureTable"],
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": "EVENT"}},
    )["Items"]
    return [json.loads(item["event"]["S"]) for item in items]


def put(cloud: LocalCloud, detail_type: str, detail: dict[str, Any]) -> None:
    entries = cloud.client("events").put_events(Entries=[{
        "Source": "fixture.test", "DetailType": detail_type, "Detail": json.dumps(detail),
    }])
    assert entries["FailedEntryCount"] == 0


def test_put_events_reaches_a_lambda_target(idle_cloud: LocalCloud) -> None:
    marker = str(uuid.uuid4())

    put(idle_cloud, "Ping", {"marker": marker})
    idle_cloud.wait_for_executions(timeout=30)

    (event,) = [e for e in recorded(idle_cloud) if e.get("detail", {}).get("marker") == marker]
    assert event["source"] == "fixture.test"
    assert event["detail-type"] == "Ping"
    assert event["account"] == "123456789012"
    assert event["time"].endswith("Z")
    assert "ingestion-time" not in event


def test_put_events_starts_a_step_functions_target(idle_cloud: LocalCloud) -> None:
    marker = str(uuid.uuid4())

    put(idle_cloud, "Start", {"marker": marker})
    idle_cloud.wait_for_executions(timeout=30)

    # The EventMachine's only task records its input: the event itself.
    (event,) = [e for e in recorded(idle_cloud) if e.get("detail", {}).get("marker") == marker]
    assert event["detail-type"] == "Start"
    executions = idle_cloud.client("stepfunctions").list_executions(
        stateMachineArn=idle_cloud.resources["EventMachine"])["executions"]
    assert "SUCCEEDED" in {e["status"] for e in executions}


def test_events_matching_no_rule_go_nowhere(idle_cloud: LocalCloud) -> None:
    before = len(idle_cloud.delivery.delivered)

    put(idle_cloud, "Unrelated", {"x": 1})
    idle_cloud.wait_for_executions(timeout=30)

    assert len(idle_cloud.delivery.delivered) == before


def test_a_failing_lambda_target_is_retried_then_sent_to_its_failure_destination(
    idle_cloud: LocalCloud,
) -> None:
    # Given a listener that refuses the event (one retry, then an SQS OnFailure destination)
    marker = str(uuid.uuid4())
    before = idle_cloud.clock.now()

    # When the event is put on the bus
    put(idle_cloud, "Ping", {"marker": marker, "explode": True})
    idle_cloud.wait_for_executions(timeout=30)

    # Then Lambda retried once, a minute later in virtual time, and gave up
    failure = idle_cloud.async_failures[-1]
    assert (failure.function, failure.error_type, failure.attempts) == (
        "ListenerFunction", "ValueError", 2)
    assert (idle_cloud.clock.now() - before).total_seconds() >= 60
    # and the invocation record reached the destination queue
    messages = idle_cloud.client("sqs").receive_message(
        QueueUrl=idle_cloud.resources["ListenerFailures"], MaxNumberOfMessages=10,
    )["Messages"]
    (record,) = [json.loads(m["Body"]) for m in messages if marker in m["Body"]]
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 2
    assert record["responseContext"]["functionError"] == "Unhandled"
    assert record["responsePayload"]["errorType"] == "ValueError"
    assert record["requestPayload"]["detail"]["marker"] == marker
    # and it was not an EventBridge delivery failure: the event was delivered to Lambda
    assert not [f for f in idle_cloud.delivery_failures if marker in json.dumps(f.event)]


def test_an_undeliverable_event_goes_to_the_targets_dead_letter_queue(
    idle_cloud: LocalCloud,
) -> None:
    # Given a rule whose Lambda target does not exist, with a dead-letter queue
    sqs, events = idle_cloud.client("sqs"), idle_cloud.client("events")
    dlq_url = idle_cloud.resources["ListenerFunctionPingQueue"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    rule = f"orphan-{uuid.uuid4().hex[:8]}"
    rule_arn = events.put_rule(Name=rule, EventPattern=json.dumps(
        {"source": ["fixture.orphan"]}))["RuleArn"]
    # (SAM's queue policy lets only the listener's rule send; this rule gets its own grant.)
    sqs.set_queue_attributes(QueueUrl=dlq_url, Attributes={"Policy": json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"},
            "Action": "sqs:SendMessage", "Resource": dlq_arn,
            "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}}}]})})
    missing = "arn:aws:lambda:us-west-2:123456789012:function:no-such-function"
    events.put_targets(Rule=rule, Targets=[
        {"Id": "gone", "Arn": missing, "DeadLetterConfig": {"Arn": dlq_arn}}])
    marker = str(uuid.uuid4())

    # When an event matches it
    events.put_events(Entries=[{"Source": "fixture.orphan", "DetailType": "Orphan",
                                "Detail": json.dumps({"marker": marker})}])
    idle_cloud.wait_for_executions(timeout=30)

    # Then the delivery failed and the event is in the DLQ with EventBridge's attributes
    assert idle_cloud.delivery_failures[-1].error_code == "ResourceNotFoundException"
    messages = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10,
                                   MessageAttributeNames=["All"])["Messages"]
    (message,) = [m for m in messages if marker in m["Body"]]
    attributes = message["MessageAttributes"]
    assert attributes["ERROR_CODE"]["StringValue"] == "ResourceNotFoundException"
    assert attributes["RULE_ARN"]["StringValue"].endswith(f"rule/{rule}")
    assert attributes["TARGET_ARN"]["StringValue"] == missing


def test_execution_status_changes_are_emitted(idle_cloud: LocalCloud) -> None:
    # Given a queue that receives every Step Functions status event (moto delivers to SQS)
    sqs, events = idle_cloud.client("sqs"), idle_cloud.client("events")
    queue_url = sqs.create_queue(QueueName=f"status-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    rule = f"all-status-{uuid.uuid4().hex[:8]}"
    events.put_rule(Name=rule, EventPattern=json.dumps({
        "source": ["aws.states"], "detail-type": ["Step Functions Execution Status Change"],
        "detail": {"stateMachineArn": [idle_cloud.resources["RetryMachine"]]},
    }))
    events.put_targets(Rule=rule, Targets=[{"Id": "queue", "Arn": queue_arn}])

    # When an execution fails
    arn = idle_cloud.client("stepfunctions").start_execution(
        stateMachineArn=idle_cloud.resources["RetryMachine"],
        input=json.dumps({"key": str(uuid.uuid4()), "failures": 10}),
    )["executionArn"]
    idle_cloud.wait_for_executions(timeout=30)

    # Then RUNNING and FAILED events were put on the default bus
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    details = [json.loads(m["Body"])["detail"] for m in messages]
    by_status = {d["status"]: d for d in details if d["executionArn"] == arn}
    assert set(by_status) == {"RUNNING", "FAILED"}
    failed = by_status["FAILED"]
    assert failed["error"] == "TransientError"
    assert failed["stateMachineArn"] == idle_cloud.resources["RetryMachine"]
    assert isinstance(failed["startDate"], int)
    assert failed["stopDate"] >= failed["startDate"]
    assert json.loads(failed["input"])["failures"] == 10
    assert by_status["RUNNING"]["stopDate"] is None


def test_a_template_rule_on_status_changes_reaches_its_lambda_target(
    idle_cloud: LocalCloud,
) -> None:
    # The fixture's WaitMachineStatusRule sends the wait machine's status events to the listener.
    arn = idle_cloud.client("stepfunctions").start_execution(
        stateMachineArn=idle_cloud.resources["WaitMachine"],
        input=json.dumps({"until": "2000-01-01T00:00:00Z"}),
    )["executionArn"]
    idle_cloud.wait_for_executions(timeout=30)

    statuses = [e["detail"]["status"] for e in recorded(idle_cloud)
                if e.get("detail", {}).get("executionArn") == arn]
    assert sorted(statuses) == ["RUNNING", "SUCCEEDED"]
    succeeded = next(e for e in recorded(idle_cloud)
                     if e.get("detail", {}).get("executionArn") == arn
                     and e["detail"]["status"] == "SUCCEEDED")
    assert succeeded["source"] == "aws.states"
    assert succeeded["resources"] == [arn]
    assert json.loads(succeeded["detail"]["output"]) == {"until": "2000-01-01T00:00:00Z"}


def test_emit_event_acts_like_an_aws_service(idle_cloud: LocalCloud) -> None:
    marker = str(uuid.uuid4())

    idle_cloud.emit_event("fixture.test", "Ping", {"marker": marker})
    idle_cloud.wait_for_executions(timeout=30)

    assert [e for e in recorded(idle_cloud) if e.get("detail", {}).get("marker") == marker]
