"""The health policy: what hypd does about a recommended repair."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from hypd.aws.dynamodb import Table
from hypd.health.events import HealthSummary
from hypd.health.policy import HealthPolicy, PolicyStore, decide


def summary(status: str = "Unhealthy", action: str | None = "None",
            recommendation: str | None = "Please Replace the Faulty Node.") -> HealthSummary:
    return HealthSummary(health_status=status, repair_action=action,
                         recommendation=recommendation)


REBOOT = "Please Reboot the Faulty Node."


@pytest.mark.parametrize(
    ("policy", "event", "repair", "reason"),
    [
        ("notify", summary(), None, "policy"),
        ("notify", summary(recommendation=REBOOT), None, "policy"),
        ("reboot", summary(recommendation=REBOOT), "reboot", None),
        ("reboot", summary(), None, "policy"),  # a ceiling: no replacement
        ("replace", summary(), "replace", None),
        ("replace", summary(recommendation=REBOOT), "reboot", None),  # follows HyperPod
        ("replace", summary(status="Healthy"), None, "healthy"),
        ("replace", summary(action="Replace"), None, "hyperpod"),
        ("replace", summary(recommendation="Check the node."), None, "not-recommended"),
    ],
)
def test_decide(policy: str, event: HealthSummary, repair: str | None,
                reason: str | None) -> None:
    decision = decide(HealthPolicy.model_validate({"action": policy}), event)
    assert (decision.repair, decision.reason) == (repair, reason)


def test_the_default_policy_only_notifies_with_its_limits(table: Table) -> None:
    store = PolicyStore(table)
    assert store.find("train") is None
    policy = store.get("train")
    assert (policy.action, policy.max_actions_per_hour, policy.node_cooldown_minutes) == (
        "notify", 2, 60)


def test_a_put_policy_replaces_the_last(table: Table) -> None:
    store = PolicyStore(table)
    store.put("train", HealthPolicy(action="replace", max_actions_per_hour=5))
    store.put("train", HealthPolicy(action="reboot"))
    assert store.get("train") == HealthPolicy(action="reboot")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "terminate"}, "action"),
        ({"maxActionsPerHour": 0}, "maxActionsPerHour"),
        ({"nodeCooldownMinutes": 0}, "nodeCooldownMinutes"),
        ({"nodeCooldownMinutes": 20000}, "nodeCooldownMinutes"),
        ({"cooldown": 5}, "cooldown"),
    ],
)
def test_a_bad_policy_names_its_field(body: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as raised:
        HealthPolicy.model_validate(body)
    assert field in str(raised.value)
