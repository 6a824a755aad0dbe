"""A create request judged against the catalogue: what the account and Region offer.

:func:`validate_against_catalog` checks a ``POST /clusters`` body (already valid by itself: the
models in `hypd.clusters.create_request`) against the zones, the per-zone instance-type
offerings, instance-type facts and training plans, collects every problem and raises one
:class:`hypd.errors.ValidationError` naming each field; on success it returns a
:class:`ResolvedCreate` whose zone is always set (taken from a training plan when the request
gave none) and whose groups carry their resolved capacity. :func:`validate_group_against_catalog`
does the same for one group added to a running cluster. Pure: the caller reads the catalogue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from hypd.catalog.models import InstanceTypeFacts, TrainingPlan, plan_available
from hypd.clusters.create_request import (
    CapacityType,
    CreateClusterRequest,
    InstanceGroupRequest,
    Problem,
    ResolvedCapacity,
    ResolvedCreate,
    ResolvedInstanceGroup,
    TrainingPlanCapacity,
    catalog_error,
)

USABLE_TRAINING_PLAN_STATUSES = frozenset({"Active", "Scheduled"})


def _group(index: int, name: str = "") -> str:
    return f"instanceGroups[{index}]" + (f".{name}" if name else "")


def _names(values: Iterable[str]) -> str:
    return ", ".join(sorted(values)) or "none"


def _plan_zones(plan: TrainingPlan, instance_type: str) -> set[str]:
    """The zones of the plan's reserved capacities for ``instance_type`` (all, if none match)."""
    zones = {
        rc.availability_zone
        for rc in plan.reserved_capacities
        if rc.availability_zone and rc.instance_type == instance_type
    }
    return zones or set(plan.availability_zones)


def _at(prefix: str, name: str) -> str:
    """A field of a group, relative to the body: ``instanceGroups[1].count`` or ``count``."""
    return f"{prefix}.{name}" if prefix else name


def _usable_plan(
    group: InstanceGroupRequest, prefix: str, training_plans: Mapping[str, TrainingPlan]
) -> tuple[TrainingPlan | None, list[Problem]]:
    """The group's training plan if it can be used (it exists and is Active or Scheduled),
    with the problems found (its instance type not being the plan's is one)."""
    assert isinstance(group.capacity, TrainingPlanCapacity)
    arn_field = _at(prefix, "capacity.trainingPlanArn")
    plan = training_plans.get(group.capacity.training_plan_arn)
    if plan is None:
        return None, [
            Problem(
                arn_field,
                f"no training plan {group.capacity.training_plan_arn} in this account and "
                "Region (see GET /catalog/training-plans)",
            )
        ]
    if plan.status not in USABLE_TRAINING_PLAN_STATUSES:
        return None, [
            Problem(
                arn_field,
                f"training plan {plan.name} is {plan.status}; only Active or Scheduled "
                "plans can be used",
            )
        ]
    problems: list[Problem] = []
    if group.instance_type not in plan.instance_types:
        problems.append(
            Problem(
                _at(prefix, "instanceType"),
                f"training plan {plan.name} reserves {_names(plan.instance_types)}, "
                f"not {group.instance_type}",
            )
        )
    return plan, problems


def _zone_mismatch(plan: TrainingPlan, plan_zones: set[str], prefix: str, zone: str) -> Problem:
    return Problem(
        _at(prefix, "capacity.trainingPlanArn"),
        f"training plan {plan.name} reserves capacity in {_names(plan_zones)}, "
        f"not in the request's availabilityZone {zone}",
    )


def _zone_choice_needed(plan: TrainingPlan, plan_zones: set[str], prefix: str) -> Problem:
    return Problem(
        _at(prefix, "capacity.trainingPlanArn"),
        f"training plan {plan.name} reserves capacity in {_names(plan_zones)}; "
        "give availabilityZone to choose one",
    )


def _count_problem(
    plan: TrainingPlan, prefix: str, count: int, wanted: int, shared: str = ""
) -> Problem | None:
    """Too many instances asked of the plan (`wanted`: by every group on it together)."""
    available = plan_available(plan)
    if available is None or wanted <= available:
        return None
    return Problem(
        _at(prefix, "count"),
        f"training plan {plan.name} has {available} instances available; this group asks "
        f"for {count}{shared}",
    )


def _offering_problem(
    group: InstanceGroupRequest,
    prefix: str,
    zone: str,
    known_zones: set[str],
    offerings: Mapping[str, set[str]],
) -> Problem | None:
    """A group not on a plan needs its type offered in its zone (a plan's capacity is checked
    against the plan instead)."""
    if isinstance(group.capacity, TrainingPlanCapacity) or zone in offerings.get(
        group.instance_type, set()
    ):
        return None
    offered = offerings.get(group.instance_type, set()) & known_zones
    where = (
        f"zones that offer it: {_names(offered)}" if offered else "no zone of this Region offers it"
    )
    return Problem(
        _at(prefix, "instanceType"), f"{group.instance_type} is not offered in {zone}; {where}"
    )


