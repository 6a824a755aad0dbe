"""CloudWatch alarm notifications: an alarm that changes state publishes to its actions' topics
as ``cloudwatch.amazonaws.com``, with ``aws:SourceArn`` the alarm's ARN and
``aws:SourceAccount`` the account (CloudWatch user guide, "Using Amazon SNS topics": the topic
policy, and for an encrypted topic the key policy, must let CloudWatch). The local cloud keeps
no metrics, so a test fires an alarm itself (`LocalCloud.fire_alarm`); what a refused action
would leave on AWS is the alarm history's "Failed to execute action".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from hypd_local.iam.resource_policies import ResourcePolicies
from hypd_local.template_specs import AlarmSpec

CLOUDWATCH_PRINCIPAL = "cloudwatch.amazonaws.com"


@dataclass(frozen=True)
class AlarmAction:
    topic_arn: str
    refusal: str | None
    """Why the topic (or its key) refused CloudWatch; None when the notification went out."""


def fire(alarm: AlarmSpec, *, state: str, reason: str, region: str, account_id: str,
         policies: ResourcePolicies, publish: Callable[[str, str, str], None],
         now: str) -> list[AlarmAction]:
    """Notify each of the alarm's topics (once per topic) of its new ``state``;
    ``publish(topic_arn, subject, message)`` sends an allowed notification."""
    message = json.dumps({
        "AlarmName": alarm.name, "AlarmArn": alarm.arn, "NewStateValue": state,
        "NewStateReason": reason, "StateChangeTime": now, "Region": region,
        "AWSAccountId": account_id,
    })
    outcomes = []
    for topic_arn in dict.fromkeys(alarm.actions):
        refusal = policies.publish_refusal(topic_arn, CLOUDWATCH_PRINCIPAL,
                                           source_arn=alarm.arn)
        if refusal is None:
            publish(topic_arn, f'{state}: "{alarm.name}" in {region}'[:100], message)
        outcomes.append(AlarmAction(topic_arn, refusal))
    return outcomes
