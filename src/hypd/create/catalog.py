"""The account's catalogue as AWS reports it now, read through the adapters.

`GET /catalog/...` shows these reads and a create (`resolve_create`) or an added group
(`catalog_for_groups`) is judged on them, so a request is judged on exactly what the catalogue
shows. The judgement itself is pure: `hypd.create.validate`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hypd.aws import ec2 as ec2_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.catalog.instance_types import (
    check_zone,
    ec2_to_ml,
    hyperpod_instance_types,
    merge_offerings,
)
from hypd.catalog.models import HyperPodInstanceType, InstanceTypeFacts, TrainingPlan
from hypd.clusters.create_request import (
    CreateClusterRequest,
    InstanceGroupRequest,
    ResolvedCreate,
    TrainingPlanCapacity,
)
from hypd.create.validate import validate_against_catalog


class CatalogClients(Protocol):
    """Where the catalogue is read (the API's services): each client created on first use."""

    @property
    def ec2_client(self) -> Callable[[], Any]: ...

    @property
    def sagemaker_client(self) -> Callable[[], Any]: ...


def offered_types(
    client: Any, candidates: Sequence[str], zone_names: Sequence[str], zone: str | None = None
) -> list[HyperPodInstanceType]:
    """The `ml.*` `candidates` EC2 offers in `zone_names` (with `zone`: offered there)."""
    if not candidates:
        return []
    offerings = ec2_api.list_zone_offerings(client, list(ec2_to_ml(candidates)))
    return merge_offerings(candidates, offerings, zone_names, zone=zone)


def instance_type_facts(client: Any, instance_types: Sequence[str]) -> dict[str, InstanceTypeFacts]:
    """EC2's facts about the EC2 type behind each `ml.*` type, keyed by the `ml.*` type."""
    if not instance_types:
        return {}
    by_ec2 = ec2_to_ml(instance_types)
    described = ec2_api.describe_instance_types(client, list(by_ec2))
    return {by_ec2[name]: facts for name, facts in described.items() if name in by_ec2}


def training_plans(client: Any) -> list[TrainingPlan]:
    """The account's training plans in the Region."""
    return sagemaker_api.list_training_plans(client)


def offered_instance_types(
    client: Any, zone: str | None = None
) -> list[tuple[HyperPodInstanceType, InstanceTypeFacts | None]]:
    """The HyperPod types the Region's zones offer (with `zone`: that zone), each with EC2's
    facts about it (None when EC2 did not describe it).

    Raises:
        ValidationError: `zone` is not an available zone of the Region.
    """
    zones = ec2_api.list_availability_zones(client)
    if zone is not None:
        check_zone(zone, zones)
    types = offered_types(client, hyperpod_instance_types(), [z.name for z in zones], zone=zone)
    facts = instance_type_facts(client, [t.instance_type for t in types])
    return [(t, facts.get(t.instance_type)) for t in types]


@dataclass(frozen=True)
class CreateCatalog:
    """What `validate_against_catalog` needs to judge one create request, and no more."""

    zones: list[str]
    offerings: dict[str, set[str]]
    facts: dict[str, InstanceTypeFacts]
    training_plans: dict[str, TrainingPlan]


def catalog_for_groups(
    clients: CatalogClients, groups: Sequence[InstanceGroupRequest]
) -> CreateCatalog:
    """Read the catalogue new groups need: the zones, the offerings of their instance types,
    the facts of the types of EFA-only groups, and the training plans only when a group uses
    one."""
    client = clients.ec2_client()
    zones = [z.name for z in ec2_api.list_availability_zones(client)]
    requested = sorted({g.instance_type for g in groups})
    offered = offered_types(client, requested, zones)
    efa_types = sorted({g.instance_type for g in groups if g.efa_only})
    plans: dict[str, TrainingPlan] = {}
    if any(isinstance(g.capacity, TrainingPlanCapacity) for g in groups):
        plans = {plan.arn: plan for plan in training_plans(clients.sagemaker_client())}
    return CreateCatalog(
        zones=zones,
        offerings={t.instance_type: set(t.availability_zones) for t in offered},
        facts=instance_type_facts(client, efa_types),
        training_plans=plans,
    )


def resolve_create(clients: CatalogClients, request: CreateClusterRequest) -> ResolvedCreate:
    """Read the catalogue the request needs and judge it against it (`validate_against_catalog`).

    Raises:
        ValidationError: every problem the catalogue shows, together.
    """
    catalog = catalog_for_groups(clients, request.instance_groups)
    return validate_against_catalog(
        request,
        zones=catalog.zones,
        offerings=catalog.offerings,
        facts=catalog.facts,
        training_plans=catalog.training_plans,
    )
