"""Managed features end to end: each feature on and off through the REST API on the local cloud,
with the prerequisites counted and what AWS and Kubernetes hold compared after each step."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hypd.features import load_balancer_controller
from hypd.features.tls_bucket import tls_bucket_name
from hypd_cli.api_client import ApiClient
from hypd_local.calls import watch_calls
from tests.e2e.capacity import CLUSTER, TAG, created_cluster, run, stages
from tests.support import PRIVATE_BUCKET, bucket_privacy

TLS_BUCKET = "hyperpod-tls-train"
TRAINING = "amazon-sagemaker-hyperpod-training-operator"
INFERENCE = "amazon-sagemaker-hyperpod-inference"


def patch(api: ApiClient, **body: Any) -> dict[str, Any]:
    return api.call("setFeatures", tag=TAG, body=body)


def apply(api: ApiClient, cloud: Any, **body: Any) -> dict[str, Any]:
    """PATCH, follow the operation, and expect it to succeed."""
    accepted = patch(api, **body)
    assert "operationId" in accepted, accepted
    operation = run(api, cloud, accepted)
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    return operation


def features(api: ApiClient) -> dict[str, Any]:
    return dict(api.call("getFeatures", tag=TAG)["features"])


def world(cloud: Any) -> dict[str, Any]:
    """What the features touch, as AWS and the Kubernetes API hold it (ids and times left out)."""
    eks, iam = cloud.client("eks"), cloud.client("iam")
    addons = {}
    for name in eks.list_addons(clusterName=CLUSTER)["addons"]:
        addon = eks.describe_addon(clusterName=CLUSTER, addonName=name)["addon"]
        addons[name] = {"status": addon["status"], "version": addon["addonVersion"],
                        "tags": addon.get("tags"),
                        "configuration": json.loads(addon.get("configurationValues") or "{}")}
    associations = sorted(
        (a["namespace"], a["serviceAccount"])
        for a in eks.list_pod_identity_associations(clusterName=CLUSTER)["associations"]
    )
    roles = sorted(
        (r["Path"], r["RoleName"]) for r in iam.list_roles()["Roles"]
        if "-train-" in r["RoleName"] and not r["RoleName"].endswith("autoscaling")
    )
    policies = {
        name: sorted(p["PolicyArn"] for p in
                     iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"])
        for _path, name in roles
    }
    providers = [p["Arn"] for p in iam.list_open_id_connect_providers()[
        "OpenIDConnectProviderList"]]
    store = cloud.emulation.kube.get(CLUSTER).store
    crd_type = store.find_type("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    crds = sorted(o["metadata"]["name"] for o in store.list(crd_type, None)[0])
    sagemaker = cloud.client("sagemaker")
    described = sagemaker.describe_cluster(ClusterName=CLUSTER)
    schedulers = [
        (c["Name"], c["Status"]) for c in
        sagemaker.list_cluster_scheduler_configs()["ClusterSchedulerConfigSummaries"]
    ]
    workspaces = [w["alias"] for w in cloud.client("amp").list_workspaces()["workspaces"]
                  if w["status"]["statusCode"] != "DELETING"]
    buckets = sorted(b["Name"] for b in cloud.client("s3").list_buckets()["Buckets"]
                     if b["Name"].startswith("hyperpod-tls"))
    return {"addons": addons, "associations": associations, "roles": roles,
            "policies": policies, "oidc": providers, "crds": crds,
            "tiered": described.get("TieredStorageConfig"), "schedulers": schedulers,
            "workspaces": workspaces, "tlsBuckets": buckets}


def without_ids(state: dict[str, Any]) -> dict[str, Any]:
    """`world` with what a new resource's id changes (the workspace hypd makes each time)."""
    text = json.dumps(state, sort_keys=True)
    normal = dict(json.loads(re.sub(r"ws-[A-Za-z0-9-]+", "ws-ID", text)))
    # A cluster that never had tiered storage reports none; once turned off, Mode Disable.
    normal["tiered"] = normal["tiered"] or {"Mode": "Disable"}
    return normal


ON = {
    "trainingOperator": {"enabled": True},
    "inferenceOperator": {"enabled": True},  # with the TLS bucket hypd makes
    "tieredCheckpointing": {"enabled": True, "memoryPercent": 20},
    "observability": {"enabled": True, "metrics": {"training": "ADVANCED"}},
    "taskGovernance": {"enabled": True, "fairShare": True},
}


