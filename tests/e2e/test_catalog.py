"""The catalogue routes over HTTP on the local cloud, and their agreement with HyperPod.

What the instance-types route offers comes from EC2 (moto's data); what HyperPod's
CreateCluster accepts comes from the emulator's catalogue. A type the route lists for a zone
must be accepted by CreateCluster in a subnet of that zone.
"""

from __future__ import annotations

from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, ApiError
from tests.support import service_role


def test_the_regions_zones_are_listed(cloud: Any, api: ApiClient) -> None:
    body = api.get("/catalog/availability-zones")
    assert body["region"] == cloud.region
    names = [z["name"] for z in body["availabilityZones"]]
    assert names == sorted(names)
    assert "us-west-2a" in names
    assert all(z["state"] == "available" and z["zoneId"] for z in body["availabilityZones"])


def test_a_zones_instance_types_exclude_what_it_does_not_offer(api: ApiClient) -> None:
    # When the HyperPod types of us-west-2d are asked for
    listed = api.get("/catalog/instance-types", availabilityZone="us-west-2d")
    types = {t["instanceType"]: t for t in listed["instanceTypes"]}
    # Then ml.g6.4xlarge is there with its facts, and every type names us-west-2d
    assert types["ml.g6.4xlarge"]["gpus"][0]["name"] == "L4"
    assert all("us-west-2d" in t["availabilityZones"] for t in types.values())
    # And a type EC2 offers only in other zones of the Region is not
    everywhere = {t["instanceType"]: t for t in api.get("/catalog/instance-types")["instanceTypes"]}
    elsewhere = {
        name for name, t in everywhere.items() if "us-west-2d" not in t["availabilityZones"]
    }
    assert "ml.g5.xlarge" in elsewhere
    assert elsewhere.isdisjoint(types)


@pytest.mark.parametrize("zone", ["us-west-2", "us-east-1a"])
def test_a_bad_zone_is_400_naming_availability_zone(api: ApiClient, zone: str) -> None:
    with pytest.raises(ApiError) as error:
        api.get("/catalog/instance-types", availabilityZone=zone)
    assert error.value.status == 400
    assert error.value.code == "ValidationError"
    assert "availabilityZone" in error.value.message


def test_training_plans_show_their_zones(api: ApiClient) -> None:
    plans = {p["name"]: p for p in api.get("/catalog/training-plans")["trainingPlans"]}
    active = plans["p5-active"]
    assert active["status"] == "Active"
    assert active["availabilityZones"] == ["us-west-2a"]
    assert active["instanceTypes"] == ["ml.p5.48xlarge"]
    assert active["totalInstanceCount"] == active["availableInstanceCount"] == 4
    assert active["inUseInstanceCount"] == 0
    assert active["startTime"] < active["endTime"]


# ---------------------------------------------------------------------------- agreement
def role(cloud: Any, name: str, service: str) -> str:
    return service_role(cloud, name, service)


def test_listed_types_are_accepted_by_hyperpod_and_unlisted_ones_refused(
    cloud: Any, api: ApiClient
) -> None:
    # Given an ACTIVE EKS cluster and a subnet in us-west-2d
    zone = "us-west-2d"
    ec2 = cloud.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.20.1.0/24", AvailabilityZone=zone)
    subnet_id = subnet["Subnet"]["SubnetId"]
    other = ec2.create_subnet(VpcId=vpc, CidrBlock="10.20.2.0/24", AvailabilityZone="us-west-2a")
    group = ec2.create_security_group(GroupName="catalog", Description="t", VpcId=vpc)["GroupId"]
    eks = cloud.client("eks").create_cluster(
        name="catalog",
        roleArn=role(cloud, "eks", "eks.amazonaws.com"),
        resourcesVpcConfig={
            "subnetIds": [subnet_id, other["Subnet"]["SubnetId"]],
            "securityGroupIds": [group],
        },
        accessConfig={"authenticationMode": "API"},
    )["cluster"]
    cloud.clock.advance(15 * 60)
    execution_role = role(cloud, "hyperpod", "sagemaker.amazonaws.com")
    sagemaker = cloud.client("sagemaker")

    def create(name: str, instance_type: str) -> None:
        sagemaker.create_cluster(
            ClusterName=name,
            Orchestrator={"Eks": {"ClusterArn": eks["arn"]}},
            InstanceGroups=[
                {
                    "InstanceGroupName": "workers",
                    "InstanceType": instance_type,
                    "InstanceCount": 1,
                    "ExecutionRole": execution_role,
                    "ThreadsPerCore": 1,
                    "LifeCycleConfig": {
                        "SourceS3Uri": "s3://sagemaker-lifecycle/scripts/",
                        "OnCreate": "on_create.sh",
                    },
                }
            ],
            VpcConfig={"SecurityGroupIds": [group], "Subnets": [subnet_id]},
        )

    listed = api.get("/catalog/instance-types", availabilityZone=zone)["instanceTypes"]
    names = {t["instanceType"] for t in listed}
    # When HyperPod is asked for listed types (some beyond the emulator's seeded families)
    for index, name in enumerate(["ml.g6.4xlarge", "ml.g6e.xlarge", "ml.trn1.32xlarge"]):
        assert name in names
        create(f"listed-{index}", name)
    # Then it accepts them; and a type the route leaves out for the zone is refused
    assert "ml.g5.xlarge" not in names
    with pytest.raises(sagemaker.exceptions.ClientError) as refused:
        create("unlisted", "ml.g5.xlarge")
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "not supported in the availability zone" in str(refused.value)
