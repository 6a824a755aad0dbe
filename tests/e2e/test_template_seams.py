"""The template's own service-to-service grants, judged by the local cloud as a real account
judges them (docs/emulator.md): EventBridge publishing to the KMS-encrypted failed-operations
topic, CloudWatch notifying the alarms topic. The template as it was (a key policy statement
conditioned on aws:SourceAccount for EventBridge, no topic policy naming CloudWatch) fails."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hypd_cli.local import local_parameters
from hypd_local import LocalCloud
from tests.conftest import ROOT

TEMPLATE = ROOT / "template.yaml"
ALARMS = ("FailedExecutionsAlarm", "DeadLetterQueueAlarm", "LambdaErrorsAlarm",
          "LambdaThrottlesAlarm")


def old_template(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    for statement in resources["AlarmsKey"]["Properties"]["KeyPolicy"]["Statement"]:
        if statement["Sid"] == "StackRulesPublish":
            statement["Condition"] = {"StringEquals": {"aws:SourceAccount": {
                "Ref": "AWS::AccountId"}}}
    del resources["AlarmsTopicPolicy"]


def started(edit: Any = None) -> Iterator[LocalCloud]:
    parameters = local_parameters(TEMPLATE) | {"FailedOperationsTopic": "true"}
    with LocalCloud(TEMPLATE, parameters=parameters, template_edit=edit) as cloud:
        yield cloud


@pytest.fixture
def fixed() -> Iterator[LocalCloud]:
    yield from started()


@pytest.fixture
def old() -> Iterator[LocalCloud]:
    yield from started(old_template)


def fail_an_operation(cloud: LocalCloud) -> None:
    cloud.emit_event("hypd", "hypd Operation State Change", {
        "operationId": "op-1", "kind": "create-cluster", "clusterTag": "e2e", "status": "FAILED",
        "stage": "eks", "error": {"code": "ThrottlingException", "message": "Rate exceeded"}})
    cloud.wait_for_executions(timeout=30)


def topic_deliveries(cloud: LocalCloud) -> tuple[list[Any], list[Any]]:
    topic = cloud.resources["FailedOperationsNotifications"]
    return ([d for d in cloud.delivery.delivered if d.target_arn == topic],
            [f for f in cloud.delivery.failures if f.target_arn == topic])


def test_eventbridge_publishes_to_the_encrypted_failed_operations_topic(
        fixed: LocalCloud) -> None:
    fail_an_operation(fixed)
    delivered, failed = topic_deliveries(fixed)
    assert len(delivered) == 1
    assert failed == []


def test_a_key_policy_conditioned_on_the_source_account_stops_eventbridge(
        old: LocalCloud) -> None:
    fail_an_operation(old)
    delivered, (failure,) = topic_deliveries(old)
    assert delivered == []
    assert failure.error_code == "AccessDeniedException"
    assert failure.error_message.startswith("KMS refused")
    assert "events.amazonaws.com" in failure.error_message


def test_each_alarm_notifies_the_alarms_topic_and_no_other_stacks_alarm_may(
        fixed: LocalCloud) -> None:
    for alarm in ALARMS:
        (action,) = fixed.fire_alarm(alarm)
        assert action.topic_arn == fixed.resources["AlarmsTopic"]
        assert action.refusal is None, alarm

    # The topic and key policies name the stack's alarms (alarm:<stack>-*) only
    refusal = fixed.resource_policies.publish_refusal(
        fixed.resources["AlarmsTopic"], "cloudwatch.amazonaws.com",
        source_arn=f"arn:aws:cloudwatch:{fixed.region}:{fixed.account_id}:alarm:other-alarm")
    assert refusal is not None


def test_without_a_topic_policy_naming_cloudwatch_the_alarms_reach_nobody(old: LocalCloud) -> None:
    (action,) = old.fire_alarm("DeadLetterQueueAlarm")
    assert action.refusal is not None
    assert "cloudwatch.amazonaws.com is not authorized to perform sns:Publish" in action.refusal
