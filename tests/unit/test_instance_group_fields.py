"""hypd.instance_groups.fields: the field catalogue agrees with the normaliser and the models."""

from __future__ import annotations

from pydantic import BaseModel

from hypd.capacity.requests import AddInstanceGroupRequest, UpdateInstanceGroupRequest
from hypd.clusters.create_request import CREATE_TIME_ONLY, InstanceGroupRequest
from hypd.instance_groups.fields import BY_NAME, GROUP_FIELDS, MUTABLE_FIELDS, create_time_only
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


def test_the_request_models_say_why_each_create_time_field_is_with_the_catalogues_reason() -> None:
    # Given the group body of POST /clusters (models that do not import the catalogue)
    marked = {
        field.alias or name: field
        for name, field in InstanceGroupRequest.model_fields.items()
        if field.json_schema_extra == CREATE_TIME_ONLY
    }
    # Then exactly its create-time fields are marked, each described with the catalogue's reason
    assert set(marked) == {
        alias for alias in _aliases(InstanceGroupRequest) if not BY_NAME[alias].mutable
    }
    for alias, field in marked.items():
        assert field.description is not None
        assert field.description.endswith(create_time_only(alias)), alias
