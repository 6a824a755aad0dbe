"""The EKS emulator against the botocore model and the documented state machines.

Every operation goes through `call`, which checks the output against the operation's output
shape in botocore's EKS model (required members, known member names, enums, types, aware
datetimes). Time is a fake clock the tests move; nothing sleeps.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import botocore.session
import pytest

from hypd_local.emulator.eks import (
    ADDON_CREATION_FAILED,
    ADDON_CREATION_SUCCEEDED,
    ADDON_DELETION_SUCCEEDED,
    ADDON_HEALTH_DEGRADED,
    ADDON_HEALTH_RESTORED,
    ADDON_UPDATE_SUCCEEDED,
    EksDurations,
    EksEmulator,
)
from hypd_local.emulator.eks_catalog import AddonCatalog
from hypd_local.emulator.errors import AwsError

MODEL = botocore.session.get_session().get_service_model("eks")
ACCOUNT = "123456789012"
REGION = "us-west-2"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/eks-cluster"
CLUSTER_ADMIN_POLICY_ARN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
TRAINING = "amazon-sagemaker-hyperpod-training-operator"
INFERENCE = "amazon-sagemaker-hyperpod-inference"
# What the inference add-on requires (its configuration schema's required keys).
INFERENCE_CONFIG = json.dumps({
    "executionRoleArn": f"arn:aws:iam::{ACCOUNT}:role/SageMakerHyperPodInference-ml",
    "tlsCertificateS3Bucket": "ml-tls-certificates",
    "hyperpodClusterArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcdef123456",
})


# --------------------------------------------------------------------------- helpers


def check_shape(shape: Any, value: Any, path: str = "$") -> None:
    """Assert ``value`` fits botocore ``shape`` (as a parsed boto3 response would)."""
    assert value is not None, f"{path}: None"
    kind = shape.type_name
    if kind == "structure":
        assert isinstance(value, dict), f"{path}: {type(value).__name__} is not a structure"
        unknown = set(value) - set(shape.members)
        assert not unknown, f"{path}: members not in {shape.name}: {sorted(unknown)}"
        for member in shape.required_members:
            assert member in value, f"{path}: required {member} missing"
        for name, item in value.items():
            check_shape(shape.members[name], item, f"{path}.{name}")
    elif kind == "list":
        assert isinstance(value, list), f"{path}: not a list"
        for index, item in enumerate(value):
            check_shape(shape.member, item, f"{path}[{index}]")
    elif kind == "map":
        assert isinstance(value, dict), f"{path}: not a map"
        for key, item in value.items():
            check_shape(shape.key, key, f"{path}.<key>")
            check_shape(shape.value, item, f"{path}[{key}]")
    elif kind == "string":
        assert isinstance(value, str), f"{path}: {value!r} is not a string"
        if shape.enum:
            assert value in shape.enum, f"{path}: {value!r} not in {shape.name} {shape.enum}"
    elif kind == "timestamp":
        assert isinstance(value, datetime), f"{path}: not a datetime"
        assert value.tzinfo is not None, f"{path}: naive datetime"
    elif kind == "boolean":
        assert isinstance(value, bool), f"{path}: {value!r} is not a boolean"
    elif kind in ("integer", "long"):
        assert isinstance(value, int), f"{path}: not an int"
        assert not isinstance(value, bool), f"{path}: a boolean, not an int"
    elif kind in ("float", "double"):
        assert isinstance(value, (int, float))
        assert not isinstance(value, bool)
    else:  # pragma: no cover - EKS outputs use no other types
        raise AssertionError(f"{path}: unexpected shape type {kind}")


def snake(operation: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


def call(emu: EksEmulator, operation: str, **params: Any) -> dict[str, Any]:
    """Run ``operation`` (PascalCase) and check its output against the model."""
    op = MODEL.operation_model(operation)
    missing = set(op.input_shape.required_members) - set(params)
    assert not missing, f"test bug: {operation} needs {missing}"
    assert set(params) <= set(op.input_shape.members), f"test bug: {operation} {params}"
    out: dict[str, Any] = getattr(emu, snake(operation))(params)
    check_shape(op.output_shape, out)
    return out


def error_of(emu: EksEmulator, operation: str, **params: Any) -> AwsError:
    with pytest.raises(AwsError) as caught:
        call(emu, operation, **params)
    error = caught.value
    declared = {shape.name: shape for shape in MODEL.operation_model(operation).error_shapes}
    assert error.code in declared, f"{operation} does not declare {error.code}"
    assert error.status == declared[error.code].metadata["error"]["httpStatusCode"]
    assert set(error.fields) <= set(declared[error.code].members)
    return error


class FakeClock:
    def __init__(self) -> None:
        self.t = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += timedelta(seconds=seconds)


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any], list[str]]] = []

    def __call__(
        self, *, source: str, detail_type: str, detail: dict[str, Any], resources: list[str]
    ) -> None:
        assert source == "aws.eks"
        self.items.append((detail_type, detail, resources))

    def types(self, addon: str | None = None) -> list[str]:
        return [t for t, d, _ in self.items if addon is None or d["addonName"] == addon]


@pytest.fixture
def emu(clock: FakeClock, events: Events) -> EksEmulator:
    return EksEmulator(clock, events, ACCOUNT, REGION)


def subnets() -> dict[str, Any]:
    return {"subnetIds": ["subnet-0a", "subnet-0b"], "securityGroupIds": ["sg-1"]}


def create(emu: EksEmulator, name: str = "ml", **extra: Any) -> dict[str, Any]:
    extra.setdefault("accessConfig", {"authenticationMode": "API"})
    cluster: dict[str, Any] = call(emu, "CreateCluster", name=name, roleArn=ROLE,
                                   resourcesVpcConfig=subnets(), **extra)["cluster"]
    return cluster


def active(emu: EksEmulator, clock: FakeClock, name: str = "ml", **extra: Any) -> dict[str, Any]:
    create(emu, name, **extra)
    clock.advance(12 * 60)
    cluster: dict[str, Any] = call(emu, "DescribeCluster", name=name)["cluster"]
    assert cluster["status"] == "ACTIVE"
    return cluster


def addon_status(emu: EksEmulator, addon: str, cluster: str = "ml") -> str:
    status: str = call(emu, "DescribeAddon", clusterName=cluster,
                       addonName=addon)["addon"]["status"]
    return status


# --------------------------------------------------------------------------- clusters


def test_cluster_is_creating_for_8_to_12_minutes_then_active(emu, clock):
    cluster = create(emu)
    assert cluster["status"] == "CREATING"
    assert "endpoint" not in cluster
    assert "certificateAuthority" not in cluster
    duration = EksDurations().cluster_create("ml")
    assert 8 * 60 <= duration <= 12 * 60
    clock.advance(duration - 1)
    assert call(emu, "DescribeCluster", name="ml")["cluster"]["status"] == "CREATING"
    clock.advance(1)
    cluster = call(emu, "DescribeCluster", name="ml")["cluster"]
    assert cluster["status"] == "ACTIVE"
    assert re.fullmatch(r"https://[0-9A-F]{32}\.[a-z]{2}\d\.us-west-2\.eks\.amazonaws\.com",
                        cluster["endpoint"])
    assert cluster["identity"]["oidc"]["issuer"].startswith(
        "https://oidc.eks.us-west-2.amazonaws.com/id/")
    assert cluster["certificateAuthority"]["data"]
    assert cluster["arn"] == f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/ml"
    assert cluster["version"] == "1.33"
    assert cluster["platformVersion"].startswith("eks.")
    assert cluster["resourcesVpcConfig"]["vpcId"].startswith("vpc-")
    assert cluster["health"] == {"issues": []}


def test_creation_durations_are_seeded_and_spread():
    durations = [EksDurations().cluster_create(f"c{i}") for i in range(200)]
    assert all(480 <= d <= 720 for d in durations)
    assert max(durations) - min(durations) > 120
    assert EksDurations().cluster_create("x") == EksDurations().cluster_create("x")
    assert any(EksDurations(seed=1).cluster_create(f"c{i}") != d
               for i, d in enumerate(durations))


def test_access_config_defaults_and_is_kept(emu):
    cluster = call(emu, "CreateCluster", name="plain", roleArn=ROLE,
                   resourcesVpcConfig=subnets())["cluster"]
    assert cluster["accessConfig"] == {"bootstrapClusterCreatorAdminPermissions": True,
                                       "authenticationMode": "CONFIG_MAP"}
    cluster = create(emu, "api", accessConfig={"authenticationMode": "API",
                                               "bootstrapClusterCreatorAdminPermissions": False})
    assert cluster["accessConfig"] == {"bootstrapClusterCreatorAdminPermissions": False,
                                       "authenticationMode": "API"}


def test_cluster_errors(emu, clock):
    create(emu)
    assert error_of(emu, "CreateCluster", name="ml", roleArn=ROLE,
                    resourcesVpcConfig=subnets()).code == "ResourceInUseException"
    assert error_of(emu, "DescribeCluster", name="nope").code == "ResourceNotFoundException"
    assert error_of(emu, "CreateCluster", name="v", roleArn=ROLE, version="1.12",
                    resourcesVpcConfig=subnets()).code == "InvalidParameterException"
    assert error_of(emu, "CreateCluster", name="one", roleArn=ROLE,
                    resourcesVpcConfig={"subnetIds": ["subnet-0a"]}
                    ).code == "InvalidParameterException"
    assert error_of(emu, "DeleteCluster", name="ml").code == "ResourceInUseException"


def test_subnets_resolve_to_their_vpc(clock, events):
    vpcs = {"subnet-0a": "vpc-1", "subnet-0b": "vpc-1", "subnet-0c": "vpc-2"}
    emu = EksEmulator(clock, events, ACCOUNT, REGION, subnet_vpc=vpcs.get)
    assert create(emu)["resourcesVpcConfig"]["vpcId"] == "vpc-1"
    for ids in (["subnet-0a", "subnet-zz"], ["subnet-0a", "subnet-0c"]):
        assert error_of(emu, "CreateCluster", name="bad", roleArn=ROLE,
                        resourcesVpcConfig={"subnetIds": ids}).code == "InvalidParameterException"


def test_a_subnet_in_an_unsupported_zone_is_refused_naming_the_valid_zones(clock, events):
    zones = {"subnet-0a": "us-east-1d", "subnet-0b": "us-east-1e", "subnet-0f": "us-east-1f"}
    region = [f"us-east-1{letter}" for letter in "abcdef"]
    emu = EksEmulator(clock, events, ACCOUNT, "us-east-1", subnet_zone=zones.get,
                      region_zones=lambda: region)
    # us-east-1e by default, as in AWS's example
    assert emu.unsupported_zones == {"us-east-1e"}
    error = error_of(emu, "CreateCluster", name="ml", roleArn=ROLE,
                     resourcesVpcConfig={"subnetIds": ["subnet-0a", "subnet-0b"]})
    assert error.code == "UnsupportedAvailabilityZoneException"
    assert error.status == 400
    assert error.fields["validZones"] == [z for z in region if z != "us-east-1e"]
    assert error.fields["clusterName"] == "ml"
    assert "us-east-1e, the targeted availability zone" in error.message
    assert error_of(emu, "DescribeCluster", name="ml").code == "ResourceNotFoundException"
    # Subnets in supported zones are accepted; the set is configurable.
    call(emu, "CreateCluster", name="ml", roleArn=ROLE,
         resourcesVpcConfig={"subnetIds": ["subnet-0a", "subnet-0f"]})
    emu.set_unsupported_zones(["us-east-1f"])
    error = error_of(emu, "CreateCluster", name="ml2", roleArn=ROLE,
                     resourcesVpcConfig={"subnetIds": ["subnet-0b", "subnet-0f"]})
    assert error.fields["validZones"] == [z for z in region if z != "us-east-1f"]


def test_list_clusters_paginates(emu):
    for i in range(5):
        create(emu, f"c{i}")
    page = call(emu, "ListClusters", maxResults=2)
    seen = list(page["clusters"])
    while "nextToken" in page:
        page = call(emu, "ListClusters", maxResults=2, nextToken=page["nextToken"])
        seen += page["clusters"]
    assert seen == [f"c{i}" for i in range(5)]
    assert error_of(emu, "ListClusters", nextToken="garbage").code == "InvalidParameterException"


def test_delete_cluster_deletes_after_a_while(emu, clock):
    active(emu, clock)
    assert call(emu, "DeleteCluster", name="ml")["cluster"]["status"] == "DELETING"
    assert call(emu, "ListClusters")["clusters"] == ["ml"]
    clock.advance(EksDurations().cluster_delete)
    assert call(emu, "ListClusters")["clusters"] == []
    assert error_of(emu, "DescribeCluster", name="ml").code == "ResourceNotFoundException"


def test_deletion_protection_refuses_delete(emu, clock):
    active(emu, clock, deletionProtection=True)
    assert error_of(emu, "DeleteCluster", name="ml").code == "InvalidRequestException"


def test_injected_creation_failure(emu, clock):
    emu.fail_next_cluster("other", "nope")
    emu.fail_next_cluster(message="VPC vanished")
    create(emu)
    clock.advance(12 * 60)
    cluster = call(emu, "DescribeCluster", name="ml")["cluster"]
    assert cluster["status"] == "FAILED"
    assert cluster["health"]["issues"][0]["message"] == "VPC vanished"
    assert "endpoint" not in cluster


def test_a_stalled_creation_stays_creating_until_released(emu, clock):
    emu.stall_next_cluster("other")
    emu.stall_next_cluster("ml")
    create(emu)
    clock.advance(6 * 3600)
    assert call(emu, "DescribeCluster", name="ml")["cluster"]["status"] == "CREATING"
    assert emu.next_due() is None  # nothing scheduled: a token wait cannot jump to it
    emu.release_cluster("ml")
    assert call(emu, "DescribeCluster", name="ml")["cluster"]["status"] == "ACTIVE"
    # The stall was used up: the next creation of that name takes its usual time.
    create(emu, "other")
    clock.advance(12 * 60)
    assert call(emu, "DescribeCluster", name="other")["cluster"]["status"] == "CREATING"


def test_a_stall_of_some_seconds_delays_the_creation(emu, clock):
    emu.stall_next_cluster(seconds=3600)
    create(emu)
    clock.advance(3599)
    assert call(emu, "DescribeCluster", name="ml")["cluster"]["status"] == "CREATING"
    clock.advance(1)
    assert call(emu, "DescribeCluster", name="ml")["cluster"]["status"] == "ACTIVE"


def test_a_stalled_addon_stays_creating_until_released(emu, clock, events):
    active(emu, clock)
    emu.stall_addon("ml", "vpc-cni")
    call(emu, "CreateAddon", clusterName="ml", addonName="vpc-cni")
    clock.advance(3600)
    assert addon_status(emu, "vpc-cni") == "CREATING"
    assert events.items == []
    emu.release_addon("ml", "vpc-cni")
    assert addon_status(emu, "vpc-cni") == "ACTIVE"
    assert events.types() == [ADDON_CREATION_SUCCEEDED]


def test_set_endpoint_overrides_the_endpoint(emu, clock):
    active(emu, clock)
    emu.set_endpoint("ml", "https://127.0.0.1:7443")
    assert call(emu, "DescribeCluster", name="ml")["cluster"]["endpoint"] == \
        "https://127.0.0.1:7443"


def test_authentication_mode_only_moves_forward(emu, clock):
    active(emu, clock, accessConfig={"authenticationMode": "CONFIG_MAP"})
    assert error_of(emu, "UpdateClusterConfig", name="ml",
                    accessConfig={"authenticationMode": "API"}
                    ).code == "InvalidParameterException"
    update = call(emu, "UpdateClusterConfig", name="ml",
                  accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})["update"]
    assert update["status"] == "InProgress"
    assert update["type"] == "AccessConfigUpdate"
    cluster = call(emu, "DescribeCluster", name="ml")["cluster"]
    assert cluster["status"] == "UPDATING"
    assert error_of(emu, "UpdateClusterConfig", name="ml",
                    accessConfig={"authenticationMode": "API"}).code == "ResourceInUseException"
    clock.advance(EksDurations().cluster_update)
    cluster = call(emu, "DescribeCluster", name="ml")["cluster"]
    assert cluster["status"] == "ACTIVE"
    assert cluster["accessConfig"]["authenticationMode"] == "API_AND_CONFIG_MAP"
    assert call(emu, "DescribeUpdate", name="ml",
                updateId=update["id"])["update"]["status"] == "Successful"
    # Leaving CONFIG_MAP gives the creator its cluster-admin access entry.
    assert call(emu, "ListAccessEntries", clusterName="ml",
                associatedPolicyArn=CLUSTER_ADMIN_POLICY_ARN)["accessEntries"] == [
        f"arn:aws:iam::{ACCOUNT}:user/moto"]
    call(emu, "UpdateClusterConfig", name="ml", accessConfig={"authenticationMode": "API"})
    clock.advance(EksDurations().cluster_update)
    assert error_of(emu, "UpdateClusterConfig", name="ml",
                    accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"}
                    ).code == "InvalidParameterException"


# --------------------------------------------------------------------------- add-ons


def test_addon_needs_an_active_cluster(emu, clock):
    create(emu)
    assert error_of(emu, "CreateAddon", clusterName="ml",
                    addonName="vpc-cni").code == "InvalidRequestException"
    assert error_of(emu, "CreateAddon", clusterName="nope",
                    addonName="vpc-cni").code == "ResourceNotFoundException"


def test_addon_life_cycle_and_events(emu, clock, events):
    active(emu, clock)
    addon = call(emu, "CreateAddon", clusterName="ml", addonName="vpc-cni",
                 tags={"team": "ml"})["addon"]
    assert addon["status"] == "CREATING"
    assert addon["addonVersion"] == "v1.20.4-eksbuild.1"
    assert addon["addonArn"].startswith(f"arn:aws:eks:{REGION}:{ACCOUNT}:addon/ml/vpc-cni/")
    assert error_of(emu, "CreateAddon", clusterName="ml",
                    addonName="vpc-cni").code == "ResourceInUseException"
    assert events.items == []
    clock.advance(EksDurations().addon_create)
    assert addon_status(emu, "vpc-cni") == "ACTIVE"
    assert call(emu, "ListAddons", clusterName="ml")["addons"] == ["vpc-cni"]

    update = call(emu, "UpdateAddon", clusterName="ml", addonName="vpc-cni",
                  addonVersion="v1.19.6-eksbuild.7")["update"]
    assert update["type"] == "AddonUpdate"
    assert update["params"] == [{"type": "AddonVersion", "value": "v1.19.6-eksbuild.7"}]
    assert addon_status(emu, "vpc-cni") == "UPDATING"
    assert error_of(emu, "UpdateAddon", clusterName="ml",
                    addonName="vpc-cni").code == "ResourceInUseException"
    clock.advance(EksDurations().addon_update)
    described = call(emu, "DescribeAddon", clusterName="ml", addonName="vpc-cni")["addon"]
    assert (described["status"], described["addonVersion"]) == ("ACTIVE", "v1.19.6-eksbuild.7")
    assert call(emu, "DescribeUpdate", name="ml", updateId=update["id"],
                addonName="vpc-cni")["update"]["status"] == "Successful"
    assert call(emu, "ListUpdates", name="ml", addonName="vpc-cni")["updateIds"] == [update["id"]]

    assert call(emu, "DeleteAddon", clusterName="ml",
                addonName="vpc-cni")["addon"]["status"] == "DELETING"
    clock.advance(EksDurations().addon_delete)
    assert error_of(emu, "DescribeAddon", clusterName="ml",
                    addonName="vpc-cni").code == "ResourceNotFoundException"
    assert events.types() == [ADDON_CREATION_SUCCEEDED, ADDON_UPDATE_SUCCEEDED,
                              ADDON_DELETION_SUCCEEDED]
    _detail_type, detail, resources = events.items[0]
    assert detail["clusterName"] == "ml"
    assert detail["status"] == "ACTIVE"
    assert resources == [addon["addonArn"], f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/ml"]


def test_addon_parameter_errors(emu, clock):
    active(emu, clock)
    assert error_of(emu, "CreateAddon", clusterName="ml",
                    addonName="not-an-addon").code == "InvalidParameterException"
    assert error_of(emu, "CreateAddon", clusterName="ml", addonName="kube-proxy",
                    addonVersion="v1.29.0-eksbuild.2").code == "InvalidParameterException"
    assert error_of(emu, "DescribeAddon", clusterName="ml",
                    addonName="coredns").code == "ResourceNotFoundException"
    assert error_of(emu, "DeleteAddon", clusterName="ml",
                    addonName="coredns").code == "ResourceNotFoundException"


def test_missing_prerequisites_degrade_then_recover(emu, clock, events):
    active(emu, clock)
    call(emu, "CreateAddon", clusterName="ml", addonName=TRAINING)
    clock.advance(60)
    addon = call(emu, "DescribeAddon", clusterName="ml", addonName=TRAINING)["addon"]
    assert addon["status"] == "DEGRADED"
    codes = {i["resourceIds"][0]: i["code"] for i in addon["health"]["issues"]}
    assert codes == {"cert-manager": "K8sResourceNotFound",
                     "eks-pod-identity-agent": "InsufficientNumberOfReplicas"}
    call(emu, "CreateAddon", clusterName="ml", addonName="cert-manager")
    clock.advance(10)
    call(emu, "CreateAddon", clusterName="ml", addonName="eks-pod-identity-agent")
    clock.advance(59)
    assert addon_status(emu, TRAINING) == "DEGRADED"  # the agent is still CREATING
    clock.advance(1)
    addon = call(emu, "DescribeAddon", clusterName="ml", addonName=TRAINING)["addon"]
    assert addon["status"] == "ACTIVE"
    assert addon["health"] == {"issues": []}
    assert [(t, d["addonName"]) for t, d, _ in events.items] == [
        (ADDON_HEALTH_DEGRADED, TRAINING),
        (ADDON_CREATION_SUCCEEDED, "cert-manager"),
        (ADDON_CREATION_SUCCEEDED, "eks-pod-identity-agent"),
        (ADDON_HEALTH_RESTORED, TRAINING),
    ]
    # Removing a prerequisite degrades the dependent again.
    call(emu, "DeleteAddon", clusterName="ml", addonName="cert-manager")
    clock.advance(30)
    assert addon_status(emu, TRAINING) == "DEGRADED"
    assert events.types()[-2:] == [ADDON_DELETION_SUCCEEDED, ADDON_HEALTH_DEGRADED]


def test_prerequisites_installed_first_give_active(emu, clock, events):
    active(emu, clock)
    for name in ("aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver", "metrics-server",
                 "cert-manager", "amazon-sagemaker-hyperpod-taskgovernance"):
        call(emu, "CreateAddon", clusterName="ml", addonName=name)
    clock.advance(60)
    call(emu, "CreateAddon", clusterName="ml", addonName=INFERENCE,
         configurationValues=INFERENCE_CONFIG)
    clock.advance(60)
    assert addon_status(emu, INFERENCE) == "ACTIVE"
    assert addon_status(emu, "amazon-sagemaker-hyperpod-taskgovernance") == "ACTIVE"
    assert ADDON_HEALTH_DEGRADED not in events.types()


def test_missing_prerequisite_can_mean_create_failed(clock, events):
    emu = EksEmulator(clock, events, ACCOUNT, REGION,
                      missing_prerequisite_status="CREATE_FAILED")
    active(emu, clock)
    call(emu, "CreateAddon", clusterName="ml", addonName="amazon-sagemaker-hyperpod-observability")
    clock.advance(60)
    addon = call(emu, "DescribeAddon", clusterName="ml",
                 addonName="amazon-sagemaker-hyperpod-observability")["addon"]
    assert addon["status"] == "CREATE_FAILED"
    assert addon["health"]["issues"][0]["resourceIds"] == ["eks-pod-identity-agent"]
    assert events.types() == [ADDON_CREATION_FAILED]


def test_injected_degradation(emu, clock, events):
    active(emu, clock)
    call(emu, "CreateAddon", clusterName="ml", addonName="coredns")
    emu.degrade_addon("ml", "coredns", "AdmissionRequestDenied", "webhook says no")
    clock.advance(60)
    addon = call(emu, "DescribeAddon", clusterName="ml", addonName="coredns")["addon"]
    assert addon["status"] == "DEGRADED"
    assert addon["health"]["issues"] == [
        {"code": "AdmissionRequestDenied", "message": "webhook says no", "resourceIds": []}]
    emu.restore_addon("ml", "coredns")
    assert addon_status(emu, "coredns") == "ACTIVE"
    emu.degrade_addon("ml", "coredns")
    assert addon_status(emu, "coredns") == "DEGRADED"
    assert events.types() == [ADDON_HEALTH_DEGRADED, ADDON_HEALTH_RESTORED,
                              ADDON_HEALTH_DEGRADED]
    with pytest.raises(ValueError, match="AddonIssueCode"):
        emu.degrade_addon("ml", "coredns", "Bogus")


def test_describe_addon_versions_filters_and_paginates(emu):
    wanted = {
        "vpc-cni", "coredns", "kube-proxy", "eks-pod-identity-agent", "aws-ebs-csi-driver",
        "aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver", "metrics-server", "cert-manager",
        TRAINING, INFERENCE, "amazon-sagemaker-hyperpod-observability",
        "amazon-sagemaker-hyperpod-taskgovernance",
    }
    listed = call(emu, "DescribeAddonVersions", kubernetesVersion="1.33")["addons"]
    assert {a["addonName"] for a in listed} >= wanted
    for info in listed:
        defaults = [v for v in info["addonVersions"]
                    for c in v["compatibilities"] if c["defaultVersion"]]
        assert len(defaults) == 1, info["addonName"]
        assert all(c["clusterVersion"] == "1.33"
                   for v in info["addonVersions"] for c in v["compatibilities"])
    proxy = call(emu, "DescribeAddonVersions", addonName="kube-proxy",
                 kubernetesVersion="1.31")["addons"]
    assert [v["addonVersion"] for v in proxy[0]["addonVersions"]] == [
        "v1.31.0-eksbuild.2", "v1.31.0-eksbuild.1"]
    community = call(emu, "DescribeAddonVersions", owners=["community"])["addons"]
    assert {a["addonName"] for a in community} == {"metrics-server", "cert-manager"}
    storage = call(emu, "DescribeAddonVersions", types=["storage"], publishers=["eks"])["addons"]
    assert len(storage) == 3
    assert call(emu, "DescribeAddonVersions", addonName="nope")["addons"] == []
    page = call(emu, "DescribeAddonVersions", maxResults=5)
    names = [a["addonName"] for a in page["addons"]]
    while "nextToken" in page:
        page = call(emu, "DescribeAddonVersions", maxResults=5, nextToken=page["nextToken"])
        names += [a["addonName"] for a in page["addons"]]
    assert set(names) == wanted
    assert len(names) == len(wanted)


def test_catalogue_is_replaceable(clock, events):
    default = AddonCatalog.default()
    small = AddonCatalog(addons=tuple(a for a in default.addons if a.name == "vpc-cni"))
    emu = EksEmulator(clock, events, ACCOUNT, REGION, addon_catalog=small)
    assert [a["addonName"] for a in call(emu, "DescribeAddonVersions")["addons"]] == ["vpc-cni"]


# --------------------------------------------------------------------------- access entries


def test_access_entries_need_api_authentication(emu, clock):
    active(emu, clock, accessConfig={"authenticationMode": "CONFIG_MAP"})
    assert error_of(emu, "CreateAccessEntry", clusterName="ml",
                    principalArn=ROLE).code == "InvalidRequestException"
    assert error_of(emu, "ListAccessEntries", clusterName="ml").code == "InvalidRequestException"
    # In CONFIG_MAP mode only the creator gets in (system:masters).
    decision = emu.authorize("ml", f"arn:aws:iam::{ACCOUNT}:user/moto")
    assert decision is not None
    assert decision.cluster_admin
    assert emu.authorize("ml", ROLE) is None


def test_access_entries_and_authorize(emu, clock):
    creator = f"arn:aws:iam::{ACCOUNT}:role/hypd/ControlPlane"
    emu = EksEmulator(clock, emu._emit, ACCOUNT, REGION,
                      caller_arn=lambda: f"arn:aws:sts::{ACCOUNT}:assumed-role/ControlPlane/fn")
    create(emu)
    assert emu.authorize("ml", creator) is None  # not ACTIVE yet
    clock.advance(12 * 60)
    # The creator (an assumed role) got a cluster-admin entry for its role.
    creator_role = f"arn:aws:iam::{ACCOUNT}:role/ControlPlane"
    assert call(emu, "ListAccessEntries", clusterName="ml")["accessEntries"] == [creator_role]
    session = emu.authorize("ml", f"arn:aws:sts::{ACCOUNT}:assumed-role/ControlPlane/fn-123")
    assert session is not None
    assert session.cluster_admin
    assert session.username == f"arn:aws:sts::{ACCOUNT}:assumed-role/ControlPlane/fn-123"

    admin = f"arn:aws:iam::{ACCOUNT}:role/team/Admin"
    entry = call(emu, "CreateAccessEntry", clusterName="ml", principalArn=admin,
                 kubernetesGroups=["ml-admins"])["accessEntry"]
    assert entry["type"] == "STANDARD"
    assert entry["username"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/Admin/{{{{SessionName}}}}"
    assert entry["accessEntryArn"].startswith(
        f"arn:aws:eks:{REGION}:{ACCOUNT}:access-entry/ml/role/{ACCOUNT}/Admin/")
    assert error_of(emu, "CreateAccessEntry", clusterName="ml",
                    principalArn=admin).code == "ResourceInUseException"
    user = f"arn:aws:iam::{ACCOUNT}:user/alice"
    assert call(emu, "CreateAccessEntry", clusterName="ml", principalArn=user,
                username="alice")["accessEntry"]["username"] == "alice"
    assert error_of(emu, "CreateAccessEntry", clusterName="ml",
                    principalArn=f"arn:aws:sts::{ACCOUNT}:assumed-role/X/s"
                    ).code == "InvalidParameterException"
    assert error_of(emu, "CreateAccessEntry", clusterName="ml", principalArn=ROLE,
                    type="ROBOT").code == "InvalidParameterException"

    decision = emu.authorize("ml", admin)
    assert decision is not None
    assert decision.groups == ("ml-admins",)
    assert not decision.policies

    edit = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy"
    assoc = call(emu, "AssociateAccessPolicy", clusterName="ml", principalArn=admin,
                 policyArn=edit, accessScope={"type": "namespace", "namespaces": ["ml"]})
    assert assoc["associatedAccessPolicy"]["accessScope"] == {"type": "namespace",
                                                              "namespaces": ["ml"]}
    assert error_of(emu, "AssociateAccessPolicy", clusterName="ml", principalArn=admin,
                    policyArn=edit, accessScope={"type": "namespace"}
                    ).code == "InvalidParameterException"
    assert error_of(emu, "AssociateAccessPolicy", clusterName="ml", principalArn=admin,
                    policyArn="arn:aws:eks::aws:cluster-access-policy/Nope",
                    accessScope={"type": "cluster"}).code == "InvalidParameterException"
    call(emu, "AssociateAccessPolicy", clusterName="ml", principalArn=admin,
         policyArn=CLUSTER_ADMIN_POLICY_ARN, accessScope={"type": "cluster"})
    listed = call(emu, "ListAssociatedAccessPolicies", clusterName="ml", principalArn=admin)
    assert [p["policyArn"] for p in listed["associatedAccessPolicies"]] == [
        CLUSTER_ADMIN_POLICY_ARN, edit]
    assert call(emu, "ListAccessEntries", clusterName="ml", associatedPolicyArn=edit
                )["accessEntries"] == [admin]

    decision = emu.authorize("ml", f"arn:aws:sts::{ACCOUNT}:assumed-role/Admin/bob")
    assert decision is not None
    assert decision.cluster_admin
    assert decision.username == f"arn:aws:sts::{ACCOUNT}:assumed-role/Admin/bob"
    assert {(p.kubernetes_role, p.scope_type, p.namespaces) for p in decision.policies} == {
        ("cluster-admin", "cluster", ()), ("edit", "namespace", ("ml",))}

    call(emu, "DisassociateAccessPolicy", clusterName="ml", principalArn=admin,
         policyArn=CLUSTER_ADMIN_POLICY_ARN)
    assert error_of(emu, "DisassociateAccessPolicy", clusterName="ml", principalArn=admin,
                    policyArn=CLUSTER_ADMIN_POLICY_ARN).code == "ResourceNotFoundException"
    decision = emu.authorize("ml", admin)
    assert decision is not None
    assert not decision.cluster_admin
    call(emu, "DeleteAccessEntry", clusterName="ml", principalArn=admin)
    assert emu.authorize("ml", admin) is None
    assert error_of(emu, "DescribeAccessEntry", clusterName="ml",
                    principalArn=admin).code == "ResourceNotFoundException"
    assert call(emu, "DescribeAccessEntry", clusterName="ml",
                principalArn=user)["accessEntry"]["principalArn"] == user


def test_node_access_entries(emu, clock):
    active(emu, clock, accessConfig={"authenticationMode": "API",
                                     "bootstrapClusterCreatorAdminPermissions": False})
    assert call(emu, "ListAccessEntries", clusterName="ml")["accessEntries"] == []
    node_role = f"arn:aws:iam::{ACCOUNT}:role/HyperPodNodes"
    entry = call(emu, "CreateAccessEntry", clusterName="ml", principalArn=node_role,
                 type="HYPERPOD_LINUX")["accessEntry"]
    assert entry["username"] == "system:node:{{EC2PrivateDNSName}}"
    assert error_of(emu, "AssociateAccessPolicy", clusterName="ml", principalArn=node_role,
                    policyArn=CLUSTER_ADMIN_POLICY_ARN, accessScope={"type": "cluster"}
                    ).code == "InvalidRequestException"
    decision = emu.authorize("ml", node_role)
    assert decision is not None
    assert "system:nodes" in decision.groups


@pytest.mark.parametrize(
    ("region", "partition", "domain"),
    [
        ("us-west-2", "aws", "amazonaws.com"),
        ("cn-north-1", "aws-cn", "amazonaws.com.cn"),
        ("us-gov-west-1", "aws-us-gov", "amazonaws.com"),
    ],
)
def test_arns_endpoints_and_access_policies_are_the_region_s_partition_s(
    clock, events, region, partition, domain
):
    # Given an emulator in a Region of the partition, called by a user of that partition
    caller = f"arn:{partition}:iam::{ACCOUNT}:user/admin"
    emu = EksEmulator(clock, events, ACCOUNT, region, caller_arn=lambda: caller)
    role = f"arn:{partition}:iam::{ACCOUNT}:role/eks-cluster"
    call(emu, "CreateCluster", name="ml", roleArn=role, resourcesVpcConfig=subnets(),
         accessConfig={"authenticationMode": "API"})
    clock.advance(12 * 60)

    # Then its ARNs, endpoint and OIDC issuer are named in that partition
    cluster = call(emu, "DescribeCluster", name="ml")["cluster"]
    assert cluster["arn"] == f"arn:{partition}:eks:{region}:{ACCOUNT}:cluster/ml"
    assert cluster["endpoint"].endswith(f".{region}.eks.{domain}")
    assert cluster["identity"]["oidc"]["issuer"].startswith(f"https://oidc.eks.{region}.{domain}/")
    # and so are the access policies: the creator's, the listed ones, the ones it accepts
    admin = f"arn:{partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    creator = call(emu, "ListAssociatedAccessPolicies", clusterName="ml", principalArn=caller)
    assert [p["policyArn"] for p in creator["associatedAccessPolicies"]] == [admin]
    listed = {p["arn"] for p in call(emu, "ListAccessPolicies")["accessPolicies"]}
    assert admin in listed
    assert all(arn.startswith(f"arn:{partition}:eks::aws:") for arn in listed)
    call(emu, "CreateAccessEntry", clusterName="ml", principalArn=role)
    call(emu, "AssociateAccessPolicy", clusterName="ml", principalArn=role, policyArn=admin,
         accessScope={"type": "cluster"})
    other = "aws-cn" if partition != "aws-cn" else "aws"
    assert error_of(emu, "AssociateAccessPolicy", clusterName="ml", principalArn=role,
                    policyArn=admin.replace(f"arn:{partition}:", f"arn:{other}:"),
                    accessScope={"type": "cluster"}).code == "InvalidParameterException"
    # a role's default username is its session ARN in the partition
    entry = call(emu, "DescribeAccessEntry", clusterName="ml", principalArn=role)["accessEntry"]
    assert entry["username"].startswith(f"arn:{partition}:sts::{ACCOUNT}:assumed-role/")


def test_list_access_policies(emu):
    policies = call(emu, "ListAccessPolicies")["accessPolicies"]
    assert {"name": "AmazonEKSClusterAdminPolicy", "arn": CLUSTER_ADMIN_POLICY_ARN} in policies
    page = call(emu, "ListAccessPolicies", maxResults=3)
    assert len(page["accessPolicies"]) == 3
    assert "nextToken" in page


# --------------------------------------------------------------------------- events and time


def test_events_are_emitted_once_in_time_order_after_one_big_jump(emu, clock, events):
    active(emu, clock)
    call(emu, "CreateAddon", clusterName="ml", addonName=TRAINING)           # t+60: degraded
    clock.advance(5)
    call(emu, "CreateAddon", clusterName="ml", addonName="cert-manager")      # t+65
    call(emu, "CreateAddon", clusterName="ml", addonName="eks-pod-identity-agent")  # t+65
    emu.set_durations(addon_create=120)
    call(emu, "CreateAddon", clusterName="ml", addonName="metrics-server")    # t+125
    clock.advance(3600)
    emu.tick()
    emu.tick()
    assert [(t, d["addonName"]) for t, d, _ in events.items] == [
        (ADDON_HEALTH_DEGRADED, TRAINING),
        (ADDON_CREATION_SUCCEEDED, "cert-manager"),
        (ADDON_CREATION_SUCCEEDED, "eks-pod-identity-agent"),
        (ADDON_HEALTH_RESTORED, TRAINING),
        (ADDON_CREATION_SUCCEEDED, "metrics-server"),
    ]
    times = [datetime.fromisoformat(d["eventTime"]) for _, d, _ in events.items]
    assert times == sorted(times)
    assert times[-1] - times[0] == timedelta(seconds=65)
    call(emu, "ListAddons", clusterName="ml")
    assert len(events.items) == 5


@pytest.mark.usefixtures("no_wall_clock")
def test_a_life_cycle_of_virtual_hours_never_waits_nor_reads_the_wall_clock(emu, clock, events):
    virtual_start = clock.now()
    for index in range(3):
        name = f"c{index}"
        create(emu, name)
    clock.advance(12 * 60)
    for index in range(3):
        name = f"c{index}"
        for addon in ("vpc-cni", "coredns", "kube-proxy", "eks-pod-identity-agent",
                      "cert-manager", TRAINING):
            call(emu, "CreateAddon", clusterName=name, addonName=addon)
        for minute in range(120):
            clock.advance(60)
            if minute % 10 == 0:
                call(emu, "DescribeCluster", name=name)
    for index in range(3):
        name = f"c{index}"
        for addon in call(emu, "ListAddons", clusterName=name)["addons"]:
            assert addon_status(emu, addon, name) == "ACTIVE"
            call(emu, "DeleteAddon", clusterName=name, addonName=addon)
        clock.advance(60)
        call(emu, "DeleteCluster", name=name)
    clock.advance(3600)
    assert call(emu, "ListClusters")["clusters"] == []
    assert clock.now() - virtual_start > timedelta(hours=6)
    assert events.types().count(ADDON_CREATION_SUCCEEDED) == 18
    assert events.types().count(ADDON_DELETION_SUCCEEDED) == 18


def test_a_subscriber_may_call_back_into_the_emulator(clock):
    seen: list[tuple[str, str]] = []
    holder: dict[str, EksEmulator] = {}

    def emit(*, source: str, detail_type: str, detail: dict[str, Any],
             resources: list[str]) -> None:
        # A rule target reading the add-on at once sees the state after the whole tick.
        emu = holder["emu"]
        seen.append((detail_type, addon_status(emu, detail["addonName"])))

    emu = EksEmulator(clock, emit, ACCOUNT, REGION)
    holder["emu"] = emu
    active(emu, clock)
    call(emu, "CreateAddon", clusterName="ml", addonName=TRAINING)
    call(emu, "CreateAddon", clusterName="ml", addonName="cert-manager")
    call(emu, "CreateAddon", clusterName="ml", addonName="eks-pod-identity-agent")
    clock.advance(60)
    emu.tick()
    assert seen == [
        (ADDON_HEALTH_DEGRADED, "ACTIVE"),  # degraded first, restored within the same instant
        (ADDON_CREATION_SUCCEEDED, "ACTIVE"),
        (ADDON_CREATION_SUCCEEDED, "ACTIVE"),
        (ADDON_HEALTH_RESTORED, "ACTIVE"),
    ]
