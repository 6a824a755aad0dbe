"""Teardown end to end through the REST API on the local cloud: the plan, the refusals, and a
cluster created with FSx, features, a job and an endpoint deleted to nothing (every emulated
service lists none of its resources; the buckets stay), the plan matching what was deleted,
resource for resource; a fault in each stage, then a retry; a discovered cluster forgotten,
never deleted; what a deleted cluster's tag allows afterwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hypd.create.control_plane import EKS_WAIT
from hypd.features.tls_bucket import tls_bucket_name
from hypd_cli.api_client import ApiClient, ApiError
from hypd_cli.demo import follow
from hypd_local.calls import watch_calls
from hypd_local.seed import ClusterSeed, seed_clusters
from tests.e2e.capacity import CLUSTER, TAG, run, stages
from tests.e2e.teardown import (
    FOUR_FEATURES,
    GOVERNANCE_ON,
    TEAM,
    TEARDOWN_STAGES,
    by_stage,
    create_with_fsx,
    deleted_by_stage,
    full_cluster,
    nothing_left,
    world,
)
from tests.e2e.test_workloads import TLS_BUCKET, TRAINING_ON, create
from tests.support import create_body, group_body


def refused(call: Callable[[], Any]) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value


def test_a_full_cluster_is_torn_down_to_nothing(api: ApiClient, cloud: Any) -> None:
    full_cluster(api, cloud, FOUR_FEATURES)
    (file_system,) = world(cloud)["fsx"]

    plan = api.call("getTeardownPlan", tag=TAG)
    assert plan["deletable"] is False
    assert [b["code"] for b in plan["blockers"]] == ["WorkloadsRunning"]
    assert [s["stage"] for s in plan["steps"]] == TEARDOWN_STAGES
    assert plan["parallel"] == [["addons", "eks"], ["storage"]]
    planned = by_stage(plan["steps"])
    assert planned["workloads"] == [("HyperPodPyTorchJob", "llama-fsdp"),
                                    ("JumpStartModel", "falcon"),
                                    ("SageMakerEndpoint", "falcon")]
    assert [name for kind, name in planned["governance"] if kind == "ComputeQuota"] == ["ml"]
    assert planned["hyperpod"] == [("HyperPodCluster", CLUSTER)]
    assert planned["eks"] == [("EksCluster", CLUSTER)]
    assert planned["storage"] == [("FsxFileSystem", file_system)]
    addons = [name for kind, name in planned["addons"] if kind == "EksAddon"]
    for addon in ("amazon-sagemaker-hyperpod-training-operator",
                  "amazon-sagemaker-hyperpod-inference", "aws-fsx-csi-driver", "cert-manager"):
        assert addon in addons
    assert ("CloudFormationStack", f"hypd-{TAG}-network") in planned["network"]
    assert ("AmpWorkspace", f"hypd-{TAG}") in planned["roles"]
    assert planned["record"] == [("ClusterRecord", TAG)]
    kept = {(k["type"], k["name"]): k["reason"] for k in plan["kept"]}
    assert "the user's" in kept[("S3Bucket", TLS_BUCKET)]
    assert [name for kind, name in kept if kind == "IamRole"], "the deployment's roles are kept"
    # HyperPod's log group of the nodes' lifecycle scripts is named, kept, with how to delete it.
    cluster_id = cloud.client("sagemaker").describe_cluster(
        ClusterName=CLUSTER)["ClusterArn"].rsplit("/", 1)[-1]
    log_group = f"/aws/sagemaker/Clusters/{CLUSTER}/{cluster_id}"
    assert "HyperPod's logs" in kept[("LogGroup", log_group)]
    assert f"aws logs delete-log-group --log-group-name {log_group}" in kept[
        ("LogGroup", log_group)]

    # Running workloads refuse it; protection too; then force.
    running = refused(lambda: api.call("deleteCluster", tag=TAG))
    assert (running.status, running.code) == (409, "WorkloadsRunning")
    assert "llama-fsdp" in running.message
    assert api.call("setProtection", tag=TAG, body={"enabled": True})["enabled"] is True
    protected = refused(lambda: api.call("deleteCluster", tag=TAG, force=True))
    assert (protected.status, protected.code) == (409, "DeletionProtected")
    api.call("setProtection", tag=TAG, body={"enabled": False})
    assert world(cloud)["hyperpod"] == [CLUSTER], "a refusal deletes nothing"

    forced = api.call("getTeardownPlan", tag=TAG, force=True)
    assert forced["deletable"] is True
    accepted = api.call("deleteCluster", tag=TAG, force=True)
    assert accepted["kind"] == "delete-cluster"
    again = refused(lambda: api.call("deleteCluster", tag=TAG, force=True))
    assert (again.status, again.code) == (409, "OperationRunning")
    calls: list[str] = []
    with watch_calls(lambda call: calls.append(call.action)):
        operation = run(api, cloud, accepted)
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert [s["status"] for s in operation["stages"]] == ["SUCCEEDED"] * len(TEARDOWN_STAGES)
    # The EKS control plane's interfaces outlive it: the network stage waits them out, then
    # deletes its stack once (not once per look, each ending DELETE_FAILED on them).
    (network,) = [e for e in operation["timeline"] if e["stage"] == "network"]
    assert network["looks"] > 2, network  # it waited for the interfaces, then for the stack
    assert calls.count("cloudformation:DeleteStack") == 1

    # What was deleted is what the plan listed, resource for resource.
    assert deleted_by_stage(operation) == by_stage(forced["steps"])
    assert by_stage(forced["steps"]) == planned
    nothing_left(cloud)
    for bucket in ("team-data", TLS_BUCKET):
        assert cloud.client("s3").head_bucket(Bucket=bucket)
    # What was kept is still there, and the operation's output says so, as the plan did.
    logs = cloud.client("logs").describe_log_groups(logGroupNamePrefix="/aws/sagemaker/")
    assert [g["logGroupName"] for g in logs["logGroups"]] == [log_group]
    def named(views: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
        return [(k["type"], k["name"], k["reason"]) for k in views]

    assert named(operation["output"]["kept"]) == named(forced["kept"])
    record = api.get(f"/clusters/{TAG}")
    assert record["status"] == "DELETED"
    history = [o["kind"] for o in api.get("/operations", clusterTag=TAG)["operations"]]
    assert history[0] == "delete-cluster"
    assert "create-cluster" in history


def test_the_tls_bucket_hypd_made_is_emptied_and_deleted_with_the_cluster(
        api: ApiClient, cloud: Any) -> None:
    create(api, cloud, {"inferenceOperator": {"enabled": True}})  # no bucket named
    bucket, s3 = tls_bucket_name(TAG, cloud.account_id, cloud.region), cloud.client("s3")
    s3.put_object(Bucket=bucket, Key="certs/falcon/tls.crt", Body=b"-----BEGIN CERTIFICATE")

    plan = api.call("getTeardownPlan", tag=TAG)
    planned = by_stage(plan["steps"])
    assert ("S3Bucket", bucket) in planned["roles"]
    kept = {(k["type"], k["name"]) for k in plan["kept"]}
    assert ("S3Bucket", bucket) not in kept
    assert ("S3Bucket", "team-data") in kept  # the cluster's storage: the user's
    operation = run(api, cloud, api.call("deleteCluster", tag=TAG))
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert deleted_by_stage(operation) == planned
    nothing_left(cloud)  # the bucket hypd made, too
    with pytest.raises(ClientError):
        s3.head_bucket(Bucket=bucket)
    for other in ("team-data", TLS_BUCKET):
        assert s3.head_bucket(Bucket=other)


def test_a_deleted_clusters_tag_refuses_changes_and_can_be_created_again(
        api: ApiClient, cloud: Any) -> None:
    create(api, cloud)
    # The function that deletes workloads lost its access entry: it grants itself one again.
    eks = cloud.client("eks")
    for principal in eks.list_access_entries(clusterName=CLUSTER)["accessEntries"]:
        if "FeatureTasksFunctionRole" in principal:
            eks.delete_access_entry(clusterName=CLUSTER, principalArn=principal)
    operation = run(api, cloud, api.call("deleteCluster", tag=TAG))
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    nothing_left(cloud)

    scale = refused(lambda: api.call("updateInstanceGroup", tag=TAG, name="workers",
                                     body={"count": 1}))
    assert (scale.status, scale.code) == (409, "ClusterDeleted")
    again = refused(lambda: api.call("deleteCluster", tag=TAG))
    assert (again.status, again.code) == (409, "ClusterDeleted")
    record = api.get(f"/clusters/{TAG}")  # the history stays, no longer saying it runs
    assert (record["status"], record["eks"]["status"], record["hyperpod"]["status"]) == (
        "DELETED", "DELETED", "DELETED")
    assert record["eks"]["name"] == CLUSTER
    assert record["hyperpod"]["arn"]
    assert {(g["currentCount"], g["status"]) for g in record["hyperpod"]["instanceGroups"]} == {
        (0, "DELETED")}
    protect = refused(lambda: api.call("setProtection", tag=TAG, body={"enabled": True}))
    assert (protect.status, protect.code) == (409, "ClusterDeleted")
    # Nothing of it is left to plan (every /clusters/{tag}/... route: test_deleted_cluster.py)
    plan = refused(lambda: api.call("getTeardownPlan", tag=TAG))
    assert (plan.status, plan.code, plan.details["status"]) == (409, "ClusterDeleted", "DELETED")

    recreated = follow(api, cloud, str(api.post("/clusters", create_body())["operationId"]),
                       timeout=240)
    assert recreated["status"] == "SUCCEEDED", recreated.get("error")
    assert api.get(f"/clusters/{TAG}")["status"] == "ACTIVE"
    kinds = [o["kind"] for o in api.get("/operations", clusterTag=TAG)["operations"]]
    assert kinds == ["create-cluster", "delete-cluster", "create-cluster"]


def test_a_discovered_cluster_is_forgotten_not_deleted(api: ApiClient, cloud: Any) -> None:
    (seeded,) = seed_clusters(cloud, [ClusterSeed("theirs")])
    discovered = follow(api, cloud, str(api.post("/clusters/discover")["operationId"]),
                        timeout=60)
    assert discovered["status"] == "SUCCEEDED", discovered.get("error")
    (tag,) = [c["tag"] for c in api.get("/clusters")["clusters"]]

    plan = api.call("getTeardownPlan", tag=tag, force=True)
    assert [b["code"] for b in plan["blockers"]] == ["NotCreatedByHypd"]
    assert all(not s["resources"] for s in plan["steps"] if s["stage"] != "record")
    kept = {(k["type"], k["name"]) for k in plan["kept"]}
    assert {("HyperPodCluster", "theirs"), ("EksCluster", seeded.eks_name)} <= kept
    error = refused(lambda: api.call("deleteCluster", tag=tag, force=True))
    assert (error.status, error.code) == (409, "NotCreatedByHypd")
    assert "forget=true" in error.message

    assert api.call("deleteCluster", tag=tag, forget=True) == {"tag": tag, "forgotten": True}
    assert api.get("/clusters")["clusters"] == []
    sagemaker = cloud.client("sagemaker")
    assert [c["ClusterName"] for c in sagemaker.list_clusters()["ClusterSummaries"]] == [
        "theirs"]
    assert cloud.client("eks").list_clusters()["clusters"] == [seeded.eks_name]

    # A cluster hypd created is deleted, not forgotten.
    create(api, cloud)
    error = refused(lambda: api.call("deleteCluster", tag=TAG, forget=True))
    assert error.status == 400
    assert "forget" in error.message


def _fail_record_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The record's write is refused once (DynamoDB is the table's, not a service the local
    cloud can fault for one task alone)."""
    from hypd.clusters.models import ClusterStatus
    from hypd.clusters.store import ClusterStore
    from hypd.errors import AwsAccessDenied

    original = ClusterStore.set_status
    calls: list[str] = []

    def refusing(self: ClusterStore, tag: str, status: ClusterStatus, *args: Any) -> Any:
        if status is ClusterStatus.DELETED and not calls:
            calls.append(tag)
            raise AwsAccessDenied("UpdateItem refused (injected)")
        return original(self, tag, status, *args)

    monkeypatch.setattr(ClusterStore, "set_status", refusing)