@pytest.mark.parametrize("feature", sorted(ON))
def test_each_feature_on_and_off_twice_with_no_drift(
    api: ApiClient, cloud: Any, feature: str
) -> None:
    created_cluster(api, cloud)
    before = without_ids(world(cloud))
    on_states = []
    for _ in range(2):
        apply(api, cloud, **{feature: ON[feature]})
        view = features(api)[feature]
        assert view["enabled"] is True, view
        assert view["status"] == "ACTIVE", view
        on_states.append(without_ids(world(cloud)))
        if feature == "trainingOperator":
            on = world(cloud)
            assert on["addons"][TRAINING]["status"] == "ACTIVE"
            assert on["addons"]["cert-manager"]["tags"]["hypd:installed-by"] == "features"
            assert ("aws-hyperpod", "hp-training-operator-controller-manager") in on[
                "associations"]
            assert "hyperpodpytorchjobs.sagemaker.amazonaws.com" in on["crds"]
            assert on["policies"]["hypd-train-training-operator"] == [
                "arn:aws:iam::aws:policy/AmazonSageMakerHyperPodTrainingOperatorAccess"]
        assert patch(api, **{feature: ON[feature]})["changed"] is False
        apply(api, cloud, **{feature: {"enabled": False}})
        assert without_ids(world(cloud)) == before
    assert on_states[0] == on_states[1]
    assert on_states[0] != before


def test_a_prerequisite_installed_outside_hypd_is_used_never_removed(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud)
    eks = cloud.client("eks")
    eks.create_addon(clusterName=CLUSTER, addonName="cert-manager")
    cloud.clock.advance(120)
    apply(api, cloud, trainingOperator={"enabled": True})
    view = api.call("getFeatures", tag=TAG)
    assert view["prerequisites"]["cert-manager"]["installedBy"] == "other"
    apply(api, cloud, trainingOperator={"enabled": False})
    assert eks.describe_addon(clusterName=CLUSTER, addonName="cert-manager")["addon"][
        "status"] == "ACTIVE"


def test_every_feature_starts_off(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud)
    view = api.call("getFeatures", tag=TAG)
    assert {name: f["enabled"] for name, f in view["features"].items()} == {
        "trainingOperator": False, "inferenceOperator": False, "tieredCheckpointing": False,
        "observability": False, "taskGovernance": False,
    }
    assert view["prerequisites"]["eks-pod-identity-agent"]["installedBy"] == "other"
    assert view["kubernetesReadable"] is True


def test_a_shared_prerequisite_stays_while_another_feature_needs_it(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud)
    apply(api, cloud, trainingOperator={"enabled": True},
          inferenceOperator={"enabled": True, "tlsCertificateBucket": TLS_BUCKET})
    both = world(cloud)
    assert {"cert-manager", "metrics-server", "aws-fsx-csi-driver", INFERENCE} <= set(
        both["addons"])
    assert len(both["oidc"]) == 1
    config = both["addons"][INFERENCE]["configuration"]
    assert config["tlsCertificateS3Bucket"] == TLS_BUCKET
    assert config["executionRoleArn"].endswith(":role/SageMakerHyperPodInference-hypd-train-"
                                               "inference")
    # Off with the training operator: cert-manager stays, the inference operator needs it.
    apply(api, cloud, trainingOperator={"enabled": False})
    after = world(cloud)
    assert "cert-manager" in after["addons"]
    assert TRAINING not in after["addons"]
    view = api.call("getFeatures", tag=TAG)
    assert view["prerequisites"]["cert-manager"]["requiredBy"] == ["inferenceOperator"]
    assert view["features"]["inferenceOperator"]["status"] == "ACTIVE"
    # Off with the inference operator: hypd removes what it installed, the storage driver stays.
    apply(api, cloud, inferenceOperator={"enabled": False})
    last = world(cloud)
    assert not {"cert-manager", "metrics-server", INFERENCE} & set(last["addons"])
    assert "aws-mountpoint-s3-csi-driver" in last["addons"]  # the cluster's storage driver
    assert last["oidc"] == []
    assert last["roles"] == []