def _efa_problem(
    group: InstanceGroupRequest, prefix: str, facts: Mapping[str, InstanceTypeFacts]
) -> Problem | None:
    """EFA-only interfaces need several network cards and EFA."""
    if not group.efa_only:
        return None
    fact = facts.get(group.instance_type)
    cards = fact.maximum_network_cards if fact else None
    if fact is not None and fact.efa_supported and (cards or 0) >= 2:
        return None
    why = (
        "its network cards and EFA support are unknown"
        if fact is None
        else f"it has {cards or 1} network card(s) and "
        f"{'supports' if fact.efa_supported else 'does not support'} EFA"
    )
    return Problem(
        _at(prefix, "efaOnly"),
        f"EFA-only interfaces need an instance type with several network cards and EFA; "
        f"{group.instance_type}: {why}",
    )


def _unknown_zone(zone: str, known_zones: set[str]) -> Problem:
    return Problem(
        "availabilityZone",
        f"{zone} is not an available Availability Zone of this Region "
        f"(zones: {_names(known_zones)})",
    )


def validate_against_catalog(
    request: CreateClusterRequest,
    *,
    zones: Sequence[str],
    offerings: Mapping[str, set[str]],
    facts: Mapping[str, InstanceTypeFacts],
    training_plans: Mapping[str, TrainingPlan],
) -> ResolvedCreate:
    """Check ``request`` against the account's catalogue and resolve its zone and capacities.

    Args:
        zones: the names of the Region's available zones.
        offerings: per HyperPod ``ml.*`` type, the zones that offer it.
        facts: per ``ml.*`` type, EC2's facts about it (network cards, EFA).
        training_plans: the account's training plans by ARN.

    Raises:
        ValidationError: every problem found, together; ``details.errors`` lists each as
            ``{"field", "in": "body", "message"}`` and ``details.field`` names the first.
    """
    problems: list[Problem] = []
    known_zones = set(zones)
    zone = request.availability_zone
    zone_known = zone is None or zone in known_zones
    if zone is not None and not zone_known:
        problems.append(_unknown_zone(zone, known_zones))

    # Training plans: each usable plan pins its group to a zone.
    plans: dict[int, TrainingPlan] = {}
    for index, group in enumerate(request.instance_groups):
        if isinstance(group.capacity, TrainingPlanCapacity):
            plan, found = _usable_plan(group, _group(index), training_plans)
            problems += found
            if plan is not None:
                plans[index] = plan

    pinned: tuple[int, str] | None = None  # the first plan group and its zone
    for index, plan in plans.items():
        group = request.instance_groups[index]
        arn_field = _group(index, "capacity.trainingPlanArn")
        plan_zones = _plan_zones(plan, group.instance_type)
        if zone is not None:
            if zone_known and zone not in plan_zones:
                problems.append(_zone_mismatch(plan, plan_zones, _group(index), zone))
            continue
        if len(plan_zones) != 1:
            problems.append(_zone_choice_needed(plan, plan_zones, _group(index)))
            continue
        (plan_zone,) = plan_zones
        if pinned is None:
            pinned = (index, plan_zone)
            if plan_zone not in known_zones:
                problems.append(
                    Problem(
                        arn_field,
                        f"training plan {plan.name} is in {plan_zone}, which is not an "
                        f"available zone of this Region (zones: {_names(known_zones)})",
                    )
                )
        elif plan_zone != pinned[1]:
            problems.append(
                Problem(
                    arn_field,
                    f"training plan {plan.name} is in {plan_zone}, but the plan of "
                    f"instanceGroups[{pinned[0]}] is in {pinned[1]}; all groups of a cluster "
                    "share one zone",
                )
            )

    source: Literal["request", "training-plan"] = "request"
    if zone is None and pinned is not None:
        zone, source = pinned[1], "training-plan"
        zone_known = zone in known_zones
    elif zone is None and not any(
        isinstance(g.capacity, TrainingPlanCapacity) for g in request.instance_groups
    ):
        problems.append(
            Problem(
                "availabilityZone",
                "required unless a group uses a training plan (whose zone is then taken); "
                f"zones: {_names(known_zones)}",
            )
        )

    # Plan counts: the groups on one plan share its available instances.
    by_plan: dict[str, list[int]] = {}
    for index, plan in plans.items():
        by_plan.setdefault(plan.arn, []).append(index)
    for indices in by_plan.values():
        plan = plans[indices[0]]
        wanted = sum(request.instance_groups[i].count for i in indices)
        shared = (
            ""
            if len(indices) == 1
            else f" (groups {', '.join(_group(i) for i in indices)} ask for {wanted} together)"
        )
        for index in indices:
            count = request.instance_groups[index].count
            problem = _count_problem(plan, _group(index), count, wanted, shared)
            if problem is not None:
                problems.append(problem)

    # Offerings (plan groups are checked against their plan instead) and EFA-only.
    for index, group in enumerate(request.instance_groups):
        if zone is not None and zone_known:
            offering = _offering_problem(group, _group(index), zone, known_zones, offerings)
            if offering is not None:
                problems.append(offering)
        efa = _efa_problem(group, _group(index), facts)
        if efa is not None:
            problems.append(efa)

    if problems:
        raise catalog_error(problems)
    assert zone is not None  # every path without a zone added a problem
    return ResolvedCreate(
        tag=request.tag,
        availability_zone=zone,
        availability_zone_source=source,
        kubernetes_version=request.kubernetes_version,
        instance_groups=[
            resolve_group(group, zone, plans.get(index))
            for index, group in enumerate(request.instance_groups)
        ],
        storage=request.storage,
        features=request.features,
    )


