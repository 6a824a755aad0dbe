"""The repair budget: at most N repairs per cluster per hour, one per node per cool-down,
exactly, under concurrent reservations."""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

import pytest

from hypd import clock
from hypd.aws.dynamodb import Table
from hypd.health.budget import Refusal, Repair, RepairBudget
from hypd.health.policy import HealthPolicy
from tests.unit.support import START, TABLE_NAME, FakeClock, SerializedClient, run_concurrently

POLICY = HealthPolicy(action="replace", max_actions_per_hour=3, node_cooldown_minutes=30)


def repair(node: str, op: str, at: Any = START) -> Repair:
    return Repair(at=clock.isoformat(at), node_id=node, action="replace", operation_id=op)


def test_the_rate_limit_holds_over_a_sliding_hour(table: Table) -> None:
    budget = RepairBudget(table)
    for n in range(3):
        at = START + timedelta(minutes=10 * n)
        assert budget.reserve("train", repair(f"i-{n}", f"op-{n}", at), POLICY, at) is None
    at = START + timedelta(minutes=59)
    assert budget.reserve("train", repair("i-9", "op-9", at), POLICY, at) is Refusal.RATE_LIMIT
    # the first repair leaves the window an hour after it started
    at = START + timedelta(minutes=60, seconds=1)
    assert budget.reserve("train", repair("i-9", "op-9", at), POLICY, at) is None
    at = START + timedelta(minutes=61)
    assert budget.reserve("train", repair("i-8", "op-8", at), POLICY, at) is Refusal.RATE_LIMIT


def test_one_cluster_s_repairs_do_not_count_against_another(table: Table) -> None:
    budget = RepairBudget(table)
    for n in range(3):
        assert budget.reserve("train", repair(f"i-{n}", f"op-{n}"), POLICY, START) is None
    assert budget.reserve("infer", repair("i-0", "op-x"), POLICY, START) is None


def test_a_node_cools_down(table: Table) -> None:
    budget = RepairBudget(table)
    assert budget.reserve("train", repair("i-1", "op-1"), POLICY, START) is None
    at = START + timedelta(minutes=29)
    assert budget.reserve("train", repair("i-1", "op-2", at), POLICY, at) is Refusal.COOLDOWN
    at = START + timedelta(minutes=30, seconds=1)
    assert budget.reserve("train", repair("i-1", "op-3", at), POLICY, at) is None


def test_a_refused_cool_down_takes_no_slot(table: Table) -> None:
    budget = RepairBudget(table)
    assert budget.reserve("train", repair("i-1", "op-1"), POLICY, START) is None
    for n in range(5):
        assert budget.reserve("train", repair("i-1", f"op-r{n}"), POLICY, START) is (
            Refusal.COOLDOWN)
    assert budget.reserve("train", repair("i-2", "op-2"), POLICY, START) is None
    assert budget.reserve("train", repair("i-3", "op-3"), POLICY, START) is None


def test_release_gives_back_the_slot_and_the_cool_down(table: Table) -> None:
    budget = RepairBudget(table)
    first = repair("i-1", "op-1")
    assert budget.reserve("train", first, POLICY, START) is None
    budget.release("train", first)
    assert budget.reserve("train", repair("i-1", "op-2"), POLICY, START) is None
    # releasing a reservation that is not the node's latest keeps the latest's cool-down
    budget.release("train", first)
    assert budget.reserve("train", repair("i-1", "op-3"), POLICY, START) is Refusal.COOLDOWN


@pytest.mark.parametrize("nodes", [1, 40])
def test_concurrent_reservations_never_exceed_the_limits(
    dynamodb_client: Any, fixed_clock: FakeClock, nodes: int
) -> None:
    budget = RepairBudget(Table(SerializedClient(dynamodb_client), TABLE_NAME))

    results = run_concurrently([
        functools.partial(budget.reserve, "train", repair(f"i-{n % nodes}", f"op-{n}"), POLICY,
                          START)
        for n in range(120)
    ])

    granted = results.count(None)
    # one node: its cool-down admits one; many nodes: the hour admits maxActionsPerHour
    assert granted == min(nodes, POLICY.max_actions_per_hour)
    assert len(results) == 120
