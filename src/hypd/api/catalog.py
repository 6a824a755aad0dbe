"""Routes: /catalog (inspect before create: zones, HyperPod instance types, training plans).

Read-only: each route reads AWS through the adapters and answers at once; nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hypd import clock
from hypd.api.errors import ERROR_RESPONSES, json_response
from hypd.api.models import (
    AvailabilityZoneList,
    AvailabilityZoneView,
    GpuView,
    InstanceGroupFieldList,
    InstanceGroupFieldView,
    InstanceTypeList,
    InstanceTypeView,
    NeuronDeviceView,
    ReservedCapacityView,
    TrainingPlanList,
    TrainingPlanView,
)
from hypd.api.services import ApiServices
from hypd.aws import ec2 as ec2_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.catalog.instance_types import (
    ZONE_NAME_PATTERN,
    check_zone,
    ec2_to_ml,
    hyperpod_instance_types,
    merge_offerings,
)
from hypd.catalog.models import HyperPodInstanceType, InstanceTypeFacts, TrainingPlan
from hypd.clusters.create_request import (
    CreateClusterRequest,
    InstanceGroupRequest,
    TrainingPlanCapacity,
)
from hypd.instance_groups.fields import GROUP_FIELDS

TAGS = ["catalog"]
READ_ERRORS = {400: ERROR_RESPONSES[400], 503: ERROR_RESPONSES[503]}


def build_router(services: ApiServices) -> APIGatewayRouter:
    router = APIGatewayRouter()

    @router.get(
        "/catalog/availability-zones",
        summary="List the Region's Availability Zones",
        description="The zones that are available and opted in (Local Zones excluded).",
        operation_id="listAvailabilityZones",
        tags=TAGS,
        responses={
            200: json_response(
                "AvailabilityZoneList", "The Region's Availability Zones."
            ),
            **READ_ERRORS,
        },
    )
    def list_availability_zones() -> AvailabilityZoneList:
        zones = ec2_api.list_availability_zones(services.ec2_client())
        return AvailabilityZoneList(
            region=zones[0].region if zones else None,
            availability_zones=[
                AvailabilityZoneView(name=z.name, zone_id=z.zone_id, state=z.state) for z in zones
            ],
        )

    @router.get(
        "/catalog/instance-types",
        summary="List the HyperPod instance types this account and Region can run",
        description=(
            "The ml.* types HyperPod accepts (the SageMaker API's ClusterInstanceType) whose EC2 "
            "type is offered in the Region's zones, each with the zones offering it and its "
            "vCPUs, memory, GPUs, Neuron devices, network cards and EFA support. With "
            "availabilityZone, only the types that zone offers. Service quotas are not checked."
        ),
        operation_id="listInstanceTypes",
        tags=TAGS,
        responses={
            200: json_response(
                "InstanceTypeList", "The HyperPod instance types and the zones that offer them."
            ),
            **READ_ERRORS,
        },
    )
    def list_instance_types(
        availability_zone: Annotated[
            str | None,
            Query(
                alias="availabilityZone",
                pattern=ZONE_NAME_PATTERN,
                description="Only the types offered in this zone (a zone name, e.g. us-west-2c).",
            ),
        ] = None,
    ) -> InstanceTypeList:
        client = services.ec2_client()
        zones = ec2_api.list_availability_zones(client)
        if availability_zone is not None:
            check_zone(availability_zone, zones)
        types = offered_types(
            client, hyperpod_instance_types(), [z.name for z in zones], zone=availability_zone
        )
        facts = instance_type_facts(client, [t.instance_type for t in types])
        return InstanceTypeList(
            availability_zone=availability_zone,
            instance_types=[instance_type_view(t, facts.get(t.instance_type)) for t in types],
        )

    @router.get(
        "/catalog/training-plans",
        summary="List the account's training plans with their zones",
        description=(
            "Every SageMaker training plan in the Region: status, instance types, counts, the "
            "zones of its reserved capacities and its start and end."
        ),
        operation_id="listTrainingPlans",
        tags=TAGS,
        responses={
            200: json_response(
                "TrainingPlanList", "The account's training plans in this Region."
            ),
            **READ_ERRORS,
        },
    )
    def list_training_plans() -> TrainingPlanList:
        plans = training_plans(services.sagemaker_client())
        return TrainingPlanList(training_plans=[training_plan_view(p) for p in plans])

    @router.get(
        "/catalog/instance-group-fields",
        summary="List the fields of an instance group: which a PATCH may change, and why not",
        description=(
            "Every field of the group body of POST /clusters and POST /clusters/{tag}/"
            "instance-groups, the SageMaker members it maps to, whether PATCH "
            "/clusters/{tag}/instance-groups/{name} may change it, and for a create-time field "
            "why not and what to do instead."
        ),
        operation_id="listInstanceGroupFields",
        tags=TAGS,
        responses={
            200: json_response("InstanceGroupFieldList", "The instance-group fields."),
            400: ERROR_RESPONSES[400],
        },
    )
    def list_instance_group_fields() -> InstanceGroupFieldList:
        return InstanceGroupFieldList(
            fields=[
                InstanceGroupFieldView(
                    name=field.name,
                    sagemaker_members=list(field.members),
                    mutable=field.mutable,
                    description=field.description,
                    reason=field.reason,
                    instead=field.instead or None,
                )
                for field in GROUP_FIELDS
            ]
        )

    return router


# ---------------------------------------------------------------------------- shared reads
# The catalogue routes and POST /clusters read the account's catalogue through these, so a
# create is judged on exactly what GET /catalog/... shows.
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


@dataclass(frozen=True)
class CreateCatalog:
    """What `validate_against_catalog` needs to judge one create request, and no more."""

    zones: list[str]
    offerings: dict[str, set[str]]
    facts: dict[str, InstanceTypeFacts]
    training_plans: dict[str, TrainingPlan]


def catalog_for_create(services: ApiServices, request: CreateClusterRequest) -> CreateCatalog:
    """Read the catalogue a create request needs (see `catalog_for_groups`)."""
    return catalog_for_groups(services, request.instance_groups)


def catalog_for_groups(
    services: ApiServices, groups: Sequence[InstanceGroupRequest]
) -> CreateCatalog:
    """Read the catalogue new groups need: the zones, the offerings of their instance types,
    the facts of the types of EFA-only groups, and the training plans only when a group uses
    one."""
    client = services.ec2_client()
    zones = [z.name for z in ec2_api.list_availability_zones(client)]
    requested = sorted({g.instance_type for g in groups})
    offered = offered_types(client, requested, zones)
    efa_types = sorted({g.instance_type for g in groups if g.efa_only})
    plans: dict[str, TrainingPlan] = {}
    if any(isinstance(g.capacity, TrainingPlanCapacity) for g in groups):
        plans = {plan.arn: plan for plan in training_plans(services.sagemaker_client())}
    return CreateCatalog(
        zones=zones,
        offerings={t.instance_type: set(t.availability_zones) for t in offered},
        facts=instance_type_facts(client, efa_types),
        training_plans=plans,
    )


def instance_type_view(
    instance_type: HyperPodInstanceType, facts: InstanceTypeFacts | None
) -> InstanceTypeView:
    view = InstanceTypeView(
        instance_type=instance_type.instance_type,
        ec2_instance_type=instance_type.ec2_instance_type,
        availability_zones=list(instance_type.availability_zones),
    )
    if facts is None:  # offered but not described: the zones are still the answer
        return view
    return view.model_copy(
        update={
            "vcpus": facts.vcpus,
            "memory_mib": facts.memory_mib,
            "gpus": [
                GpuView(
                    name=g.name, manufacturer=g.manufacturer, count=g.count, memory_mib=g.memory_mib
                )
                for g in facts.gpus
            ],
            "total_gpu_memory_mib": facts.total_gpu_memory_mib,
            "neuron_devices": [
                NeuronDeviceView(
                    name=d.name, count=d.count, core_count=d.core_count, memory_mib=d.memory_mib
                )
                for d in facts.neuron_devices
            ],
            "maximum_network_cards": facts.maximum_network_cards,
            "efa_supported": facts.efa_supported,
            "maximum_efa_interfaces": facts.maximum_efa_interfaces,
        }
    )


def _time(value: datetime | None) -> str | None:
    return clock.isoformat(value) if value is not None else None


def training_plan_view(plan: TrainingPlan) -> TrainingPlanView:
    return TrainingPlanView(
        name=plan.name,
        arn=plan.arn,
        status=plan.status,
        status_message=plan.status_message,
        instance_types=plan.instance_types,
        availability_zones=plan.availability_zones,
        total_instance_count=plan.total_instance_count,
        available_instance_count=plan.available_instance_count,
        in_use_instance_count=plan.in_use_instance_count,
        start_time=_time(plan.start_time),
        end_time=_time(plan.end_time),
        duration_hours=plan.duration_hours,
        target_resources=list(plan.target_resources),
        reserved_capacities=[
            ReservedCapacityView(
                instance_type=rc.instance_type,
                total_instance_count=rc.total_instance_count,
                availability_zone=rc.availability_zone,
                availability_zone_id=rc.availability_zone_id,
                status=rc.status,
            )
            for rc in plan.reserved_capacities
        ],
    )
