"""The create-cluster pipeline end to end on the local cloud, through the REST API.

The real template, state machine and handlers; EKS and HyperPod take their emulated minutes
on the virtual clock (the pipeline's own Wait states and task-token wait move it), so a run
takes a few real seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from hypd.clusters.create_request import DEFAULT_KUBERNETES_VERSION, HYPERPOD_KUBERNETES_VERSIONS
from hypd.create.addons import ADDON_WAIT
from hypd.create.control_plane import EKS_WAIT
from hypd.create.verify import VERIFY_TIMEOUT
from hypd_cli.api_client import ApiClient
from hypd_cli.demo import demo_request, follow
from statemachines.generate import HYPERPOD_WAIT_SECONDS
from tests.conftest import ROOT
from tests.support import fail_calls

BUCKET = "hypd-e2e-data"
STAGES = ["network", "eks", "dependencies", "hyperpod", "storage", "verify", "features"]


def create(api: ApiClient, cloud: Any, tag: str = "e2e", *, bucket: bool = True) -> str:
    if bucket:
        cloud.client("s3").create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
        )
    accepted = api.post("/clusters", demo_request(api, tag, BUCKET))
    return str(accepted["operationId"])


def stages(operation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {stage["name"]: stage for stage in operation["stages"]}


def seconds(stage: dict[str, Any]) -> float:
    return (
        datetime.fromisoformat(stage["endedAt"]) - datetime.fromisoformat(stage["startedAt"])
    ).total_seconds()


def attempts(operation: dict[str, Any], stage: str) -> list[dict[str, Any]]:
    """The stage's attempts in the operation's timeline, in order."""
    return [entry for entry in operation["timeline"] if entry["stage"] == stage]


def at(value: str) -> datetime:
    return datetime.fromisoformat(value)


def test_the_pipeline_creates_a_verified_cluster(api: ApiClient, cloud: Any) -> None:
    operation_id = create(api, cloud)
    assert api.get("/clusters/e2e")["status"] == "CREATING"

    operation = follow(api, cloud, operation_id, timeout=240)

    assert operation["status"] == "SUCCEEDED", operation.get("error")
    by_name = stages(operation)
    assert list(by_name) == STAGES
    assert all(s["status"] == "SUCCEEDED" and s["attempts"] == 1 for s in by_name.values())
    # What was made, as AWS and Kubernetes see it.
    eks = cloud.client("eks").describe_cluster(name="hypd-e2e")["cluster"]
    assert eks["status"] == "ACTIVE"
    assert eks["accessConfig"]["authenticationMode"] == "API"
    assert (
        eks["resourcesVpcConfig"]["subnetIds"]
        == by_name["network"]["output"]["controlPlaneSubnetIds"]
    )
    hyperpod = cloud.client("sagemaker").describe_cluster(ClusterName="hypd-e2e")
    assert hyperpod["ClusterStatus"] == "InService"
    assert hyperpod["NodeRecovery"] == "Automatic"
    assert hyperpod["NodeProvisioningMode"] == "Continuous"
    assert hyperpod["VpcConfig"]["Subnets"] == [
        by_name["network"]["output"]["computeSubnets"]["gpu"]
    ]
    addons = cloud.client("eks").list_addons(clusterName="hypd-e2e")["addons"]
    assert "aws-mountpoint-s3-csi-driver" in addons
    assert "vpc-cni" in addons
    output = operation["output"]
    assert output["storage"]["claimPhase"] == "Bound"
    assert [n["health"] for n in output["nodes"]] == ["Schedulable"]
    # The record clients read.
    record = api.get("/clusters/e2e")
    assert record["status"] == "ACTIVE"
    assert record["eks"]["name"] == "hypd-e2e"
    assert record["hyperpod"]["status"] == "InService"
    # The timeline: one attempt per stage, in start order, each ended after it started.
    timeline = operation["timeline"]
    assert sorted(((e["stage"], e["attempt"], e["status"]) for e in timeline),
                  key=lambda e: STAGES.index(e[0])) == [
        (stage, 1, "SUCCEEDED") for stage in STAGES
    ]
    starts = {e["stage"]: at(e["startedAt"]) for e in timeline}
    assert starts["storage"] < starts["dependencies"], "the storage runs beside the EKS side"
    assert [at(e["startedAt"]) for e in timeline] == sorted(at(e["startedAt"]) for e in timeline)
    for entry in timeline:
        assert at(entry["startedAt"]) <= at(entry["endedAt"])
        assert entry["looks"] >= 1
        assert entry.get("nextLookAt") is None  # it ended: no next look
    # The stages that waited say for what (their attempts looked several times).
    waited = {e["stage"]: e for e in timeline if e["looks"] > 1 and e["stage"] != "network"}
    assert set(waited) >= {"eks", "dependencies", "hyperpod"}
    assert waited["eks"]["waitingFor"] == "EKS cluster hypd-e2e is CREATING"
    assert waited["dependencies"]["waitingFor"].startswith("add-ons not ACTIVE yet: ")
    assert waited["hyperpod"]["waitingFor"] == (
        "HyperPod cluster hypd-e2e is Creating (its state-change event ends the wait)")
    assert all(entry.get("waitingFor") for entry in waited.values())


def test_a_create_without_a_version_gets_hyperpods_newest_not_eks_default(
    api: ApiClient, cloud: Any
) -> None:
    # EKS's default has moved past what HyperPod supports.
    cloud.emulation.eks.catalog.default_kubernetes_version = "1.34"
    assert "1.34" not in HYPERPOD_KUBERNETES_VERSIONS

    operation = follow(api, cloud, create(api, cloud), timeout=240)

    assert operation["status"] == "SUCCEEDED", operation.get("error")
    eks = cloud.client("eks").describe_cluster(name="hypd-e2e")["cluster"]
    assert eks["version"] == DEFAULT_KUBERNETES_VERSION
    assert operation["output"]["eksCluster"]["version"] == DEFAULT_KUBERNETES_VERSION


def test_the_dependency_chart_is_rendered_for_the_clusters_region_and_version(
    api: ApiClient, cloud: Any
) -> None:
    operation = follow(api, cloud, create(api, cloud), timeout=240)

    assert operation["status"] == "SUCCEEDED", operation.get("error")
    version = cloud.client("eks").describe_cluster(name="hypd-e2e")["cluster"]["version"]
    store = cloud.emulation.kube.get("hypd-e2e").store
    agent = store.get(store.builtin_type("apps", "daemonsets"), "aws-hyperpod",
                      "health-monitoring-agent")
    (container,) = agent["spec"]["template"]["spec"]["containers"]
    # The agent's image comes from the cluster's Region, not the chart's us-east-1 fallback.
    assert f".dkr.ecr.{cloud.region}.amazonaws.com/" in container["image"]
    assert "us-east-1" not in container["image"]
    namespace = store.get(store.builtin_type("", "namespaces"), None, "aws-hyperpod")
    assert namespace["metadata"]["annotations"]["hypd.dev/rendered-for-kubernetes"] == (
        f"v{version}"
    )


@pytest.mark.frozen_clock
def test_the_hyperpod_wait_is_woken_by_the_state_change_event(api: ApiClient, cloud: Any) -> None:
    # HyperPod takes its emulated creation time; the task-token wait ends when the state-change
    # event arrives, not at a poll (nor at its timeout): on a clock that only moves when told,
    # the stage lasts the creation time exactly, however slow the machine.
    creation = cloud.emulation.hyperpod.durations.cluster_create.total_seconds()

    operation = follow(api, cloud, create(api, cloud), timeout=240)

    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert seconds(stages(operation)["hyperpod"]) == creation


Inject = Callable[[Any], Any]


def _eks_create_refused(cloud: Any) -> Any:
    return fail_calls(cloud, "eks", "create_cluster", "AccessDeniedException", times=1)


def _addon_refused(cloud: Any) -> Any:
    return fail_calls(cloud, "eks", "create_addon", "InvalidParameterException", times=1)


def _hyperpod_create_refused(cloud: Any) -> Any:
    return fail_calls(cloud, "sagemaker", "create_cluster", "ValidationException", times=1)


@pytest.mark.parametrize(
    ("stage", "inject", "code"),
    [
        ("eks", _eks_create_refused, "AccessDeniedException"),
        ("dependencies", _addon_refused, "InvalidParameterException"),
        ("hyperpod", _hyperpod_create_refused, "ValidationException"),
    ],
)
def test_a_permanent_fault_fails_its_stage_and_a_retry_completes_it(
    api: ApiClient, cloud: Any, stage: str, inject: Inject, code: str
) -> None:
    with inject(cloud):
        failed = follow(api, cloud, create(api, cloud), timeout=240)

    assert failed["status"] == "FAILED"
    by_name = stages(failed)
    index = STAGES.index(stage)
    assert [by_name[s]["status"] for s in STAGES[:index]] == ["SUCCEEDED"] * index
    assert by_name[stage]["status"] == "FAILED"
    assert by_name[stage]["error"]["code"] == code
    assert failed["error"]["code"] == code
    assert code in failed["error"]["message"]
    assert api.get("/clusters/e2e")["status"] == "FAILED"

    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    after = stages(done)
    # Completed stages were not repeated; the failed one took a second attempt.
    assert [after[s]["attempts"] for s in STAGES[:index]] == [1] * index
    assert after[stage]["attempts"] == 2
    assert api.get("/clusters/e2e")["status"] == "ACTIVE"
    # Its timeline keeps both: the first FAILED with AWS's error, the retry's SUCCEEDED after.
    first, second = attempts(done, stage)
    assert (first["attempt"], first["status"], first["error"]["code"]) == (1, "FAILED", code)
    assert (second["attempt"], second["status"]) == (2, "SUCCEEDED")
    assert at(first["startedAt"]) <= at(first["endedAt"]) <= at(second["startedAt"])
    assert at(second["startedAt"]) <= at(second["endedAt"])
    assert all(len(attempts(done, s)) == 1 for s in STAGES if s != stage)


def test_a_missing_bucket_fails_storage_and_a_retry_after_creating_it_completes(
    api: ApiClient, cloud: Any
) -> None:
    failed = follow(api, cloud, create(api, cloud, bucket=False), timeout=240)

    assert failed["status"] == "FAILED"
    by_name = stages(failed)
    # The storage is checked beside the EKS side, right after the network: the missing bucket
    # fails the create in its first minutes, not after HyperPod, and the EKS side stops.
    assert by_name["network"]["status"] == "SUCCEEDED"
    assert by_name["storage"]["status"] == "FAILED"
    assert by_name["storage"]["error"]["code"] == "NoSuchBucket"
    assert BUCKET in by_name["storage"]["error"]["message"]
    assert by_name["eks"]["status"] == "CANCELLED"
    assert by_name["hyperpod"]["status"] == "PENDING"

    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )
    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    again = stages(done)
    assert (again["network"]["attempts"], again["storage"]["attempts"],
            again["hyperpod"]["attempts"]) == (1, 2, 1)


def test_throttling_is_absorbed(api: ApiClient, cloud: Any) -> None:
    # Every throttled call is retried (botocore's own retries, then the state machine's).
    cloud.faults.fail("eks", "DescribeCluster", code="ThrottlingException", times=6)
    cloud.faults.fail("eks", "CreateAddon", code="ThrottlingException", times=6)
    cloud.faults.fail("sagemaker", "CreateCluster", code="ThrottlingException", times=6)
    cloud.faults.fail("sagemaker", "DescribeCluster", code="ThrottlingException", times=6)

    operation = follow(api, cloud, create(api, cloud), timeout=240)

    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert cloud.faults.pending() == []


def test_a_cancelled_create_keeps_its_finished_stages_and_a_retry_completes_it(
    api: ApiClient, cloud: Any
) -> None:
    release, entered = threading.Event(), threading.Event()
    with fail_calls(cloud, "eks", "create_cluster", None, times=1, block=release,
                    entered=entered):
        operation_id = create(api, cloud)
        # The pipeline is inside the eks stage, its CreateCluster call held.
        assert entered.wait(timeout=60)
        api.post(f"/operations/{operation_id}/cancel")
        release.set()
        cloud.wait_for_executions(timeout=60)

    cancelled = api.get(f"/operations/{operation_id}")
    assert cancelled["status"] == "CANCELLED"
    assert stages(cancelled)["network"]["status"] == "SUCCEEDED"
    assert stages(cancelled)["eks"]["status"] == "CANCELLED"
    assert api.get("/clusters/e2e")["status"] == "FAILED"

    api.post(f"/operations/{operation_id}/retry")
    done = follow(api, cloud, operation_id, timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    assert stages(done)["network"]["attempts"] == 1
    assert api.get("/clusters/e2e")["status"] == "ACTIVE"



def test_a_refused_network_stack_fails_network_and_a_retry_completes_it(
    api: ApiClient, cloud: Any
) -> None:
    cloud.faults.fail("cloudformation", "CreateStack", code="InsufficientCapabilitiesException",
                      times=1)

    failed = follow(api, cloud, create(api, cloud), timeout=240)

    assert failed["status"] == "FAILED"
    network = stages(failed)["network"]
    assert network["status"] == "FAILED"
    assert network["error"]["code"] == "InsufficientCapabilitiesException"
    assert [stages(failed)[s]["status"] for s in STAGES[1:]] == ["PENDING"] * 6

    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    assert stages(done)["network"]["attempts"] == 2


def test_nodes_that_never_join_fail_verify_and_a_retry_completes_once_they_can(
    api: ApiClient, cloud: Any
) -> None:
    # No capacity for the type: HyperPod (continuous provisioning) is InService without nodes.
    hyperpod = cloud.emulation.hyperpod
    body_zone = demo_request(api, "e2e", BUCKET)["availabilityZone"]
    hyperpod.insufficient_capacity("ml.g6.4xlarge", body_zone, True)

    failed = follow(api, cloud, create(api, cloud), timeout=240)

    assert failed["status"] == "FAILED"
    by_name = stages(failed)
    assert [by_name[s]["status"] for s in STAGES[:5]] == ["SUCCEEDED"] * 5
    assert by_name["verify"]["error"]["code"] == "VerificationTimedOut"
    assert "group gpu: 0 of 1 nodes joined" in by_name["verify"]["error"]["message"]

    # Capacity returns: HyperPod launches the node; the retry waits for it to join.
    hyperpod.insufficient_capacity("ml.g6.4xlarge", body_zone, False)
    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    assert [n["health"] for n in done["output"]["nodes"]] == ["Schedulable"]
    assert stages(done)["hyperpod"]["attempts"] == 1


def test_a_failed_hyperpod_cluster_is_replaced_by_the_retry(api: ApiClient, cloud: Any) -> None:
    # HyperPod reports the creation Failed: the state-change event fails the parked token.
    cloud.emulation.hyperpod.fail_next_create("hypd-e2e", "lifecycle script exited with 1")

    failed = follow(api, cloud, create(api, cloud), timeout=240)

    assert failed["status"] == "FAILED"
    hyperpod_stage = stages(failed)["hyperpod"]
    assert hyperpod_stage["error"]["code"] == "HyperPodClusterFailed"
    assert "lifecycle script exited with 1" in hyperpod_stage["error"]["message"]
    sagemaker = cloud.client("sagemaker")
    assert sagemaker.describe_cluster(ClusterName="hypd-e2e")["ClusterStatus"] == "Failed"

    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    assert sagemaker.describe_cluster(ClusterName="hypd-e2e")["ClusterStatus"] == "InService"
    assert stages(done)["eks"]["attempts"] == 1
    assert stages(done)["hyperpod"]["attempts"] == 2


def test_fsx_for_lustre_storage_is_created_and_mounted(api: ApiClient, cloud: Any) -> None:
    body = demo_request(api, "e2e", BUCKET)
    body["storage"] = {"fsx": {"storageCapacityGiB": 1200}}

    operation = follow(api, cloud, api.post("/clusters", body)["operationId"], timeout=240)

    assert operation["status"] == "SUCCEEDED", operation.get("error")
    (system,) = cloud.client("fsx").describe_file_systems()["FileSystems"]
    assert system["Lifecycle"] == "AVAILABLE"
    assert {"Key": "hypd:tag", "Value": "e2e"} in system["Tags"]
    assert system["SubnetIds"] == [stages(operation)["network"]["output"]["computeSubnets"]["gpu"]]
    assert operation["output"]["storage"]["kind"] == "fsx"
    assert operation["output"]["storage"]["claimPhase"] == "Bound"
    addons = cloud.client("eks").list_addons(clusterName="hypd-e2e")["addons"]
    assert "aws-fsx-csi-driver" in addons


def test_the_file_system_is_made_beside_the_eks_side_and_a_retry_keeps_it(
        api: ApiClient, cloud: Any) -> None:
    body = demo_request(api, "e2e", BUCKET)
    body["storage"] = {"fsx": {"storageCapacityGiB": 1200}}
    with _hyperpod_create_refused(cloud):
        failed = follow(api, cloud, api.post("/clusters", body)["operationId"], timeout=240)

    assert failed["status"] == "FAILED"
    by_name = stages(failed)
    assert (by_name["storage"]["status"], by_name["hyperpod"]["status"]) == (
        "SUCCEEDED", "FAILED")
    # It started once the network existed, while the EKS cluster was being created.
    assert by_name["storage"]["startedAt"] < by_name["eks"]["endedAt"]

    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    after = stages(done)
    assert (after["storage"]["attempts"], after["eks"]["attempts"],
            after["hyperpod"]["attempts"]) == (1, 1, 2), "the retry skipped what succeeded"
    assert len(cloud.client("fsx").describe_file_systems()["FileSystems"]) == 1
    assert done["output"]["storage"]["claimPhase"] == "Bound"


def test_groups_keep_their_capacity_subnet_and_kubernetes_choices(
    api: ApiClient, cloud: Any
) -> None:
    body = demo_request(api, "e2e", BUCKET)
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )
    body["instanceGroups"] = [
        {**body["instanceGroups"][0], "labels": {"team": "research"}},
        {"name": "spot", "instanceType": "ml.g6.4xlarge", "count": 2,
         "capacity": {"type": "spot"}, "dedicatedSubnet": True,
         "deepHealthChecks": ["InstanceStress"]},
    ]

    operation = follow(api, cloud, api.post("/clusters", body)["operationId"], timeout=240)

    assert operation["status"] == "SUCCEEDED", operation.get("error")
    subnets = stages(operation)["network"]["output"]["computeSubnets"]
    assert subnets["spot"] != subnets["gpu"]
    described = cloud.client("sagemaker").describe_cluster(ClusterName="hypd-e2e")
    groups = {g["InstanceGroupName"]: g for g in described["InstanceGroups"]}
    assert groups["spot"]["CapacityRequirements"] == {"Spot": {}}
    assert groups["spot"]["OverrideVpcConfig"]["Subnets"] == [subnets["spot"]]
    assert groups["spot"]["OnStartDeepHealthChecks"] == ["InstanceStress"]
    assert groups["gpu"]["KubernetesConfig"]["DesiredLabels"] == {"team": "research"}
    nodes = operation["output"]["nodes"]
    assert sorted(n["group"] for n in nodes) == ["gpu", "spot", "spot"]
    assert {n["health"] for n in nodes} == {"Schedulable"}


def test_verify_waits_for_deep_health_checks_beyond_the_usual_timeout(
    api: ApiClient, cloud: Any
) -> None:
    # A group with deep health checks: its node stays Unschedulable for the emulator's 75
    # minutes after boot, long after HyperPod (continuous provisioning) says InService.
    body = demo_request(api, "e2e", BUCKET)
    body["instanceGroups"][0]["deepHealthChecks"] = ["InstanceStress"]
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )

    operation = follow(api, cloud, api.post("/clusters", body)["operationId"], timeout=240)

    assert operation["status"] == "SUCCEEDED", operation.get("error")
    verify_stage = stages(operation)["verify"]
    assert verify_stage["attempts"] == 1
    assert seconds(verify_stage) > VERIFY_TIMEOUT.total_seconds()
    assert [n["health"] for n in operation["output"]["nodes"]] == ["Schedulable"]


def test_a_failed_eks_cluster_is_replaced_by_the_retry(api: ApiClient, cloud: Any) -> None:
    cloud.emulation.eks.fail_next_cluster("hypd-e2e", "subnet capacity exhausted")

    failed = follow(api, cloud, create(api, cloud), timeout=240)

    assert failed["status"] == "FAILED"
    eks_stage = stages(failed)["eks"]
    assert eks_stage["status"] == "FAILED"
    assert "subnet capacity exhausted" in eks_stage["error"]["message"]
    assert stages(failed)["network"]["status"] == "SUCCEEDED"

    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    assert cloud.client("eks").describe_cluster(name="hypd-e2e")["cluster"]["status"] == "ACTIVE"
    assert stages(done)["network"]["attempts"] == 1
    assert stages(done)["eks"]["attempts"] == 2


def test_an_eks_cluster_that_stays_creating_fails_its_stage_and_a_retry_waits_again(
    api: ApiClient, cloud: Any
) -> None:
    cloud.emulation.eks.stall_next_cluster("hypd-e2e")

    failed = follow(api, cloud, create(api, cloud), timeout=240)

    assert failed["status"] == "FAILED"
    eks_stage = stages(failed)["eks"]
    assert eks_stage["error"]["code"] == "EksClusterTimedOut"
    assert "still CREATING" in eks_stage["error"]["message"]
    assert seconds(eks_stage) >= EKS_WAIT.give_up_after_seconds
    # The failed attempt looked again and again, waiting for the cluster, until it gave up.
    (gave_up,) = attempts(failed, "eks")
    assert (gave_up["status"], gave_up["error"]["code"]) == ("FAILED", "EksClusterTimedOut")
    assert gave_up["waitingFor"] == "EKS cluster hypd-e2e is CREATING"
    assert gave_up["looks"] > 2
    assert api.get("/clusters/e2e")["status"] == "FAILED"

    # EKS finishes at last: the retry waits for the same cluster and goes on.
    arn = cloud.client("eks").describe_cluster(name="hypd-e2e")["cluster"]["arn"]
    cloud.emulation.eks.release_cluster("hypd-e2e")
    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    assert cloud.client("eks").describe_cluster(name="hypd-e2e")["cluster"]["arn"] == arn
    assert stages(done)["network"]["attempts"] == 1
    assert stages(done)["eks"]["attempts"] == 2


def test_an_addon_that_stays_creating_fails_dependencies_and_a_retry_waits_again(
    api: ApiClient, cloud: Any
) -> None:
    cloud.emulation.eks.stall_addon("hypd-e2e", "coredns")

    failed = follow(api, cloud, create(api, cloud), timeout=240)

    assert failed["status"] == "FAILED"
    dependencies = stages(failed)["dependencies"]
    assert dependencies["error"]["code"] == "AddonsTimedOut"
    assert "coredns (CREATING)" in dependencies["error"]["message"]
    assert seconds(dependencies) >= ADDON_WAIT.give_up_after_seconds
    assert stages(failed)["eks"]["status"] == "SUCCEEDED"

    cloud.emulation.eks.release_addon("hypd-e2e", "coredns")
    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    assert stages(done)["eks"]["attempts"] == 1
    assert stages(done)["dependencies"]["attempts"] == 2


def test_a_lost_state_change_event_is_covered_by_the_fallback_poll(
    api: ApiClient, cloud: Any
) -> None:
    # The state-change rule delivers nothing: the task-token wait times out and the pipeline
    # looks at the cluster itself.
    rule = cloud.resources["ClusterEventsFunctionHyperPodClusterStateChange"]
    cloud.client("events").disable_rule(Name=rule)
    operation_id = create(api, cloud)

    # The token wait is the only thing left waiting once the cluster is InService unheard.
    cloud.clock.wait_for_waiters(1, timeout=60)
    # Meanwhile the running attempt says what it waits for, and its fallback look.
    (waiting,) = attempts(api.get(f"/operations/{operation_id}"), "hyperpod")
    assert waiting["status"] == "RUNNING"
    assert waiting["waitingFor"] == (
        "HyperPod cluster hypd-e2e is Creating (its state-change event ends the wait)")
    assert (at(waiting["nextLookAt"]) - at(waiting["startedAt"])).total_seconds() >= (
        HYPERPOD_WAIT_SECONDS)
    cloud.clock.advance(HYPERPOD_WAIT_SECONDS)
    done = follow(api, cloud, operation_id, timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    hyperpod_stage = stages(done)["hyperpod"]
    assert hyperpod_stage["attempts"] == 1
    assert seconds(hyperpod_stage) >= HYPERPOD_WAIT_SECONDS
    (looked,) = attempts(done, "hyperpod")
    # asked for the cluster, parked the token, looked after the timeout, recorded it
    assert looked["looks"] >= 3
    assert looked.get("nextLookAt") is None


def test_each_csi_driver_gets_its_own_pod_identity_role(api: ApiClient, cloud: Any) -> None:
    # Record the CreateAddon requests EKS receives.
    eks = cloud.emulation.eks
    original = eks.create_addon
    requests: dict[tuple[str, str], dict[str, Any]] = {}

    def create_addon(params: dict[str, Any]) -> Any:
        requests[(params["clusterName"], params["addonName"])] = dict(params)
        return original(params)

    eks.create_addon = create_addon
    s3 = follow(api, cloud, create(api, cloud, "s3"), timeout=240)
    body = demo_request(api, "fsx", BUCKET)
    body["storage"] = {"fsx": {"storageCapacityGiB": 1200}}
    fsx = follow(api, cloud, api.post("/clusters", body)["operationId"], timeout=240)

    assert s3["status"] == "SUCCEEDED", s3.get("error")
    assert fsx["status"] == "SUCCEEDED", fsx.get("error")

    def role(logical_id: str) -> str:
        name = cloud.resources[logical_id]
        return str(cloud.client("iam").get_role(RoleName=name)["Role"]["Arn"])

    assert requests[("hypd-s3", "aws-mountpoint-s3-csi-driver")]["podIdentityAssociations"] == [
        {"serviceAccount": "s3-csi-driver-sa", "roleArn": role("S3CsiDriverRole")}
    ]
    assert requests[("hypd-fsx", "aws-fsx-csi-driver")]["podIdentityAssociations"] == [
        {"serviceAccount": "fsx-csi-controller-sa", "roleArn": role("FsxCsiDriverRole")}
    ]
    # No other add-on of either cluster is given a role.
    assert [key for key, params in requests.items() if params.get("podIdentityAssociations")] \
        == [("hypd-s3", "aws-mountpoint-s3-csi-driver"), ("hypd-fsx", "aws-fsx-csi-driver")]


def _control_plane_zones(cloud: Any, subnet_ids: list[str]) -> list[str]:
    subnets = cloud.client("ec2").describe_subnets(SubnetIds=subnet_ids)["Subnets"]
    by_id = {s["SubnetId"]: s["AvailabilityZone"] for s in subnets}
    return [by_id[s] for s in subnet_ids]


def test_a_zone_eks_refuses_gets_a_new_control_plane_subnet_and_the_create_completes(
    api: ApiClient, cloud: Any
) -> None:
    # EKS refuses us-west-2b, the stack's second zone (the cluster's is us-west-2a): a zone
    # hypd cannot know about in advance.
    body = demo_request(api, "e2e", BUCKET)
    assert body["availabilityZone"] == "us-west-2a"
    cloud.emulation.eks.set_unsupported_zones(["us-west-2b"])

    operation = follow(api, cloud, create(api, cloud), timeout=240)

    assert operation["status"] == "SUCCEEDED", operation.get("error")
    by_name = stages(operation)
    assert by_name["network"]["attempts"] == by_name["eks"]["attempts"] == 1
    recorded = by_name["network"]["output"]
    eks = cloud.client("eks").describe_cluster(name="hypd-e2e")["cluster"]
    subnets = eks["resourcesVpcConfig"]["subnetIds"]
    assert _control_plane_zones(cloud, subnets) == ["us-west-2a", "us-west-2c"]
    assert eks["resourcesVpcConfig"]["vpcId"] == recorded["vpcId"]
    # The stack now points at the subnets EKS took; what it made first is all still there.
    stack = cloud.client("cloudformation").describe_stacks(StackName="hypd-e2e-network")
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Stacks"][0]["Outputs"]}
    assert outputs["ControlPlaneSubnetIds"].split(",") == subnets
    assert _control_plane_zones(cloud, recorded["controlPlaneSubnetIds"]) == [
        "us-west-2a", "us-west-2b"]
    assert outputs["SecurityGroupId"] == recorded["securityGroupId"]
    assert cloud.client("sagemaker").describe_cluster(ClusterName="hypd-e2e")[
        "VpcConfig"]["Subnets"] == [recorded["computeSubnets"]["gpu"]]


def test_a_failed_move_of_the_control_plane_fails_eks_and_a_retry_completes_it(
    api: ApiClient, cloud: Any
) -> None:
    cloud.emulation.eks.set_unsupported_zones(["us-west-2b"])
    cloud.faults.fail("cloudformation", "UpdateStack", code="InsufficientCapabilitiesException",
                      times=1)

    failed = follow(api, cloud, create(api, cloud), timeout=240)

    assert failed["status"] == "FAILED"
    eks_stage = stages(failed)["eks"]
    assert eks_stage["error"]["code"] == "InsufficientCapabilitiesException"
    assert "updating stack hypd-e2e-network" in eks_stage["error"]["message"]

    api.post(f"/operations/{failed['id']}/retry")
    done = follow(api, cloud, failed["id"], timeout=240)

    assert done["status"] == "SUCCEEDED", done.get("error")
    assert stages(done)["network"]["attempts"] == 1
    assert stages(done)["eks"]["attempts"] == 2
    eks = cloud.client("eks").describe_cluster(name="hypd-e2e")["cluster"]
    assert _control_plane_zones(cloud, eks["resourcesVpcConfig"]["subnetIds"]) == [
        "us-west-2a", "us-west-2c"]


@pytest.fixture
def cloud_us_east_1() -> Any:
    from hypd_cli.local import local_parameters
    from hypd_local import LocalCloud

    template = ROOT / "template.yaml"
    with LocalCloud(template, region="us-east-1",
                    parameters=local_parameters(template)) as running:
        yield running
        running.wait_for_executions(timeout=60)


def test_the_second_control_plane_zone_avoids_the_zone_eks_documents_as_unsupported(
    cloud_us_east_1: Any,
) -> None:
    # us-east-1e is use1-az3 here, which EKS documents as unsupported (and the emulated EKS
    # refuses): after us-east-1d, the control plane goes to us-east-1f, at once.
    cloud = cloud_us_east_1
    api = ApiClient(cloud.api_url)
    cloud.client("s3").create_bucket(Bucket=BUCKET)
    body = {**demo_request(api, "e2e", BUCKET), "availabilityZone": "us-east-1d"}

    operation = follow(api, cloud, api.post("/clusters", body)["operationId"], timeout=240)

    assert operation["status"] == "SUCCEEDED", operation.get("error")
    eks = cloud.client("eks").describe_cluster(name="hypd-e2e")["cluster"]
    subnets = eks["resourcesVpcConfig"]["subnetIds"]
    assert subnets == stages(operation)["network"]["output"]["controlPlaneSubnetIds"]
    assert _control_plane_zones(cloud, subnets) == ["us-east-1d", "us-east-1f"]
