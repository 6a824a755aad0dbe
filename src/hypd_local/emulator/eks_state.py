"""The EKS emulator's state and its time: what every part of `EksEmulator` builds on.

`EksState` holds the clusters, the timers of the scheduled transitions, the injected faults and
the events waiting to be emitted. Every scheduled transition (cluster CREATING -> ACTIVE, add-on
CREATING -> ACTIVE, ...) is a timer on the virtual clock, applied in time order by `tick` (and
by `_now`, which the operations call first); events are queued while the state lock is held and
delivered once it is released (`operation`), in queue order.
"""

from __future__ import annotations

import heapq
import itertools
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from hypd_local.emulator.eks_catalog import AddonCatalog
from hypd_local.emulator.eks_model import (
    Clock,
    EksDurations,
    Emit,
    _Addon,
    _Cluster,
    _invalid_parameter,
    _not_found,
)
from hypd_local.emulator.service import Injections, ServiceEmulator

UNSUPPORTED_ZONES: Mapping[str, tuple[str, ...]] = {"us-east-1": ("us-east-1e",)}
"""Zones where the emulated EKS refuses control-plane subnets, by Region (the default of
`EksEmulator.unsupported_zones`): us-east-1e, the zone AWS's documentation and users' reports
name (zone use1-az3 in moto's mapping, one EKS lists as unsupported)."""


class EksState(ServiceEmulator):
    """The emulated EKS control plane's state for one account and Region."""

    service = "eks"

    def __init__(
        self,
        clock: Clock,
        emit: Emit,
        account_id: str,
        region: str,
        durations: EksDurations | None = None,
        addon_catalog: AddonCatalog | None = None,
        *,
        subnet_vpc: Callable[[str], str | None] | None = None,
        caller_arn: Callable[[], str] | None = None,
        missing_prerequisite_status: str = "DEGRADED",
        subnet_zone: Callable[[str], str | None] | None = None,
        region_zones: Callable[[], list[str]] | None = None,
        unsupported_zones: Iterable[str] | None = None,
        hyperpod_users: Callable[[str], list[str]] | None = None,
    ) -> None:
        if missing_prerequisite_status not in ("DEGRADED", "CREATE_FAILED"):
            raise ValueError("missing_prerequisite_status must be DEGRADED or CREATE_FAILED")
        super().__init__(clock, account_id, region)
        self._emit = emit
        self.durations = durations or EksDurations()
        self.catalog = addon_catalog or AddonCatalog.default()
        self._subnet_vpc = subnet_vpc
        self._subnet_zone = subnet_zone
        self._region_zones = region_zones
        self.unsupported_zones: set[str] = set(
            UNSUPPORTED_ZONES.get(region, ()) if unsupported_zones is None else unsupported_zones
        )
        """Zones where CreateCluster refuses subnets (UnsupportedAvailabilityZoneException);
        needs ``subnet_zone`` to know a subnet's zone."""
        self._caller_arn = caller_arn or (
            lambda: f"arn:{self.partition}:iam::{account_id}:user/moto")
        self.missing_prerequisite_status = missing_prerequisite_status
        self._clusters: dict[str, _Cluster] = {}
        # deleted clusters whose network interfaces are still there (`eni_linger`)
        self._lingering: list[_Cluster] = []
        # an EKS cluster's ARN -> the HyperPod clusters it orchestrates (not gone)
        self._hyperpod_users = hyperpod_users or (lambda _arn: [])
        self._timers: list[tuple[datetime, int, Callable[[datetime], None]]] = []
        self._seq = itertools.count()
        self._fail_next: Injections[str | None] = Injections()
        # Stalled creations: the next CreateCluster of a name (None: any) takes these seconds
        # (None: stays CREATING until released); clusters and add-ons stalled until released.
        self._stall_next: Injections[float | None] = Injections()
        self._stalled_clusters: dict[str, tuple[_Cluster, str | None]] = {}
        self._pending_addon_stalls: dict[tuple[str, str], float | None] = {}
        self._stalled_addons: dict[tuple[str, str], _Addon] = {}
        self._pending_degrade: dict[tuple[str, str], dict[str, Any]] = {}
        self._endpoints: dict[str, str] = {}
        self._certificate_authorities: dict[str, str] = {}
        self._ids = itertools.count(1)
        # (operation, clientRequestToken) -> (the request without its token, what it made)
        self._tokens: dict[tuple[str, str], tuple[str, str]] = {}
        self._delivery = threading.RLock()
        self._outbox: list[dict[str, Any]] = []
        self._delivering = False

    # ------------------------------------------------------------------ time

    def tick(self) -> None:
        """Apply every transition due by ``clock.now()``, in time order, emitting its events."""
        try:
            with self._lock:
                self._advance()
        finally:
            self._flush()

    def _advance(self) -> None:
        now = self._clock.now()
        while self._timers and self._timers[0][0] <= now:
            due, _, action = heapq.heappop(self._timers)
            action(due)
            self._changed()

    def next_due(self) -> datetime | None:
        """When the earliest scheduled transition strictly after ``clock.now()`` happens, or
        None when nothing is scheduled (transitions already due wait for the next `tick`)."""
        with self._lock:
            now = self._clock.now()
            return min((due for due, _, _ in self._timers if due > now), default=None)

    def _flush(self) -> None:
        with self._delivery:
            if self._delivering:
                return  # a subscriber called back: the outer delivery loop sends the rest
            self._delivering = True
            try:
                while True:
                    with self._lock:
                        if not self._outbox:
                            return
                        event = self._outbox.pop(0)
                    self._emit(**event)
            finally:
                self._delivering = False

    def _at(self, due: datetime, action: Callable[[datetime], None]) -> None:
        heapq.heappush(self._timers, (due, next(self._seq), action))

    def _now(self) -> datetime:
        self._advance()
        return self._clock.now()

    def _after_release(self) -> None:
        self._flush()  # the events the operation queued, outside the state lock

    # ------------------------------------------------------------------ idempotency

    @staticmethod
    def _request_digest(params: Mapping[str, Any]) -> str:
        return json.dumps({k: v for k, v in params.items() if k != "clientRequestToken"},
                          sort_keys=True, default=str)

    def _replayed(self, operation: str, params: Mapping[str, Any]) -> str | None:
        """What an earlier request of ``operation`` with this ``clientRequestToken`` made (an
        ARN or an ID), when this request repeats it; None for a new token. The same token with
        other parameters is refused."""
        token = params.get("clientRequestToken")
        seen = self._tokens.get((operation, token)) if token else None
        if seen is None:
            return None
        digest, made = seen
        if digest != self._request_digest(params):
            raise _invalid_parameter(
                f"The client request token {token} has already been used for a {operation} "
                "request with different parameters.")
        return made

    def _remember(self, operation: str, params: Mapping[str, Any], made: str) -> None:
        token = params.get("clientRequestToken")
        if token:
            self._tokens[(operation, token)] = (self._request_digest(params), made)

    def _cluster(self, name: str) -> _Cluster:
        cluster = self._clusters.get(name)
        if cluster is None:
            raise _not_found(f"No cluster found for name: {name}.", clusterName=name)
        return cluster
