"""Continuous provisioning keeps trying: missing nodes arrive when capacity returns."""

from __future__ import annotations

from typing import Any

from hypd_local.clock import VirtualClock
from hypd_local.emulation import Emulation
from hypd_local.emulator.hyperpod import HyperPodDurations, HyperPodEmulator
from tests.emulator.test_hyperpod_support import (
    ACCOUNT,
    REGION,
    cluster_request,
    group,
    make,
)

EVENT = "SageMaker HyperPod Cluster Event"
D = HyperPodDurations()
TYPE, ZONE = "ml.g5.8xlarge", "us-west-2a"
CONTINUOUS: dict[str, Any] = {"NodeProvisioningMode": "Continuous"}


def statuses(api: Any, name: str = "hp1") -> list[str]:
    nodes = api.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]
    return sorted(n["InstanceStatus"]["Status"] for n in nodes)


def counts(api: Any, name: str = "hp1", group_name: str = "workers") -> tuple[int, int]:
    groups = api.describe_cluster(ClusterName=name)["InstanceGroups"]
    found = next(g for g in groups if g["InstanceGroupName"] == group_name)
    return found["CurrentCount"], found["TargetCount"]


def test_a_continuous_cluster_gets_its_nodes_when_capacity_returns() -> None:
    emu, api, clock, events = make()
    emu.insufficient_capacity(TYPE, ZONE)
    api.create_cluster(**cluster_request(groups=[group(count=3)], **CONTINUOUS))
    clock.advance(hours=1)
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"
    assert counts(api) == (0, 3)
    assert statuses(api) == []
    assert emu.next_due() is None  # nothing to wait for while there is no capacity
    errors = [e["EventDetails"] for e in events.of(EVENT)
              if e["EventDetails"]["EventLevel"] == "Error"]
    assert len(errors) == 1

    # capacity returns: the missing nodes launch at once, on the usual boot timeline
    back = clock.now()
    emu.insufficient_capacity(TYPE, ZONE, enabled=False)
    assert statuses(api) == ["Pending"] * 3
    assert counts(api) == (0, 3)
    assert emu.next_due() == back + D.node_boot  # waiting executions see the launches
    launched = [e["EventDetails"] for e in events.of(EVENT)
                if e["EventDetails"].get("InstanceId")]
    assert [e["Description"] for e in launched] == ["Instance provisioning started."] * 3
    assert all(e["EventTime"] == int(back.timestamp() * 1000) for e in launched)

    clock.advance(seconds=D.node_boot.total_seconds())
    assert statuses(api) == ["Running"] * 3
    assert counts(api) == (3, 3)
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"
    running = [e["EventDetails"] for e in events.of(EVENT)
               if e["EventDetails"]["Description"] == "Instance is running and joined the cluster."]
    assert len(running) == 3
    assert emu.next_due() is None

    # the target is reached: nothing more launches on later ticks
    clock.advance(hours=2)
    emu.tick()
    assert statuses(api) == ["Running"] * 3


def test_a_cluster_that_is_not_continuous_is_unaffected() -> None:
    emu, api, clock, _events = make()
    emu.insufficient_capacity(TYPE, ZONE)
    api.create_cluster(**cluster_request())
    clock.advance(hours=1)
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "Failed"

    emu.insufficient_capacity(TYPE, ZONE, enabled=False)
    assert emu.next_due() is None
    clock.advance(hours=1)
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["ClusterStatus"] == "Failed"
    assert "InsufficientInstanceCapacity" in desc["FailureMessage"]
    assert statuses(api) == []


def test_only_groups_whose_capacity_returned_launch() -> None:
    emu, api, clock, _events = make()
    emu.insufficient_capacity(TYPE, ZONE)
    emu.insufficient_capacity("ml.m5.xlarge", ZONE)
    api.create_cluster(**cluster_request(groups=[
        group(count=2), group("cpu", count=1, itype="ml.m5.xlarge"),
        group("spare", count=1, itype="ml.c5.xlarge")], **CONTINUOUS))
    clock.advance(hours=1)
    assert (counts(api), counts(api, group_name="cpu"), counts(api, group_name="spare")) == (
        (0, 2), (0, 1), (1, 1))

    emu.insufficient_capacity(TYPE, ZONE, enabled=False)
    clock.advance(seconds=D.node_boot.total_seconds())
    assert (counts(api), counts(api, group_name="cpu"), counts(api, group_name="spare")) == (
        (2, 2), (0, 1), (1, 1))

    emu.insufficient_capacity("ml.m5.xlarge", ZONE, enabled=False)
    clock.advance(seconds=D.node_boot.total_seconds())
    assert counts(api, group_name="cpu") == (1, 1)
    assert len(statuses(api)) == 4


def test_a_scale_up_short_of_capacity_completes_later() -> None:
    emu, api, clock, _events = make()
    api.create_cluster(**cluster_request(groups=[group(count=2)], **CONTINUOUS))
    clock.advance(hours=1)
    emu.insufficient_capacity(TYPE, ZONE)
    api.update_cluster(ClusterName="hp1", InstanceGroups=[group(count=5)])
    clock.advance(hours=1)
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"
    assert counts(api) == (2, 5)

    emu.insufficient_capacity(TYPE, ZONE, enabled=False)
    assert statuses(api) == ["Pending"] * 3 + ["Running"] * 2
    clock.advance(seconds=D.node_boot.total_seconds())
    assert counts(api) == (5, 5)


def test_repairs_and_deletions_do_not_launch_extra_nodes() -> None:
    emu, api, clock, _events = make()
    api.create_cluster(**cluster_request(groups=[group(count=3)], **CONTINUOUS))
    clock.advance(hours=1)
    nodes = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]
    emu.make_node_unhealthy("hp1", nodes[0]["InstanceId"], action="Replace")
    api.batch_delete_cluster_nodes(ClusterName="hp1", NodeIds=[nodes[1]["InstanceId"]])
    for _ in range(6):
        clock.advance(minutes=10)
        emu.tick()
    assert counts(api) == (2, 2)
    assert statuses(api) == ["Running"] * 2

    # a cluster being deleted does not get nodes back either
    emu.insufficient_capacity(TYPE, ZONE)
    api.create_cluster(**cluster_request("hp2", groups=[group(count=2)], **CONTINUOUS))
    clock.advance(hours=1)
    api.delete_cluster(ClusterName="hp2")
    emu.insufficient_capacity(TYPE, ZONE, enabled=False)
    assert statuses(api, "hp2") == []


def test_the_admin_route_moves_the_schedule() -> None:
    clock = VirtualClock(ticking=False)
    emulation = Emulation(clock=clock, emit=lambda *_a, **_k: None, account_id=ACCOUNT,
                          region=REGION)
    emulation.hyperpod = HyperPodEmulator(clock, lambda *_a: None, ACCOUNT, REGION)
    route = emulation.admin_routes()[("POST", "/_local/faults/hyperpod/insufficient-capacity")]
    body = {"instanceType": TYPE, "availabilityZone": ZONE}
    assert route(body)[0] == 201
    emulation.hyperpod.create_cluster(cluster_request(**CONTINUOUS))
    clock.advance(3600)
    emulation.check_schedule()
    assert emulation.next_due() is None
    version = emulation.schedule_version

    assert route({**body, "enabled": False})[0] == 201
    assert emulation.next_due() == clock.now() + D.node_boot
    assert emulation.schedule_version == version + 1  # token waits wake up and see it
