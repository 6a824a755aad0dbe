"""The catalogue routes through functions/api/app.py in-process (moto EC2; training plans
answered by a botocore `before-call` hook, since moto does not implement them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from hypd.aws.dynamodb import Table
from tests.unit.support import (
    ACCOUNT,
    ANSWER_TRAINING_PLANS,
    REGION,
    TABLE_NAME,
    FakeLambdaContext,
    answer_list_training_plans,
    function_environment,
    load_event,
    load_function_module,
)
from tests.unit.test_api_handler import api_event

pytestmark = pytest.mark.usefixtures("fresh_imports", "fixed_clock")

RESERVED_CAPACITY_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:reserved-capacity/x"
PLAN_START = datetime(2026, 1, 15, 9, tzinfo=UTC)
PLANS = {
    "TrainingPlanSummaries": [
        {
            "TrainingPlanArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/p5-now",
            "TrainingPlanName": "p5-now",
            "Status": "Active",
            "StartTime": PLAN_START,
            "EndTime": PLAN_START.replace(day=16),
            "DurationHours": 24,
            "TotalInstanceCount": 4,
            "AvailableInstanceCount": 3,
            "InUseInstanceCount": 1,
            "ReservedCapacitySummaries": [
                {
                    "ReservedCapacityArn": RESERVED_CAPACITY_ARN,
                    "InstanceType": "ml.p5.48xlarge",
                    "TotalInstanceCount": 4,
                    "Status": "Active",
                    "AvailabilityZone": "us-west-2a",
                    "AvailabilityZoneId": "usw2-az2",
                }
            ],
        }
    ]
}


@pytest.fixture
def training_plans(moto_aws: None) -> Iterator[None]:
    """ListTrainingPlans answers PLANS (moto raises NotImplementedError for it)."""
    session = boto3.DEFAULT_SESSION
    answer_list_training_plans(session, PLANS["TrainingPlanSummaries"])
    yield
    session.events.unregister("before-call", unique_id=ANSWER_TRAINING_PLANS)


@pytest.fixture
def handler(monkeypatch: pytest.MonkeyPatch, template: dict[str, Any], table: Table) -> Any:
    env = function_environment(
        template,
        "ApiFunction",
        {
            "HypdTable": TABLE_NAME,
            "DiscoverStateMachine": f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:d",
            "CreateClusterStateMachine": f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:c",
        },
    )
    for name, value in {**env, "POWERTOOLS_TRACE_DISABLED": "true"}.items():
        monkeypatch.setenv(name, value)
    return load_function_module("api").handler


def get(handler: Any, path: str, query: dict[str, str] | None = None) -> tuple[int, Any]:
    raw = handler(api_event("GET", path, query=query), FakeLambdaContext("hypd-api"))
    return raw["statusCode"], json.loads(raw["body"])


# ---------------------------------------------------------------------------- 400s
@pytest.mark.parametrize("zone", ["us-west-2", "usw2-az1", "US-WEST-2A", "x" * 30, ""])
def test_a_malformed_zone_is_400_naming_availability_zone(handler: Any, zone: str) -> None:
    status, body = get(handler, "/catalog/instance-types", {"availabilityZone": zone})
    assert status == 400, body
    assert body["code"] == "ValidationError"
    assert "availabilityZone" in body["message"]
    assert body["details"]["errors"][0]["field"] == "availabilityZone"


@pytest.mark.parametrize("zone", ["us-west-2z", "us-east-1a"])
def test_a_zone_outside_the_region_is_400_naming_it(handler: Any, zone: str) -> None:
    status, body = get(handler, "/catalog/instance-types", {"availabilityZone": zone})
    assert status == 400, body
    assert body["code"] == "ValidationError"
    assert f"availabilityZone: {zone} is not an available Availability Zone" in body["message"]
    assert body["details"]["errors"] == [
        {"field": "availabilityZone", "in": "query", "message": body["message"][35:]}
    ]


# ---------------------------------------------------------------------------- 200s
def test_the_regions_zones_are_listed(handler: Any) -> None:
    status, body = get(handler, "/catalog/availability-zones")
    assert status == 200
    assert body["region"] == REGION
    assert body["availabilityZones"][0] == {
        "name": "us-west-2a",
        "zoneId": "usw2-az2",
        "state": "available",
    }
    assert len(body["availabilityZones"]) == 4


def test_instance_types_of_a_zone_carry_their_zones_and_facts(handler: Any) -> None:
    # When the types of us-west-2a are asked for
    status, body = get(handler, "/catalog/instance-types", {"availabilityZone": "us-west-2a"})
    # Then every one is an ml.* type offered there, with EC2's facts
    assert status == 200, body
    assert body["availabilityZone"] == "us-west-2a"
    types = {t["instanceType"]: t for t in body["instanceTypes"]}
    assert all(name.startswith("ml.") for name in types)
    assert all("us-west-2a" in t["availabilityZones"] for t in types.values())
    g6 = types["ml.g6.4xlarge"]
    assert g6["ec2InstanceType"] == "g6.4xlarge"
    assert g6["availabilityZones"] == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
    assert (g6["vCpus"], g6["memoryMiB"], g6["efaSupported"]) == (16, 65536, False)
    assert g6["gpus"][0]["name"] == "L4"
    # And a type EC2 offers only elsewhere is not listed
    assert "ml.trn1.32xlarge" not in types
    _, everywhere = get(handler, "/catalog/instance-types")
    trn1 = next(t for t in everywhere["instanceTypes"] if t["instanceType"] == "ml.trn1.32xlarge")
    assert "us-west-2a" not in trn1["availabilityZones"]
    assert everywhere["availabilityZone"] is None


@pytest.mark.usefixtures("training_plans")
def test_training_plans_are_listed_with_their_zones(handler: Any) -> None:
    status, body = get(handler, "/catalog/training-plans")
    assert status == 200, body
    [plan] = body["trainingPlans"]
    assert plan["name"] == "p5-now"
    assert plan["availabilityZones"] == ["us-west-2a"]
    assert plan["instanceTypes"] == ["ml.p5.48xlarge"]
    assert (plan["totalInstanceCount"], plan["availableInstanceCount"]) == (4, 3)
    assert plan["inUseInstanceCount"] == 1
    assert plan["startTime"] == "2026-01-15T09:00:00.000Z"
    assert plan["reservedCapacities"][0]["availabilityZoneId"] == "usw2-az2"


def test_the_recorded_instance_types_event_is_served(handler: Any) -> None:
    raw = handler(load_event("api-list-instance-types.json"), FakeLambdaContext("hypd-api"))
    assert raw["statusCode"] == 200
    assert json.loads(raw["body"])["availabilityZone"] == "us-west-2a"
