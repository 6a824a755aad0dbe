"""hypd.instance_groups.fields: the field catalogue agrees with the normaliser and the models."""

from __future__ import annotations

from pydantic import BaseModel

from hypd.capacity.requests import AddInstanceGroupRequest, UpdateInstanceGroupRequest
from hypd.clusters.create_request import InstanceGroupRequest
from hypd.instance_groups.fields import BY_NAME, GROUP_FIELDS, MUTABLE_FIELDS
from hypd.instance_groups.normalise import (
    FIXED_MEMBERS,
    MUTABLE_MEMBERS,
    RESUBMITTED_MEMBERS,
)


def _aliases(model: type[BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def test_every_field_of_a_group_body_is_in_the_catalogue() -> None:
    assert _aliases(AddInstanceGroupRequest) - set(BY_NAME) == set()
    assert _aliases(InstanceGroupRequest) <= set(BY_NAME)


def test_a_patch_accepts_every_catalogued_field_and_nothing_else() -> None:
    assert _aliases(UpdateInstanceGroupRequest) == set(BY_NAME)


def test_mutability_is_the_normalisers() -> None:
    for field in GROUP_FIELDS:
        assert set(field.members) <= set(RESUBMITTED_MEMBERS), field.name
        assert field.mutable == all(m in MUTABLE_MEMBERS for m in field.members), field.name


def test_a_create_time_field_says_why_with_the_normalisers_reason_and_what_to_do() -> None:
    for field in GROUP_FIELDS:
        if field.mutable:
            assert field.reason is None
            continue
        assert field.reason in FIXED_MEMBERS.values(), field.name
        assert field.instead, field.name


def test_count_labels_and_taints_are_mutable_and_the_capacity_decision_is_not() -> None:
    assert set(MUTABLE_FIELDS) == {"count", "minCount", "labels", "taints"}
    for name in ("instanceType", "capacity", "efaOnly", "executionRole", "threadsPerCore"):
        assert not BY_NAME[name].mutable
