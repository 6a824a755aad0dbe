"""hypd.instance_groups.update: the one builder of UpdateCluster requests carrying groups."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hypd.instance_groups import resubmittable_group
from hypd.instance_groups.errors import (
    ImmutableField,
    InstanceGroupExists,
    InstanceGroupNotFound,
    LastInstanceGroup,
    TooManyInstanceGroups,
)
from hypd.instance_groups.update import update_request
from tests.unit.capacity.support import details


def cluster(*groups: dict[str, Any]) -> dict[str, Any]:
    return {"ClusterName": "hypd-train", "InstanceGroups": list(groups)}


def test_a_scale_resubmits_the_scaled_group_alone_with_every_carried_member() -> None:
    described = cluster(details("gpu"), details("cpu", InstanceType="ml.m5.xlarge"))
    snapshot = copy.deepcopy(described)

    request = update_request(described, changes={"gpu": {"InstanceCount": 5}})

    assert request == {
        "ClusterName": "hypd-train",
        "InstanceGroups": [{**resubmittable_group(details("gpu")), "InstanceCount": 5}],
    }
    assert request["InstanceGroups"][0]["OnStartDeepHealthChecks"] == ["InstanceStress"]
    assert described == snapshot


def test_an_added_group_is_sent_as_given_and_no_other_group_is_resubmitted() -> None:
    spec = {"InstanceGroupName": "spot", "InstanceType": "ml.g6.4xlarge", "InstanceCount": 1,
            "ExecutionRole": "arn:aws:iam::123456789012:role/x",
            "CapacityRequirements": {"Spot": {}}}

    request = update_request(cluster(details("gpu")), add=[spec])

    assert request == {"ClusterName": "hypd-train", "InstanceGroups": [spec]}


def test_a_deleted_group_is_named_in_instance_groups_to_delete_only() -> None:
    request = update_request(cluster(details("gpu"), details("cpu")), delete=["cpu"])

    assert request == {"ClusterName": "hypd-train", "InstanceGroupsToDelete": ["cpu"]}


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"changes": {"ghost": {"InstanceCount": 1}}}, InstanceGroupNotFound),
        ({"delete": ["ghost"]}, InstanceGroupNotFound),
        ({"delete": ["gpu"]}, LastInstanceGroup),
        ({"add": [{"InstanceGroupName": "gpu"}]}, InstanceGroupExists),
        ({"changes": {"gpu": {"InstanceType": "ml.p5.48xlarge"}}}, ImmutableField),
    ],
)
def test_a_change_the_cluster_cannot_take_is_refused(
    kwargs: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        update_request(cluster(details("gpu")), **kwargs)


def test_a_cluster_holds_at_most_a_hundred_groups() -> None:
    full = cluster(*(details(f"g{i}") for i in range(100)))
    with pytest.raises(TooManyInstanceGroups):
        update_request(full, add=[{"InstanceGroupName": "one-more"}])


def test_a_change_that_changes_nothing_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="changes nothing"):
        update_request(cluster(details("gpu")))
