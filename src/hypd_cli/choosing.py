"""Choosing an instance type: a zone's types ordered and grouped for a person to pick from,
narrowed by the words they type, each described in capacity terms.

Plain functions over the API's JSON (``InstanceTypeView`` of GET /catalog/instance-types,
``TrainingPlanView`` of GET /catalog/training-plans); the interactive ``clusters create`` and
``groups add`` (`hypd_cli.prompts`) ask with them. Nothing here reads or prints.

Order (`sections`): the accelerated types first, one section per accelerator model (GPUs, then
AWS Neuron devices; within each, the model with the most memory per device first), each
section by accelerator count, then vCPUs, memory and name; then the CPU-only types, by vCPUs,
memory and name (a type EC2 did not describe counts as CPU-only: nothing says otherwise).

Search (`search`): every word of the text must match, ignoring case, part of the type's name,
of its accelerator's manufacturer and model (``nvidia``, ``h100``, ``trainium``), or one of the
words ``gpu``, ``neuron``, ``efa`` and ``cpu`` (CPU-only) for the types they describe. Parts of
names match as substrings, as a person expects: ``g6`` finds ml.g6.* and ml.g6e.* alike, and
``g6.`` only ml.g6.*.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hypd_cli.output import gib, short_time

# A plan that can still hold instances, now or once it starts.
INACTIVE_PLAN_STATUSES = frozenset({"Expired", "Failed"})
NEURON_MANUFACTURER = "AWS"  # EC2's NeuronInfo names no manufacturer: AWS makes the devices
CPU_ONLY = "CPU only"
# Words a search may use for what a type has rather than what it is called.
KEYWORDS = ("gpu", "neuron", "efa", "cpu")

InstanceType = dict[str, Any]


@dataclass(frozen=True)
class Accelerator:
    """An accelerator model: what a section of the choice is about."""

    kind: str  # "gpu" or "neuron"
    manufacturer: str
    model: str
    memory_mib: int | None

    def __str__(self) -> str:
        """``NVIDIA H100 (80 GiB)``, ``AWS Trainium (32 GiB)``."""
        memory = f" ({gib(self.memory_mib)})" if self.memory_mib else ""
        return f"{self.manufacturer} {self.model}".strip() + memory

    def order(self) -> tuple[int, int, str, str]:
        """GPUs before Neuron devices, then the most memory per device first."""
        return (0 if self.kind == "gpu" else 1, -(self.memory_mib or 0), self.manufacturer,
                self.model)


@dataclass(frozen=True)
class Section:
    """Types sharing an accelerator model (``accelerator`` None: the CPU-only types)."""

    accelerator: Accelerator | None
    types: tuple[InstanceType, ...]

    @property
    def heading(self) -> str:
        return str(self.accelerator) if self.accelerator else CPU_ONLY


def accelerators_of(instance_type: InstanceType) -> list[tuple[int, Accelerator]]:
    """Each accelerator model of the type with its count: GPUs, then Neuron devices."""
    found = [
        (int(gpu.get("count") or 0),
         Accelerator("gpu", gpu.get("manufacturer") or "", gpu["name"], gpu.get("memoryMiB")))
        for gpu in instance_type.get("gpus") or []
    ]
    found += [
        (int(device.get("count") or 0),
         Accelerator("neuron", NEURON_MANUFACTURER, device["name"], device.get("memoryMiB")))
        for device in instance_type.get("neuronDevices") or []
    ]
    return found


def accelerators(instance_type: InstanceType) -> str:
    """``8 x NVIDIA H100 (80 GiB)``, ``16 x AWS Trainium (32 GiB)``, or ``-``."""
    found = accelerators_of(instance_type)
    return ", ".join(f"{count} x {model}" for count, model in found) or "-"


def sections(types: Iterable[InstanceType]) -> list[Section]:
    """The types in the order a person chooses from (see the module's docstring)."""
    by_model: dict[Accelerator | None, list[InstanceType]] = {}
    for instance_type in types:
        found = accelerators_of(instance_type)
        by_model.setdefault(found[0][1] if found else None, []).append(instance_type)
    models = sorted((m for m in by_model if m is not None), key=Accelerator.order)
    ordered = [Section(m, tuple(sorted(by_model[m], key=_size))) for m in models]
    if None in by_model:
        ordered.append(Section(None, tuple(sorted(by_model[None], key=_size))))
    return ordered


def _size(instance_type: InstanceType) -> tuple[int, int, int, str]:
    count = sum(n for n, _ in accelerators_of(instance_type))
    return (count, instance_type.get("vCpus") or 0, instance_type.get("memoryMiB") or 0,
            instance_type["instanceType"])


def search(types: Iterable[InstanceType], text: str) -> list[InstanceType]:
    """The types every word of ``text`` matches (see the module's docstring), in their order."""
    words = text.lower().split()
    return [t for t in types if words and all(word in _haystack(t) for word in words)]


def _haystack(instance_type: InstanceType) -> str:
    """What a search word may be part of: the name, the accelerators, the keywords."""
    found = accelerators_of(instance_type)
    parts = [instance_type["instanceType"]]
    parts += [f"{model.manufacturer} {model.model}" for _, model in found]
    parts += sorted({model.kind for _, model in found}) or ["cpu"]
    if instance_type.get("efaSupported"):
        parts.append("efa")
    return " ".join(parts).lower()  # a word has no space: it matches within one part


def covering_plans(
    plans: Iterable[dict[str, Any]], zone: str, instance_type: str
) -> list[dict[str, Any]]:
    """The training plans (GET /catalog/training-plans) that can hold ``instance_type`` in
    ``zone``: a reserved capacity of that type there, and not expired or failed."""
    return [
        p for p in plans
        if zone in (p.get("availabilityZones") or [])
        and instance_type in (p.get("instanceTypes") or [])
        and p.get("status") not in INACTIVE_PLAN_STATUSES
    ]


def describe_type(
    instance_type: InstanceType, plans: Sequence[dict[str, Any]] = (), width: int = 22
) -> str:
    """One line in capacity terms: ``ml.p5.48xlarge  8 x NVIDIA H100 (80 GiB), 192 vCPU,
    2048 GiB, EFA (32 network cards); training plan p5-active (...)``. ``plans``: the plans
    that cover the type (`covering_plans`)."""
    facts = [accelerators(instance_type)] if accelerators_of(instance_type) else []
    facts += [f"{instance_type.get('vCpus') or '?'} vCPU", gib(instance_type.get("memoryMiB"))]
    if instance_type.get("efaSupported"):
        cards = instance_type.get("maximumNetworkCards")
        facts.append(f"EFA ({cards} network cards)" if cards and cards > 1 else "EFA")
    line = f"{instance_type['instanceType']:<{width}} {', '.join(facts)}"
    return "; ".join([line, *(describe_plan(p) for p in plans)])


def describe_plan(plan: dict[str, Any]) -> str:
    """``training plan p5-active (Active, 4/4 available, START to END)``."""
    available = plan.get("availableInstanceCount")
    total = plan.get("totalInstanceCount")
    counts = f", {available}/{total} available" if total is not None else ""
    return (f"training plan {plan['name']} ({plan.get('status')}{counts}, "
            f"{short_time(plan.get('startTime'))} to {short_time(plan.get('endTime'))})")
