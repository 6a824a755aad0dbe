"""What managed features need of the EKS emulator: pod identity associations (standalone and
owned by add-ons), the feature add-ons' versions and traps, DescribeAddonConfiguration's
schemas and the check of ``configurationValues`` against them.

Every call goes through `tests.emulator.test_eks.call`, which checks the output against
botocore's EKS model; every refusal through `error_of`, which checks the code is one the
operation declares, with its HTTP status. Time is a fake clock the tests move."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hypd_local.emulator.eks import (
    ADDON_CREATION_FAILED,
    ADDON_HEALTH_DEGRADED,
    EksDurations,
    EksEmulator,
)
from tests.emulator.test_eks import (
    ACCOUNT,
    INFERENCE,
    INFERENCE_CONFIG,
    REGION,
    TRAINING,
    Events,
    FakeClock,
    active,
    addon_status,
    call,
    error_of,
)

ROLE = f"arn:aws:iam::{ACCOUNT}:role/pods"
OTHER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/other-pods"
CERT_MANAGER = "cert-manager"
OBSERVABILITY = "amazon-sagemaker-hyperpod-observability"
TASK_GOVERNANCE = "amazon-sagemaker-hyperpod-taskgovernance"
S3_CSI = "aws-mountpoint-s3-csi-driver"
FSX_CSI = "aws-fsx-csi-driver"
D = EksDurations()


@pytest.fixture
def emu(clock: FakeClock, events: Events) -> EksEmulator:
    emulator = EksEmulator(clock, events, ACCOUNT, REGION)
    active(emulator, clock)
    return emulator


def associate(emu: EksEmulator, namespace: str = "ml", service_account: str = "trainer",
              **extra: Any) -> dict[str, Any]:
    association: dict[str, Any] = call(
        emu, "CreatePodIdentityAssociation", clusterName="ml", namespace=namespace,
        serviceAccount=service_account, roleArn=extra.pop("roleArn", ROLE), **extra,
    )["association"]
    return association


def listed(emu: EksEmulator, **filters: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = call(emu, "ListPodIdentityAssociations", clusterName="ml",
                                       **filters)["associations"]
    return found


# --------------------------------------------------------------------------- associations


def test_an_association_is_created_described_updated_and_deleted(emu, clock):
    created = associate(emu, tags={"team": "ml"})
    association_id = created["associationId"]
    assert re.fullmatch(r"a-[0-9a-z]{17}", association_id)
    assert created["associationArn"] == (
        f"arn:aws:eks:{REGION}:{ACCOUNT}:podidentityassociation/ml/{association_id}")
    assert (created["clusterName"], created["namespace"], created["serviceAccount"],
            created["roleArn"]) == ("ml", "ml", "trainer", ROLE)
    assert created["tags"] == {"team": "ml"}
    assert created["createdAt"] == created["modifiedAt"] == clock.now()
    assert created["disableSessionTags"] is False
    assert "ownerArn" not in created
    described = call(emu, "DescribePodIdentityAssociation", clusterName="ml",
                     associationId=association_id)["association"]
    assert described == created

    clock.advance(60)
    updated = call(emu, "UpdatePodIdentityAssociation", clusterName="ml",
                   associationId=association_id, roleArn=OTHER_ROLE)["association"]
    assert updated["roleArn"] == OTHER_ROLE
    assert updated["modifiedAt"] == clock.now()
    assert updated["createdAt"] == created["createdAt"]

    deleted = call(emu, "DeletePodIdentityAssociation", clusterName="ml",
                   associationId=association_id)["association"]
    assert deleted["associationId"] == association_id
    assert listed(emu) == []
    assert error_of(emu, "DescribePodIdentityAssociation", clusterName="ml",
                    associationId=association_id).code == "ResourceNotFoundException"


def test_one_association_per_service_account(emu):
    first = associate(emu)
    error = error_of(emu, "CreatePodIdentityAssociation", clusterName="ml", namespace="ml",
                     serviceAccount="trainer", roleArn=OTHER_ROLE)
    assert error.code == "ResourceInUseException"
    assert error.status == 409
    assert error.message == f"Association already exists: {first['associationId']}"
    # another namespace, another service account: other associations
    associate(emu, namespace="other")
    associate(emu, service_account="evaluator")
    assert len(listed(emu)) == 3


def test_unknown_clusters_and_associations(emu):
    association_id = associate(emu)["associationId"]
    missing = "a-" + "0" * 17
    for operation in ("DescribePodIdentityAssociation", "DeletePodIdentityAssociation"):
        assert error_of(emu, operation, clusterName="nope",
                        associationId=association_id).code == "ResourceNotFoundException"
        assert error_of(emu, operation, clusterName="ml",
                        associationId=missing).code == "ResourceNotFoundException"
        malformed = error_of(emu, operation, clusterName="ml", associationId="a-short")
        assert malformed.code == "InvalidParameterException"
        assert malformed.message == "The parameter associationId should be 19 characters long."
    assert error_of(emu, "UpdatePodIdentityAssociation", clusterName="ml",
                    associationId=missing, roleArn=ROLE).code == "ResourceNotFoundException"
    assert error_of(emu, "ListPodIdentityAssociations",
                    clusterName="nope").code == "ResourceNotFoundException"
    assert error_of(emu, "CreatePodIdentityAssociation", clusterName="nope", namespace="ml",
                    serviceAccount="x", roleArn=ROLE).code == "ResourceNotFoundException"


def test_the_list_filters_and_paginates(emu):
    for namespace in ("a", "b"):
        for service_account in ("x", "y", "z"):
            associate(emu, namespace=namespace, service_account=service_account)
    assert [(a["namespace"], a["serviceAccount"]) for a in listed(emu, namespace="b")] == [
        ("b", "x"), ("b", "y"), ("b", "z")]
    assert [a["namespace"] for a in listed(emu, serviceAccount="y")] == ["a", "b"]
    assert [a["namespace"] for a in listed(emu, namespace="a", serviceAccount="z")] == ["a"]
    assert listed(emu, namespace="c") == []
    summary = listed(emu)[0]
    assert set(summary) == {"clusterName", "namespace", "serviceAccount", "associationArn",
                            "associationId"}
    page = call(emu, "ListPodIdentityAssociations", clusterName="ml", maxResults=4)
    seen = list(page["associations"])
    assert len(seen) == 4
    page = call(emu, "ListPodIdentityAssociations", clusterName="ml", maxResults=4,
                nextToken=page["nextToken"])
    seen += page["associations"]
    assert "nextToken" not in page
    assert [a["associationId"] for a in seen] == [a["associationId"] for a in listed(emu)]
    assert error_of(emu, "ListPodIdentityAssociations", clusterName="ml",
                    nextToken="garbage").code == "InvalidParameterException"


def test_a_client_request_token_makes_create_and_update_idempotent(emu, clock):
    first = associate(emu, clientRequestToken="token-1")
    again = associate(emu, clientRequestToken="token-1")
    assert again == first
    assert len(listed(emu)) == 1
    mismatch = error_of(emu, "CreatePodIdentityAssociation", clusterName="ml", namespace="ml",
                        serviceAccount="other", roleArn=ROLE, clientRequestToken="token-1")
    assert mismatch.code == "InvalidParameterException"
    clock.advance(10)
    updated = call(emu, "UpdatePodIdentityAssociation", clusterName="ml",
                   associationId=first["associationId"], roleArn=OTHER_ROLE,
                   clientRequestToken="token-2")["association"]
    clock.advance(10)
    replayed = call(emu, "UpdatePodIdentityAssociation", clusterName="ml",
                    associationId=first["associationId"], roleArn=OTHER_ROLE,
                    clientRequestToken="token-2")["association"]
    assert replayed["modifiedAt"] == updated["modifiedAt"]


def test_target_roles_session_tags_and_policies(emu):
    target = "arn:aws:iam::210987654321:role/target"
    created = associate(emu, targetRoleArn=target)
    assert created["targetRoleArn"] == target
    assert re.fullmatch(r"[0-9a-f-]{36}", created["externalId"])
    policy = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]})
    # a policy needs session tags disabled, as EKS documents
    needs = error_of(emu, "UpdatePodIdentityAssociation", clusterName="ml",
                     associationId=created["associationId"], policy=policy)
    assert needs.code == "InvalidParameterException"
    assert "disableSessionTags" in needs.message
    assert "policy" not in call(emu, "DescribePodIdentityAssociation", clusterName="ml",
                                associationId=created["associationId"])["association"]
    updated = call(emu, "UpdatePodIdentityAssociation", clusterName="ml",
                   associationId=created["associationId"], policy=policy,
                   disableSessionTags=True, targetRoleArn="")["association"]
    assert updated["policy"] == policy
    assert updated["disableSessionTags"] is True
    assert "targetRoleArn" not in updated
    assert "externalId" not in updated
    assert error_of(emu, "CreatePodIdentityAssociation", clusterName="ml", namespace="ml",
                    serviceAccount="x", roleArn=ROLE, policy="not json",
                    disableSessionTags=True).code == "InvalidParameterException"
    nothing = error_of(emu, "UpdatePodIdentityAssociation", clusterName="ml",
                       associationId=created["associationId"])
    assert nothing.code == "InvalidParameterException"
    bad_role = error_of(emu, "CreatePodIdentityAssociation", clusterName="ml", namespace="ml",
                        serviceAccount="x", roleArn="arn:aws:iam::123456789012:user/someone")
    assert bad_role.code == "InvalidParameterException"


# --------------------------------------------------------------------------- add-ons' associations


def test_an_addon_owns_the_associations_it_creates(emu, clock):
    addon = call(emu, "CreateAddon", clusterName="ml", addonName=S3_CSI,
                 podIdentityAssociations=[{"serviceAccount": "s3-csi-driver-sa",
                                           "roleArn": ROLE}])["addon"]
    [owned] = listed(emu)
    assert owned["ownerArn"] == addon["addonArn"]
    assert owned["namespace"] == "kube-system"
    assert addon["podIdentityAssociations"] == [owned["associationArn"]]
    described = call(emu, "DescribePodIdentityAssociation", clusterName="ml",
                     associationId=owned["associationId"])["association"]
    assert (described["roleArn"], described["ownerArn"]) == (ROLE, addon["addonArn"])
    # the standalone API may neither change, delete nor take its service account
    for operation, extra in (("UpdatePodIdentityAssociation", {"roleArn": OTHER_ROLE}),
                             ("DeletePodIdentityAssociation", {})):
        refused = error_of(emu, operation, clusterName="ml",
                           associationId=owned["associationId"], **extra)
        assert refused.code == "InvalidRequestException"
        assert addon["addonArn"] in refused.message
    assert error_of(emu, "CreatePodIdentityAssociation", clusterName="ml",
                    namespace="kube-system", serviceAccount="s3-csi-driver-sa",
                    roleArn=OTHER_ROLE).code == "ResourceInUseException"

    clock.advance(D.addon_create)
    call(emu, "UpdateAddon", clusterName="ml", addonName=S3_CSI, podIdentityAssociations=[
        {"serviceAccount": "s3-csi-driver-sa", "roleArn": OTHER_ROLE}])
    [changed] = listed(emu)
    assert changed["associationId"] == owned["associationId"]
    assert call(emu, "DescribePodIdentityAssociation", clusterName="ml",
                associationId=owned["associationId"])["association"]["roleArn"] == OTHER_ROLE
    clock.advance(D.addon_update)

    call(emu, "DeleteAddon", clusterName="ml", addonName=S3_CSI)
    assert len(listed(emu)) == 1  # until the add-on is gone
    clock.advance(D.addon_delete)
    assert listed(emu) == []


def test_an_update_with_no_associations_removes_the_addons(emu, clock):
    call(emu, "CreateAddon", clusterName="ml", addonName=FSX_CSI,
         podIdentityAssociations=[{"serviceAccount": "fsx-csi-controller-sa", "roleArn": ROLE}])
    clock.advance(D.addon_create)
    call(emu, "UpdateAddon", clusterName="ml", addonName=FSX_CSI, podIdentityAssociations=[])
    assert listed(emu) == []
    assert call(emu, "DescribeAddon", clusterName="ml",
                addonName=FSX_CSI)["addon"]["podIdentityAssociations"] == []


def test_an_addon_may_not_take_a_service_account_another_association_has(emu):
    taken = associate(emu, namespace="kube-system", service_account="s3-csi-driver-sa")
    error = error_of(emu, "CreateAddon", clusterName="ml", addonName=S3_CSI,
                     podIdentityAssociations=[{"serviceAccount": "s3-csi-driver-sa",
                                               "roleArn": ROLE}])
    assert error.code == "ResourceInUseException"
    assert error.message == f"Association already exists: {taken['associationId']}"
    assert call(emu, "ListAddons", clusterName="ml")["addons"] == []


@pytest.mark.parametrize(("addon", "version"), [
    (TRAINING, None), (TRAINING, "v1.2.1-eksbuild.1"), (CERT_MANAGER, None),
    (CERT_MANAGER, "v1.18.2-eksbuild.2"),
])
def test_versions_refusing_pod_identity_refuse_it_on_create_addon(emu, addon, version):
    service_account = {TRAINING: "hp-training-operator-controller-manager",
                       CERT_MANAGER: "cert-manager"}[addon]
    extra = {"addonVersion": version} if version else {}
    error = error_of(emu, "CreateAddon", clusterName="ml", addonName=addon,
                     podIdentityAssociations=[{"serviceAccount": service_account,
                                               "roleArn": ROLE}], **extra)
    assert error.code == "InvalidParameterException"
    assert error.status == 400
    default = {TRAINING: "v1.2.1-eksbuild.1", CERT_MANAGER: "v1.18.2-eksbuild.2"}[addon]
    assert error.message == (
        f"Pod Identity feature is not supported for addon version: {version or default}")
    assert call(emu, "ListAddons", clusterName="ml")["addons"] == []
    assert listed(emu) == []


def test_older_versions_take_pod_identity_and_update_addon_refuses_it_too(emu, clock):
    service_account = "hp-training-operator-controller-manager"
    call(emu, "CreateAddon", clusterName="ml", addonName=TRAINING,
         addonVersion="v1.2.0-eksbuild.1",
         podIdentityAssociations=[{"serviceAccount": service_account, "roleArn": ROLE}])
    [owned] = listed(emu)
    assert (owned["namespace"], owned["serviceAccount"]) == ("aws-hyperpod", service_account)
    clock.advance(D.addon_create)
    # moving to v1.2.1 while sending associations is refused, as UpdateAddon on AWS does
    error = error_of(emu, "UpdateAddon", clusterName="ml", addonName=TRAINING,
                     addonVersion="v1.2.1-eksbuild.1",
                     podIdentityAssociations=[{"serviceAccount": service_account,
                                               "roleArn": ROLE}])
    assert error.message == "Pod Identity feature is not supported for addon version: " \
        "v1.2.1-eksbuild.1"
    call(emu, "CreateAddon", clusterName="ml", addonName=CERT_MANAGER)
    clock.advance(D.addon_create)
    error = error_of(emu, "UpdateAddon", clusterName="ml", addonName=CERT_MANAGER,
                     podIdentityAssociations=[{"serviceAccount": "cert-manager",
                                               "roleArn": ROLE}])
    assert error.message == "Pod Identity feature is not supported for addon version: " \
        "v1.18.2-eksbuild.2"


def test_a_service_account_the_addon_does_not_document_is_refused(emu):
    error = error_of(emu, "CreateAddon", clusterName="ml", addonName=S3_CSI,
                     podIdentityAssociations=[{"serviceAccount": "someone-else",
                                               "roleArn": ROLE}])
    assert error.code == "InvalidParameterException"
    assert error.message == ("Service account someone-else in pod identity configuration is "
                             f"not supported for addon {S3_CSI}")
    coredns = error_of(emu, "CreateAddon", clusterName="ml", addonName="coredns",
                       podIdentityAssociations=[{"serviceAccount": "coredns", "roleArn": ROLE}])
    assert coredns.message.startswith("Pod Identity feature is not supported for addon version")


def test_create_addon_is_idempotent_with_a_client_request_token(emu):
    first = call(emu, "CreateAddon", clusterName="ml", addonName="vpc-cni",
                 clientRequestToken="once")["addon"]
    again = call(emu, "CreateAddon", clusterName="ml", addonName="vpc-cni",
                 clientRequestToken="once")["addon"]
    assert again == first
    assert error_of(emu, "CreateAddon", clusterName="ml", addonName="vpc-cni",
                    clientRequestToken="twice").code == "ResourceInUseException"


# --------------------------------------------------------------------------- catalogue


def versions(emu: EksEmulator, addon: str) -> list[dict[str, Any]]:
    info = call(emu, "DescribeAddonVersions", addonName=addon, kubernetesVersion="1.33")
    found: list[dict[str, Any]] = info["addons"][0]["addonVersions"]
    return found


def test_the_feature_addons_versions(emu):
    training = {v["addonVersion"]: v for v in versions(emu, TRAINING)}
    assert list(training) == ["v1.2.1-eksbuild.1", "v1.2.0-eksbuild.1", "v1.1.0-eksbuild.1"]
    assert training["v1.2.1-eksbuild.1"]["compatibilities"][0]["defaultVersion"] is True
    assert {name: v["requiresIamPermissions"] for name, v in training.items()} == {
        "v1.2.1-eksbuild.1": False, "v1.2.0-eksbuild.1": True, "v1.1.0-eksbuild.1": True}
    defaults = {addon: next(v["addonVersion"] for v in versions(emu, addon)
                            if v["compatibilities"][0]["defaultVersion"])
                for addon in (CERT_MANAGER, TASK_GOVERNANCE)}
    assert defaults == {CERT_MANAGER: "v1.18.2-eksbuild.2",
                        TASK_GOVERNANCE: "v1.3.0-eksbuild.1"}
    assert "v1.1.0-eksbuild.1" in {v["addonVersion"] for v in versions(emu, TASK_GOVERNANCE)}
    assert versions(emu, INFERENCE)[0]["requiresConfiguration"] is True
    assert call(emu, "CreateAddon", clusterName="ml",
                addonName=TRAINING)["addon"]["addonVersion"] == "v1.2.1-eksbuild.1"


def schema(emu: EksEmulator, addon: str, version: str) -> dict[str, Any]:
    out = call(emu, "DescribeAddonConfiguration", addonName=addon, addonVersion=version)
    assert (out["addonName"], out["addonVersion"]) == (addon, version)
    document: dict[str, Any] = json.loads(out["configurationSchema"])
    return document


def test_describe_addon_configuration_answers_each_versions_schema(emu):
    empty = schema(emu, "coredns", versions(emu, "coredns")[0]["addonVersion"])
    assert (empty["type"], empty["properties"], empty["additionalProperties"]) == (
        "object", {}, False)
    inference = schema(emu, INFERENCE, "v1.0.0-eksbuild.1")
    assert set(inference["properties"]) == {
        "executionRoleArn", "tlsCertificateS3Bucket", "hyperpodClusterArn",
        "jumpstartGatedModelDownloadRoleArn", "alb", "keda"}
    assert set(inference["required"]) == {"executionRoleArn", "tlsCertificateS3Bucket",
                                          "hyperpodClusterArn"}
    alb = inference["properties"]["alb"]["properties"]
    assert set(alb) == {"enabled", "serviceAccount"}
    assert set(alb["serviceAccount"]["properties"]) == {"create", "roleArn"}
    irsa = inference["properties"]["keda"]["properties"]["auth"]["properties"]["aws"][
        "properties"]["irsa"]["properties"]
    assert set(irsa) == {"enabled", "roleArn"}
    observability = schema(emu, OBSERVABILITY, "v1.0.0-eksbuild.1")["properties"]
    assert set(observability) == {"ampWorkspace", "amgWorkspace", "metricsProvider", "logging"}
    assert set(observability["ampWorkspace"]["properties"]) == {"prometheusEndpoint", "arn"}
    assert set(observability["amgWorkspace"]["properties"]) == {"workspaceName", "arn"}
    providers = observability["metricsProvider"]["properties"]
    assert set(providers) == {
        "trainingMetrics", "inferenceMetrics", "taskGovernanceMetrics", "scalingMetrics",
        "customMetrics", "nodeMetrics", "acceleratedComputeMetrics", "networkMetrics"}
    assert all(set(p["properties"]) == {"level", "scrapeInterval"} for p in providers.values())
    assert set(observability["logging"]["properties"]) == {"enabled"}


def test_pod_identity_configuration_where_the_version_takes_it(emu):
    older = call(emu, "DescribeAddonConfiguration", addonName=TRAINING,
                 addonVersion="v1.2.0-eksbuild.1")
    assert older["podIdentityConfiguration"] == [{
        "serviceAccount": "hp-training-operator-controller-manager",
        "recommendedManagedPolicies": [
            "arn:aws:iam::aws:policy/AmazonSageMakerHyperPodTrainingOperatorAccess"]}]
    newest = call(emu, "DescribeAddonConfiguration", addonName=TRAINING,
                  addonVersion="v1.2.1-eksbuild.1")
    assert "podIdentityConfiguration" not in newest
    fsx = call(emu, "DescribeAddonConfiguration", addonName=FSX_CSI,
               addonVersion="v1.6.0-eksbuild.1")
    assert fsx["podIdentityConfiguration"][0]["serviceAccount"] == "fsx-csi-controller-sa"
    assert error_of(emu, "DescribeAddonConfiguration", addonName="nope",
                    addonVersion="v1").code == "ResourceNotFoundException"
    assert error_of(emu, "DescribeAddonConfiguration", addonName=TRAINING,
                    addonVersion="v9.9.9-eksbuild.1").code == "InvalidParameterException"


# --------------------------------------------------------------------------- configuration

PREFIX = ("ConfigurationValue provided in request is not supported: Json schema validation "
          "failed with error: ")


def refused_configuration(emu: EksEmulator, addon: str, values: str) -> str:
    error = error_of(emu, "CreateAddon", clusterName="ml", addonName=addon,
                     configurationValues=values)
    assert error.code == "InvalidParameterException"
    assert error.message.startswith(PREFIX)
    assert call(emu, "ListAddons", clusterName="ml")["addons"] == []
    return error.message[len(PREFIX):]


def test_configuration_values_are_checked_against_the_schema(emu):
    config = json.loads(INFERENCE_CONFIG)
    assert refused_configuration(emu, INFERENCE, json.dumps({**config, "bogus": 1})) == (
        "[$.bogus: is not defined in the schema and the schema does not allow additional "
        "properties]")
    assert refused_configuration(emu, INFERENCE, json.dumps(
        {**config, "alb": {"enabled": "yes"}})) == "[$.alb.enabled: string found, boolean expected]"
    assert refused_configuration(emu, INFERENCE, json.dumps(
        {**config, "keda": {"auth": {"aws": {"irsa": {"role": "x"}}}}})) == (
        "[$.keda.auth.aws.irsa.role: is not defined in the schema and the schema does not "
        "allow additional properties]")
    assert refused_configuration(emu, "coredns", '{"replicaCount": 3}').startswith(
        "[$.replicaCount: is not defined")
    assert refused_configuration(emu, OBSERVABILITY, json.dumps(
        {"metricsProvider": {"scalingMetrics": {"level": "BASIC"}}})) == (
        "[$.metricsProvider.scalingMetrics.level: does not have a value in the enumeration "
        "[DISABLED, ADVANCED]]")
    assert refused_configuration(emu, OBSERVABILITY, "[1, 2]") == (
        "[$: array found, object expected]")
    assert refused_configuration(emu, OBSERVABILITY, "{not: [valid").startswith("[$:")


def test_the_inference_addon_requires_its_three_keys(emu):
    missing = ("[$.executionRoleArn: is missing but it is required, "
               "$.tlsCertificateS3Bucket: is missing but it is required, "
               "$.hyperpodClusterArn: is missing but it is required]")
    error = error_of(emu, "CreateAddon", clusterName="ml", addonName=INFERENCE)
    assert error.message == PREFIX + missing
    config = json.loads(INFERENCE_CONFIG)
    del config["hyperpodClusterArn"]
    assert refused_configuration(emu, INFERENCE, json.dumps(config)) == (
        "[$.hyperpodClusterArn: is missing but it is required]")


def test_valid_configurations_are_accepted_in_json_or_yaml(emu, clock):
    observability = {
        "ampWorkspace": {"prometheusEndpoint": "https://aps/workspaces/ws-1", "arn": "arn:x"},
        "metricsProvider": {"trainingMetrics": {"level": "ADVANCED", "scrapeInterval": 30},
                            "networkMetrics": {"level": "DISABLED"}},
        "logging": {"enabled": True},
    }
    addon = call(emu, "CreateAddon", clusterName="ml", addonName=OBSERVABILITY,
                 configurationValues=json.dumps(observability))["addon"]
    assert json.loads(addon["configurationValues"]) == observability
    call(emu, "CreateAddon", clusterName="ml", addonName="coredns", configurationValues="{}")
    clock.advance(D.addon_create)
    # UpdateAddon checks what it sends against the schema too
    error = error_of(emu, "UpdateAddon", clusterName="ml", addonName=OBSERVABILITY,
                     configurationValues="logging:\n  enabled: maybe\n")
    assert error.message == PREFIX + "[$.logging.enabled: string found, boolean expected]"
    call(emu, "UpdateAddon", clusterName="ml", addonName=OBSERVABILITY,
         configurationValues="logging:\n  enabled: false\n")
    clock.advance(D.addon_update)
    assert call(emu, "DescribeAddon", clusterName="ml", addonName=OBSERVABILITY)["addon"][
        "configurationValues"] == "logging:\n  enabled: false\n"


# --------------------------------------------------------------------------- inference's CSI check


def install(emu: EksEmulator, clock: FakeClock, *addons: str) -> None:
    for addon in addons:
        call(emu, "CreateAddon", clusterName="ml", addonName=addon)
    clock.advance(D.addon_create)


def test_the_inference_addon_fails_without_the_csi_drivers(emu, clock, events):
    install(emu, clock, "metrics-server", CERT_MANAGER)
    call(emu, "CreateAddon", clusterName="ml", addonName=INFERENCE,
         configurationValues=INFERENCE_CONFIG)
    clock.advance(D.addon_create)
    addon = call(emu, "DescribeAddon", clusterName="ml", addonName=INFERENCE)["addon"]
    assert addon["status"] == "CREATE_FAILED"
    assert [(i["code"], i["message"]) for i in addon["health"]["issues"]] == [
        ("K8sResourceNotFound", "S3 CSI driver not installed (missing CSIDriver s3.csi.aws.com)"),
        ("K8sResourceNotFound",
         "FSx CSI driver not installed (missing CSIDriver fsx.csi.aws.com)"),
    ]
    assert events.types(INFERENCE) == [ADDON_CREATION_FAILED]
    # installing the drivers later does not revive a failed creation
    install(emu, clock, S3_CSI, FSX_CSI)
    assert addon_status(emu, INFERENCE) == "CREATE_FAILED"


def test_one_missing_csi_driver_is_enough_to_fail(emu, clock):
    install(emu, clock, "metrics-server", CERT_MANAGER, S3_CSI)
    call(emu, "CreateAddon", clusterName="ml", addonName=INFERENCE,
         configurationValues=INFERENCE_CONFIG)
    clock.advance(D.addon_create)
    addon = call(emu, "DescribeAddon", clusterName="ml", addonName=INFERENCE)["addon"]
    assert addon["status"] == "CREATE_FAILED"
    assert [i["message"] for i in addon["health"]["issues"]] == [
        "FSx CSI driver not installed (missing CSIDriver fsx.csi.aws.com)"]


def test_other_missing_prerequisites_only_degrade_the_inference_addon(emu, clock, events):
    install(emu, clock, S3_CSI, FSX_CSI)
    call(emu, "CreateAddon", clusterName="ml", addonName=INFERENCE,
         configurationValues=INFERENCE_CONFIG)
    clock.advance(D.addon_create)
    addon = call(emu, "DescribeAddon", clusterName="ml", addonName=INFERENCE)["addon"]
    assert addon["status"] == "DEGRADED"
    assert {i["resourceIds"][0] for i in addon["health"]["issues"]} == {"metrics-server",
                                                                         CERT_MANAGER}
    assert events.types(INFERENCE) == [ADDON_HEALTH_DEGRADED]


def test_a_preserved_csi_driver_still_counts_as_installed(emu, clock):
    install(emu, clock, "metrics-server", CERT_MANAGER, S3_CSI, FSX_CSI)
    call(emu, "DeleteAddon", clusterName="ml", addonName=S3_CSI, preserve=True)
    call(emu, "DeleteAddon", clusterName="ml", addonName=FSX_CSI)
    clock.advance(D.addon_delete)
    assert emu.preserved_addons("ml") == {S3_CSI}
    call(emu, "CreateAddon", clusterName="ml", addonName=INFERENCE,
         configurationValues=INFERENCE_CONFIG)
    clock.advance(D.addon_create)
    addon = call(emu, "DescribeAddon", clusterName="ml", addonName=INFERENCE)["addon"]
    assert [i["resourceIds"] for i in addon["health"]["issues"]] == [[FSX_CSI]]
    install(emu, clock, S3_CSI)  # managed again
    assert emu.preserved_addons("ml") == set()
