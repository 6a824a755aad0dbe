"""The verify stage's judgement over nodes and the storage claim."""

from __future__ import annotations

from typing import Any

from hypd.create.verify import evaluate


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
