"""HyperPod emulator: the semantic rules AWS enforces, training plans and the catalogue."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from hypd_local.emulator.errors import (
    ResourceInUse,
    ResourceLimitExceeded,
    ResourceNotFound,
    ValidationException,
)
from hypd_local.emulator.hyperpod_catalog import Catalog, InstanceTypeInfo, TrainingPlanSeed
from tests.emulator.test_hyperpod_support import (
    CLUSTER_ROLE,
    EKS_ARN,
    ROLE,
    cluster_request,
    group,
    make,
)

P5 = "ml.p5.48xlarge"


def _ready(api: Any, clock: Any, **extra: Any) -> None:
    api.create_cluster(**cluster_request(**extra))
    clock.advance(hours=1)
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"


def test_duplicate_cluster_name_is_resource_in_use() -> None:
    _emu, api, _clock, _events = make()
    api.create_cluster(**cluster_request())
    with pytest.raises(ResourceInUse):
        api.create_cluster(**cluster_request())


def test_unknown_cluster_is_resource_not_found() -> None:
    _emu, api, _clock, _events = make()
    for op in ("describe_cluster", "delete_cluster", "update_cluster", "list_cluster_nodes",
               "update_cluster_software"):
        with pytest.raises(ResourceNotFound):
            getattr(api, op)(ClusterName="missing")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"InstanceType": "ml.g5.12xlarge"}, "InstanceType"),
        ({"ExecutionRole": "arn:aws:iam::123456789012:role/Other"}, "ExecutionRole"),
        ({"ThreadsPerCore": 2}, "ThreadsPerCore"),
        ({"CapacityRequirements": {"Spot": {}}}, "CapacityRequirements"),
        ({"NetworkInterface": {"InterfaceType": "efa-only"}}, "NetworkInterface"),
    ],
)
def test_immutable_group_fields_are_rejected_naming_the_field(
    change: dict[str, Any], field: str
) -> None:
    _emu, api, clock, _events = make()
    _ready(api, clock, groups=[group(ThreadsPerCore=1, CapacityRequirements={"OnDemand": {}},
                                     NetworkInterface={"InterfaceType": "efa"})])
    with pytest.raises(ValidationException, match=field):
        api.update_cluster(ClusterName="hp1", InstanceGroups=[group(**{
            "ThreadsPerCore": 1, **change})])
    # resending the same values (or omitting the optional ones) is fine
    api.update_cluster(ClusterName="hp1", InstanceGroups=[group(count=3, ThreadsPerCore=1)])


def test_training_plan_arn_of_existing_group_is_immutable() -> None:
    emu, api, clock, _events = make()
    arn = emu.add_training_plan(TrainingPlanSeed("p5b", P5, 2, "us-west-2a", timedelta(0), 24))
    _ready(api, clock, groups=[group("gpu", 1, P5)])
    with pytest.raises(ValidationException, match="TrainingPlanArn"):
        api.update_cluster(ClusterName="hp1", InstanceGroups=[group("gpu", 1, P5,
                                                                    TrainingPlanArn=arn)])


def test_autoscaling_requires_continuous_mode_and_a_cluster_role() -> None:
    _emu, api, clock, _events = make()
    _ready(api, clock)
    with pytest.raises(ValidationException, match="Continuous"):
        api.update_cluster(ClusterName="hp1", ClusterRole=CLUSTER_ROLE,
                           AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"})
    with pytest.raises(ValidationException, match="Continuous"):
        api.create_cluster(**cluster_request("hp2", ClusterRole=CLUSTER_ROLE,
                                             AutoScaling={"Mode": "Enable"}))
    with pytest.raises(ValidationException, match="ClusterRole"):
        api.update_cluster(ClusterName="hp1", NodeProvisioningMode="Continuous",
                           AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"})
    api.update_cluster(ClusterName="hp1", NodeProvisioningMode="Continuous",
                       ClusterRole=CLUSTER_ROLE,
                       AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"})


def test_cluster_role_cannot_change_while_autoscaling_is_enabled() -> None:
    _emu, api, clock, _events = make()
    _ready(api, clock, NodeProvisioningMode="Continuous", ClusterRole=CLUSTER_ROLE,
           AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"})
    assert api.describe_cluster(ClusterName="hp1")["AutoScaling"]["Status"] == "InService"
    with pytest.raises(ValidationException, match="ClusterRole"):
        api.update_cluster(ClusterName="hp1", ClusterRole=f"{CLUSTER_ROLE}2")
    api.update_cluster(ClusterName="hp1", ClusterRole=CLUSTER_ROLE)  # unchanged: fine
    clock.advance(hours=1)
    api.update_cluster(ClusterName="hp1", AutoScaling={"Mode": "Disable"})
    assert api.describe_cluster(ClusterName="hp1")["AutoScaling"]["Status"] == "Deleting"
    clock.advance(hours=1)
    assert "AutoScaling" not in api.describe_cluster(ClusterName="hp1")
    api.update_cluster(ClusterName="hp1", ClusterRole=f"{CLUSTER_ROLE}2")


def test_no_custom_taints_with_deep_health_checks() -> None:
    _emu, api, clock, _events = make()
    bad = group(OnStartDeepHealthChecks=["InstanceStress"],
                KubernetesConfig={"Taints": [{"Key": "gpu", "Value": "true",
                                              "Effect": "NoSchedule"}]})
    with pytest.raises(ValidationException, match="Taints"):
        api.create_cluster(**cluster_request(groups=[bad]))
    _ready(api, clock)
    with pytest.raises(ValidationException, match="Taints"):
        api.update_cluster(ClusterName="hp1", InstanceGroups=[{**bad, "InstanceGroupName": "g2"}])


def test_eks_cluster_must_exist_and_be_active() -> None:
    statuses = {EKS_ARN: "ACTIVE", EKS_ARN + "x": "CREATING"}
    _emu, api, _clock, _events = make(eks_lookup=statuses.get)
    api.create_cluster(**cluster_request())
    with pytest.raises(ValidationException, match="does not exist"):
        api.create_cluster(**cluster_request(
            "hp2", Orchestrator={"Eks": {"ClusterArn": EKS_ARN.replace("hp-eks", "nope")}}))
    with pytest.raises(ValidationException, match="CREATING"):
        api.create_cluster(**cluster_request("hp3", Orchestrator={"Eks": {"ClusterArn":
                                                                          EKS_ARN + "x"}}))


def test_eks_cluster_is_immutable() -> None:
    _emu, api, clock, _events = make()
    _ready(api, clock)
    with pytest.raises(ValidationException, match="Orchestrator"):
        api.update_cluster(ClusterName="hp1",
                           Orchestrator={"Eks": {"ClusterArn": EKS_ARN + "2"}})


def test_instance_type_must_be_offered_in_the_subnets_zone() -> None:
    zones = {"subnet-0aaaaaaaaaaaaaaaa": "us-west-2d", "subnet-0bbbbbbbbbbbbbbbb": "us-west-2c"}
    _emu, api, clock, _events = make(subnet_zone=zones.get)
    with pytest.raises(ValidationException, match="not supported in the availability zone"):
        api.create_cluster(**cluster_request(groups=[group("gpu", 1, P5)]))
    with pytest.raises(ValidationException, match="subnet"):
        api.create_cluster(**cluster_request(VpcConfig={
            "SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0ccc"]}))
    vpc = {"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0bbbbbbbbbbbbbbbb"]}
    api.create_cluster(**cluster_request(groups=[group("gpu", 1, P5, OverrideVpcConfig=vpc)]))
    clock.advance(hours=1)
    node = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"][0]["InstanceId"]
    details = api.describe_cluster_node(ClusterName="hp1", NodeId=node)["NodeDetails"]
    placement = details["Placement"]
    assert placement["AvailabilityZone"] == "us-west-2c"


def test_efa_network_interface_needs_an_efa_type() -> None:
    _emu, api, _clock, _events = make()
    with pytest.raises(ValidationException, match="EFA"):
        api.create_cluster(**cluster_request(groups=[group(
            itype="ml.m5.xlarge", NetworkInterface={"InterfaceType": "efa-only"})]))


def test_quota_is_resource_limit_exceeded() -> None:
    catalog = Catalog.default()
    catalog.instance_types["ml.g5.8xlarge"] = InstanceTypeInfo("ml.g5.8xlarge", 1, True, 4)
    _emu, api, clock, _events = make(catalog=catalog)
    with pytest.raises(ResourceLimitExceeded):
        api.create_cluster(**cluster_request(groups=[group(count=5)]))
    _ready(api, clock, groups=[group(count=3)])
    with pytest.raises(ResourceLimitExceeded):
        api.create_cluster(**cluster_request("hp2", groups=[group(count=2)]))
    with pytest.raises(ResourceLimitExceeded):
        api.update_cluster(ClusterName="hp1", InstanceGroups=[group(count=5)])
    api.update_cluster(ClusterName="hp1", InstanceGroups=[group(count=4)])


def test_training_plan_group_rules() -> None:
    zones = {"subnet-0aaaaaaaaaaaaaaaa": "us-west-2a", "subnet-0bbbbbbbbbbbbbbbb": "us-west-2c"}
    _emu, api, clock, _events = make(subnet_zone=zones.get)
    plan = api.describe_training_plan(TrainingPlanName="p5-active")
    assert plan["Status"] == "Active"
    assert plan["ReservedCapacitySummaries"][0]["AvailabilityZone"] == "us-west-2a"
    arn = plan["TrainingPlanArn"]
    with pytest.raises(ValidationException, match="InstanceType must be"):
        api.create_cluster(**cluster_request(groups=[group("gpu", 1, "ml.p4d.24xlarge",
                                                           TrainingPlanArn=arn)]))
    with pytest.raises(ValidationException, match="available"):
        api.create_cluster(**cluster_request(groups=[group("gpu", 5, P5, TrainingPlanArn=arn)]))
    vpc_c = {"SecurityGroupIds": ["sg-0123456789abcdef0"],
             "Subnets": ["subnet-0bbbbbbbbbbbbbbbb"]}
    with pytest.raises(ValidationException, match="us-west-2a"):
        api.create_cluster(**cluster_request(VpcConfig=vpc_c, groups=[
            group("gpu", 1, P5, TrainingPlanArn=arn)]))
    api.create_cluster(**cluster_request(groups=[group("gpu", 3, P5, TrainingPlanArn=arn)]))
    plan = api.describe_training_plan(TrainingPlanName=arn)
    assert (plan["InUseInstanceCount"], plan["AvailableInstanceCount"]) == (3, 1)
    with pytest.raises(ValidationException, match="1 available"):
        api.create_cluster(**cluster_request("hp2", groups=[group("gpu", 2, P5,
                                                                  TrainingPlanArn=arn)]))
    clock.advance(hours=1)
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["InstanceGroups"][0]["TrainingPlanStatus"] == "Active"
    assert api.list_clusters(TrainingPlanArn=arn)["ClusterSummaries"][0]["TrainingPlanArns"] == [
        arn]
    # the group may omit the plan on update: it is kept
    api.update_cluster(ClusterName="hp1", InstanceGroups=[group("gpu", 4, P5)])
    assert api.describe_training_plan(TrainingPlanName=arn)["AvailableInstanceCount"] == 0


def test_training_plans_list_filters_and_statuses_follow_the_clock() -> None:
    _emu, api, clock, _events = make()
    out = api.list_training_plans(SortBy="TrainingPlanName")
    assert [(p["TrainingPlanName"], p["Status"]) for p in out["TrainingPlanSummaries"]] == [
        ("p4d-next-week", "Scheduled"), ("p5-active", "Active")]
    out = api.list_training_plans(Filters=[{"Name": "Status", "Value": "Scheduled"}])
    assert [p["TrainingPlanName"] for p in out["TrainingPlanSummaries"]] == ["p4d-next-week"]
    page = api.list_training_plans(MaxResults=1)
    assert len(page["TrainingPlanSummaries"]) == 1
    assert "NextToken" in page
    clock.advance(days=8)
    statuses = {p["TrainingPlanName"]: p["Status"]
                for p in api.list_training_plans()["TrainingPlanSummaries"]}
    assert statuses == {"p4d-next-week": "Active", "p5-active": "Active"}
    clock.advance(days=23)
    statuses = {p["TrainingPlanName"]: p["Status"]
                for p in api.list_training_plans()["TrainingPlanSummaries"]}
    assert statuses == {"p4d-next-week": "Expired", "p5-active": "Expired"}
    with pytest.raises(ResourceNotFound):
        api.describe_training_plan(TrainingPlanName="nope")


def test_expired_plan_cannot_back_a_group() -> None:
    _emu, api, clock, _events = make()
    clock.advance(days=31)
    arn = api.describe_training_plan(TrainingPlanName="p5-active")["TrainingPlanArn"]
    with pytest.raises(ValidationException, match="Expired"):
        api.create_cluster(**cluster_request(groups=[group("gpu", 1, P5, TrainingPlanArn=arn)]))


def test_search_training_plan_offerings() -> None:
    _emu, api, clock, _events = make()
    out = api.search_training_plan_offerings(InstanceType=P5, InstanceCount=4, DurationHours=48,
                                             StartTimeAfter=clock.now() + timedelta(days=2))
    offers = out["TrainingPlanOfferings"]
    assert len(offers) == 1
    rc = offers[0]["ReservedCapacityOfferings"][0]
    assert (rc["InstanceType"], rc["InstanceCount"], rc["AvailabilityZone"]) == (P5, 4,
                                                                                 "us-west-2a")
    assert rc["EndTime"] - rc["StartTime"] == timedelta(hours=48)
    assert rc["StartTime"] >= clock.now() + timedelta(days=2)
    assert api.search_training_plan_offerings(InstanceType=P5, InstanceCount=64)[
        "TrainingPlanOfferings"] == []
    assert api.search_training_plan_offerings(
        InstanceType=P5, EndTimeBefore=clock.now() + timedelta(hours=2))[
        "TrainingPlanOfferings"] == []


def test_update_validates_groups_to_delete() -> None:
    _emu, api, clock, _events = make()
    _ready(api, clock)
    with pytest.raises(ValidationException, match="does not exist"):
        api.update_cluster(ClusterName="hp1", InstanceGroupsToDelete=["nope"])
    with pytest.raises(ValidationException, match="at least one"):
        api.update_cluster(ClusterName="hp1", InstanceGroupsToDelete=["workers"])


def test_instance_requirements_pick_an_offered_type() -> None:
    _emu, api, clock, _events = make()
    spec = group(itype="ml.g5.8xlarge")
    del spec["InstanceType"]
    spec["InstanceRequirements"] = {"InstanceTypes": ["ml.trn1.32xlarge", "ml.g6.8xlarge"]}
    api.create_cluster(**cluster_request(groups=[spec]))
    clock.advance(hours=1)
    g = api.describe_cluster(ClusterName="hp1")["InstanceGroups"][0]
    assert g["InstanceRequirements"]["DesiredInstanceTypes"] == ["ml.trn1.32xlarge",
                                                                 "ml.g6.8xlarge"]
    assert g["InstanceRequirements"]["CurrentInstanceTypes"] == ["ml.trn1.32xlarge"]


def test_execution_role_is_kept_verbatim() -> None:
    _emu, api, clock, _events = make()
    _ready(api, clock)
    assert api.describe_cluster(ClusterName="hp1")["InstanceGroups"][0]["ExecutionRole"] == ROLE