def test_the_inference_operators_load_balancer_controller_gets_its_published_policy(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud)
    apply(api, cloud, inferenceOperator=ON["inferenceOperator"])
    iam, name = cloud.client("iam"), f"hypd-{TAG}-inference-alb"
    role = iam.get_role(RoleName=name)["Role"]
    assert role["Path"] == "/hypd/"
    assert role["PermissionsBoundary"] == {
        "PermissionsBoundaryType": "PermissionsBoundaryPolicy",
        "PermissionsBoundaryArn": cloud.resources["FeatureRoleBoundary"]}
    # The controller's documented policy, as its project publishes it, inline and alone.
    assert iam.list_role_policies(RoleName=name)["PolicyNames"] == [
        load_balancer_controller.POLICY_NAME]
    assert iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"] == []
    written = iam.get_role_policy(RoleName=name, PolicyName=load_balancer_controller.POLICY_NAME)
    assert written["PolicyDocument"] == load_balancer_controller.policy("aws")
    # It is the role the add-on gives the controller's service account.
    config = world(cloud)["addons"][INFERENCE]["configuration"]
    assert config["alb"]["serviceAccount"]["roleArn"] == role["Arn"]
    # Off again: the role goes with its policy.
    apply(api, cloud, inferenceOperator={"enabled": False})
    assert name not in {r["RoleName"] for r in iam.list_roles()["Roles"]}


