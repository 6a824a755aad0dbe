"""The EKS and HyperPod emulators wired into a running local cloud.

`Emulation` owns the emulators, the injected faults and the Kubernetes API servers, and keeps
them consistent as virtual time passes:

* requests for emulated operations reach the emulators through `EmulatorMiddleware`, in front
  of moto's app (everything else still goes to moto);
* every clock advance (and a slow real-time ticker, for a server left running) calls `tick()`,
  which lets the emulators emit the events that came due and then syncs Kubernetes: an ACTIVE
  EKS cluster gets its API server (endpoint and CA returned by DescribeCluster), a deleted one
  loses it, HyperPod nodes join, change labels and leave as their instances do (with their
  instance group's KubernetesConfig labels and taints), and a HyperPod cluster whose
  AutoScaling is InService gets managed Karpenter's CRDs, whose objects' status the
  `kube.karpenter` controller keeps up to date (`emulation_kube`), the EKS add-ons' CRDs,
  namespaces, controller Deployments and CSIDriver objects come and go with the add-ons
  (`emulation_workloads`), and the team of each Created compute quota gets its namespace and
  Kueue queues (`emulation_teams`), and the training and inference operators run their
  add-ons' workloads (`emulation_operators`, `emulation_endpoints`: pods, status, events,
  logs, SageMaker endpoints), as `workloads` (the behave registry) says they behave;
* ``/_local/faults/...`` routes reach the emulators' own fault hooks (`emulation_admin`).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol, cast

from hypd_local import emulation_admin
from hypd_local.clock import VirtualClock
from hypd_local.emulation_admin import AdminHandler
from hypd_local.emulation_behave import Workloads
from hypd_local.emulation_kube import GroupConfig, KubernetesSync
from hypd_local.emulation_logs import LogGroupSync
from hypd_local.emulation_network import NetworkInterfaceSync
from hypd_local.emulator.eks import EksEmulator
from hypd_local.emulator.faults import Faults
from hypd_local.emulator.hyperpod import Catalog, HyperPodEmulator
from hypd_local.emulator.middleware import EmulatorMiddleware, Emulators
from hypd_local.emulator.sagemaker_endpoints import (
    Answer,
    Endpoint,
    SageMakerEndpoints,
    SageMakerRuntime,
)
from hypd_local.iam.enforce import Enforcer, current_caller
from hypd_local.iam.principals import Directory
from hypd_local.iam.world import World
from hypd_local.kube import KubeApiRegistry

LOG = logging.getLogger(__name__)


class Emit(Protocol):
    """Put an event on the default bus (the emulators call it by position or by keyword)."""

    def __call__(
        self,
        source: str,
        detail_type: str,
        detail: Mapping[str, Any],
        resources: list[str] | None = None,
    ) -> None: ...


TICK_INTERVAL_SECONDS = 1.0


@functools.cache
def _cluster_instance_types() -> tuple[str, ...]:
    """botocore's ``ClusterInstanceType`` enum, read once per process (the SageMaker model is
    large: reading it at every cloud's start cost a third of a second)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return tuple(model.shape_for("ClusterInstanceType").enum)


def ec2_catalog(region: str, base: Catalog | None = None) -> Catalog:
    """The HyperPod catalogue whose zones of ``region`` offer what moto's EC2 offers there.

    DescribeInstanceTypeOfferings is answered by moto from its own data; HyperPod's
    CreateCluster checks "the zone offers the type" against the emulator's catalogue. Both now
    read moto's data, so a type EC2 lists for a zone is one HyperPod accepts there (and the
    other way round). The candidates are botocore's ``ClusterInstanceType`` enum.
    """
    from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS, INSTANCE_TYPES

    candidates = _cluster_instance_types()
    offerings: dict[str, set[str]] = {}
    for offering in INSTANCE_TYPE_OFFERINGS["availability-zone"].get(region, []):
        offerings.setdefault(offering["Location"], set()).add(offering["InstanceType"])
    if not offerings:  # a Region moto has no data for: keep the seeded catalogue
        return base or Catalog.default()
    return (base or Catalog.default()).with_ec2_offerings(
        region, candidates, offerings, INSTANCE_TYPES
    )