def validate_group_against_catalog(
    group: InstanceGroupRequest,
    *,
    zone: str | None,
    default_zone: str,
    zones: Sequence[str],
    offerings: Mapping[str, set[str]],
    facts: Mapping[str, InstanceTypeFacts],
    training_plans: Mapping[str, TrainingPlan],
) -> ResolvedInstanceGroup:
    """Check one group added to an existing cluster and resolve its zone and capacity.

    The zone is reconciled with a training plan, not left to fail: with `zone` (the request's
    availabilityZone) a plan group's zone must be the plan's; without it a plan group takes the
    plan's zone, any other group `default_zone` (the cluster's). Field names are relative to
    the group body (``capacity.trainingPlanArn``).

    Raises:
        ValidationError: every problem found, as `validate_against_catalog` reports them.
    """
    problems: list[Problem] = []
    known_zones = set(zones)
    if zone is not None and zone not in known_zones:
        problems.append(_unknown_zone(zone, known_zones))
    plan: TrainingPlan | None = None
    resolved_zone: str | None = zone or default_zone
    if isinstance(group.capacity, TrainingPlanCapacity):
        plan, found = _usable_plan(group, "", training_plans)
        problems += found
        resolved_zone = zone
        if plan is not None:
            plan_zones = _plan_zones(plan, group.instance_type)
            if zone is not None and zone not in plan_zones:
                problems.append(_zone_mismatch(plan, plan_zones, "", zone))
            elif zone is None and len(plan_zones) != 1:
                problems.append(_zone_choice_needed(plan, plan_zones, ""))
            elif zone is None:
                (resolved_zone,) = plan_zones
                if resolved_zone not in known_zones:
                    problems.append(
                        Problem(
                            "capacity.trainingPlanArn",
                            f"training plan {plan.name} is in {resolved_zone}, which is not an "
                            f"available zone of this Region (zones: {_names(known_zones)})",
                        )
                    )
            count = _count_problem(plan, "", group.count, group.count)
            if count is not None:
                problems.append(count)
    if resolved_zone is not None and resolved_zone in known_zones:
        offering = _offering_problem(group, "", resolved_zone, known_zones, offerings)
        if offering is not None:
            problems.append(offering)
    efa = _efa_problem(group, "", facts)
    if efa is not None:
        problems.append(efa)
    if problems:
        raise catalog_error(problems)
    assert resolved_zone is not None
    return resolve_group(group, resolved_zone, plan)


def resolve_group(
    group: InstanceGroupRequest, zone: str, plan: TrainingPlan | None
) -> ResolvedInstanceGroup:
    """The group with its resolved capacity (its fields as the client sent them)."""
    fields = InstanceGroupRequest.model_fields
    return ResolvedInstanceGroup.model_validate(
        {
            **{k: v for k, v in group.model_dump().items() if k in fields},
            "resolved_capacity": _resolved_capacity(group, zone, plan),
        }
    )


def _resolved_capacity(
    group: InstanceGroupRequest, zone: str, plan: TrainingPlan | None
) -> ResolvedCapacity:
    if isinstance(group.capacity, TrainingPlanCapacity) and plan is not None:
        return ResolvedCapacity(
            type=CapacityType.TRAINING_PLAN,
            availability_zone=zone,
            training_plan_arn=plan.arn,
            training_plan_name=plan.name,
            training_plan_status=plan.status,
        )
    return ResolvedCapacity(type=CapacityType(group.capacity.type), availability_zone=zone)
