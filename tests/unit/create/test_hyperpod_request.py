"""The CreateCluster request built from a resolved create request."""

from __future__ import annotations

from typing import Any

from hypd.clusters.create_request import ResolvedCreate
from hypd.create.hyperpod import cluster_request

EKS_ARN = "arn:aws:eks:us-west-2:123456789012:cluster/hypd-demo"
ROLE = "arn:aws:iam::123456789012:role/exec"
PLAN = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-plan-0001"


def resolved(*groups: dict[str, Any]) -> ResolvedCreate:
    return ResolvedCreate.model_validate(
        {
            "tag": "demo",
            "availabilityZone": "us-west-2c",
            "availabilityZoneSource": "request",
            "instanceGroups": list(groups),
            "storage": {"s3": {"bucket": "my-data"}},
        }
    )


def group(name: str, capacity: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "instanceType": "ml.g6.4xlarge",
        "count": 2,
        "capacity": {
            "type": capacity,
            **({"trainingPlanArn": PLAN} if capacity == "training-plan" else {}),
        },
        "resolvedCapacity": {
            "type": capacity,
            "availabilityZone": "us-west-2c",
            **({"trainingPlanArn": PLAN} if capacity == "training-plan" else {}),
        },
    }
    body.update(extra)
    return body


def build(request: ResolvedCreate, subnets: dict[str, str]) -> dict[str, Any]:
    return cluster_request(
        request,
        eks_cluster_arn=EKS_ARN,
        security_group_id="sg-1",
        group_subnets=subnets,
        execution_role_arn=ROLE,
    )


def test_defaults_node_recovery_automatic_and_continuous_provisioning() -> None:
    request = build(resolved(group("gpu", "on-demand")), {"gpu": "subnet-a"})

    assert request["ClusterName"] == "hypd-demo"
    assert request["NodeRecovery"] == "Automatic"
    assert request["NodeProvisioningMode"] == "Continuous"
    assert request["Orchestrator"] == {"Eks": {"ClusterArn": EKS_ARN}}
    assert request["VpcConfig"] == {"SecurityGroupIds": ["sg-1"], "Subnets": ["subnet-a"]}
    assert request["Tags"] == [{"Key": "hypd:tag", "Value": "demo"}]
    (spec,) = request["InstanceGroups"]
    assert spec == {
        "InstanceGroupName": "gpu",
        "InstanceType": "ml.g6.4xlarge",
        "InstanceCount": 2,
        "ExecutionRole": ROLE,
        "CapacityRequirements": {"OnDemand": {}},
    }


def test_each_capacity_type_maps_to_its_member() -> None:
    request = build(
        resolved(group("a", "on-demand"), group("b", "spot"), group("c", "training-plan")),
        {"a": "subnet-a", "b": "subnet-a", "c": "subnet-a"},
    )
    specs = {g["InstanceGroupName"]: g for g in request["InstanceGroups"]}

    assert specs["a"]["CapacityRequirements"] == {"OnDemand": {}}
    assert specs["b"]["CapacityRequirements"] == {"Spot": {}}
    assert specs["c"]["TrainingPlanArn"] == PLAN
    assert "CapacityRequirements" not in specs["c"]


def test_carried_fields_and_dedicated_subnet_override() -> None:
    request = build(
        resolved(
            group(
                "shared",
                "on-demand",
                labels={"team": "ml"},
                taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
            ),
            group(
                "big",
                "on-demand",
                dedicatedSubnet=True,
                efaOnly=False,
                deepHealthChecks=["InstanceStress"],
            ),
        ),
        {"shared": "subnet-shared", "big": "subnet-big"},
    )
    specs = {g["InstanceGroupName"]: g for g in request["InstanceGroups"]}

    assert request["VpcConfig"]["Subnets"] == ["subnet-shared"]
    assert "OverrideVpcConfig" not in specs["shared"]
    assert specs["big"]["OverrideVpcConfig"] == {
        "SecurityGroupIds": ["sg-1"],
        "Subnets": ["subnet-big"],
    }
    assert specs["big"]["OnStartDeepHealthChecks"] == ["InstanceStress"]
    assert specs["shared"]["KubernetesConfig"] == {
        "Labels": {"team": "ml"},
        "Taints": [{"Key": "gpu", "Value": "yes", "Effect": "NoSchedule"}],
    }