def test_tiered_checkpointing_is_read_back_from_describe_cluster(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud)
    apply(api, cloud, tieredCheckpointing={"enabled": True, "memoryPercent": 20})
    assert world(cloud)["tiered"] == {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
    assert features(api)["tieredCheckpointing"] == {
        "enabled": True, "status": "ACTIVE", "memoryPercent": 20, "requires": [],
        "requiredBy": []}
    apply(api, cloud, tieredCheckpointing={"memoryPercent": 30})
    assert features(api)["tieredCheckpointing"]["memoryPercent"] == 30
    apply(api, cloud, tieredCheckpointing={"enabled": False})
    assert features(api)["tieredCheckpointing"]["enabled"] is False


def test_task_governance_with_its_scheduler_config(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud)
    apply(api, cloud, taskGovernance={
        "enabled": True, "fairShare": True,
        "priorityClasses": [{"name": "inference", "weight": 90},
                            {"name": "training", "weight": 50}],
    })
    view = features(api)["taskGovernance"]
    assert view["status"] == "ACTIVE", view
    assert view["priorityClasses"] == [{"name": "inference", "weight": 90},
                                       {"name": "training", "weight": 50}]
    assert view["fairShare"] is True
    apply(api, cloud, taskGovernance={"enabled": False})
    assert features(api)["taskGovernance"]["enabled"] is False
    sagemaker = cloud.client("sagemaker")
    assert sagemaker.list_cluster_scheduler_configs()["ClusterSchedulerConfigSummaries"] == []


def test_observability_gets_a_workspace_hypd_removes_again(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud)
    apply(api, cloud, observability={"enabled": True, "metrics": {"training": "ADVANCED"},
                                     "logging": True})
    view = features(api)["observability"]
    assert view["status"] == "ACTIVE", view
    assert view["metrics"] == {"training": "ADVANCED"}
    assert view["logging"] is True
    workspaces = cloud.client("amp").list_workspaces()["workspaces"]
    assert [w["alias"] for w in workspaces] == [f"hypd-{TAG}"]
    assert view["ampWorkspaceArn"] == workspaces[0]["arn"]
    apply(api, cloud, observability={"enabled": False})
    assert [w for w in cloud.client("amp").list_workspaces()["workspaces"]
            if w["status"]["statusCode"] != "DELETING"] == []


def hypd_tls_bucket(cloud: Any) -> str:
    return tls_bucket_name(TAG, cloud.account_id, cloud.region)


def bucket_tags(cloud: Any, bucket: str) -> dict[str, str]:
    tagging = cloud.client("s3").get_bucket_tagging(Bucket=bucket)
    return {t["Key"]: t["Value"] for t in tagging["TagSet"]}


def new_cluster(api: ApiClient, cloud: Any) -> dict[str, Any]:
    """Cluster `train` created, and `world` as it is then."""
    created_cluster(api, cloud)
    return world(cloud)


def test_the_inference_operator_without_a_bucket_gets_a_private_one_hypd_removes_again(
    api: ApiClient, cloud: Any
) -> None:
    before = new_cluster(api, cloud)
    # What `hypd features set train --enable inference-operator` sends.
    apply(api, cloud, inferenceOperator={"enabled": True})
    bucket, s3 = hypd_tls_bucket(cloud), cloud.client("s3")
    view = features(api)["inferenceOperator"]
    assert view["status"] == "ACTIVE", view
    assert view["tlsCertificateBucket"] == bucket
    assert "tls-bucket" in view["requires"]
    on = world(cloud)
    assert on["tlsBuckets"] == [bucket]
    assert on["addons"][INFERENCE]["configuration"]["tlsCertificateS3Bucket"] == bucket
    assert s3.get_bucket_location(Bucket=bucket)["LocationConstraint"] == cloud.region
    assert bucket_privacy(s3, bucket) == PRIVATE_BUCKET
    assert bucket_tags(cloud, bucket) == {"hypd:tag": TAG, "hypd:installed-by": "features"}
    # The execution role may tag the certificates the operator writes there.
    inline = cloud.client("iam").get_role_policy(
        RoleName=f"SageMakerHyperPodInference-hypd-{TAG}-inference",
        PolicyName="hyperpod-inference-v3")["PolicyDocument"]
    assert {"Effect": "Allow", "Action": "s3:PutObjectTagging",
            "Resource": f"arn:aws:s3:::{bucket}/*"} in inline["Statement"]
    # Asked again, as the hints print it: the features already are so.
    assert patch(api, inferenceOperator={"enabled": True})["changed"] is False
    # Off: the bucket goes, the certificates the operator wrote in it first.
    s3.put_object(Bucket=bucket, Key="certs/falcon/tls.crt", Body=b"-----BEGIN CERTIFICATE")
    apply(api, cloud, inferenceOperator={"enabled": False})
    assert world(cloud) == before
    assert world(cloud)["tlsBuckets"] == []


def test_the_tls_bucket_is_finished_by_the_retry_of_a_step_that_failed_half_way(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud)
    cloud.faults.fail("s3", "PutBucketTagging", code="InvalidTag",
                      message="PutBucketTagging refused (injected)")
    failed = run(api, cloud, patch(api, inferenceOperator={"enabled": True}))
    assert failed["status"] == "FAILED"
    assert failed["error"]["message"].startswith("inferenceOperator: tls-bucket:"), failed[
        "error"]
    assert stages(failed)["prerequisites"]["status"] == "FAILED"
    bucket = hypd_tls_bucket(cloud)
    assert cloud.client("s3").head_bucket(Bucket=bucket)  # made, not tagged yet
    calls: list[str] = []
    with watch_calls(lambda call: calls.append(call.action)):
        api.call("retryOperation", operationId=failed["id"])
        retried = run(api, cloud, {"operationId": failed["id"]})
    assert retried["status"] == "SUCCEEDED", retried.get("error")
    # CreateBucket again, answered BucketAlreadyOwnedByYou: the same bucket, finished.
    assert calls.count("s3:CreateBucket") == 1
    assert world(cloud)["tlsBuckets"] == [bucket]
    assert bucket_tags(cloud, bucket)["hypd:installed-by"] == "features"
    assert features(api)["inferenceOperator"]["tlsCertificateBucket"] == bucket


def test_a_bucket_the_user_names_is_used_as_it_is_and_never_removed(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud)
    s3 = cloud.client("s3")
    s3.create_bucket(Bucket=TLS_BUCKET,
                     CreateBucketConfiguration={"LocationConstraint": cloud.region})
    s3.put_bucket_tagging(Bucket=TLS_BUCKET, Tagging={"TagSet": [{"Key": "team",
                                                                  "Value": "ml"}]})
    s3.put_object(Bucket=TLS_BUCKET, Key="certs/old/tls.crt", Body=b"certificate")
    apply(api, cloud, inferenceOperator={"enabled": True, "tlsCertificateBucket": TLS_BUCKET})
    assert world(cloud)["tlsBuckets"] == [TLS_BUCKET]  # hypd made none of its own
    assert features(api)["inferenceOperator"]["tlsCertificateBucket"] == TLS_BUCKET
    # Enabled again without a bucket (as the hints print it): it keeps the user's.
    assert patch(api, inferenceOperator={"enabled": True})["changed"] is False
    apply(api, cloud, inferenceOperator={"enabled": False})
    # Off again, and on with the bucket hypd makes, then off: the user's is untouched.
    apply(api, cloud, inferenceOperator={"enabled": True})
    assert world(cloud)["tlsBuckets"] == sorted([TLS_BUCKET, hypd_tls_bucket(cloud)])
    apply(api, cloud, inferenceOperator={"enabled": False})
    assert world(cloud)["tlsBuckets"] == [TLS_BUCKET]
    assert bucket_tags(cloud, TLS_BUCKET) == {"team": "ml"}
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=TLS_BUCKET)["Contents"]] == [
        "certs/old/tls.crt"]


