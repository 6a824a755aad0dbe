"""Managed Karpenter autoscaling: prerequisites, the cluster role's checks, injected failures."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hypd_local.emulator.errors import ValidationException
from hypd_local.emulator.hyperpod import HyperPodDurations
from hypd_local.emulator.hyperpod_iam import Role, autoscaling_role_problem
from tests.emulator.test_hyperpod_support import (
    CLUSTER_ROLE,
    EXECUTION_ROLE,
    cluster_request,
    make,
)

D = HyperPodDurations()
KARPENTER = {"Mode": "Enable", "AutoScalerType": "Karpenter"}
CONTINUOUS: dict[str, Any] = {"NodeProvisioningMode": "Continuous"}
CLUSTER_ARN = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcdefabcdef"


def trust(service: str = "hyperpod.sagemaker.amazonaws.com") -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]}


def policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(action: Any, resource: Any = "*") -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource}


def deny(action: Any, resource: Any = "*") -> dict[str, Any]:
    return {"Effect": "Deny", "Action": action, "Resource": resource}


NODE_ACTIONS = allow(["sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes"])
GOOD_ROLE = Role(CLUSTER_ROLE, trust(), (policy(NODE_ACTIONS),))


def with_roles(*roles: Role) -> Any:
    """An emulator that looks cluster roles up among ``roles`` (and finds the groups'
    execution role)."""
    return make(role_lookup={r.arn: r for r in (EXECUTION_ROLE, *roles)}.get)


def autoscaling(api: Any, name: str = "hp1") -> dict[str, Any]:
    found: dict[str, Any] = api.describe_cluster(ClusterName=name).get("AutoScaling", {})
    return found


def enable(api: Any, clock: Any, role: str = CLUSTER_ROLE) -> None:
    """A continuous cluster comes up, then AutoScaling is enabled on it with ``role``."""
    api.create_cluster(**cluster_request(**CONTINUOUS))
    clock.advance(hours=1)
    api.update_cluster(ClusterName="hp1", ClusterRole=role, AutoScaling=KARPENTER)


# --- prerequisites -----------------------------------------------------------------------------

def test_the_cluster_role_must_exist() -> None:
    _emu, api, clock, _events = with_roles(GOOD_ROLE)
    missing = f"{CLUSTER_ROLE}-gone"
    with pytest.raises(ValidationException, match=missing):
        api.create_cluster(**cluster_request(ClusterRole=missing, AutoScaling=KARPENTER,
                                             **CONTINUOUS))
    api.create_cluster(**cluster_request(**CONTINUOUS))
    clock.advance(hours=1)
    with pytest.raises(ValidationException, match=missing):
        api.update_cluster(ClusterName="hp1", ClusterRole=missing, AutoScaling=KARPENTER)


def test_autoscaling_requires_automatic_node_recovery() -> None:
    _emu, api, clock, _events = with_roles(GOOD_ROLE)
    with pytest.raises(ValidationException, match="NodeRecovery"):
        api.create_cluster(**cluster_request(ClusterRole=CLUSTER_ROLE, AutoScaling=KARPENTER,
                                             NodeRecovery="None", **CONTINUOUS))
    api.create_cluster(**cluster_request(NodeRecovery="None", **CONTINUOUS))
    clock.advance(hours=1)
    with pytest.raises(ValidationException, match="NodeRecovery"):
        api.update_cluster(ClusterName="hp1", ClusterRole=CLUSTER_ROLE, AutoScaling=KARPENTER)

    # Given NodeRecovery Automatic and autoscaling on, NodeRecovery cannot be turned off
    api.update_cluster(ClusterName="hp1", NodeRecovery="Automatic", ClusterRole=CLUSTER_ROLE,
                       AutoScaling=KARPENTER)
    clock.advance(hours=1)
    with pytest.raises(ValidationException, match="NodeRecovery"):
        api.update_cluster(ClusterName="hp1", NodeRecovery="None")


def test_a_good_role_makes_autoscaling_in_service() -> None:
    _emu, api, clock, _events = with_roles(GOOD_ROLE)
    enable(api, clock)
    assert autoscaling(api)["Status"] == "Creating"

    clock.advance(seconds=D.autoscaling_enable.total_seconds())

    assert autoscaling(api) == {**KARPENTER, "Status": "InService"}


# --- the role's checks: AutoScaling Failed at the time it would have been InService -----------

@pytest.mark.parametrize(("role", "problem"), [
    (Role(CLUSTER_ROLE, trust("sagemaker.amazonaws.com"), (policy(NODE_ACTIONS),)),
     "does not trust hyperpod.sagemaker.amazonaws.com"),
    (Role(CLUSTER_ROLE, trust(), (policy(allow("sagemaker:BatchAddClusterNodes")),)),
     "not allowed sagemaker:BatchDeleteClusterNodes"),
    (Role(CLUSTER_ROLE, trust(), (policy(NODE_ACTIONS),), permissions_boundary=policy(
        allow("sagemaker:Describe*"))),
     "permissions boundary of the cluster role"),
])
def test_a_role_that_fails_a_check_makes_autoscaling_fail(role: Role, problem: str) -> None:
    _emu, api, clock, _events = with_roles(role)
    enable(api, clock)
    clock.advance(seconds=D.autoscaling_enable.total_seconds() - 1)
    assert autoscaling(api)["Status"] == "Creating"
    assert "FailureMessage" not in autoscaling(api)

    clock.advance(seconds=1)

    state = autoscaling(api)
    assert state["Status"] == "Failed"
    assert problem in state["FailureMessage"]
    assert CLUSTER_ROLE in state["FailureMessage"]
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"


def test_an_injected_failure_fails_the_next_enable_only() -> None:
    emu, api, clock, _events = make()
    emu.fail_next_autoscaling("hp1", message="Karpenter did not start")
    enable(api, clock)
    clock.advance(hours=1)
    assert autoscaling(api) == {**KARPENTER, "Status": "Failed",
                                "FailureMessage": "Karpenter did not start"}
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"

    # enabling again retries, and works this time
    api.update_cluster(ClusterName="hp1", AutoScaling=KARPENTER)
    clock.advance(hours=1)
    assert autoscaling(api) == {**KARPENTER, "Status": "InService"}


def test_autoscaling_can_be_disabled_from_failed() -> None:
    emu, api, clock, _events = make()
    emu.fail_next_autoscaling()
    enable(api, clock)
    clock.advance(hours=1)
    assert autoscaling(api)["Status"] == "Failed"

    api.update_cluster(ClusterName="hp1", AutoScaling={"Mode": "Disable"})

    assert autoscaling(api) == {"Mode": "Disable", "Status": "Deleting"}
    clock.advance(seconds=D.autoscaling_disable.total_seconds())
    assert "AutoScaling" not in api.describe_cluster(ClusterName="hp1")


def test_an_injected_failure_for_another_cluster_waits_for_it() -> None:
    emu, api, clock, _events = make()
    emu.fail_next_autoscaling("other")
    enable(api, clock)
    clock.advance(hours=1)
    assert autoscaling(api)["Status"] == "InService"


# --- the policy evaluation itself ---------------------------------------------------------------

@pytest.mark.parametrize(("policies", "allowed"), [
    ([policy(allow("sagemaker:*"))], True),
    ([policy(allow("SageMaker:batch*ClusterNodes", "arn:aws:sagemaker:*:*:cluster/*"))], True),
    ([policy(allow("sagemaker:BatchAddClusterNodes")),
      policy(allow("sagemaker:BatchDeleteClusterNodes", CLUSTER_ARN))], True),
    ([policy(allow("*"), deny("sagemaker:BatchDelete*"))], False),
    ([policy(allow("*", "arn:aws:sagemaker:*:*:cluster/other"))], False),
    ([policy({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})], True),
    ([policy(allow("*"), {**deny("*"), "Condition": {"Bool": {"aws:ViaAWSService": "false"}}})],
     True),
    (["not json"], False),
])
def test_policy_evaluation(policies: list[str], allowed: bool) -> None:
    role = Role(CLUSTER_ROLE, trust(), tuple(policies))
    assert (autoscaling_role_problem(role, CLUSTER_ARN) is None) is allowed


def test_a_trust_policy_may_name_the_service_in_a_list_or_allow_anyone() -> None:
    listed = {"Statement": {"Effect": "Allow", "Action": ["sts:AssumeRole", "sts:TagSession"],
                            "Principal": {"Service": ["eks.amazonaws.com",
                                                      "hyperpod.sagemaker.amazonaws.com"]}}}
    anyone = {"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "sts:*"}]}
    for document in (listed, json.dumps(anyone)):
        assert autoscaling_role_problem(Role(CLUSTER_ROLE, document, (policy(NODE_ACTIONS),)),
                                        CLUSTER_ARN) is None


# --- the groups' execution role ------------------------------------------------------------


@pytest.mark.parametrize(("role", "problem"), [
    (None, "does not exist"),
    (Role(EXECUTION_ROLE.arn, trust("ec2.amazonaws.com"), EXECUTION_ROLE.policies),
     "does not trust sagemaker.amazonaws.com"),
    (Role(EXECUTION_ROLE.arn, EXECUTION_ROLE.trust_policy, (policy(allow([
        "ec2:CreateNetworkInterface", "ec2:DescribeVpcs"])),)),
     "is not allowed ec2:CreateNetworkInterfacePermission"),
])
def test_a_group_whose_execution_role_cannot_serve_its_instances_fails_the_cluster(
    role: Role | None, problem: str
) -> None:
    # Given an execution role missing what the instances need
    _emulator, api, clock, _events = make(
        role_lookup=lambda arn: role if role is not None and arn == role.arn else None)
    # When the cluster is created
    api.create_cluster(**cluster_request())
    clock.advance(hours=1)
    # Then it fails naming the group, the role and what is missing, as HyperPod's does
    described = api.describe_cluster(ClusterName="hp1")
    assert described["ClusterStatus"] == "Failed"
    assert "Instance group 'workers'" in described["FailureMessage"]
    assert problem in described["FailureMessage"]


def test_a_boundary_conditioned_on_the_clusters_tag_allows_only_tagged_clusters() -> None:
    # Given template.yaml's boundary shape: the node actions on clusters tagged hypd:tag
    bounded = {**NODE_ACTIONS, "Condition": {"StringLike": {"aws:ResourceTag/hypd:tag": "?*"}}}
    role = Role(CLUSTER_ROLE, trust(), (policy(NODE_ACTIONS),), permissions_boundary=policy(
        bounded))
    # Then a hypd cluster may be autoscaled with it, another may not
    assert autoscaling_role_problem(role, CLUSTER_ARN, {"hypd:tag": "train"}) is None
    problem = autoscaling_role_problem(role, CLUSTER_ARN, {"team": "research"})
    assert problem is not None
    assert "permissions boundary" in problem
