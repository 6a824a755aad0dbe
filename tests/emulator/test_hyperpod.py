"""HyperPod emulator: life cycles on the virtual clock, events, pagination, a full life cycle."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from hypd_local.emulator.errors import ConflictException, ResourceNotFound, ValidationException
from hypd_local.emulator.hyperpod import HyperPodDurations, HyperPodEmulator
from tests.emulator.test_hyperpod_support import (
    ACCOUNT,
    CLUSTER_ROLE,
    ROLE,
    Checked,
    Events,
    FakeClock,
    check_shape,
    cluster_request,
    group,
    make,
    sagemaker_model,
)

STATE = "SageMaker HyperPod Cluster State Change"
HEALTH = "SageMaker HyperPod Cluster Node Health Event"
EVENT = "SageMaker HyperPod Cluster Event"
D = HyperPodDurations()


def _in_service(api: Any, clock: Any, name: str = "hp1") -> None:
    for _ in range(500):
        if api.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService":
            return
        clock.advance(minutes=1)
    raise AssertionError("never InService")


def test_create_is_creating_then_in_service_with_running_nodes() -> None:
    _emu, api, clock, events = make()
    arn = api.create_cluster(**cluster_request())["ClusterArn"]
    assert re.fullmatch(r"arn:aws:sagemaker:us-west-2:123456789012:cluster/[a-z0-9]{12}", arn)
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["ClusterStatus"] == "Creating"
    assert desc["InstanceGroups"][0]["Status"] == "Creating"
    assert desc["InstanceGroups"][0]["TargetCount"] == 2
    assert desc["InstanceGroups"][0]["CurrentCount"] == 0
    nodes = api.list_cluster_nodes(ClusterName=arn)["ClusterNodeSummaries"]
    assert [n["InstanceStatus"]["Status"] for n in nodes] == ["Pending", "Pending"]
    assert all(re.fullmatch(r"i-[0-9a-f]{17}", n["InstanceId"]) for n in nodes)

    clock.advance(seconds=D.node_boot.total_seconds())
    nodes = api.list_cluster_nodes(ClusterName=arn)["ClusterNodeSummaries"]
    assert [n["InstanceStatus"]["Status"] for n in nodes] == ["Running", "Running"]
    assert api.describe_cluster(ClusterName=arn)["ClusterStatus"] == "Creating"

    clock.advance(seconds=(D.cluster_create - D.node_boot).total_seconds())
    desc = api.describe_cluster(ClusterName=arn)
    assert desc["ClusterStatus"] == "InService"
    assert desc["InstanceGroups"][0]["Status"] == "InService"
    assert desc["InstanceGroups"][0]["CurrentCount"] == 2
    assert desc["NodeRecovery"] == "Automatic"
    assert events.statuses() == ["Creating", "InService"]
    src, _t, detail, resources = events.items[0]
    assert src == "aws.sagemaker"
    assert resources == [arn]
    assert detail["CreationTime"] == int(desc["CreationTime"].timestamp() * 1000)
    assert detail["ClusterArn"] == arn


def test_state_change_detail_mirrors_describe_cluster() -> None:
    _emu, api, clock, events = make()
    api.create_cluster(**cluster_request())
    clock.advance(hours=1)
    desc = api.describe_cluster(ClusterName="hp1")
    detail = events.of(STATE)[-1]
    shape = sagemaker_model().operation_model("DescribeCluster").output_shape
    assert set(detail) <= set(shape.members)
    assert detail["InstanceGroups"][0]["InstanceGroupName"] == "workers"
    assert detail["ClusterStatus"] == desc["ClusterStatus"] == "InService"


def test_deep_health_checks_delay_running_and_in_service() -> None:
    _emu, api, clock, _events = make()
    api.create_cluster(**cluster_request(groups=[group(OnStartDeepHealthChecks=["InstanceStress"])]))
    clock.advance(seconds=D.node_boot.total_seconds())
    nodes = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]
    assert {n["InstanceStatus"]["Status"] for n in nodes} == {"DeepHealthCheckInProgress"}
    clock.advance(seconds=(D.cluster_create - D.node_boot).total_seconds())
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "Creating"
    clock.advance(seconds=D.deep_health_check.total_seconds())
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"


def test_deep_health_checks_last_as_long_as_on_aws_by_default() -> None:
    # AWS: deep health checks keep a node Unschedulable for about 60-90 minutes.
    assert 60 <= D.deep_health_check.total_seconds() / 60 <= 90
    _emu, api, clock, _events = make()
    api.create_cluster(**cluster_request(groups=[group(OnStartDeepHealthChecks=["InstanceStress"])]))
    clock.advance(seconds=(D.node_boot + timedelta(minutes=59)).total_seconds())
    nodes = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]
    assert {n["InstanceStatus"]["Status"] for n in nodes} == {"DeepHealthCheckInProgress"}
    clock.advance(seconds=(D.deep_health_check - timedelta(minutes=59)).total_seconds())
    nodes = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]
    assert {n["InstanceStatus"]["Status"] for n in nodes} == {"Running"}


def test_fail_next_create_ends_failed_with_message_and_can_be_deleted() -> None:
    emu, api, clock, events = make()
    emu.fail_next_create("hp1", message="lifecycle script failed")
    api.create_cluster(**cluster_request())
    clock.advance(hours=1)
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["ClusterStatus"] == "Failed"
    assert desc["FailureMessage"] == "lifecycle script failed"
    assert desc["InstanceGroups"][0]["Status"] == "Failed"
    assert api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"] == []
    with pytest.raises(ConflictException):
        api.update_cluster(ClusterName="hp1", NodeRecovery="None")
    api.delete_cluster(ClusterName="hp1")
    clock.advance(hours=1)
    with pytest.raises(ResourceNotFound):
        api.describe_cluster(ClusterName="hp1")
    assert events.statuses() == ["Creating", "Failed", "Deleting"]
    # only the next create fails
    api.create_cluster(**cluster_request())
    clock.advance(hours=1)
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"


def test_insufficient_capacity_fails_create_but_not_in_continuous_mode() -> None:
    emu, api, clock, events = make()
    emu.insufficient_capacity("ml.g5.8xlarge", "us-west-2a")
    api.create_cluster(**cluster_request())
    clock.advance(hours=1)
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["ClusterStatus"] == "Failed"
    assert "InsufficientInstanceCapacity" in desc["FailureMessage"]

    api.create_cluster(**cluster_request("hp2", NodeProvisioningMode="Continuous"))
    clock.advance(hours=1)
    desc = api.describe_cluster(ClusterName="hp2")
    assert desc["ClusterStatus"] == "InService"
    assert desc["InstanceGroups"][0]["CurrentCount"] == 0
    details = [e["EventDetails"] for e in events.of(EVENT)]
    errors = [e for e in details if e["EventLevel"] == "Error"]
    assert len(errors) == 1
    assert errors[0]["InstanceGroupName"] == "workers"
    shape = sagemaker_model().shape_for("ClusterEventDetail")
    assert set(errors[0]) <= set(shape.members)


def test_update_and_delete_conflict_while_not_in_service() -> None:
    _emu, api, clock, events = make()
    api.create_cluster(**cluster_request())
    with pytest.raises(ConflictException):
        api.update_cluster(ClusterName="hp1", NodeRecovery="None")
    with pytest.raises(ConflictException):
        api.delete_cluster(ClusterName="hp1")
    with pytest.raises(ConflictException):
        api.update_cluster_software(ClusterName="hp1")
    _in_service(api, clock)
    before = len(events.items)
    api.update_cluster(ClusterName="hp1", NodeRecovery="None")
    assert events.statuses()[-1] == "Updating"  # emitted by the operation itself
    assert len(events.items) == before + 1
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["ClusterStatus"] == "Updating"
    assert desc["NodeRecovery"] == "None"
    with pytest.raises(ConflictException):
        api.update_cluster(ClusterName="hp1", NodeRecovery="Automatic")
    clock.advance(seconds=D.cluster_update.total_seconds())
    assert api.describe_cluster(ClusterName="hp1")["ClusterStatus"] == "InService"


def test_scale_up_add_group_scale_down_and_delete_group() -> None:
    _emu, api, clock, events = make()
    api.create_cluster(**cluster_request())
    _in_service(api, clock)
    api.update_cluster(
        ClusterName="hp1",
        InstanceGroups=[group(count=4), group("cpu", 1, "ml.m5.xlarge")],
    )
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["ClusterStatus"] == "Updating"
    by_name = {g["InstanceGroupName"]: g for g in desc["InstanceGroups"]}
    assert by_name["workers"]["Status"] == "Updating"
    assert by_name["workers"]["TargetCount"] == 4
    assert by_name["workers"]["CurrentCount"] == 2
    assert by_name["cpu"]["Status"] == "Creating"
    clock.advance(seconds=D.node_boot.total_seconds())
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["ClusterStatus"] == "InService"
    by_name = {g["InstanceGroupName"]: g for g in desc["InstanceGroups"]}
    assert (by_name["workers"]["CurrentCount"], by_name["cpu"]["CurrentCount"]) == (4, 1)

    api.update_cluster(ClusterName="hp1", InstanceGroups=[group(count=1)],
                       InstanceGroupsToDelete=["cpu"])
    nodes = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]
    statuses = sorted(n["InstanceStatus"]["Status"] for n in nodes)
    assert statuses == ["Running"] + ["ShuttingDown"] * 4
    desc = api.describe_cluster(ClusterName="hp1")
    assert {g["InstanceGroupName"]: g["Status"] for g in desc["InstanceGroups"]} == {
        "workers": "Updating", "cpu": "Deleting"}
    clock.advance(hours=1)
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["ClusterStatus"] == "InService"
    assert [g["InstanceGroupName"] for g in desc["InstanceGroups"]] == ["workers"]
    assert len(api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]) == 1
    assert events.statuses() == ["Creating", "InService", "Updating", "InService", "Updating",
                                 "InService"]


def test_scale_up_without_capacity_rolls_back() -> None:
    emu, api, clock, events = make()
    api.create_cluster(**cluster_request())
    _in_service(api, clock)
    emu.insufficient_capacity("ml.g5.8xlarge", "us-west-2a")
    api.update_cluster(ClusterName="hp1", InstanceGroups=[group(count=5)])
    clock.advance(hours=1)
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["ClusterStatus"] == "InService"
    assert desc["InstanceGroups"][0]["TargetCount"] == 2
    assert "InsufficientInstanceCapacity" in desc["FailureMessage"]
    assert events.statuses()[-3:] == ["Updating", "RollingBack", "InService"]
    emu.insufficient_capacity("ml.g5.8xlarge", "us-west-2a", enabled=False)
    api.update_cluster(ClusterName="hp1", InstanceGroups=[group(count=3)])
    assert "FailureMessage" not in api.describe_cluster(ClusterName="hp1")


def test_autoscaling_goes_creating_then_in_service() -> None:
    _emu, api, clock, _events = make()
    api.create_cluster(**cluster_request(NodeProvisioningMode="Continuous"))
    _in_service(api, clock)
    api.update_cluster(ClusterName="hp1", ClusterRole=CLUSTER_ROLE,
                       AutoScaling={"Mode": "Enable", "AutoScalerType": "Karpenter"})
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["AutoScaling"] == {"Mode": "Enable", "AutoScalerType": "Karpenter",
                                   "Status": "Creating"}
    clock.advance(seconds=D.autoscaling_enable.total_seconds())
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["AutoScaling"]["Status"] == "InService"
    assert desc["ClusterStatus"] == "InService"
    assert desc["ClusterRole"] == CLUSTER_ROLE


def test_update_cluster_software_system_updating() -> None:
    _emu, api, clock, events = make()
    api.create_cluster(**cluster_request())
    _in_service(api, clock)
    api.update_cluster_software(ClusterName="hp1", ImageId="ami-0123456789abcdef0")
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["ClusterStatus"] == "SystemUpdating"
    assert desc["InstanceGroups"][0]["Status"] == "SystemUpdating"
    assert desc["InstanceGroups"][0]["DesiredImageId"] == "ami-0123456789abcdef0"
    nodes = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]
    assert {n["InstanceStatus"]["Status"] for n in nodes} == {"SystemUpdating"}
    clock.advance(seconds=D.software_update.total_seconds())
    node = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"][0]
    assert node["InstanceStatus"]["Status"] == "Running"
    assert node["LastSoftwareUpdateTime"] == clock.now()
    assert events.statuses()[-2:] == ["SystemUpdating", "InService"]
    with pytest.raises(ValidationException):
        api.update_cluster_software(ClusterName="hp1", InstanceGroups=[{"InstanceGroupName": "x"}])


def test_delete_goes_deleting_then_gone() -> None:
    _emu, api, clock, events = make()
    arn = api.create_cluster(**cluster_request())["ClusterArn"]
    _in_service(api, clock)
    assert api.delete_cluster(ClusterName="hp1") == {"ClusterArn": arn}
    desc = api.describe_cluster(ClusterName=arn)
    assert desc["ClusterStatus"] == "Deleting"
    assert {g["Status"] for g in desc["InstanceGroups"]} == {"Deleting"}
    with pytest.raises(ConflictException):
        api.delete_cluster(ClusterName="hp1")
    clock.advance(seconds=D.cluster_delete.total_seconds())
    with pytest.raises(ResourceNotFound):
        api.describe_cluster(ClusterName=arn)
    assert api.list_clusters()["ClusterSummaries"] == []
    assert events.statuses()[-1] == "Deleting"


def test_list_clusters_sorting_filters_and_pagination() -> None:
    _emu, api, clock, _events = make()
    for name in ("charlie", "alpha", "bravo", "delta", "echo"):
        api.create_cluster(**cluster_request(name))
        clock.advance(minutes=1)
    names = [c["ClusterName"] for c in api.list_clusters()["ClusterSummaries"]]
    assert names == ["charlie", "alpha", "bravo", "delta", "echo"]
    out = api.list_clusters(SortBy="NAME", SortOrder="Descending", MaxResults=2)
    seen = [c["ClusterName"] for c in out["ClusterSummaries"]]
    while "NextToken" in out:
        out = api.list_clusters(SortBy="NAME", SortOrder="Descending", MaxResults=2,
                                NextToken=out["NextToken"])
        seen += [c["ClusterName"] for c in out["ClusterSummaries"]]
    assert seen == ["echo", "delta", "charlie", "bravo", "alpha"]
    assert [c["ClusterName"] for c in api.list_clusters(NameContains="lph")["ClusterSummaries"]] \
        == ["alpha"]
    after = api.describe_cluster(ClusterName="bravo")["CreationTime"]
    got = api.list_clusters(CreationTimeAfter=after)["ClusterSummaries"]
    assert [c["ClusterName"] for c in got] == ["delta", "echo"]
    with pytest.raises(ValidationException):
        api.list_clusters(NextToken="not-a-token")


def test_list_cluster_nodes_pagination_and_filters() -> None:
    _emu, api, clock, _events = make()
    api.create_cluster(**cluster_request(groups=[group(count=5), group("cpu", 2, "ml.c5.xlarge")]))
    clock.advance(hours=1)
    out = api.list_cluster_nodes(ClusterName="hp1", MaxResults=3)
    ids = [n["InstanceId"] for n in out["ClusterNodeSummaries"]]
    out = api.list_cluster_nodes(ClusterName="hp1", MaxResults=3, NextToken=out["NextToken"])
    ids += [n["InstanceId"] for n in out["ClusterNodeSummaries"]]
    out = api.list_cluster_nodes(ClusterName="hp1", MaxResults=3, NextToken=out["NextToken"])
    ids += [n["InstanceId"] for n in out["ClusterNodeSummaries"]]
    assert "NextToken" not in out
    assert len(set(ids)) == 7
    cpu = api.list_cluster_nodes(ClusterName="hp1", InstanceGroupNameContains="cp")
    assert {n["InstanceGroupName"] for n in cpu["ClusterNodeSummaries"]} == {"cpu"}
    by_name = api.list_cluster_nodes(ClusterName="hp1", SortBy="NAME")["ClusterNodeSummaries"]
    assert [n["InstanceGroupName"] for n in by_name][:2] == ["cpu", "cpu"]


def test_events_emitted_exactly_once_and_in_time_order() -> None:
    emu, api, clock, events = make()
    api.create_cluster(**cluster_request())
    api.create_cluster(**cluster_request("hp2", NodeProvisioningMode="Continuous"))
    clock.advance(hours=2)  # nothing observed in between: one tick catches up
    assert emu.tick() > 0
    assert emu.tick() == 0
    api.describe_cluster(ClusterName="hp1")
    emu.tick()
    states = [(d["ClusterName"], d["ClusterStatus"]) for d in events.of(STATE)]
    assert sorted(states) == sorted(
        [("hp1", "Creating"), ("hp2", "Creating"), ("hp1", "InService"), ("hp2", "InService")])
    assert states[:2] == [("hp1", "Creating"), ("hp2", "Creating")]
    # continuous mode: one Cluster Event per node step (Pending, Running) for hp2 only
    node_events = [e["EventDetails"] for e in events.of(EVENT)]
    assert len(node_events) == 4
    assert {e["ClusterName"] for e in node_events} == {"hp2"}
    times = [e["EventTime"] for e in node_events]
    assert times == sorted(times)


def test_node_unhealthy_emits_health_event_and_automatic_replace() -> None:
    emu, api, clock, events = make()
    api.create_cluster(**cluster_request())
    _in_service(api, clock)
    node = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"][0]["InstanceId"]
    emu.make_node_unhealthy("hp1", node, "NvidiaGpuXidError", "Replace")
    details = api.describe_cluster_node(ClusterName="hp1", NodeId=node)["NodeDetails"]
    assert details["InstanceStatus"] == {"Status": "Failure", "Message": "NvidiaGpuXidError"}
    health = events.of(HEALTH)
    assert len(health) == 1
    assert health[0]["InstanceId"] == node
    assert health[0]["HealthSummary"]["HealthStatus"] == "Unhealthy"
    assert health[0]["HealthSummary"]["RepairAction"] == "Replace"
    clock.advance(hours=1)
    ids = [n["InstanceId"] for n in
           api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]]
    assert node not in ids
    assert len(ids) == 2
    assert len(events.of(HEALTH)) == 1


def test_node_unhealthy_without_recovery_waits_for_reboot() -> None:
    emu, api, clock, events = make()
    api.create_cluster(**cluster_request(NodeRecovery="None"))
    _in_service(api, clock)
    node = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"][0]["InstanceId"]
    emu.make_node_unhealthy("hp1", node, "KernelPanic", "Reboot")
    clock.advance(hours=1)
    details = api.describe_cluster_node(ClusterName="hp1", NodeId=node)["NodeDetails"]
    assert details["InstanceStatus"]["Status"] == "Failure"
    api.batch_reboot_cluster_nodes(ClusterName="hp1", NodeIds=[node])
    assert api.describe_cluster_node(ClusterName="hp1", NodeId=node)["NodeDetails"][
        "InstanceStatus"]["Status"] == "Pending"
    clock.advance(seconds=D.node_reboot.total_seconds())
    assert api.describe_cluster_node(ClusterName="hp1", NodeId=node)["NodeDetails"][
        "InstanceStatus"] == {"Status": "Running"}
    assert [h["HealthSummary"]["HealthStatus"] for h in events.of(HEALTH)] == ["Unhealthy",
                                                                             "Healthy"]


def test_batch_node_operations_and_unknown_ids() -> None:
    _emu, api, clock, _events = make()
    api.create_cluster(**cluster_request(groups=[group(count=3)]))
    _in_service(api, clock)
    ids = [n["InstanceId"] for n in
           api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]]
    unknown = "i-0123456789abcdef0"
    out = api.batch_reboot_cluster_nodes(ClusterName="hp1", NodeIds=[ids[0], unknown])
    assert out["Successful"] == [ids[0]]
    assert out["Failed"] == [{"NodeId": unknown, "ErrorCode": "InstanceIdNotFound",
                              "Message": out["Failed"][0]["Message"]}]
    out = api.batch_reboot_cluster_nodes(ClusterName="hp1", NodeIds=[ids[0]])
    assert out["Failed"][0]["ErrorCode"] == "InvalidInstanceStatus"

    out = api.batch_replace_cluster_nodes(ClusterName="hp1", NodeIds=[ids[1], unknown])
    assert out["Successful"] == [ids[1]]
    assert out["Failed"][0]["ErrorCode"] == "InstanceIdNotFound"
    out = api.batch_delete_cluster_nodes(ClusterName="hp1", NodeIds=[ids[2], unknown])
    assert out["Successful"] == [ids[2]]
    assert out["Failed"][0]["Code"] == "NodeIdNotFound"
    desc = api.describe_cluster(ClusterName="hp1")
    assert desc["InstanceGroups"][0]["TargetCount"] == 2
    clock.advance(hours=1)
    now_ids = [n["InstanceId"] for n in
               api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]]
    assert len(now_ids) == 2
    assert ids[0] in now_ids
    assert ids[1] not in now_ids
    assert ids[2] not in now_ids
    with pytest.raises(ResourceNotFound):
        api.describe_cluster_node(ClusterName="hp1", NodeId=ids[2])
    with pytest.raises(ResourceNotFound):
        api.batch_delete_cluster_nodes(ClusterName="nope", NodeIds=[unknown])


def test_continuous_nodes_have_logical_ids() -> None:
    _emu, api, clock, _events = make()
    api.create_cluster(**cluster_request(NodeProvisioningMode="Continuous"))
    clock.advance(hours=1)
    nodes = api.list_cluster_nodes(ClusterName="hp1", IncludeNodeLogicalIds=True)[
        "ClusterNodeSummaries"]
    logical = nodes[0]["NodeLogicalId"]
    details = api.describe_cluster_node(ClusterName="hp1", NodeLogicalId=logical)["NodeDetails"]
    assert details["InstanceId"] == nodes[0]["InstanceId"]
    assert details["Placement"] == {"AvailabilityZone": "us-west-2a",
                                    "AvailabilityZoneId": "usw2-az1"}
    out = api.batch_reboot_cluster_nodes(ClusterName="hp1", NodeLogicalIds=[logical])
    assert out["SuccessfulNodeLogicalIds"] == [logical]


def test_tags() -> None:
    _emu, api, _clock, _events = make()
    arn = api.create_cluster(**cluster_request())["ClusterArn"]
    api.add_tags(ResourceArn=arn, Tags=[{"Key": "env", "Value": "dev"}])
    assert api.list_tags(ResourceArn=arn)["Tags"] == [
        {"Key": "team", "Value": "ml"}, {"Key": "env", "Value": "dev"}]


@pytest.mark.usefixtures("no_wall_clock")
def test_a_life_cycle_of_virtual_hours_never_waits_nor_reads_the_wall_clock() -> None:
    emu, api, clock, events = make()
    api.create_cluster(**cluster_request(groups=[group(count=8)]))
    _in_service(api, clock)
    api.update_cluster(ClusterName="hp1", InstanceGroups=[group(count=16)])
    _in_service(api, clock)
    node = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"][0]["InstanceId"]
    api.batch_replace_cluster_nodes(ClusterName="hp1", NodeIds=[node])
    clock.advance(hours=3)
    assert len(api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"]) == 16
    api.delete_cluster(ClusterName="hp1")
    clock.advance(hours=1)
    emu.tick()
    assert api.list_clusters()["ClusterSummaries"] == []
    assert events.statuses() == ["Creating", "InService", "Updating", "InService", "Deleting"]



def test_model_shapes_used_by_the_checker_exist() -> None:
    model = sagemaker_model()
    shape = model.operation_model("DescribeCluster").output_shape
    assert check_shape(shape, {"ClusterArn": "x"}) != []


def _scenario(step_minutes: int) -> list[tuple[str, str, Any]]:
    emu, api, clock, events = make()
    api.create_cluster(**cluster_request(NodeProvisioningMode="Continuous"))
    api.create_cluster(**cluster_request("hp2", groups=[group(count=3)]))
    for _ in range(0, 60, step_minutes):
        clock.advance(minutes=step_minutes)
        emu.tick()
    api.update_cluster(ClusterName="hp2", InstanceGroups=[group(count=4)])
    node = api.list_cluster_nodes(ClusterName="hp1")["ClusterNodeSummaries"][0]["InstanceId"]
    emu.make_node_unhealthy("hp1", node, "NvidiaGpuXidError", "Reboot")
    for _ in range(0, 60, step_minutes):
        clock.advance(minutes=step_minutes)
        emu.tick()
    out = []
    for _s, detail_type, detail, _r in events.items:
        if detail_type == EVENT:
            d = dict(detail["EventDetails"])
            d.pop("EventId")
            key: Any = (d["ClusterName"], d.get("InstanceId"), d["Description"], d["EventTime"])
        elif detail_type == STATE:
            key = (detail["ClusterName"], detail["ClusterStatus"])
        else:
            key = (detail["InstanceId"], detail["HealthSummary"]["HealthStatus"])
        out.append((detail_type, key[0], key))
    return out


def test_events_are_the_same_whatever_the_tick_granularity() -> None:
    fine = _scenario(1)
    coarse = _scenario(60)
    assert fine == coarse
    node_events = [k for t, _n, k in fine if t == EVENT]
    assert len(node_events) == len(set(node_events))  # no duplicates
    health = [k for t, _n, k in fine if t == HEALTH]
    assert [h[1] for h in health] == ["Unhealthy", "Healthy"]


def test_an_event_handler_may_call_back_into_the_emulator() -> None:
    seen: list[str] = []
    box: dict[str, Any] = {}

    def emit(source: str, detail_type: str, detail: dict[str, Any],
             resources: list[str]) -> None:
        if detail_type == STATE:
            seen.append(box["emu"].describe_cluster({"ClusterName": detail["ClusterName"]})[
                "ClusterStatus"])

    from hypd_local.emulator.hyperpod import HyperPodEmulator
    from tests.emulator.test_hyperpod_support import ACCOUNT, REGION, FakeClock

    clock = FakeClock()
    box["emu"] = emu = HyperPodEmulator(clock, emit, ACCOUNT, REGION)
    emu.create_cluster(cluster_request())
    clock.advance(hours=1)
    emu.tick()
    emu.tick()
    assert seen == ["Creating", "InService"]


def test_works_on_the_local_clouds_virtual_clock() -> None:
    from hypd_local.clock import VirtualClock
    from hypd_local.emulator.hyperpod import HyperPodEmulator

    clock = VirtualClock(ticking=False)
    got: list[str] = []
    emu = HyperPodEmulator(clock, lambda s, t, d, r: got.append(t), "123456789012", "us-west-2")

    def on_advance(_now: datetime) -> None:
        emu.tick()

    clock.subscribe(on_advance)
    emu.create_cluster(cluster_request())
    clock.advance(3600)
    assert emu.describe_cluster({"ClusterName": "hp1"})["ClusterStatus"] == "InService"
    assert got.count(STATE) == 2


@pytest.mark.parametrize(
    ("region", "partition"),
    [("us-west-2", "aws"), ("cn-north-1", "aws-cn"), ("us-gov-west-1", "aws-us-gov")],
)
def test_a_cluster_s_arn_is_in_its_region_s_partition(region: str, partition: str) -> None:
    emu = HyperPodEmulator(FakeClock(), Events(), ACCOUNT, region)
    request = cluster_request(
        groups=[group(ExecutionRole=ROLE.replace("arn:aws:", f"arn:{partition}:"))],
        Orchestrator={"Eks": {"ClusterArn": f"arn:{partition}:eks:{region}:{ACCOUNT}:cluster/e"}},
    )
    arn = Checked(emu).create_cluster(**request)["ClusterArn"]
    assert re.fullmatch(rf"arn:{partition}:sagemaker:{region}:{ACCOUNT}:cluster/[a-z0-9]{{12}}",
                        arn)