def test_get_reports_what_is_really_there(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud)
    apply(api, cloud, trainingOperator={"enabled": True})
    # Someone removes the add-on outside hypd.
    cloud.client("eks").delete_addon(clusterName=CLUSTER, addonName=TRAINING)
    cloud.clock.advance(600)
    view = features(api)["trainingOperator"]
    assert view["enabled"] is False
    assert view["status"] == "DISABLED"
    # Asking for it again repairs it.
    apply(api, cloud, trainingOperator={"enabled": True})
    assert features(api)["trainingOperator"]["status"] == "ACTIVE"


def test_a_request_naming_nothing_to_change_starts_nothing(api: ApiClient, cloud: Any) -> None:
    created_cluster(api, cloud)
    answer = patch(api, inferenceOperator={"enabled": False}, taskGovernance={})
    assert answer["changed"] is False
    assert api.call("listOperations")["operations"][0]["kind"] == "create-cluster"


def test_bad_requests_name_the_field(api: ApiClient, cloud: Any) -> None:
    from hypd_cli.api_client import ApiError

    created_cluster(api, cloud)
    for body, field in (
        ({"tieredCheckpointing": {"memoryPercent": 30}}, "tieredCheckpointing.memoryPercent"),
        ({"inferenceOperator": {"enabled": True, "tlsCertificateBucket": "team-data"}},
         "inferenceOperator.tlsCertificateBucket"),
        ({"observability": {"enabled": True, "metrics": {"scaling": "BASIC"}}},
         "observability.metrics"),
    ):
        with pytest.raises(ApiError) as raised:
            patch(api, **body)
        assert raised.value.status == 400, body
        assert field in json.dumps([raised.value.message, raised.value.details]), (
            field, raised.value.message, raised.value.details)


@pytest.mark.parametrize(("addon", "step"), [
    ("cert-manager", "prerequisites"),
    (TRAINING, "verify"),
])
def test_a_fault_fails_the_operation_naming_the_feature_and_a_retry_completes_it(
    api: ApiClient, cloud: Any, addon: str, step: str
) -> None:
    created_cluster(api, cloud)
    cloud.emulation.eks.degrade_addon(CLUSTER, addon, "ConfigurationConflict",
                                      f"{addon}: conflicting webhook configuration")
    operation = run(api, cloud, patch(api, trainingOperator={"enabled": True}))
    assert operation["status"] == "FAILED"
    error = operation["error"]
    assert "trainingOperator" in error["message"]
    assert "conflicting webhook" in error["message"]
    assert stages(operation)[step]["status"] == "FAILED"
    cloud.emulation.eks.restore_addon(CLUSTER, addon)
    api.call("retryOperation", operationId=operation["id"])
    retried = run(api, cloud, {"operationId": operation["id"]})
    assert retried["status"] == "SUCCEEDED", retried.get("error")
    assert features(api)["trainingOperator"]["status"] == "ACTIVE"


# ---------------------------------------------------------------------------- teams
TEAM_BODY = {"resources": [{"instanceType": "ml.g6.4xlarge", "count": 1}],
             "fairShareWeight": 50, "sharing": {"strategy": "LendAndBorrow", "borrowLimit": 50}}


