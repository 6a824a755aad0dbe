"""ListClusterEvents and DescribeClusterEvent answer from the cluster events emitted so far."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from hypd_local.emulator.errors import ResourceNotFound
from hypd_local.emulator.hyperpod import HyperPodDurations
from tests.emulator.test_hyperpod_support import START, cluster_request, group, make

EVENT = "SageMaker HyperPod Cluster Event"
D = HyperPodDurations()
CONTINUOUS: dict[str, Any] = {"NodeProvisioningMode": "Continuous"}


def two_groups_one_short() -> tuple[Any, Any, Any, Any]:
    """A continuous cluster whose `workers` get 2 nodes and whose `gpu` group has no capacity."""
    emu, api, clock, events = make()
    emu.insufficient_capacity("ml.p5.48xlarge", "us-west-2a")
    api.create_cluster(**cluster_request(groups=[group(count=2),
                                                 group("gpu", 1, "ml.p5.48xlarge")],
                                         **CONTINUOUS))
    return emu, api, clock, events


def listed(api: Any, **filters: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = api.list_cluster_events(ClusterName="hp1", **filters)["Events"]
    return found


def test_only_events_that_came_due_are_listed_newest_first() -> None:
    _emu, api, clock, events = two_groups_one_short()
    started = listed(api)
    assert [e["Description"] for e in started] == ["Instance provisioning started."] * 2

    clock.advance(hours=1)

    everything = listed(api)
    emitted = [e["EventDetails"] for e in events.of(EVENT)]
    assert len(everything) == len(emitted) == 5  # 2 x Pending, 2 x Running, 1 x capacity error
    times = [e["EventTime"] for e in everything]
    assert times == sorted(times, reverse=True)  # Descending is the default
    assert {e["EventId"] for e in everything} == {e["EventId"] for e in emitted}
    oldest_first = listed(api, SortOrder="Ascending", SortBy="EventTime")
    assert [e["EventTime"] for e in oldest_first] == sorted(times)


def test_the_capacity_error_is_an_instance_group_event() -> None:
    _emu, api, clock, _events = two_groups_one_short()
    clock.advance(hours=1)

    (error,) = listed(api, ResourceType="InstanceGroup")

    assert error["EventLevel"] == "Error"
    assert error["InstanceGroupName"] == "gpu"
    assert "InsufficientInstanceCapacity" in error["Description"]
    assert error["EventTime"] == START + D.capacity_failure
    assert "EventDetails" not in error  # a summary
    detail = api.describe_cluster_event(ClusterName="hp1", EventId=error["EventId"])
    scaling = detail["EventDetails"]["EventDetails"]["EventMetadata"]["InstanceGroupScaling"]
    assert (scaling["InstanceCount"], scaling["TargetCount"]) == (0, 1)


def test_filters_by_group_node_and_time() -> None:
    _emu, api, clock, _events = two_groups_one_short()
    clock.advance(hours=1)
    node_id = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"][0]["InstanceId"]

    of_node = listed(api, NodeId=node_id)
    assert [e["Description"] for e in of_node] == [
        "Instance is running and joined the cluster.", "Instance provisioning started."]
    assert {e["ResourceType"] for e in of_node} == {"Instance"}
    assert len(listed(api, InstanceGroupName="workers")) == 4
    assert len(listed(api, InstanceGroupName="gpu")) == 1
    booted = START + D.node_boot
    assert len(listed(api, EventTimeAfter=START)) == 3  # strictly after: not the launches
    assert len(listed(api, EventTimeBefore=booted)) == 3  # strictly before: not the Running ones
    assert listed(api, EventTimeAfter=booted, EventTimeBefore=booted + timedelta(hours=1)) == []
    assert listed(api, ResourceType="Cluster") == []


def test_pages_follow_next_token() -> None:
    _emu, api, clock, _events = two_groups_one_short()
    clock.advance(hours=1)

    first = api.list_cluster_events(ClusterName="hp1", MaxResults=2)
    second = api.list_cluster_events(ClusterName="hp1", MaxResults=2, NextToken=first["NextToken"])
    third = api.list_cluster_events(ClusterName="hp1", MaxResults=2, NextToken=second["NextToken"])

    pages = [first["Events"], second["Events"], third["Events"]]
    assert [len(p) for p in pages] == [2, 2, 1]
    assert "NextToken" not in third
    assert [e["EventId"] for p in pages for e in p] == [e["EventId"] for e in listed(api)]


def test_unknown_cluster_and_unknown_event_are_resource_not_found() -> None:
    _emu, api, _clock, _events = two_groups_one_short()
    with pytest.raises(ResourceNotFound):
        api.list_cluster_events(ClusterName="missing")
    with pytest.raises(ResourceNotFound):
        api.describe_cluster_event(ClusterName="missing",
                                   EventId="00000000-0000-0000-0000-000000000000")
    with pytest.raises(ResourceNotFound, match="Event"):
        api.describe_cluster_event(ClusterName="hp1",
                                   EventId="00000000-0000-0000-0000-000000000000")


def test_a_cluster_that_is_not_continuous_lists_no_events() -> None:
    _emu, api, clock, _events = make()
    api.create_cluster(**cluster_request())
    clock.advance(hours=1)
    assert listed(api) == []


# --- ticks at one time ------------------------------------------------------------------------

def test_reads_change_no_revision_and_a_change_is_ticked_at_the_same_time() -> None:
    emu, api, clock, events = two_groups_one_short()
    before = emu.revision
    api.describe_cluster(ClusterName="hp1")
    api.list_cluster_nodes(ClusterName="hp1")
    assert emu.revision == before  # reads: the next tick at this time has nothing to do

    clock.advance(hours=1)
    api.list_cluster_nodes(ClusterName="hp1")
    emitted = len(events.of(EVENT))
    # capacity returns with the clock standing still: the fault hook is a change, so the
    # missing node launches at once (its Pending event is emitted in this same instant)
    emu.insufficient_capacity("ml.p5.48xlarge", "us-west-2a", enabled=False)
    assert emu.revision > before
    assert len(events.of(EVENT)) == emitted + 1
    nodes = api.list_cluster_nodes(ClusterName="hp1", InstanceGroupNameContains="gpu")
    assert [n["InstanceStatus"]["Status"] for n in nodes["ClusterNodeSummaries"]] == ["Pending"]


def test_a_change_at_the_same_time_is_seen_by_the_next_read() -> None:
    emu, api, _clock, events = two_groups_one_short()
    api.list_cluster_nodes(ClusterName="hp1")
    node = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"][0]["InstanceId"]
    # an operation (a fault hook, here) that changes the cluster without the clock moving
    emu.make_node_unhealthy("hp1", node, "GPU health check failed", "Reboot")
    detail = api.describe_cluster_node(ClusterName="hp1", NodeId=node)["NodeDetails"]
    assert detail["InstanceStatus"]["Status"] == "Failure"
    (health,) = events.of("SageMaker HyperPod Cluster Node Health Event")  # in this instant
    assert health["InstanceId"] == node
