"""hypd.capacity.requests: a PATCH against the group it changes, and the other bodies."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError as PydanticValidationError

from hypd.aws.sagemaker import training_plan
from hypd.capacity.requests import (
    AutoscalingRequest,
    ClusterNotManaged,
    UpdateInstanceGroupRequest,
    check_managed,
    plan_group_update,
)
from hypd.clusters.models import Cluster, ClusterNotActive, ClusterSource, ClusterStatus
from hypd.errors import ValidationError
from hypd.instance_groups.errors import ImmutableField
from hypd.instance_groups.views import InstanceGroupView
from tests.unit.capacity.support import PLAN, ROLE, details, live


def view(**overrides: Any) -> InstanceGroupView:
    found = live(details("gpu", **overrides)).view("gpu")
    assert found is not None
    return found


def patch(**body: Any) -> UpdateInstanceGroupRequest:
    return UpdateInstanceGroupRequest.model_validate(body)


def test_a_scale_changes_the_count_only() -> None:
    change = plan_group_update(patch(count=5), view())

    assert change is not None
    assert change.changes == {"InstanceCount": 5}
    assert change.fields == {"count": 5}


def test_a_patch_that_matches_the_group_changes_nothing() -> None:
    assert plan_group_update(patch(count=2, labels={"team": "ml"}), view()) is None


def test_labels_replace_the_map_and_keep_the_taints() -> None:
    change = plan_group_update(patch(labels={"tier": "batch"}), view(OnStartDeepHealthChecks=None))

    assert change is not None
    assert change.changes == {"KubernetesConfig": {"Labels": {"tier": "batch"}, "Taints": []}}


def test_taints_are_refused_on_a_group_with_deep_health_checks() -> None:
    with pytest.raises(ValidationError, match="deep health checks") as raised:
        plan_group_update(patch(taints=[{"key": "gpu", "effect": "NoSchedule"}]), view())
    assert raised.value.details["field"] == "taints"


@pytest.mark.parametrize(
    ("field", "value", "current"),
    [
        ("instanceType", "ml.p5.48xlarge", "ml.g6.4xlarge"),
        ("executionRole", "arn:aws:iam::123456789012:role/other", ROLE),
        ("threadsPerCore", 2, 1),
        ("capacity", {"type": "spot"}, {"type": "on-demand"}),
        ("efaOnly", True, False),
        ("deepHealthChecks", [], ["InstanceStress"]),
        ("dedicatedSubnet", True, False),
        ("availabilityZone", "us-west-2b", "us-west-2a"),
        ("name", "renamed", "gpu"),
    ],
)
def test_a_create_time_field_is_refused_naming_the_field_and_why(
    field: str, value: Any, current: Any
) -> None:
    with pytest.raises(ImmutableField) as raised:
        plan_group_update(patch(count=3, **{field: value}), view())

    error = raised.value
    assert error.status == 400
    assert error.details["field"] == field
    assert error.details["current"] == current
    assert error.message.startswith(f"{field} of instance group gpu cannot be changed: ")
    assert "fixed at creation" in error.message or "names the group" in error.message


def test_restating_a_create_time_field_is_allowed() -> None:
    change = plan_group_update(
        patch(count=3, instanceType="ml.g6.4xlarge", capacity={"type": "on-demand"}), view()
    )
    assert change is not None
    assert change.changes == {"InstanceCount": 3}


@pytest.mark.parametrize("field", ["capacity", "deepHealthChecks"])
def test_a_null_create_time_field_is_refused_naming_it_when_the_group_has_one(
    field: str,
) -> None:
    # Given a group with a capacity and deep health checks; When a PATCH sends null for one
    with pytest.raises(ImmutableField) as raised:
        plan_group_update(patch(count=3, **{field: None}), view())

    # Then a 400 names the field and the group's value
    assert raised.value.status == 400
    assert raised.value.details["field"] == field
    assert raised.value.message.startswith(f"{field} of instance group gpu cannot be changed")


def test_null_deep_health_checks_restate_a_group_that_has_none() -> None:
    # Given a group without deep health checks; When a PATCH sends deepHealthChecks: null
    change = plan_group_update(
        patch(count=3, deepHealthChecks=None), view(OnStartDeepHealthChecks=None)
    )

    # Then null restates "none": only the count changes
    assert change is not None
    assert change.changes == {"InstanceCount": 3}


def test_min_count_cannot_exceed_count() -> None:
    with pytest.raises(ValidationError, match="minCount"):
        plan_group_update(patch(minCount=3), view())


def test_a_plan_group_cannot_grow_past_the_plans_free_instances() -> None:
    plan = training_plan(
        {"TrainingPlanName": "p5", "TrainingPlanArn": PLAN, "Status": "Active",
         "AvailableInstanceCount": 1}
    )
    group = view(TrainingPlanArn=PLAN, CapacityRequirements=None)
    assert plan_group_update(patch(count=3), group, training_plan=plan) is not None
    with pytest.raises(ValidationError, match="1 instances available"):
        plan_group_update(patch(count=4), group, training_plan=plan)


def test_an_empty_patch_is_refused() -> None:
    with pytest.raises(PydanticValidationError, match="at least one"):
        patch()


def test_autoscaling_off_takes_no_settings() -> None:
    with pytest.raises(PydanticValidationError, match="only with enabled"):
        AutoscalingRequest.model_validate({"enabled": False, "instanceGroups": ["gpu"]})
    with pytest.raises(PydanticValidationError, match="repeats"):
        AutoscalingRequest.model_validate({"enabled": True, "instanceGroups": ["a", "a"]})


def _cluster(**fields: Any) -> Cluster:
    return Cluster.model_validate(
        {"tag": "train", "source": "created", "anchorArn": "arn:aws:eks:::cluster/hypd-train",
         "createdAt": "t", "updatedAt": "t", "status": "ACTIVE", **fields}
    )


def test_capacity_needs_an_active_cluster_hypd_created() -> None:
    check_managed(_cluster())
    with pytest.raises(ClusterNotManaged):
        check_managed(_cluster(source=ClusterSource.DISCOVERED, status=None))
    with pytest.raises(ClusterNotActive, match="retry"):
        check_managed(_cluster(status=ClusterStatus.FAILED, lastOperationId="op-1"))
