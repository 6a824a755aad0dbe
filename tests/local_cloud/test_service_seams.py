"""The hand-offs between services, authorised as AWS authorises them (docs/emulator.md): each
test takes the grant a delivery needs out of a fixture template, and sees the delivery refused
as a real account would refuse it; the unchanged fixture is the proof the grant suffices."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hypd_local import LocalCloud
from hypd_local.apitarget import API_TARGET_TIMEOUT_SECONDS, TIMEOUT_ERROR
from hypd_local.clock import VirtualClock
from hypd_local.iam.resource_policies import ResourcePolicies, ServiceRequest
from hypd_local.template_specs import ResourcePolicySpec

from .conftest import FIXTURES
from .test_automation import dead_letters, put, requests, with_marker

START = datetime(2030, 6, 1, tzinfo=UTC)
Edit = Callable[[dict[str, Any]], None]


def running(template: str, edit: Edit | None = None) -> LocalCloud:
    return LocalCloud(FIXTURES / template, clock=VirtualClock(START, ticking=False),
                      template_edit=edit)


def without(logical_id: str) -> Edit:
    def edit(template: dict[str, Any]) -> None:
        del template["Resources"][logical_id]
    return edit


@pytest.fixture
def automation() -> Iterator[LocalCloud]:
    # One cloud per test: a process runs one local cloud at a time, and other tests here make
    # their own from edited templates.
    with running("automation.yaml") as cloud:
        yield cloud


# ------------------------------------------------------------------ API Gateway -> Lambda
def test_with_the_callers_credentials_a_rule_role_without_lambda_invoke_gets_a_500() -> None:
    def caller_credentials(template: dict[str, Any]) -> None:
        del template["Resources"]["CommandsApi"]["Properties"]["Auth"]["InvokeRole"]

    with running("automation.yaml", caller_credentials) as cloud:
        marker = f"tag-{uuid.uuid4().hex[:8]}"
        put(cloud, "Scale", {"tag": marker, "group": "workers", "command": {"count": 1}})
        cloud.wait_for_executions(timeout=30)

        # API Gateway called Lambda as the rule's role, which may only execute-api:Invoke:
        # the function never ran, every attempt was a 500, the event is a dead letter
        assert requests(cloud, with_marker(marker)) == []
        failure = cloud.delivery_failures[-1]
        assert failure.status == 500
        assert failure.exhausted is not None
        assert "Invalid permissions on Lambda function" in cloud.api_front.refusals[-1].log
        assert [m for m in dead_letters(cloud) if marker in m["body"]]


def test_without_invoke_role_none_the_integration_needs_the_lambda_permission() -> None:
    # A Lambda permission whose SourceArn names another API: API Gateway as itself is refused
    policies = ResourcePolicies([ResourcePolicySpec("P", ("fn:live",), {"Statement": [{
        "Effect": "Allow", "Principal": {"Service": "apigateway.amazonaws.com"},
        "Action": "lambda:InvokeFunction", "Resource": "fn:live",
        "Condition": {"ArnLike": {"AWS:SourceArn": "arn:aws:execute-api:r:1:other/*/GET/x"}}}]})],
        partition="aws", region="r", account_id="1")

    mine = ServiceRequest("apigateway.amazonaws.com", "lambda:InvokeFunction", "fn:live",
                          "arn:aws:execute-api:r:1:mine/v1/GET/x", "1")
    other = ServiceRequest("apigateway.amazonaws.com", "lambda:InvokeFunction", "fn:live",
                           "arn:aws:execute-api:r:1:other/v1/GET/x", "1")

    assert "no statement of its resource-based policy allows it" in str(policies.refusal(mine))
    assert policies.refusal(other) is None


# ------------------------------------------------------------------ EventBridge's 5-second limit
def test_an_api_answer_later_than_five_seconds_is_sent_again(automation: LocalCloud) -> None:
    # Given the command route answers 6 s late once (its handler runs, then the answer waits)
    marker = f"tag-{uuid.uuid4().hex[:8]}"
    automation.api_front.slow_answers("PATCH", f"/clusters/{marker}/instance-groups/*",
                                      API_TARGET_TIMEOUT_SECONDS + 1)
    before = automation.clock.now()

    put(automation, "Scale", {"tag": marker, "group": "workers", "command": {"count": 2}})
    automation.wait_for_executions(timeout=30)

    # Then EventBridge gave up waiting after 5 s and sent it again after its 1 s back-off: the
    # route ran twice, the second answer counted
    assert len(requests(automation, with_marker(marker))) == 2
    (delivered,) = [d for d in automation.delivery.delivered
                    if marker in json.dumps(d.payload) or d.attempts == 2][-1:]
    assert (delivered.status, delivered.attempts) == (202, 2)
    assert automation.clock.now() - before == timedelta(seconds=7)


def test_answers_always_later_than_five_seconds_end_in_the_dead_letter_queue(
        automation: LocalCloud) -> None:
    marker = f"tag-{uuid.uuid4().hex[:8]}"
    automation.api_front.slow_answers("PATCH", f"/clusters/{marker}/instance-groups/*", 30,
                                      times=None)

    put(automation, "Scale", {"tag": marker, "group": "workers", "command": {"count": 2}})
    automation.wait_for_executions(timeout=30)

    failure = automation.delivery_failures[-1]
    assert failure.error_code == TIMEOUT_ERROR
    assert failure.exhausted is not None
    (letter,) = [m for m in dead_letters(automation) if marker in m["body"]]
    assert letter["attributes"]["ERROR_CODE"] == TIMEOUT_ERROR


# ------------------------------------------------------------------ EventBridge -> SQS, Lambda
def test_a_dead_letter_queue_whose_policy_omits_eventbridge_loses_the_event() -> None:
    with running("automation.yaml", without("DeadLettersPolicy")) as cloud:
        put(cloud, "Status", {"code": "404"})
        cloud.wait_for_executions(timeout=30)

        assert cloud.delivery_failures[-1].status == 404
        assert dead_letters(cloud) == []
        ((queue, why),) = cloud.delivery.lost_dead_letters
        assert queue.endswith(":hypd-DeadLetters")
        assert "events.amazonaws.com to perform sqs:SendMessage" in why


def test_a_rule_without_the_functions_lambda_permission_cannot_invoke_it() -> None:
    with running("template.yaml", without("WaitMachineStatusRulePermission")) as cloud:
        cloud.client("stepfunctions").start_execution(
            stateMachineArn=cloud.resources["WaitMachine"],
            input=json.dumps({"until": "2000-01-01T00:00:00Z"}))
        cloud.wait_for_executions(timeout=30)

        refused = [f for f in cloud.delivery_failures if f.target_id == "Listener"]
        assert refused
        assert {f.error_code for f in refused} == {"AccessDeniedException"}
        assert "lambda:InvokeFunction" in refused[0].error_message


# ------------------------------------------------------------------ EventBridge -> SNS, KMS
KEY_POLICY_STATEMENT = {"Sid": "Events", "Effect": "Allow",
                        "Principal": {"Service": "events.amazonaws.com"},
                        "Action": ["kms:Decrypt", "kms:GenerateDataKey*"], "Resource": "*"}
TOPIC_STATEMENT = {"Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"},
                   "Action": "sns:Publish", "Resource": "topic",
                   "Condition": {"ArnEquals": {"aws:SourceArn": "rule"}}}


def publishing(key_statement: dict[str, Any], key: str = "k") -> ResourcePolicies:
    return ResourcePolicies(
        [ResourcePolicySpec("Topic", ("topic",), {"Statement": [TOPIC_STATEMENT]}),
         ResourcePolicySpec("Key", ("arn:aws:kms:r:1:key/k",), {"Statement": [key_statement]})],
        partition="aws", region="r", account_id="1", topic_keys={"topic": key})


def test_eventbridge_publishes_to_a_topic_under_a_key_that_grants_it_without_conditions() -> None:
    assert publishing(KEY_POLICY_STATEMENT).publish_refusal(
        "topic", "events.amazonaws.com", source_arn="rule") is None


def test_a_key_policy_conditioned_on_the_source_never_matches_eventbridge() -> None:
    conditioned = dict(KEY_POLICY_STATEMENT,
                       Condition={"StringEquals": {"aws:SourceAccount": "1"}})

    refusal = publishing(conditioned).publish_refusal("topic", "events.amazonaws.com",
                                                      source_arn="rule")

    assert refusal is not None
    assert refusal.startswith("KMS refused")
    assert "carries no aws:SourceArn / aws:SourceAccount" in refusal


def test_the_topic_policy_keeps_the_source_condition() -> None:
    refusal = publishing(KEY_POLICY_STATEMENT).publish_refusal(
        "topic", "events.amazonaws.com", source_arn="another-rule")
    assert refusal is not None
    assert "sns:Publish" in refusal


def test_the_aws_managed_sns_key_lets_no_service_publish() -> None:
    refusal = publishing(KEY_POLICY_STATEMENT, key="alias/aws/sns").publish_refusal(
        "topic", "events.amazonaws.com", source_arn="rule")
    assert refusal is not None
    assert "AWS managed key alias/aws/sns" in refusal


def test_an_explicit_deny_in_a_resource_policy_refuses() -> None:
    policies = ResourcePolicies([ResourcePolicySpec("Q", ("q",), {"Statement": [
        dict(TOPIC_STATEMENT, Action="sqs:SendMessage", Resource="q"),
        {"Effect": "Deny", "Principal": "*", "Action": "sqs:*", "Resource": "q"}]})],
        partition="aws", region="r", account_id="1")

    refusal = policies.for_source("events.amazonaws.com", "sqs:SendMessage", "q", "rule")

    assert refusal is not None
    assert "explicit deny" in refusal