class _WallClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class Emulation(KubernetesSync, NetworkInterfaceSync, LogGroupSync):
    def __init__(
        self,
        *,
        clock: VirtualClock,
        emit: Emit,
        account_id: str,
        region: str,
    ) -> None:
        self.clock = clock
        self.region = region
        self.account_id = account_id
        self.faults = Faults()
        self.directory = Directory(account_id, region)
        self.eks = EksEmulator(
            clock,
            cast(Any, emit),
            account_id,
            region,
            subnet_vpc=lambda s: self._subnet(s, "vpc_id"),
            caller_arn=self._caller_arn,
            subnet_zone=lambda s: self._subnet(s, "availability_zone"),
            region_zones=self._region_zones,
            hyperpod_users=lambda arn: self.hyperpod.orchestrated_by(arn),
        )
        self.hyperpod = HyperPodEmulator(
            clock,
            cast(Any, emit),
            account_id,
            region,
            catalog=ec2_catalog(region),
            eks_lookup=self._eks_status,
            subnet_zone=lambda s: self._subnet(s, "availability_zone"),
            role_lookup=self._role,
            addon_lookup=self._addon_status,
            caller_arn=self._caller_arn,
        )
        self.workloads = Workloads()
        self.endpoints = SageMakerEndpoints(clock, account_id, region, answers=self._answer)
        self.enforcer = Enforcer(
            account_id=account_id, region=region, directory=self.directory,
            world=World(account_id, region, self.directory, eks=self.eks,
                        hyperpod=self.hyperpod),
            now=clock.now,
        )
        self.kube: KubeApiRegistry | None = None
        self._joined: dict[str, dict[str, tuple[GroupConfig, tuple[tuple[str, str], ...],
                                                bool]]] = {}
        # EKS cluster -> team -> the objects the local cloud made for its compute quota
        self._teams: dict[str, dict[str, set[str]]] = {}
        # EKS cluster -> add-on -> the namespace of its Kubernetes objects
        self._addon_namespaces: dict[str, dict[str, str]] = {}
        # the emulated operators' memory: job uid -> its run, inference object uid -> steps
        self._attempts: dict[str, Any] = {}
        self._progress: dict[str, Any] = {}
        self._workload_due: datetime | None = None
        self._interfaces: dict[str, str | None] = {}
        self._log_groups: set[str] = set()
        self._interfaces_seen: tuple[datetime, int, int] | None = None
        """The clock's time and the emulators' revisions when the interfaces were synced."""
        self._tick_lock = threading.Lock()
        self._ticked_through: datetime | None = None
        """The clock's time when the last finished tick began: everything due by then is out."""
        self._schedule_lock = threading.Lock()
        self._last_due: datetime | None = None
        self.schedule_version = 0
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # ------------------------------------------------------------------ life cycle
    def wrap(self, app: Any) -> EmulatorMiddleware:
        return EmulatorMiddleware(
            app,
            emulators={"sagemaker": Emulators(self.hyperpod, self.endpoints),
                       "sagemaker-runtime": SageMakerRuntime(self.endpoints), "eks": self.eks},
            faults=self.faults,
            region=self.region,
            account_id=self.account_id,
            after_dispatch=self._after_request,
            enforcer=self.enforcer,
        )

    def _caller_arn(self) -> str:
        """Who is calling the emulators now: the issued principal's session ARN, or the
        account's administrator (moto's default identity, as an IAM user)."""
        caller = current_caller()
        return caller.caller_arn if caller is not None else (
            f"arn:aws:iam::{self.account_id}:user/moto")

    def _answer(self, endpoint: Endpoint) -> Answer:
        """What a test set for the endpoint's object (`Workloads.behave`)."""
        behaviour = self.workloads.of(*endpoint.owner)
        error = behaviour.model_error
        return Answer(behaviour.response,
                      (error.status, error.message) if error is not None else None)

    def start(self, sts_endpoint: str) -> None:
        # Clients sign tokens with the real time: their age is judged on the wall clock.
        self.kube = KubeApiRegistry(self.clock, sts_endpoint=sts_endpoint, token_clock=_WallClock())
        self._unsubscribe = self.clock.subscribe(lambda _now: self.tick())
        self._stop.clear()
        self._ticker = threading.Thread(
            target=self._tick_forever, name="emulator-tick", daemon=True
        )
        self._ticker.start()

    def stop(self) -> None:
        self._stop.set()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._ticker is not None:
            self._ticker.join(timeout=5)
            self._ticker = None
        if self.kube is not None:
            self.kube.stop_all()
            self.kube = None
        self._joined.clear()
        self._teams.clear()
        self._addon_namespaces.clear()
        self._attempts.clear()
        self._progress.clear()
        self._workload_due = None
        self._ticked_through = None
        self._interfaces.clear()
        self._log_groups.clear()
        self._interfaces_seen = None

    def _tick_forever(self) -> None:
        # The clock also moves with real time; this makes events of a server left alone come due.
        while not self._stop.wait(TICK_INTERVAL_SECONDS):
            try:
                self.tick()
            except Exception:
                LOG.exception("emulator tick failed")

    # ------------------------------------------------------------------ time passes
    def tick(self, *, wait: bool = False, through: datetime | None = None) -> None:
        """Emit what came due and bring the Kubernetes side in line with the emulators.

        When another thread is ticking, return at once (it will see the same state), or, with
        ``wait``, tick again after it: then everything due by now has been emitted on return.
        ``through``: only that much is needed, so a tick that began at or after it and has
        finished is enough (the waiters of one clock move each need the tick it caused, not
        one tick each over every cluster).
        """
        if not self._tick_lock.acquire(blocking=wait):
            return
        try:
            ticked = self._ticked_through
            if through is not None and ticked is not None and ticked >= through:
                return
            began = self.clock.now()
            self.eks.tick()
            self.hyperpod.tick()
            self._sync_changed_interfaces()
            if self.kube is not None:
                self._sync_kubernetes(self.kube)
            self._ticked_through = began
        finally:
            self._tick_lock.release()
        self.check_schedule()

    def next_due(self) -> datetime | None:
        """The earliest scheduled change of either emulator, or of a workload the emulated
        operators run (a job's end, an endpoint's next step), strictly after now, or None."""
        workload = self._workload_due
        if workload is not None and workload <= self.clock.now():
            workload = None
        times = [t for t in (self.eks.next_due(), self.hyperpod.next_due(), workload)
                 if t is not None]
        return min(times, default=None)

    def _after_request(self) -> None:
        """After an emulated request: the interfaces it made or released (none when neither
        emulator changed and the clock did not move: most requests are reads), then the
        schedule."""
        with self._tick_lock:
            self._sync_changed_interfaces()
        self.check_schedule()

    def _sync_changed_interfaces(self) -> None:
        """`_sync_interfaces` and `_sync_log_groups`, unless nothing they read changed since
        the last time (called under the tick lock)."""
        seen = (self.clock.now(), self.eks.revision, self.hyperpod.revision)
        if seen != self._interfaces_seen:
            self._sync_interfaces()
            self._sync_log_groups()
            self._interfaces_seen = seen

    def check_schedule(self) -> None:
        """Bump `schedule_version` and wake the clock's waiters if `next_due` changed.

        Called after every tick and every emulated request, so a task-token wait that found
        nothing scheduled notices a change scheduled later (it re-checks on the clock's poke
        without taking any emulator lock while it holds the clock's)."""
        due = self.next_due()
        with self._schedule_lock:
            if due == self._last_due:
                return
            self._last_due = due
            self.schedule_version += 1
        self.clock.poke()

    # ------------------------------------------------------------------ admin routes
    def admin_routes(self) -> dict[tuple[str, str], AdminHandler]:
        """``/_local/faults/...`` endpoints for the emulators' own fault hooks
        (`hypd_local.emulation_admin`)."""
        return emulation_admin.admin_routes(self)
