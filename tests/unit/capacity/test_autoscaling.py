"""hypd.capacity.autoscaling: prerequisites, the cluster role and the Karpenter objects."""

from __future__ import annotations

from typing import Any

import pytest

from hypd.capacity import autoscaling
from hypd.capacity.autoscaling import AutoscalingSettings
from hypd.capacity.requests import AutoscalingRequest
from tests.unit.capacity.support import ARN, OTHER_ZONE, PLAN, details, live

SETTINGS = AutoscalingSettings(
    instance_groups=("burst",), consolidate_after="5m",
    consolidation_policy="WhenEmptyOrUnderutilized",
)


def request(**body: Any) -> AutoscalingRequest:
    return AutoscalingRequest.model_validate({"enabled": True, **body})


def test_a_first_enable_must_name_groups_and_takes_the_defaults() -> None:
    assert autoscaling.resolve_settings(request(), None) is None
    assert autoscaling.resolve_settings(request(instanceGroups=["burst"]), None) == SETTINGS


def test_only_the_fields_sent_change_the_current_settings() -> None:
    changed = autoscaling.resolve_settings(request(consolidateAfter="30m"), SETTINGS)
    assert changed == SETTINGS.model_copy(update={"consolidate_after": "30m"})


def test_the_cluster_must_provision_continuously_and_recover_nodes_automatically() -> None:
    assert autoscaling.cluster_problems(live(details())) == []
    problems = autoscaling.cluster_problems(
        live(details(), NodeProvisioningMode=None, NodeRecovery="None")
    )
    assert [p.split(" ")[0] for p in problems] == ["NodeProvisioningMode", "NodeRecovery"]


def test_each_group_must_exist_and_be_one_karpenter_can_scale() -> None:
    cluster = live(
        details("burst", OnStartDeepHealthChecks=None),
        details("dhc"),
        details("plan", OnStartDeepHealthChecks=None, TrainingPlanArn=PLAN),
        details("split", OnStartDeepHealthChecks=None,
                OverrideVpcConfig={"SecurityGroupIds": ["sg"], "Subnets": ["subnet-0shared",
                                                                            OTHER_ZONE]}),
    )
    problems = autoscaling.group_problems(cluster, ["burst", "dhc", "plan", "split", "ghost"])

    assert {p.field: p.message.split(" ")[1] for p in problems} == {
        "instanceGroups[1]": "has",  # deep health checks
        "instanceGroups[2]": "uses",  # a training plan
        "instanceGroups[3]": "has",  # subnets in several zones
        "instanceGroups[4]": "instance",  # no such group
    }


def test_a_group_with_nodes_is_a_warning_not_an_error() -> None:
    assert autoscaling.warnings(live(details("burst", TargetCount=0)), ["burst"]) == []
    assert "scales it down" in autoscaling.warnings(live(details("burst")), ["burst"])[0]


@pytest.mark.parametrize("tag", ["t", "a" * 58])
def test_the_role_name_fits_iam_and_is_the_same_for_a_tag(tag: str) -> None:
    name = autoscaling.role_name(tag)
    assert len(name) <= 64
    assert name == autoscaling.role_name(tag)
    assert name.startswith("hypd-")


def test_the_role_may_add_and_remove_nodes_of_this_cluster_only() -> None:
    trust = autoscaling.trust_policy()["Statement"]
    assert trust == [
        {"Effect": "Allow", "Principal": {"Service": "hyperpod.sagemaker.amazonaws.com"},
         "Action": "sts:AssumeRole"}
    ]
    (statement,) = autoscaling.role_policy(ARN)["Statement"]
    assert statement["Action"] == ["sagemaker:BatchAddClusterNodes",
                                   "sagemaker:BatchDeleteClusterNodes"]
    assert statement["Resource"] == ARN


def test_the_node_pool_consolidates_idle_nodes_on_hypds_node_class() -> None:
    pool = autoscaling.node_pool(SETTINGS, ["ml.g6.4xlarge", "ml.g6.4xlarge"])
    spec = pool["spec"]
    assert spec["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.sagemaker.amazonaws.com", "kind": "HyperpodNodeClass", "name": "hypd"
    }
    assert spec["template"]["spec"]["requirements"] == [
        {"key": "node.kubernetes.io/instance-type", "operator": "In",
         "values": ["ml.g6.4xlarge"]}
    ]
    assert spec["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert spec["disruption"]["consolidateAfter"] == "5m"
    assert autoscaling.node_class(SETTINGS)["spec"] == {"instanceGroups": ["burst"]}


def test_ready_means_the_ready_condition_is_true() -> None:
    assert autoscaling.ready_problem(None, "NodePool hypd") == "NodePool hypd does not exist"
    pending = {"status": {"conditions": [
        {"type": "InstanceGroupReady", "status": "False", "message": "no group burst"},
        {"type": "Ready", "status": "False"},
    ]}}
    assert "no group burst" in str(autoscaling.ready_problem(pending, "x"))
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    assert autoscaling.ready_problem(ready, "x") is None


def test_an_object_matches_its_manifest_when_it_holds_every_field_of_the_spec() -> None:
    manifest = autoscaling.node_class(SETTINGS)
    served = {**manifest, "spec": {**manifest["spec"], "defaulted": 1}}
    assert autoscaling.spec_matches(served, manifest)
    assert not autoscaling.spec_matches({"spec": {"instanceGroups": ["other"]}}, manifest)
    assert not autoscaling.spec_matches(None, manifest)
