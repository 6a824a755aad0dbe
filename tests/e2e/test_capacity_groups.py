"""Instance groups end to end on the local cloud, through the REST API: add (each capacity
type), scale, change labels, delete; training-plan zones; dedicated subnets; immutable fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, ApiError
from tests.e2e.capacity import (
    CLUSTER,
    TAG,
    carried,
    created_cluster,
    described_groups,
    group_nodes,
    operations_of,
    run,
    stages,
)
from tests.support import group_body

P5_PLAN = "p5-active"  # seeded: 4 x ml.p5.48xlarge in us-west-2a
P4D_PLAN = "p4d-next-week"  # seeded: 2 x ml.p4d.24xlarge in us-west-2b


def plan_arn(api: ApiClient, name: str) -> str:
    plans = api.get("/catalog/training-plans")["trainingPlans"]
    return str(next(p["arn"] for p in plans if p["name"] == name))


def add(api: ApiClient, cloud: Any, **body: Any) -> dict[str, Any]:
    accepted = api.call("addInstanceGroup", tag=TAG, body=group_body(**body))
    assert accepted["kind"] == "add-instance-group"
    return run(api, cloud, accepted)


def patch(api: ApiClient, cloud: Any, name: str, **body: Any) -> dict[str, Any]:
    accepted = api.call("updateInstanceGroup", tag=TAG, name=name, body=body)
    return run(api, cloud, accepted)


def view(api: ApiClient, name: str) -> dict[str, Any]:
    groups = api.call("listInstanceGroups", tag=TAG)["instanceGroups"]
    return next(g for g in groups if g["name"] == name)


def test_groups_of_each_capacity_type_are_added_scaled_and_deleted(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(
        api, cloud, group_body(name="workers", count=1, deepHealthChecks=["InstanceStress"])
    )

    # Given a spot group with labels and taints, a group on a training plan, an on-demand one
    spot = add(
        api, cloud, name="spot", count=1, capacity={"type": "spot"},
        labels={"team": "research"},
        taints=[{"key": "spot", "value": "yes", "effect": "NoSchedule"}],
    )
    assert spot["status"] == "SUCCEEDED", spot.get("error")
    assert [s["status"] for s in spot["stages"]] == ["SUCCEEDED"] * 3
    plan = add(
        api, cloud, name="reserved", instanceType="ml.p5.48xlarge", count=1,
        capacity={"type": "training-plan", "trainingPlanArn": plan_arn(api, P5_PLAN)},
    )
    assert plan["status"] == "SUCCEEDED", plan.get("error")
    ondemand = add(api, cloud, name="steady", count=1, capacity={"type": "on-demand"})
    assert ondemand["status"] == "SUCCEEDED", ondemand.get("error")
    groups = described_groups(cloud)
    assert groups["steady"]["CapacityRequirements"] == {"OnDemand": {}}
    assert groups["spot"]["CapacityRequirements"] == {"Spot": {}}
    assert groups["reserved"]["TrainingPlanArn"] == plan_arn(api, P5_PLAN)
    assert groups["workers"]["CapacityRequirements"] == {"OnDemand": {}}
    # the nodes carry the group's labels and taints in Kubernetes
    (node,) = group_nodes(cloud, "spot")
    assert node["metadata"]["labels"]["team"] == "research"
    assert {"key": "spot", "value": "yes", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert view(api, "spot")["capacity"]["type"] == "spot"
    assert view(api, "reserved")["capacity"]["type"] == "training-plan"

    # When the spot group is scaled
    before = described_groups(cloud)
    scaled = patch(api, cloud, "spot", count=3)

    # Then only its count changed: every other member of every group is as it was
    assert scaled["status"] == "SUCCEEDED", scaled.get("error")
    after = described_groups(cloud)
    assert after["spot"]["TargetCount"] == after["spot"]["CurrentCount"] == 3
    assert {n: carried(g) for n, g in after.items()} == {n: carried(g) for n, g in before.items()}
    assert after["workers"]["OnStartDeepHealthChecks"] == ["InstanceStress"]
    assert len(group_nodes(cloud, "spot")) == 3

    # And its labels change without touching its count or taints
    relabelled = patch(api, cloud, "spot", labels={"team": "research", "tier": "batch"})
    assert relabelled["status"] == "SUCCEEDED", relabelled.get("error")
    assert all(n["metadata"]["labels"]["tier"] == "batch" for n in group_nodes(cloud, "spot"))
    assert view(api, "spot")["count"] == 3
    assert view(api, "spot")["taints"] == [{"key": "spot", "value": "yes", "effect": "NoSchedule"}]

    # When the new groups are deleted
    for name in ("spot", "reserved", "steady"):
        deleted = run(api, cloud, api.call("deleteInstanceGroup", tag=TAG, name=name))
        assert deleted["status"] == "SUCCEEDED", deleted.get("error")
    assert set(described_groups(cloud)) == {"workers"}
    assert group_nodes(cloud, "spot") == []
    record = api.get(f"/clusters/{TAG}")
    assert [g["name"] for g in record["hyperpod"]["instanceGroups"]] == ["workers"]


def test_a_training_plan_group_takes_the_plans_zone_or_is_refused_before_anything_is_made(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud, group_body(count=1))
    arn = plan_arn(api, P4D_PLAN)
    body = group_body(name="reserved", instanceType="ml.p4d.24xlarge", count=0,
                      capacity={"type": "training-plan", "trainingPlanArn": arn})
    subnets_before = cloud.client("ec2").describe_subnets()["Subnets"]

    # A zone that is not the plan's is refused with both zones, and nothing is made
    with pytest.raises(ApiError) as raised:
        api.call("addInstanceGroup", tag=TAG, body={**body, "availabilityZone": "us-west-2a"})
    assert raised.value.status == 400
    assert raised.value.details["field"] == "capacity.trainingPlanArn"
    assert "us-west-2b" in raised.value.message
    assert "us-west-2a" in raised.value.message
    assert len(operations_of(api)) == 1  # the create only
    assert cloud.client("ec2").describe_subnets()["Subnets"] == subnets_before

    # Without a zone, the group goes to the plan's zone (a compute subnet made there)
    added = run(api, cloud, api.call("addInstanceGroup", tag=TAG, body=body))
    assert added["status"] == "SUCCEEDED", added.get("error")
    network = stages(added)["network"]["output"]
    assert network["availabilityZone"] == "us-west-2b"
    assert network["override"] is True
    assert added["input"]["availabilityZoneSource"] == "training-plan"
    group = described_groups(cloud)["reserved"]
    assert group["OverrideVpcConfig"]["Subnets"] == [network["subnetId"]]
    assert view(api, "reserved")["availabilityZone"] == "us-west-2b"


def test_a_dedicated_subnet_outlives_its_group_and_is_reused_by_its_successor(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud, group_body(count=1))
    first = add(api, cloud, name="big", count=1, dedicatedSubnet=True)
    assert first["status"] == "SUCCEEDED", first.get("error")
    subnet = stages(first)["network"]["output"]
    assert subnet["dedicated"] is True
    assert subnet["source"] == "created"
    assert view(api, "big")["dedicatedSubnet"] is True

    deleted = run(api, cloud, api.call("deleteInstanceGroup", tag=TAG, name="big"))
    assert deleted["status"] == "SUCCEEDED", deleted.get("error")
    ec2 = cloud.client("ec2")
    assert ec2.describe_subnets(SubnetIds=[subnet["subnetId"]])["Subnets"]  # kept

    second = add(api, cloud, name="big", count=2, dedicatedSubnet=True)
    assert second["status"] == "SUCCEEDED", second.get("error")
    again = stages(second)["network"]["output"]
    assert again["subnetId"] == subnet["subnetId"]
    assert again["source"] == "existing"


IMMUTABLE = [
    ("instanceType", "ml.g5.xlarge"),
    ("executionRole", "arn:aws:iam::123456789012:role/someone-else"),
    ("threadsPerCore", 2),
    ("capacity", {"type": "spot"}),
    ("efaOnly", True),
]


def test_a_change_of_a_create_time_field_is_refused_naming_it_and_why(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud, group_body(count=1))
    before = described_groups(cloud)

    for field, value in IMMUTABLE:
        with pytest.raises(ApiError) as raised:
            api.call(
                "updateInstanceGroup", tag=TAG, name="workers", body={"count": 2, field: value}
            )

        error = raised.value
        assert (error.status, error.code) == (400, "ImmutableField"), field
        assert error.details["field"] == field
        assert error.message.startswith(f"{field} of instance group workers cannot be changed")
        assert "fixed at creation" in error.message
    assert described_groups(cloud) == before
    assert len(operations_of(api)) == 1


def test_null_create_time_fields_are_judged_like_any_value(api: ApiClient, cloud: Any) -> None:
    # Given a cluster whose group has a capacity and no deep health checks
    created_cluster(api, cloud, group_body(count=1))

    # When a PATCH sends capacity: null, Then a 400 names capacity (once a 502)
    with pytest.raises(ApiError) as raised:
        api.call("updateInstanceGroup", tag=TAG, name="workers",
                 body={"count": 1, "capacity": None})
    assert (raised.value.status, raised.value.code) == (400, "ImmutableField")
    assert raised.value.details["field"] == "capacity"

    # When it sends deepHealthChecks: null, Then null restates "none" (once a 502)
    answer = api.call("updateInstanceGroup", tag=TAG, name="workers",
                      body={"count": 1, "deepHealthChecks": None})
    assert answer["changed"] is False
    assert len(operations_of(api)) == 1


def test_a_patch_that_matches_the_group_starts_nothing(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud, group_body(count=1))

    answer = api.call(
        "updateInstanceGroup", tag=TAG, name="workers",
        body={"count": 1, "instanceType": "ml.g6.4xlarge", "capacity": {"type": "on-demand"}},
    )

    assert answer["changed"] is False
    assert answer["instanceGroup"]["count"] == 1
    assert len(operations_of(api)) == 1
    fields = {f["name"]: f for f in api.call("listInstanceGroupFields")["fields"]}
    assert fields["count"]["mutable"] is True
    assert fields["instanceType"]["mutable"] is False
    assert fields["instanceType"]["reason"] == "it is fixed at creation"


def test_requests_the_cluster_cannot_take_are_refused_up_front(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud, group_body(count=1))
    refusals: list[tuple[Callable[[], Any], int, str]] = [
        (lambda: api.call("addInstanceGroup", tag=TAG, body=group_body(name="workers")),
         409, "InstanceGroupExists"),
        (lambda: api.call("updateInstanceGroup", tag=TAG, name="ghost", body={"count": 1}),
         404, "InstanceGroupNotFound"),
        (lambda: api.call("deleteInstanceGroup", tag=TAG, name="workers"),
         409, "LastInstanceGroup"),
        (lambda: api.call("addInstanceGroup", tag="nope", body=group_body(name="x")),
         404, "NotFound"),
        (lambda: api.call("addInstanceGroup", tag=TAG,
                          body=group_body(name="x", taints=[{"key": "a", "effect": "NoSchedule"}],
                                          deepHealthChecks=["InstanceStress"])),
         400, "ValidationError"),
    ]
    for call, status, code in refusals:
        with pytest.raises(ApiError) as raised:
            call()
        assert (raised.value.status, raised.value.code) == (status, code), raised.value.message
    assert len(operations_of(api)) == 1


def test_a_second_change_while_one_runs_is_a_409(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud, group_body(count=1))
    first = api.call("addInstanceGroup", tag=TAG, body=group_body(name="a", count=1))

    with pytest.raises(ApiError) as raised:
        api.call("addInstanceGroup", tag=TAG, body=group_body(name="b", count=1))

    assert raised.value.status == 409
    assert first["operationId"] in raised.value.message
    assert run(api, cloud, first)["status"] == "SUCCEEDED"


@pytest.mark.frozen_clock
def test_the_hyperpod_wait_is_woken_by_the_state_change_event(api: ApiClient, cloud: Any) -> None:
    # On a clock that only moves when told, the stage lasts HyperPod's update time exactly: the
    # state-change event ended the wait, not a poll, however slow the machine.
    created_cluster(api, cloud, group_body(count=1))
    update = cloud.emulation.hyperpod.durations.cluster_update.total_seconds()

    added = add(api, cloud, name="more", count=0)

    hyperpod = stages(added)["hyperpod"]
    from datetime import datetime

    took = (datetime.fromisoformat(hyperpod["endedAt"])
            - datetime.fromisoformat(hyperpod["startedAt"])).total_seconds()
    assert took == update
    assert hyperpod["attempts"] == 1
    assert CLUSTER in str(added["output"]) or added["output"]["instanceGroup"]["name"] == "more"


def test_a_hyperpod_cluster_deleted_outside_hypd_is_named_not_an_access_error(
    api: ApiClient, cloud: Any
) -> None:
    # Given a created cluster whose HyperPod cluster someone deleted with the console
    created_cluster(api, cloud, group_body(count=1))
    sagemaker = cloud.client("sagemaker")
    sagemaker.delete_cluster(ClusterName=CLUSTER)
    cloud.clock.advance(3600)
    assert CLUSTER not in {c["ClusterName"] for c in sagemaker.list_clusters()["ClusterSummaries"]}

    # When a group is added, or the groups and nodes are listed
    # Then the API says the HyperPod cluster is missing (its DescribeCluster sees the cluster
    # does not exist; a grant conditioned on the cluster's tags would make it AccessDenied)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("addInstanceGroup", {"body": group_body(name="more")}), ("listInstanceGroups", {})]
    for operation, arguments in calls:
        with pytest.raises(ApiError) as raised:
            api.call(operation, tag=TAG, **arguments)
        assert (raised.value.status, raised.value.code) == (409, "HyperPodClusterMissing"), (
            raised.value.message)
        assert "deleted outside hypd" in raised.value.message


def test_a_dedicated_subnet_in_a_vpc_without_its_s3_endpoint_gets_one(
    api: ApiClient, cloud: Any
) -> None:
    # Given a cluster whose VPC lost its S3 gateway endpoint
    created_cluster(api, cloud, group_body(count=1))
    ec2 = cloud.client("ec2")
    vpc_id = stages(operations_of(api)[0])["network"]["output"]["vpcId"]
    endpoints = ec2.describe_vpc_endpoints(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["VpcEndpoints"]
    for endpoint in endpoints:  # its routes first (moto's delete trips over them)
        ec2.modify_vpc_endpoint(VpcEndpointId=endpoint["VpcEndpointId"],
                                RemoveRouteTableIds=endpoint["RouteTableIds"])
    ec2.delete_vpc_endpoints(VpcEndpointIds=[e["VpcEndpointId"] for e in endpoints])

    # When a group with a dedicated subnet is added
    added = add(api, cloud, name="big", count=1, dedicatedSubnet=True)

    # Then the capacity function made the endpoint, on the new subnet's route table (EC2
    # authorises CreateVpcEndpoint on that route table by its tags, not the request's)
    assert added["status"] == "SUCCEEDED", added.get("error")
    subnet_id = stages(added)["network"]["output"]["subnetId"]
    table = ec2.describe_route_tables(Filters=[
        {"Name": "association.subnet-id", "Values": [subnet_id]}])["RouteTables"][0]
    made = [e for e in ec2.describe_vpc_endpoints(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["VpcEndpoints"]
        if e["VpcEndpointId"] not in {old["VpcEndpointId"] for old in endpoints}]
    assert [e["RouteTableIds"] for e in made] == [[table["RouteTableId"]]], made
