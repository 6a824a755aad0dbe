"""The verify stage's judgement over nodes and the storage claim."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypd.capacity import verify as capacity_verify
from hypd.create.verify import VERIFY_TIMEOUT, evaluate
from hypd.instance_groups.nodes import (
    DEEP_HEALTH_CHECK_ALLOWANCE,
    DEEP_HEALTH_CHECKS,
    verification_timeout,
)


def node(
    name: str,
    group: str | None,
    *,
    ready: bool = True,
    health: str = "Schedulable",
    cordoned: bool = False,
) -> dict[str, Any]:
    labels = {"sagemaker.amazonaws.com/node-health-status": health}
    if group:
        labels["sagemaker.amazonaws.com/instance-group-name"] = group
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


BOUND = {"status": {"phase": "Bound"}}


def test_all_nodes_schedulable_and_claim_bound_is_ready() -> None:
    result = evaluate([node("a", "gpu"), node("b", "gpu"), node("x", None)], {"gpu": 2}, BOUND)

    assert result.ready
    assert [n.name for n in result.nodes] == ["a", "b"]
    assert result.problems == []


def test_missing_unready_cordoned_and_unhealthy_nodes_are_named() -> None:
    nodes = [
        node("a", "gpu", ready=False),
        node("b", "gpu", cordoned=True),
        node("c", "gpu", health="UnschedulablePendingReplacement"),
    ]
    result = evaluate(nodes, {"gpu": 4}, BOUND)

    assert not result.ready
    assert "group gpu: 3 of 4 nodes joined" in result.problems
    assert any("0 of 4 nodes schedulable" in p and "a (ready=False" in p for p in result.problems)


def test_claim_must_exist_and_be_bound() -> None:
    assert evaluate([node("a", "g")], {"g": 1}, None).problems == [
        "the storage claim does not exist"
    ]
    pending = evaluate([node("a", "g")], {"g": 1}, {"status": {"phase": "Pending"}})
    assert pending.problems == ["the storage claim is Pending, not Bound"]
    assert pending.claim_phase == "Pending"


def test_workloads_not_rolled_out_are_problems() -> None:
    result = evaluate([node("a", "g")], {"g": 1}, BOUND,
                      rollout=["DaemonSet aws-hyperpod/agent: 0/1 available"])

    assert not result.ready
    assert result.problems == ["dependency chart: DaemonSet aws-hyperpod/agent: 0/1 available"]


def test_deep_health_checks_extend_the_verify_timeout() -> None:
    # Given the create's usual 30 minutes / Then a deep-health-check cluster gets 2 h more,
    # which covers AWS's 60-90 minutes of deep health checks
    assert verification_timeout(VERIFY_TIMEOUT, deep_health_checks=False) == VERIFY_TIMEOUT
    assert verification_timeout(VERIFY_TIMEOUT, deep_health_checks=True) == (
        VERIFY_TIMEOUT + DEEP_HEALTH_CHECK_ALLOWANCE
    )
    assert timedelta(minutes=90) < DEEP_HEALTH_CHECK_ALLOWANCE
    # And the capacity operations use the same rule, not a copy of it
    assert capacity_verify.verification_timeout is verification_timeout
    assert capacity_verify.DEEP_HEALTH_CHECKS is DEEP_HEALTH_CHECKS