def _no_access_entry(cloud: Any) -> None:
    """FeatureTasksFunction has no access entry, and EKS refuses it a new one once."""
    eks = cloud.client("eks")
    for principal in eks.list_access_entries(clusterName=CLUSTER)["accessEntries"]:
        if "FeatureTasksFunctionRole" in principal:
            eks.delete_access_entry(clusterName=CLUSTER, principalArn=principal)
    cloud.faults.fail("eks", "CreateAccessEntry", code="AccessDeniedException",
                      message="CreateAccessEntry refused (injected)", times=1)


FAULTS = [
    # stage, what the cluster has, the fault (service, operation, code) or a set-up
    ("workloads", TRAINING_ON, _no_access_entry),
    ("governance", GOVERNANCE_ON, ("sagemaker", "DeleteComputeQuota", "ValidationException")),
    ("hyperpod", TRAINING_ON, ("sagemaker", "DeleteCluster", "ValidationException")),
    ("addons", TRAINING_ON, ("eks", "DeleteAddon", "InvalidRequestException")),
    ("eks", TRAINING_ON, ("eks", "DeleteCluster", "InvalidRequestException")),
    ("storage", None, ("fsx", "DeleteFileSystem", "BadRequest")),
    ("network", TRAINING_ON, ("cloudformation", "DeleteStack", "ValidationError")),
    ("roles", TRAINING_ON, ("iam", "DeleteRole", "UnmodifiableEntity")),
    ("record", None, _fail_record_once),
]


