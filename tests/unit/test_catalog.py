"""The catalogue's domain logic and adapters: ml.* -> EC2, merging offerings, zones, plans."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber

from hypd.aws import ec2 as ec2_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.catalog.instance_types import (
    check_zone,
    ec2_instance_type,
    hyperpod_instance_types,
    merge_offerings,
)
from hypd.catalog.models import AvailabilityZone, ReservedCapacity, TrainingPlan
from hypd.errors import AwsThrottled, ValidationError
from tests.unit.support import REGION

RESERVED_CAPACITY_ARN = "arn:aws:sagemaker:us-west-2:123456789012:reserved-capacity/x"
ZONES = [
    AvailabilityZone("us-west-2a", "usw2-az2", "available", REGION),
    AvailabilityZone("us-west-2b", "usw2-az1", "available", REGION),
]


# ---------------------------------------------------------------------------- ml.* -> EC2
@pytest.mark.parametrize(
    ("ml", "ec2"),
    [
        ("ml.g6.4xlarge", "g6.4xlarge"),
        ("ml.p5.48xlarge", "p5.48xlarge"),
        ("ml.p6e-gb200.36xlarge", "p6e-gb200.36xlarge"),
    ],
)
def test_an_ml_type_runs_on_the_ec2_type_of_the_same_name(ml: str, ec2: str) -> None:
    assert ec2_instance_type(ml) == ec2


@pytest.mark.parametrize("name", ["g6.4xlarge", "ml.", "", "mlg6.xlarge"])
def test_a_name_without_the_ml_prefix_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="not an ml"):
        ec2_instance_type(name)


def test_the_candidates_are_botocores_cluster_instance_types() -> None:
    # Given the SageMaker model installed with botocore
    model = botocore.session.get_session().get_service_model("sagemaker")
    enum = model.shape_for("ClusterInstanceType").enum
    # Then the candidates are exactly its enum, read once
    assert set(hyperpod_instance_types()) == set(enum)
    assert hyperpod_instance_types() is hyperpod_instance_types()
    assert "ml.g6.4xlarge" in hyperpod_instance_types()


# ---------------------------------------------------------------------------- merging
def test_offerings_are_merged_per_ml_type_with_their_zones() -> None:
    # Given EC2 offerings of two candidates, a non-candidate and a zone that is not usable
    candidates = ["ml.g6.4xlarge", "ml.p5.48xlarge", "ml.c5.large"]
    offerings = [
        ("g6.4xlarge", "us-west-2b"),
        ("g6.4xlarge", "us-west-2a"),
        ("p5.48xlarge", "us-west-2b"),
        ("p5.48xlarge", "us-west-2z"),
        ("t3.micro", "us-west-2a"),
    ]
    # When they are merged over the Region's zones
    merged = merge_offerings(candidates, offerings, ["us-west-2a", "us-west-2b"])
    # Then each offered candidate is listed once, sorted, with the usable zones offering it
    assert [(t.instance_type, t.ec2_instance_type, t.availability_zones) for t in merged] == [
        ("ml.g6.4xlarge", "g6.4xlarge", ("us-west-2a", "us-west-2b")),
        ("ml.p5.48xlarge", "p5.48xlarge", ("us-west-2b",)),
    ]


def test_a_zone_keeps_only_the_types_it_offers_with_all_their_zones() -> None:
    offerings = [
        ("g6.4xlarge", "us-west-2a"),
        ("g6.4xlarge", "us-west-2b"),
        ("p5.48xlarge", "us-west-2b"),
    ]
    merged = merge_offerings(
        ["ml.g6.4xlarge", "ml.p5.48xlarge"], offerings, ["us-west-2a", "us-west-2b"], "us-west-2a"
    )
    assert [(t.instance_type, t.availability_zones) for t in merged] == [
        ("ml.g6.4xlarge", ("us-west-2a", "us-west-2b"))
    ]


# ---------------------------------------------------------------------------- zones
def test_a_zone_of_the_region_is_accepted() -> None:
    assert check_zone("us-west-2b", ZONES) == ZONES[1]


@pytest.mark.parametrize(
    ("zone", "problem"),
    [
        ("us-west-2", "not an Availability Zone name"),
        ("usw2-az1", "not an Availability Zone name"),
        ("us-west-2z", "not an available Availability Zone of us-west-2"),
        ("us-east-1a", "not an available Availability Zone of us-west-2"),
    ],
)
def test_a_bad_or_foreign_zone_is_a_validation_error_naming_the_field(
    zone: str, problem: str
) -> None:
    with pytest.raises(ValidationError) as error:
        check_zone(zone, ZONES)
    assert error.value.message.startswith("invalid request: availabilityZone: ")
    assert problem in error.value.message
    assert error.value.details["errors"][0]["field"] == "availabilityZone"


# ---------------------------------------------------------------------------- training plans
def plan(*capacities: ReservedCapacity) -> TrainingPlan:
    return TrainingPlan(
        name="p",
        arn="arn:aws:sagemaker:us-west-2:123456789012:training-plan/p",
        status="Active",
        status_message=None,
        total_instance_count=4,
        available_instance_count=3,
        in_use_instance_count=1,
        start_time=None,
        end_time=None,
        duration_hours=24,
        reserved_capacities=capacities,
    )


def test_a_plans_zones_and_types_are_its_reserved_capacities() -> None:
    given = plan(
        ReservedCapacity("ml.p5.48xlarge", 2, "us-west-2b", "usw2-az1", "Active"),
        ReservedCapacity("ml.p5.48xlarge", 2, "us-west-2a", "usw2-az2", "Active"),
    )
    assert given.availability_zones == ["us-west-2a", "us-west-2b"]
    assert given.instance_types == ["ml.p5.48xlarge"]
    assert plan().availability_zones == []
    assert plan().instance_types == []


def summary(name: str, zone: str) -> dict[str, Any]:
    start = datetime(2026, 1, 15, 9, tzinfo=UTC)
    return {
        "TrainingPlanArn": f"arn:aws:sagemaker:us-west-2:123456789012:training-plan/{name}",
        "TrainingPlanName": name,
        "Status": "Active",
        "StartTime": start,
        "EndTime": start.replace(day=16),
        "DurationHours": 24,
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "InUseInstanceCount": 0,
        "TargetResources": ["hyperpod-cluster"],
        "ReservedCapacitySummaries": [
            {
                "ReservedCapacityArn": RESERVED_CAPACITY_ARN,
                "InstanceType": "ml.p5.48xlarge",
                "TotalInstanceCount": 2,
                "Status": "Active",
                "AvailabilityZone": zone,
            }
        ],
    }


def test_every_page_of_training_plans_is_read() -> None:
    # Given two pages of plans
    client = boto3.client("sagemaker", region_name=REGION)
    with Stubber(client) as stub:
        stub.add_response(
            "list_training_plans",
            {"TrainingPlanSummaries": [summary("b", "us-west-2b")], "NextToken": "t"},
        )
        stub.add_response(
            "list_training_plans",
            {"TrainingPlanSummaries": [summary("a", "us-west-2a")]},
            {"NextToken": "t"},
        )
        # When they are listed
        plans = sagemaker_api.list_training_plans(client)
    # Then both are there, by name, with their zones
    assert [(p.name, p.availability_zones, p.instance_types) for p in plans] == [
        ("a", ["us-west-2a"], ["ml.p5.48xlarge"]),
        ("b", ["us-west-2b"], ["ml.p5.48xlarge"]),
    ]
    assert plans[0].target_resources == ("hyperpod-cluster",)


def test_a_throttled_listing_is_a_temporary_error() -> None:
    client = boto3.client("sagemaker", region_name=REGION)
    with Stubber(client) as stub:
        stub.add_client_error("list_training_plans", "ThrottlingException", http_status_code=400)
        with pytest.raises(AwsThrottled):
            sagemaker_api.list_training_plans(client)


def test_an_unknown_training_plan_is_none() -> None:
    client = boto3.client("sagemaker", region_name=REGION)
    with Stubber(client) as stub:
        stub.add_client_error("describe_training_plan", "ResourceNotFound")
        stub.add_response("describe_training_plan", summary("a", "us-west-2a"))
        assert sagemaker_api.describe_training_plan(client, "nope") is None
        found = sagemaker_api.describe_training_plan(client, "a")
    assert found is not None
    assert found.availability_zones == ["us-west-2a"]


# ---------------------------------------------------------------------------- EC2 on moto
@pytest.mark.usefixtures("moto_aws")
def test_ec2_answers_zones_offerings_and_facts() -> None:
    client = boto3.client("ec2", region_name=REGION)
    # The Region's zones
    zones = ec2_api.list_availability_zones(client)
    assert [z.name for z in zones] == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
    assert all(z.zone_id.startswith("usw2-az") and z.state == "available" for z in zones)
    # Offerings of more types than one call may ask for (chunked), by zone
    candidates = [ec2_instance_type(t) for t in hyperpod_instance_types()]
    assert len(candidates) > 100
    offerings = ec2_api.list_zone_offerings(client, candidates)
    assert ("g6.4xlarge", "us-west-2a") in offerings
    assert {t for t, _zone in offerings} <= set(candidates)
    # Facts of the EC2 types
    facts = ec2_api.describe_instance_types(client, ["g6.4xlarge", "p5.48xlarge", "trn1.32xlarge"])
    g6 = facts["g6.4xlarge"]
    assert (g6.vcpus, g6.memory_mib, g6.efa_supported) == (16, 65536, False)
    assert [(g.name, g.manufacturer, g.count) for g in g6.gpus] == [("L4", "NVIDIA", 1)]
    p5 = facts["p5.48xlarge"]
    assert p5.efa_supported
    assert p5.maximum_network_cards == 32
    assert p5.maximum_efa_interfaces
    assert facts["trn1.32xlarge"].neuron_devices[0].count == 16
