"""The retries of every EventBridge target that calls hypd's API outlast a first request that
is still being served.

EventBridge waits 5 s for an API Gateway target and sends the request again; the repeat carries
the event's id as `Idempotency-Key`, and while the first request still runs (up to ApiFunction's
29 s timeout) the API answers it 429 `IdempotencyKeyInUse`, which EventBridge retries. With too
few retries they are all spent on 429s before the first answers, and a command that succeeded
lands in the dead-letter queue (docs/automation.md). AWS does not publish its back-off; this
counts with the local cloud's (hypd_local.apitarget: 1 s, doubling), each attempt taking its
5 s limit, and asks for retries past the idempotency claim's staleness (a first that died is
then run again by a retry).
"""

from __future__ import annotations

from typing import Any

import pytest

from hypd.idempotency.store import IN_PROGRESS
from hypd_local.apitarget import (
    API_TARGET_TIMEOUT_SECONDS,
    FIRST_BACKOFF_SECONDS,
    MAX_BACKOFF_SECONDS,
)
from hypd_local.template import read_template, resources_of_type
from tests.build.support import FUNCTION_TYPE, TEMPLATE

pytestmark = pytest.mark.build

TEMPLATE_DATA = read_template(TEMPLATE)


def api_targets() -> list[tuple[str, dict[str, Any]]]:
    """(rule, target) of every rule target whose ARN is one of hypd's API methods."""
    found = []
    for rule_id, rule in resources_of_type(TEMPLATE_DATA, "AWS::Events::Rule").items():
        for target in rule["Properties"].get("Targets", []):
            arn = target["Arn"]
            text = arn.get("Fn::Sub", "") if isinstance(arn, dict) else str(arn)
            if ":execute-api:" in text and "${HypdApi}" in text:
                found.append((rule_id, target))
    return found


def retries_last(attempts: int) -> float:
    """Seconds from the first attempt's start until the last retry is sent."""
    backoff, elapsed = FIRST_BACKOFF_SECONDS, API_TARGET_TIMEOUT_SECONDS
    for _ in range(attempts):
        elapsed += backoff + API_TARGET_TIMEOUT_SECONDS
        backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
    return elapsed


def test_the_template_has_api_targets_to_check() -> None:
    assert {rule for rule, _ in api_targets()} == {"RetryTemporaryFailuresRule",
                                                   "ScheduledScaleRule"}


@pytest.mark.parametrize(("rule", "target"), api_targets(),
                         ids=[rule for rule, _ in api_targets()])
def test_an_api_targets_retries_outlast_a_first_request_still_being_served(
        rule: str, target: dict[str, Any]) -> None:
    api = TEMPLATE_DATA["Resources"]["ApiFunction"]
    assert api["Type"] == FUNCTION_TYPE
    timeout = api["Properties"]["Timeout"]
    policy = target["RetryPolicy"]
    # The repeats carry the event's id, so a retry answers as the first did
    assert target["HttpParameters"]["HeaderParameters"] == {"Idempotency-Key": "$.id"}
    # and there are enough of them to outlast the first request and its claim
    last = retries_last(policy["MaximumRetryAttempts"])
    assert last > max(timeout, IN_PROGRESS.total_seconds()), (rule, last)
    assert policy["MaximumEventAgeInSeconds"] >= last
