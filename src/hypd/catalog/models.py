"""The catalogue's domain facts, as the adapters read them from AWS."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class AvailabilityZone:
    name: str
    zone_id: str
    state: str
    region: str


@dataclass(frozen=True)
class Gpu:
    name: str
    manufacturer: str
    count: int
    memory_mib: int | None = None


@dataclass(frozen=True)
class Accelerator:
    """An AWS Neuron (Trainium / Inferentia) device of an instance type."""

    name: str
    count: int
    core_count: int | None = None
    memory_mib: int | None = None


@dataclass(frozen=True)
class InstanceTypeFacts:
    """What EC2's DescribeInstanceTypes says about the EC2 type behind an ``ml.*`` type."""

    ec2_instance_type: str
    vcpus: int | None = None
    memory_mib: int | None = None
    gpus: tuple[Gpu, ...] = ()
    total_gpu_memory_mib: int | None = None
    neuron_devices: tuple[Accelerator, ...] = ()
    maximum_network_cards: int | None = None
    efa_supported: bool = False
    maximum_efa_interfaces: int | None = None


@dataclass(frozen=True)
class HyperPodInstanceType:
    """An ``ml.*`` type HyperPod accepts, with the zones of the Region that offer it."""

    instance_type: str
    ec2_instance_type: str
    availability_zones: tuple[str, ...]


@dataclass(frozen=True)
class ReservedCapacity:
    instance_type: str | None
    total_instance_count: int | None
    availability_zone: str | None
    availability_zone_id: str | None
    status: str | None


@dataclass(frozen=True)
class TrainingPlan:
    name: str
    arn: str
    status: str
    status_message: str | None
    total_instance_count: int | None
    available_instance_count: int | None
    in_use_instance_count: int | None
    start_time: datetime | None
    end_time: datetime | None
    duration_hours: int | None
    target_resources: tuple[str, ...] = ()
    reserved_capacities: tuple[ReservedCapacity, ...] = field(default_factory=tuple)

    @property
    def instance_types(self) -> list[str]:
        """The plan's instance types (its reserved capacities'), sorted, without repeats."""
        return sorted({rc.instance_type for rc in self.reserved_capacities if rc.instance_type})

    @property
    def availability_zones(self) -> list[str]:
        """A plan has no top-level zone: its zones are its reserved capacities'."""
        return sorted(
            {rc.availability_zone for rc in self.reserved_capacities if rc.availability_zone}
        )


def plan_available(plan: TrainingPlan) -> int | None:
    """The plan's instances free for new use (None when the plan does not say)."""
    if plan.available_instance_count is not None:
        return plan.available_instance_count
    if plan.total_instance_count is not None:
        return plan.total_instance_count - (plan.in_use_instance_count or 0)
    return None