@pytest.mark.parametrize(("stage", "features", "fault"), FAULTS, ids=[f[0] for f in FAULTS])
def test_a_fault_in_a_stage_fails_there_and_a_retry_finishes(
        api: ApiClient, cloud: Any, monkeypatch: pytest.MonkeyPatch,
        stage: str, features: dict[str, Any] | None, fault: Any) -> None:
    if stage == "storage":
        create_with_fsx(api, cloud, {})
    else:
        create(api, cloud, features)
    if stage == "governance":
        assert run(api, cloud, api.set_team(TAG, "ml", TEAM))["status"] == "SUCCEEDED"
    if callable(fault):
        fault(monkeypatch) if fault is _fail_record_once else fault(cloud)
        message = "refused (injected)"
    else:
        service, operation, code = fault
        message = f"{operation} refused (injected)"
        cloud.faults.fail(service, operation, code=code, message=message, times=1)
    failed = run(api, cloud, api.call("deleteCluster", tag=TAG))
    assert failed["status"] == "FAILED"
    assert stages(failed)[stage]["status"] == "FAILED", failed["stages"]
    assert message in failed["error"]["message"]
    assert api.get(f"/clusters/{TAG}")["status"] == "DELETING"
    changed = refused(lambda: api.call("updateInstanceGroup", tag=TAG, name="workers",
                                       body={"count": 1}))
    assert (changed.status, changed.code) == (409, "ClusterDeleting")
    # A failed teardown is resumed, never started again beside it.
    second = refused(lambda: api.call("deleteCluster", tag=TAG, force=True))
    assert (second.status, second.code) == (409, "ClusterDeleting")
    assert f"/operations/{failed['id']}/retry" in second.message
    blocked = api.call("getTeardownPlan", tag=TAG)
    assert [b["code"] for b in blocked["blockers"]] == ["ClusterDeleting"]

    api.call("retryOperation", operationId=failed["id"])
    retried = run(api, cloud, {"operationId": failed["id"]})
    assert retried["status"] == "SUCCEEDED", retried.get("error")
    done = stages(retried)
    # Every stage that had succeeded, in the Parallel's branches too, was not attempted again.
    succeeded = [name for name, st in stages(failed).items() if st["status"] == "SUCCEEDED"]
    assert set(succeeded) >= set(TEARDOWN_STAGES[:TEARDOWN_STAGES.index("hyperpod")]) & set(
        TEARDOWN_STAGES[:TEARDOWN_STAGES.index(stage)])
    assert {name: done[name]["attempts"] for name in succeeded} == dict.fromkeys(succeeded, 1)
    nothing_left(cloud)
    assert api.get(f"/clusters/{TAG}")["status"] == "DELETED"