def test_teams_need_task_governance_and_are_operations(api: ApiClient, cloud: Any) -> None:
    from hypd_cli.api_client import ApiError

    created_cluster(api, cloud)
    with pytest.raises(ApiError) as refused:
        api.call("setTeam", tag=TAG, team="ml", body=TEAM_BODY)
    assert refused.value.status == 409
    assert "taskGovernance" in refused.value.message
    apply(api, cloud, taskGovernance={"enabled": True})

    operation = run(api, cloud, api.call("setTeam", tag=TAG, team="ml", body=TEAM_BODY))
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    team = api.call("getTeam", tag=TAG, team="ml")
    assert team["status"] == "Created"
    assert team["resources"] == [{"instanceType": "ml.g6.4xlarge", "count": 1}]
    assert team["queue"] == "hyperpod-ns-ml-localqueue"
    store = cloud.emulation.kube.get(CLUSTER).store
    namespaces = store.find_type("", "v1", "namespaces")
    assert "hyperpod-ns-ml" in {o["metadata"]["name"] for o in store.list(namespaces, None)[0]}
    assert api.call("setTeam", tag=TAG, team="ml", body=TEAM_BODY)["changed"] is False
    assert features(api)["taskGovernance"]["requiredBy"] == ["team:ml"]

    # Task governance cannot go while the team has a quota.
    with pytest.raises(ApiError) as refused:
        patch(api, taskGovernance={"enabled": False})
    assert refused.value.status == 409

    changed = {**TEAM_BODY, "resources": [{"instanceType": "ml.g6.4xlarge", "count": 2}]}
    operation = run(api, cloud, api.call("setTeam", tag=TAG, team="ml", body=changed))
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert api.call("getTeam", tag=TAG, team="ml")["resources"][0]["count"] == 2

    with pytest.raises(ApiError) as bad:
        api.call("setTeam", tag=TAG, team="ml",
                 body={"resources": [{"instanceType": "ml.p5.48xlarge", "count": 1}]})
    assert bad.value.status == 400
    assert "resources[0].instanceType" in bad.value.message

    operation = run(api, cloud, api.call("deleteTeam", tag=TAG, team="ml"))
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert api.call("listTeams", tag=TAG)["teams"] == []
    apply(api, cloud, taskGovernance={"enabled": False})


# ---------------------------------------------------------------------------- create with
def test_create_with_features_is_one_request(api: ApiClient, cloud: Any) -> None:
    from hypd_cli.demo import follow
    from tests.support import create_body

    cloud.client("s3").create_bucket(
        Bucket="team-data", CreateBucketConfiguration={"LocationConstraint": cloud.region})
    body = create_body(tag=TAG, features={
        "trainingOperator": {"enabled": True},
        "tieredCheckpointing": {"enabled": True, "memoryPercent": 25},
        "taskGovernance": {"enabled": True, "fairShare": True},
    })
    accepted = api.post("/clusters", body)
    operation = follow(api, cloud, str(accepted["operationId"]), timeout=300)
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert [s["name"] for s in operation["stages"]][-1] == "features"
    view = features(api)
    for name in ("trainingOperator", "tieredCheckpointing", "taskGovernance"):
        assert view[name]["status"] == "ACTIVE", (name, view[name])
    assert view["tieredCheckpointing"]["memoryPercent"] == 25
    assert view["inferenceOperator"]["enabled"] is False
    # Asked again, the same features match reality.
    assert patch(api, **body["features"])["changed"] is False


def test_a_create_without_features_passes_its_features_stage_at_once(
    api: ApiClient, cloud: Any
) -> None:
    operation = created_cluster(api, cloud)
    features_stage = stages(operation)["features"]
    assert features_stage["status"] == "SUCCEEDED"
    assert features_stage["attempts"] == 1


def test_create_refuses_feature_settings_it_cannot_carry_out(api: ApiClient, cloud: Any) -> None:
    from hypd_cli.api_client import ApiError
    from tests.support import create_body

    with pytest.raises(ApiError) as raised:
        api.post("/clusters", create_body(features={"tieredCheckpointing": {"memoryPercent": 5}}))
    assert raised.value.status == 400
    assert raised.value.details["field"] == "tieredCheckpointing.memoryPercent"
    assert api.call("listClusters")["clusters"] == []


# ---------------------------------------------------------------------------- a fault per step
GOVERNANCE = {"taskGovernance": {"enabled": True, "fairShare": True}}
STEP_FAULTS = [
    # (service, operation, AWS error code, request, failed stage, step the error names)
    ("iam", "CreateRole", "MalformedPolicyDocument", {"trainingOperator": {"enabled": True}},
     "prerequisites", "role training-operator"),
    ("eks", "CreatePodIdentityAssociation", "InvalidParameterException",
     {"trainingOperator": {"enabled": True}}, "prerequisites", "pod identity association"),
    ("iam", "CreateOpenIDConnectProvider", "InvalidInput",
     {"inferenceOperator": {"enabled": True, "tlsCertificateBucket": TLS_BUCKET}},
     "prerequisites", "oidc-provider"),
    ("amp", "CreateWorkspace", "ValidationException", {"observability": {"enabled": True}},
     "prerequisites", "amp-workspace"),
    ("sagemaker", "UpdateCluster", "ValidationException",
     {"tieredCheckpointing": {"enabled": True}}, "addons", "tiered storage"),
    ("sagemaker", "CreateClusterSchedulerConfig", "ValidationException", GOVERNANCE,
     "addons", "scheduler config"),
]


