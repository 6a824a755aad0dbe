"""Routes: /catalog (inspect before create: zones, HyperPod instance types, training plans).

Read-only: each route reads the catalogue (`hypd.create.catalog`, the reads a create is judged
on) and answers at once; nothing is recorded.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hypd import clock
from hypd.api.context import services
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
from hypd.aws import ec2 as ec2_api
from hypd.catalog.instance_types import ZONE_NAME_PATTERN
from hypd.catalog.models import HyperPodInstanceType, InstanceTypeFacts, TrainingPlan
from hypd.create.catalog import offered_instance_types, training_plans
from hypd.instance_groups.fields import GROUP_FIELDS

TAGS = ["catalog"]
READ_ERRORS = {400: ERROR_RESPONSES[400], 503: ERROR_RESPONSES[503]}

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
    zones = ec2_api.list_availability_zones(services().ec2_client())
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
    offered = offered_instance_types(services().ec2_client(), availability_zone)
    return InstanceTypeList(
        availability_zone=availability_zone,
        instance_types=[instance_type_view(t, facts) for t, facts in offered],
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
    plans = training_plans(services().sagemaker_client())
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
