"""``next_due()``: when the emulators' next scheduled change happens (token waits jump to it)."""

from __future__ import annotations

from datetime import datetime, timedelta

from hypd_local.clock import VirtualClock
from hypd_local.emulation import Emulation
from hypd_local.emulator.eks import EksDurations, EksEmulator
from hypd_local.emulator.hyperpod import HyperPodDurations
from tests.emulator.test_eks import ACCOUNT, REGION, create
from tests.emulator.test_eks import Events as EksEvents
from tests.emulator.test_eks import FakeClock as EksClock
from tests.emulator.test_hyperpod_support import cluster_request, make

D = HyperPodDurations()


def test_hyperpod_next_due_walks_the_creation_steps_then_is_none() -> None:
    emulator, api, clock, _events = make()
    assert emulator.next_due() is None  # training plans change by the clock alone: not counted

    start = clock.now()
    api.create_cluster(**cluster_request())
    assert emulator.next_due() == start + D.node_boot  # nodes Pending -> Running

    clock.advance(seconds=D.node_boot.total_seconds())
    # a change at exactly "now" is no longer in the future
    assert emulator.next_due() == start + D.cluster_create

    clock.advance(seconds=(D.cluster_create - D.node_boot).total_seconds() - 1)
    assert emulator.next_due() == start + D.cluster_create
    clock.advance(seconds=1)
    assert emulator.next_due() is None


def test_hyperpod_next_due_sees_repairs_and_deletions() -> None:
    emulator, api, clock, _events = make()
    api.create_cluster(**cluster_request())
    clock.advance(hours=1)
    node = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"][0]["InstanceId"]
    now = clock.now()

    emulator.make_node_unhealthy("hp1", node, "GPU health check failed", "Reboot")
    assert emulator.next_due() == now + D.auto_repair_start

    clock.advance(hours=1)
    assert emulator.next_due() is None
    api.delete_cluster(ClusterName="hp1")
    assert emulator.next_due() == clock.now() + D.node_terminate  # nodes go first


def test_eks_next_due_is_the_earliest_future_timer() -> None:
    clock = EksClock()
    emu = EksEmulator(clock, EksEvents(), ACCOUNT, REGION)
    assert emu.next_due() is None
    start = clock.now()

    create(emu, "ml")
    active_at = start + timedelta(seconds=EksDurations().cluster_create("ml"))
    assert emu.next_due() == active_at

    clock.advance((active_at - start).total_seconds())
    emu.tick()
    assert emu.next_due() is None


class _Scheduled:
    def __init__(self, due: datetime | None) -> None:
        self.due = due

    def next_due(self) -> datetime | None:
        return self.due


def test_emulation_next_due_is_the_earlier_of_both_and_changes_bump_the_version() -> None:
    clock = VirtualClock(ticking=False)
    emulation = Emulation(clock=clock, emit=lambda *_a, **_k: None, account_id=ACCOUNT,
                          region=REGION)
    assert emulation.next_due() is None
    soon, later = clock.now() + timedelta(minutes=2), clock.now() + timedelta(minutes=9)
    eks, hyperpod = _Scheduled(later), _Scheduled(None)
    emulation.eks, emulation.hyperpod = eks, hyperpod  # type: ignore[assignment]
    assert emulation.next_due() == later
    hyperpod.due = soon
    assert emulation.next_due() == soon

    version = emulation.schedule_version
    emulation.check_schedule()
    assert emulation.schedule_version == version + 1  # the schedule changed since last checked
    emulation.check_schedule()
    assert emulation.schedule_version == version + 1  # and not again
    eks.due = hyperpod.due = None
    emulation.check_schedule()
    assert emulation.schedule_version == version + 2
