"""Seedable data behind the HyperPod emulator: instance types, zones, quotas, training plans.

Everything here is plain data (dataclasses) so a test or the demo can build its own world:
which ``ml.*`` instance types each availability zone offers, how many network cards (and EFA)
each type has, the account's per-type quota for cluster usage, the training plans the account
owns and the offerings ``SearchTrainingPlanOfferings`` can return.

``Catalog.with_ec2_offerings`` re-bases a catalogue on EC2's facts for one Region (which zone
offers which EC2 type, network cards, EFA), so the local cloud's HyperPod agrees with its EC2's
DescribeInstanceTypeOfferings (see docs/emulator.md, "One catalogue").

Times of training plans and offerings may be absolute (aware ``datetime``) or relative to the
emulator's start (``timedelta``), so the default catalogue works with any virtual clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

When = datetime | timedelta


@dataclass(frozen=True)
class InstanceTypeInfo:
    """An ``ml.*`` instance type as HyperPod sees it."""

    name: str
    network_cards: int = 1
    efa: bool = False
    quota: int = 64  # the account's "<type> for cluster usage" quota


@dataclass(frozen=True)
class TrainingPlanSeed:
    """A training plan the account owns (its zone is that of its one reserved capacity)."""

    name: str
    instance_type: str
    instance_count: int
    availability_zone: str
    start: When
    duration_hours: int
    status: str | None = None  # None: derived from the clock (Scheduled/Active/Expired)
    upfront_fee: str = "0"
    currency_code: str = "USD"
    target_resources: tuple[str, ...] = ("hyperpod-cluster",)


@dataclass(frozen=True)
class OfferingSeed:
    """Capacity ``SearchTrainingPlanOfferings`` can offer: up to ``max_count`` instances of a
    type in a zone, the earliest ``lead_time`` after the request."""

    instance_type: str
    availability_zone: str
    max_count: int
    lead_time: timedelta = timedelta(days=1)
    hourly_fee_per_instance: float = 40.0
    currency_code: str = "USD"


_G5 = ["xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"]
_G6 = _G5
_C5 = ["large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "12xlarge", "18xlarge", "24xlarge"]
_M5 = ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge"]

# EFA-capable sizes (AWS: the largest g5/g6 sizes, p4d, p5, trn1.32xlarge; c5/m5 have none).
_EFA_SIZES = {"8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge"}


def default_instance_types() -> dict[str, InstanceTypeInfo]:
    types: dict[str, InstanceTypeInfo] = {}
    for family, sizes in (("g5", _G5), ("g6", _G6)):
        for size in sizes:
            name = f"ml.{family}.{size}"
            types[name] = InstanceTypeInfo(name, 1, size in _EFA_SIZES, 64)
    for family, sizes in (("c5", _C5), ("m5", _M5)):
        for size in sizes:
            name = f"ml.{family}.{size}"
            types[name] = InstanceTypeInfo(name, 1, False, 64)
    types["ml.p4d.24xlarge"] = InstanceTypeInfo("ml.p4d.24xlarge", 4, True, 8)
    types["ml.p5.48xlarge"] = InstanceTypeInfo("ml.p5.48xlarge", 32, True, 8)
    types["ml.trn1.32xlarge"] = InstanceTypeInfo("ml.trn1.32xlarge", 8, True, 8)
    return types


def default_zones() -> dict[str, frozenset[str]]:
    """us-west-2a..d and us-east-1a..f; the accelerated types only in some zones."""
    common = {
        name
        for name in default_instance_types()
        if name.startswith(("ml.c5.", "ml.m5.", "ml.g5.", "ml.g6."))
    }
    p4d, p5, trn1 = "ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.trn1.32xlarge"
    extra = {
        "us-west-2a": {p4d, p5},
        "us-west-2b": {p4d, trn1},
        "us-west-2c": {p5},
        "us-west-2d": {trn1},
        "us-east-1a": {p4d},
        "us-east-1b": {p5},
        "us-east-1c": {p4d, p5, trn1},
        "us-east-1d": {trn1},
        "us-east-1e": set(),
        "us-east-1f": {p5},
    }
    return {zone: frozenset(common | types) for zone, types in extra.items()}


@dataclass
class Catalog:
    """The world the emulator serves: instance types, zones, training plans, offerings."""

    instance_types: dict[str, InstanceTypeInfo] = field(default_factory=default_instance_types)
    zones: dict[str, frozenset[str]] = field(default_factory=default_zones)
    training_plans: list[TrainingPlanSeed] = field(default_factory=list)
    offerings: list[OfferingSeed] = field(default_factory=list)

    @classmethod
    def default(cls) -> Catalog:
        """Default types and zones, two plans (one active now, one starting in a week) in
        us-west-2 and offerings for the accelerated types."""
        return cls(
            training_plans=[
                TrainingPlanSeed(
                    "p5-active", "ml.p5.48xlarge", 4, "us-west-2a", timedelta(hours=-1), 720
                ),
                TrainingPlanSeed(
                    "p4d-next-week", "ml.p4d.24xlarge", 2, "us-west-2b", timedelta(days=7), 168
                ),
            ],
            offerings=[
                OfferingSeed("ml.p5.48xlarge", "us-west-2a", 16),
                OfferingSeed("ml.p4d.24xlarge", "us-west-2b", 16),
                OfferingSeed("ml.trn1.32xlarge", "us-west-2d", 32, hourly_fee_per_instance=21.5),
                OfferingSeed("ml.p5.48xlarge", "us-east-1b", 8),
            ],
        )

    def offers(self, zone: str, instance_type: str) -> bool:
        return instance_type in self.zones.get(zone, frozenset())

    def quota(self, instance_type: str) -> int:
        info = self.instance_types.get(instance_type)
        return info.quota if info is not None else 0

    def zones_in(self, region: str) -> list[str]:
        return sorted(z for z in self.zones if z[:-1] == region)

    def with_ec2_offerings(
        self,
        region: str,
        candidates: Iterable[str],
        offerings: Mapping[str, Iterable[str]],
        ec2_types: Mapping[str, Mapping[str, Any]],
    ) -> Catalog:
        """This catalogue with the zones of ``region`` taken from EC2.

        ``candidates`` are the ``ml.*`` types HyperPod accepts; ``offerings`` maps each zone of
        the Region to the EC2 types it offers (DescribeInstanceTypeOfferings by
        availability-zone); ``ec2_types`` are DescribeInstanceTypes entries by EC2 type. A zone
        then offers ``ml.X`` exactly when EC2 offers ``X`` there. Types the catalogue did not
        know get their network cards and EFA from EC2 and the default quota; known types keep
        their seeded data. Other Regions' zones, plans and offerings are kept.
        """
        by_ec2 = {name.removeprefix("ml."): name for name in candidates if name.startswith("ml.")}
        zones = {z: types for z, types in self.zones.items() if z[:-1] != region}
        instance_types = dict(self.instance_types)
        for zone, ec2_offered in offerings.items():
            offered = {by_ec2[t] for t in ec2_offered if t in by_ec2}
            zones[zone] = frozenset(offered)
            for name in offered - instance_types.keys():
                network = ec2_types.get(name.removeprefix("ml."), {}).get("NetworkInfo") or {}
                instance_types[name] = InstanceTypeInfo(
                    name,
                    network_cards=int(network.get("MaximumNetworkCards", 1)),
                    efa=bool(network.get("EfaSupported", False)),
                )
        return replace(self, zones=zones, instance_types=instance_types)
