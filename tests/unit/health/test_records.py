"""Node and cluster health records: newer wins, duplicates and stale events change nothing."""

from __future__ import annotations

import functools
from typing import Any

from hypd.aws.dynamodb import Table
from hypd.health.records import (
    EVENTS_MAX,
    HISTORY_MAX,
    AddonHealth,
    ClusterEvent,
    HealthEntry,
    HealthStore,
    Outcome,
    Taken,
    TakenAction,
    keep_addon,
    keep_cluster_event,
    keep_status,
)
from tests.unit.support import TABLE_NAME, SerializedClient, run_concurrently


def entry(n: int, status: str = "Unhealthy", event_id: str | None = None) -> HealthEntry:
    return HealthEntry(event_id=event_id or f"e{n:03d}", time=f"2026-01-15T10:{n // 60:02d}:"
                       f"{n % 60:02d}.000Z", status=status, reason=f"reason {n}")


def test_the_first_event_of_a_node_is_its_latest(table: Table) -> None:
    store = HealthStore(table)
    node, outcome, previous = store.record_node("train", "i-1", entry(1), instance_group="gpu")
    assert outcome is Outcome.LATEST
    assert previous is None
    assert (node.latest, node.history, node.instance_group) == (entry(1), [entry(1)], "gpu")
    assert store.node("train", "i-1") == node


def test_an_older_event_enters_the_history_without_changing_the_latest(table: Table) -> None:
    store = HealthStore(table)
    store.record_node("train", "i-1", entry(5, "Healthy"))
    node, outcome, _previous = store.record_node("train", "i-1", entry(3, "Unhealthy"))
    assert outcome is Outcome.OLDER
    assert node.latest.status == "Healthy"
    assert [e.event_id for e in node.history] == ["e005", "e003"]


def test_a_duplicate_changes_nothing(table: Table) -> None:
    store = HealthStore(table)
    store.record_node("train", "i-1", entry(1))
    before = store.node("train", "i-1")
    node, outcome, _previous = store.record_node("train", "i-1", entry(1))
    assert outcome is Outcome.DUPLICATE
    assert node == before


def test_events_of_one_second_are_ordered_by_id(table: Table) -> None:
    store = HealthStore(table)
    store.record_node("train", "i-1", entry(1, "Healthy", event_id="b"))
    recorded = store.record_node("train", "i-1", entry(1, "Unhealthy", event_id="a"))
    assert recorded.outcome is Outcome.OLDER
    assert recorded.previous is not None
    assert recorded.previous.status == "Healthy"


def test_the_history_is_bounded_and_an_event_older_than_all_of_it_expires(
    table: Table,
) -> None:
    store = HealthStore(table)
    for n in range(1, HISTORY_MAX + 11):
        store.record_node("train", "i-1", entry(n))
    node = store.node("train", "i-1")
    assert node is not None
    assert len(node.history) == HISTORY_MAX
    assert node.latest.event_id == f"e{HISTORY_MAX + 10:03d}"
    _node, outcome, _previous = store.record_node("train", "i-1", entry(0))
    assert outcome is Outcome.EXPIRED


def test_what_was_taken_is_recorded_on_its_entry(table: Table) -> None:
    store = HealthStore(table)
    store.record_node("train", "i-1", entry(1))
    store.record_node("train", "i-1", entry(2))
    taken = TakenAction(by=Taken.HYPD, action="replace", operation_id="op-1")
    node = store.set_taken("train", "i-1", "e001", taken)
    assert node is not None
    assert node.latest.taken is None
    assert node.history[1].taken == taken
    assert store.set_taken("train", "i-9", "e001", taken) is None


def test_nodes_lists_every_node_of_one_cluster(table: Table) -> None:
    store = HealthStore(table)
    store.record_node("train", "i-1", entry(1))
    store.record_node("train", "i-2", entry(1))
    store.record_node("trainx", "i-3", entry(1))  # a tag that extends another
    assert sorted(n.node_id for n in store.nodes("train")) == ["i-1", "i-2"]


def test_concurrent_events_of_one_node_all_land(dynamodb_client: Any) -> None:
    store = HealthStore(Table(SerializedClient(dynamodb_client), TABLE_NAME))
    run_concurrently([functools.partial(store.record_node, "train", "i-1", entry(n))
                      for n in range(1, 21)])
    node = store.node("train", "i-1")
    assert node is not None
    assert len(node.history) == 20
    assert node.latest.event_id == "e020"


def cluster_event(n: int, level: str = "Error") -> ClusterEvent:
    return ClusterEvent(event_id=f"c{n:03d}", time=f"2026-01-15T10:00:{n:02d}.000Z",
                        level=level, description=f"event {n}")


def test_cluster_events_are_kept_newest_first_bounded_and_once(table: Table) -> None:
    store = HealthStore(table)
    for n in range(EVENTS_MAX + 5):
        store.update_cluster("train", functools.partial(keep_cluster_event,
                                                        event=cluster_event(n)))
    health = store.update_cluster("train", lambda h: keep_cluster_event(h, cluster_event(30)))
    assert len(health.events) == EVENTS_MAX
    assert health.events[0].event_id == "c030"
    assert keep_cluster_event(health, cluster_event(30)) is None


def test_the_newest_state_change_wins(table: Table) -> None:
    store = HealthStore(table)
    store.update_cluster("train", lambda h: keep_status(h, "Updating", "T2", "b", None))
    health = store.update_cluster(
        "train", lambda h: keep_status(h, "InService", "T1", "a", None))
    assert health.status == "Updating"
    health = store.update_cluster(
        "train", lambda h: keep_status(h, "Failed", "T3", "c", "no capacity"))
    assert (health.status, health.failure_message) == ("Failed", "no capacity")
    assert store.cluster("train").status == "Failed"
    assert store.cluster("other").status is None


def test_an_add_on_keeps_its_newest_health() -> None:
    from hypd.health.records import ClusterHealth

    degraded = AddonHealth(status="DEGRADED", event="EKS Addon Health Degraded", time="T2")
    restored = AddonHealth(status="ACTIVE", event="EKS Addon Health Restored", time="T1")
    health = keep_addon(ClusterHealth(tag="train"), "cert-manager", degraded)
    assert health is not None
    assert keep_addon(health, "cert-manager", restored) is None  # older
    assert keep_addon(health, "cert-manager", degraded) is None  # the same