def test_a_group_added_after_the_create_goes_with_its_dedicated_subnet(
        api: ApiClient, cloud: Any) -> None:
    create(api, cloud)
    added = run(api, cloud, api.call("addInstanceGroup", tag=TAG, body=group_body(
        name="own", count=1, dedicatedSubnet=True)))
    assert added["status"] == "SUCCEEDED", added.get("error")
    plan = api.call("getTeardownPlan", tag=TAG)
    assert any(kind == "Subnet" for kind, _name in by_stage(plan["steps"])["network"])
    operation = run(api, cloud, api.call("deleteCluster", tag=TAG))
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert deleted_by_stage(operation)["network"] == by_stage(plan["steps"])["network"]
    nothing_left(cloud)


@pytest.mark.parametrize("eks_state", ["FAILED", "CREATING"])
def test_a_cluster_whose_eks_never_became_active_is_deleted_skipping_its_kubernetes(
        api: ApiClient, cloud: Any, eks_state: str) -> None:
    # Given a create that failed before its EKS cluster became ACTIVE: EKS ended FAILED, or
    # is still CREATING when the create's wait gives up (it ends FAILED a quarter of an hour
    # later, while the teardown runs)
    s3 = cloud.client("s3")
    s3.create_bucket(Bucket="team-data",
                     CreateBucketConfiguration={"LocationConstraint": cloud.region})
    cloud.emulation.eks.fail_next_cluster(CLUSTER, "subnet capacity exhausted")
    if eks_state == "CREATING":
        cloud.emulation.eks.stall_next_cluster(CLUSTER, EKS_WAIT.give_up_after_seconds + 900)
    created = run(api, cloud, api.post("/clusters", create_body()))
    assert created["status"] == "FAILED"
    assert stages(created)["eks"]["status"] == "FAILED"
    assert stages(created)["hyperpod"]["status"] != "SUCCEEDED"
    eks = cloud.client("eks")
    assert eks.describe_cluster(name=CLUSTER)["cluster"]["status"] == eks_state

    # When it is deleted
    plan = api.call("getTeardownPlan", tag=TAG)
    assert plan["deletable"] is True, plan["blockers"]
    assert by_stage(plan["steps"])["eks"] == [("EksCluster", CLUSTER)]
    operation = run(api, cloud, api.call("deleteCluster", tag=TAG))

    # Then the teardown succeeds: the stages inside the cluster are skipped, saying why,
    # and everything the create made is gone
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    done = stages(operation)
    assert [done[name]["status"] for name in TEARDOWN_STAGES] == ["SUCCEEDED"] * len(
        TEARDOWN_STAGES)
    skipped = done["workloads"]["output"]["skipped"]
    assert skipped.startswith(f"EKS cluster {CLUSTER} never became ACTIVE (it is {eks_state})")
    assert done["workloads"]["output"]["deleted"] == []
    assert deleted_by_stage(operation)["eks"] == [("EksCluster", CLUSTER)]
    if eks_state == "CREATING":
        # EKS refuses to delete a cluster being created: the stage waited for it to end.
        (attempt,) = [e for e in operation["timeline"] if e["stage"] == "eks"]
        assert attempt["looks"] > 2, attempt
    nothing_left(cloud)
    assert api.get(f"/clusters/{TAG}")["status"] == "DELETED"