@pytest.mark.parametrize(("service", "operation", "code", "body", "stage", "step"), STEP_FAULTS,
                         ids=[f"{f[0]}-{f[1]}" for f in STEP_FAULTS])
def test_a_refusal_in_each_step_names_the_step_and_a_retry_resumes_there(
    api: ApiClient, cloud: Any, service: str, operation: str, code: str,
    body: dict[str, Any], stage: str, step: str,
) -> None:
    created_cluster(api, cloud)
    cloud.faults.fail(service, operation, code=code, message=f"{operation} refused (injected)")
    failed = run(api, cloud, patch(api, **body))
    assert failed["status"] == "FAILED"
    message = failed["error"]["message"]
    feature = next(iter(body))
    assert message.startswith(f"{feature}: {step}:"), message
    assert f"{operation} refused (injected)" in message
    assert stages(failed)[stage]["status"] == "FAILED"
    api.call("retryOperation", operationId=failed["id"])
    retried = run(api, cloud, {"operationId": failed["id"]})
    assert retried["status"] == "SUCCEEDED", retried.get("error")
    earlier = [s["name"] for s in retried["stages"]][: [s["name"] for s in
                                                        retried["stages"]].index(stage)]
    assert all(stages(retried)[s]["attempts"] == 1 for s in earlier)  # resumed, not rerun
    assert features(api)[feature]["status"] == "ACTIVE"


def test_a_refusal_in_cleanup_fails_there_and_a_retry_removes_the_rest(
    api: ApiClient, cloud: Any
) -> None:
    before = new_cluster(api, cloud)
    apply(api, cloud, trainingOperator={"enabled": True})
    cloud.faults.fail("eks", "DeletePodIdentityAssociation", code="InvalidRequestException",
                      message="DeletePodIdentityAssociation refused (injected)")
    failed = run(api, cloud, patch(api, trainingOperator={"enabled": False}))
    assert failed["status"] == "FAILED"
    assert failed["error"]["message"].startswith("trainingOperator: pod identity association:")
    assert stages(failed)["cleanup"]["status"] == "FAILED"
    api.call("retryOperation", operationId=failed["id"])
    assert run(api, cloud, {"operationId": failed["id"]})["status"] == "SUCCEEDED"
    assert world(cloud) == before


def test_features_of_a_cluster_without_its_eks_cluster_are_a_409(
    api: ApiClient, cloud: Any
) -> None:
    from hypd_cli.api_client import ApiError
    from hypd_cli.demo import follow
    from tests.support import create_body

    cloud.client("s3").create_bucket(
        Bucket="team-data", CreateBucketConfiguration={"LocationConstraint": cloud.region})
    cloud.faults.fail("cloudformation", "CreateStack", code="ValidationError",
                      message="network stack refused (injected)")
    accepted = api.post("/clusters", create_body(tag=TAG))
    assert follow(api, cloud, str(accepted["operationId"]))["status"] == "FAILED"
    with pytest.raises(ApiError) as raised:
        features(api)
    # The record answers (hypd.api.absent_clusters), before any call to EKS: the creation
    # failed before its HyperPod cluster, and what to do next
    assert (raised.value.status, raised.value.code) == (409, "ClusterNotActive")
    assert raised.value.details["status"] == "FAILED"
    assert f"DELETE /clusters/{TAG}" in raised.value.message


def test_a_cluster_made_before_features_gets_the_access_it_needs(
    api: ApiClient, cloud: Any
) -> None:
    created_cluster(api, cloud)
    eks = cloud.client("eks")
    for principal in eks.list_access_entries(clusterName=CLUSTER)["accessEntries"]:
        if "FeatureTasksFunctionRole" in principal or "ApiFunctionRole" in principal:
            eks.delete_access_entry(clusterName=CLUSTER, principalArn=principal)
    assert api.call("getFeatures", tag=TAG)["kubernetesReadable"] is False
    apply(api, cloud, trainingOperator={"enabled": True})
    view = api.call("getFeatures", tag=TAG)
    assert view["kubernetesReadable"] is True
    assert view["features"]["trainingOperator"]["status"] == "ACTIVE"
