"""validate_group_against_catalog: a group added to a cluster, its zone reconciled with a plan."""

from __future__ import annotations

from typing import Any

import pytest

from hypd.aws.sagemaker import training_plan
from hypd.capacity.requests import AddInstanceGroupRequest
from hypd.catalog.models import InstanceTypeFacts
from hypd.create.validate import validate_group_against_catalog
from hypd.errors import ValidationError
from tests.unit.capacity.support import PLAN

ZONES = ["us-west-2a", "us-west-2b", "us-west-2c"]
OFFERINGS = {"ml.g6.4xlarge": {"us-west-2a", "us-west-2b"}, "ml.p5.48xlarge": {"us-west-2b"}}
PLANS = {
    PLAN: training_plan(
        {
            "TrainingPlanName": "p5-reserved",
            "TrainingPlanArn": PLAN,
            "Status": "Active",
            "AvailableInstanceCount": 4,
            "ReservedCapacitySummaries": [
                {"InstanceType": "ml.p5.48xlarge", "AvailabilityZone": "us-west-2b",
                 "TotalInstanceCount": 4}
            ],
        }
    )
}


def add(zone: str | None = None, **body: Any) -> Any:
    group = AddInstanceGroupRequest.model_validate(
        {"name": "burst", "instanceType": "ml.g6.4xlarge", "count": 2,
         "capacity": {"type": "spot"}, **({"availabilityZone": zone} if zone else {}), **body}
    )
    return validate_group_against_catalog(
        group, zone=group.availability_zone, default_zone="us-west-2a", zones=ZONES,
        offerings=OFFERINGS, facts={"ml.g6.4xlarge": InstanceTypeFacts(
            ec2_instance_type="g6.4xlarge", maximum_network_cards=1, efa_supported=False)},
        training_plans=PLANS,
    )


PLAN_GROUP: dict[str, Any] = {"instanceType": "ml.p5.48xlarge",
              "capacity": {"type": "training-plan", "trainingPlanArn": PLAN}}


def test_a_group_without_a_zone_goes_to_the_clusters_zone() -> None:
    resolved = add()
    assert resolved.resolved_capacity.availability_zone == "us-west-2a"
    assert resolved.resolved_capacity.type.value == "spot"


def test_a_plan_group_without_a_zone_takes_the_plans_zone() -> None:
    resolved = add(**PLAN_GROUP)
    assert resolved.resolved_capacity.availability_zone == "us-west-2b"
    assert resolved.resolved_capacity.training_plan_name == "p5-reserved"


def test_a_plan_group_in_another_zone_than_its_plan_is_refused_naming_both() -> None:
    with pytest.raises(ValidationError) as raised:
        add("us-west-2a", **PLAN_GROUP)
    assert raised.value.details["field"] == "capacity.trainingPlanArn"
    assert "us-west-2b" in raised.value.message
    assert "us-west-2a" in raised.value.message


def test_the_plan_zone_given_explicitly_is_accepted() -> None:
    assert add("us-west-2b", **PLAN_GROUP).resolved_capacity.availability_zone == "us-west-2b"


@pytest.mark.parametrize(
    ("zone", "body", "field"),
    [
        ("us-west-2c", {}, "instanceType"),  # not offered there
        ("us-east-1a", {}, "availabilityZone"),
        (None, {"efaOnly": True}, "efaOnly"),
        (None, {**PLAN_GROUP, "count": 5}, "count"),  # the plan has 4 free
    ],
)
def test_what_the_catalogue_cannot_give_is_a_400_on_the_field(
    zone: str | None, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        add(zone, **body)
    assert raised.value.details["field"] == field