def test_interfaces_the_vpc_cni_left_available_are_deleted_before_the_network(
        api: ApiClient, cloud: Any) -> None:
    # Given a cluster whose VPC CNI left an interface `available` (its node went without
    # detaching it): tagged with the EKS cluster's name, it holds its subnet
    create(api, cloud)
    ec2 = cloud.client("ec2")
    stack_subnets = ec2.describe_subnets(Filters=[{
        "Name": "tag:aws:cloudformation:stack-name", "Values": [f"hypd-{TAG}-network"]}])
    subnet = stack_subnets["Subnets"][0]["SubnetId"]
    left_behind = ec2.create_network_interface(
        SubnetId=subnet, Description="aws-K8S-i-0123456789abcdef0",
        TagSpecifications=[{"ResourceType": "network-interface", "Tags": [
            {"Key": "cluster.k8s.amazonaws.com/name", "Value": CLUSTER},
            {"Key": "node.k8s.amazonaws.com/instance_id", "Value": "i-0123456789abcdef0"}]}],
    )["NetworkInterface"]["NetworkInterfaceId"]

    # When the cluster is deleted
    operation = run(api, cloud, api.call("deleteCluster", tag=TAG))

    # Then the network stage deleted the interface, reported it, and the stack went after it
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    network = deleted_by_stage(operation)["network"]
    assert ("NetworkInterface", left_behind) in network
    assert ("CloudFormationStack", f"hypd-{TAG}-network") in network
    nothing_left(cloud)
