"""The emulated training and inference operators (`hypd_local.emulation_operators`,
`emulation_endpoints`): pods placed by the scheduler, status, events, logs, restarts, SageMaker
endpoints, finalizers.

The operators run as `Emulation.tick` runs them, on a frozen virtual clock the tests move
(nothing sleeps; durations are exact); objects are read from the cluster's store, logs through
the Kubernetes API (plain HTTPS and the real kubectl)."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hypd_local.clock import VirtualClock
from hypd_local.emulation import Emulation, _WallClock
from hypd_local.emulation_behave import ModelError
from hypd_local.emulation_endpoints import FINALIZER
from hypd_local.emulation_workloads import find_object
from hypd_local.emulator.eks_catalog import access_policy_arn
from hypd_local.emulator.eks_workloads import WORKLOADS
from hypd_local.emulator.errors import AwsError
from hypd_local.kube import CLUSTER_ADMIN, VIEW, KubeApiRegistry, KubeApiServer
from hypd_local.kube.errors import KubeError
from hypd_local.kube.logs import PodLogs, log_text
from hypd_local.kube.resources import ResourceType
from tests.emulator.test_eks import INFERENCE_CONFIG, TRAINING
from tests.kube.conftest import Principals, eks_token
from tests.kube.test_addon_workloads import ROLE, Cloud, D
from tests.kubectl import Kubectl, write_kubeconfig

INFERENCE = "amazon-sagemaker-hyperpod-inference"
HEALTH = "sagemaker.amazonaws.com/node-health-status"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
G5 = "ml.g5.8xlarge"
C5 = "ml.c5.xlarge"
CONTAINER = "pytorch-job-container"
JOBS = ("sagemaker.amazonaws.com", "hyperpodpytorchjobs")
JUMPSTART = ("inference.sagemaker.aws.amazon.com", "jumpstartmodels")
CONFIGS = ("inference.sagemaker.aws.amazon.com", "inferenceendpointconfigs")


class OperatorCloud(Cloud):
    """`Cloud` whose Kubernetes APIs speak TLS and check tokens against moto's STS."""

    def __init__(self, sts_endpoint: str) -> None:
        super().__init__()
        self.kube = KubeApiRegistry(self.clock, sts_endpoint=sts_endpoint,
                                    token_clock=_WallClock())
        self.emulation.kube = self.kube

    def join(self, name: str, instance_type: str = G5, *, ready: bool = True) -> None:
        self.server().join_node(name, {INSTANCE_TYPE: instance_type, HEALTH: "Schedulable"},
                                ready=ready)

    def rtype(self, kind: tuple[str, str]) -> ResourceType:
        return next(t for t in self.server().store.all_types()
                    if (t.group, t.plural) == kind and t.storage)

    def create(self, kind: tuple[str, str], body: dict[str, Any]) -> None:
        self.server().store.create(self.rtype(kind), "default", body, "kubectl")

    def get(self, kind: tuple[str, str], name: str) -> dict[str, Any] | None:
        return find_object(self.server().store, self.rtype(kind), "default", name)

    def pods(self, label: str) -> list[dict[str, Any]]:
        store = self.server().store
        items = store.list(store.builtin_type("", "pods"), "default", label_selector=label)[0]
        return sorted(items, key=lambda p: p["metadata"]["name"])

    def events(self, name: str) -> list[tuple[str, str, str]]:
        store = self.server().store
        items = store.list(store.builtin_type("", "events"), "default")[0]
        return [(e["type"], e["reason"], e["message"]) for e in items
                if e["involvedObject"]["name"] == name]


@pytest.fixture
def cloud(sts_endpoint: str) -> Iterator[OperatorCloud]:
    """An ACTIVE EKS cluster ``ml`` with the training and inference operators' add-ons."""
    made = OperatorCloud(sts_endpoint)
    made.eks.create_cluster({"name": "ml", "roleArn": ROLE,
                             "resourcesVpcConfig": {"subnetIds": ["subnet-a", "subnet-b"]},
                             "accessConfig": {"authenticationMode": "API"}})
    made.advance(12 * 60)
    for name in ("cert-manager", "eks-pod-identity-agent", "aws-mountpoint-s3-csi-driver",
                 "aws-fsx-csi-driver", "metrics-server"):
        made.addon(name)
    made.advance(D.addon_create)
    made.addon(TRAINING)
    made.addon(INFERENCE, configurationValues=INFERENCE_CONFIG)
    made.advance(D.addon_create)
    yield made
    made.kube.stop_all()


def job(name: str, args: str, *, replicas: int = 2, retries: int | None = None,
        instance_type: str = G5) -> dict[str, Any]:
    """A HyperPodPyTorchJob as hypd writes it (docs/workloads.md)."""
    spec: dict[str, Any] = {"nprocPerNode": "auto", "replicaSpecs": [{
        "name": "pod", "replicas": replicas, "template": {
            "metadata": {"labels": {"team": "ml"}},
            "spec": {"nodeSelector": {INSTANCE_TYPE: instance_type}, "containers": [{
                "name": CONTAINER, "image": "fsdp:latest", "command": ["sh", "-c"],
                "args": [args],
                "resources": {"requests": {"nvidia.com/gpu": "1"},
                              "limits": {"nvidia.com/gpu": "1"}}}]}}}]}
    if retries is not None:
        spec["runPolicy"] = {"jobMaxRetryCount": retries, "cleanPodPolicy": "None"}
    return {"metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "hypd"}},
            "spec": spec}


def conditions(obj: dict[str, Any] | None) -> list[tuple[str, str]]:
    assert obj is not None
    return [(c["type"], c["status"]) for c in obj["status"]["conditions"]]


def job_phase(obj: dict[str, Any] | None) -> str | None:
    """What hypd reads: the type of the last condition whose status is True."""
    return next((t for t, s in reversed(conditions(obj)) if s == "True"), None)


def nodes_of(pods: list[dict[str, Any]]) -> list[str | None]:
    return [p["spec"].get("nodeName") for p in pods]


# --------------------------------------------------------------------------- training jobs

def test_job_pods_run_on_nodes_of_its_type_then_succeed_after_the_sleep(
    cloud: OperatorCloud,
) -> None:
    for name, itype in (("hyperpod-i-a", G5), ("hyperpod-i-b", C5), ("hyperpod-i-c", G5)):
        cloud.join(name, itype)
    cloud.create(JOBS, job("llama", "python train.py && sleep 30"))
    start = cloud.clock.now()
    cloud.advance(0)

    pods = cloud.pods("HPJob=llama")
    assert [p["metadata"]["name"] for p in pods] == ["llama-pod-0", "llama-pod-1"]
    assert nodes_of(pods) == ["hyperpod-i-a", "hyperpod-i-c"]
    pod = pods[0]
    assert pod["metadata"]["labels"] == {"team": "ml", "HPJob": "llama"}
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == (
        "HyperPodPyTorchJob", "llama", True)
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["startTime"]
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]} == {
        "PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True",
        "ContainersReady": "True", "PodScheduled": "True"}
    status = pod["status"]["containerStatuses"][0]
    assert (status["name"], status["ready"], status["restartCount"]) == (CONTAINER, True, 0)
    assert status["state"]["running"]["startedAt"]
    assert cloud.events("llama-pod-1") == [
        ("Normal", "Scheduled", "Successfully assigned default/llama-pod-1 to hyperpod-i-c")]
    scheduled = next(e for e in cloud.server().store.list(
        cloud.server().store.builtin_type("", "events"), "default")[0]
        if e["involvedObject"]["name"] == "llama-pod-0")
    assert scheduled["source"] == {"component": "default-scheduler"}
    running = cloud.get(JOBS, "llama")
    assert conditions(running) == [("Created", "True"), ("Running", "True")]
    assert running is not None
    assert running["status"]["restartCount"] == 0
    assert running["status"]["startTime"]
    assert cloud.emulation.next_due() == start + timedelta(seconds=30)

    cloud.advance(29)
    assert job_phase(cloud.get(JOBS, "llama")) == "Running"
    cloud.advance(1)
    done = cloud.get(JOBS, "llama")
    assert conditions(done) == [("Created", "True"), ("Running", "True"),
                                ("Succeeded", "True")]
    assert done is not None
    assert done["status"]["completionTime"]
    assert done["status"]["conditions"][-1]["message"] == (
        "HyperPodPyTorchJob default/llama successfully completed.")
    pods = cloud.pods("HPJob=llama")
    assert [p["status"]["phase"] for p in pods] == ["Succeeded", "Succeeded"]
    assert pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert [(t, r) for t, r, _m in cloud.events("llama")] == [
        ("Normal", "Created"), ("Normal", "Running"), ("Normal", "Succeeded")]
    assert cloud.emulation.next_due() is None


def test_an_exit_code_fails_the_job_and_behave_overrides_the_command(
    cloud: OperatorCloud,
) -> None:
    cloud.join("hyperpod-i-a")
    cloud.create(JOBS, job("crash", "sleep 5; exit 3", replicas=1))
    cloud.advance(0)
    cloud.advance(5)
    failed = cloud.get(JOBS, "crash")
    assert job_phase(failed) == "Failed"
    pod = cloud.pods("HPJob=crash")[0]
    assert pod["status"]["phase"] == "Failed"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert cloud.events("crash")[-1][:2] == ("Warning", "Failed")

    # Given a job whose command would run 1000 s and fail, a test's behave wins
    cloud.emulation.workloads.behave("default", "quick", seconds=10, exit_code=0)
    cloud.create(JOBS, job("quick", "sleep 1000; exit 2", replicas=1))
    cloud.advance(0)
    cloud.advance(10)
    assert job_phase(cloud.get(JOBS, "quick")) == "Succeeded"

    # and the admin route sets the same fields (checked as every route checks them)
    route = cloud.emulation.admin_routes()[("POST", "/_local/faults/workloads/behave")]
    assert route({"namespace": "default", "name": "slow", "seconds": 7.5, "exitCode": 1,
                  "logs": ["one", "two"]})[0] == 201
    assert route({"namespace": "default", "name": "slow", "seconds": "7"}) == (
        400, {"message": "seconds: must be a number"})
    assert route({"namespace": "default"})[0] == 400
    cloud.create(JOBS, job("slow", "true", replicas=1))
    cloud.advance(0)
    cloud.advance(7.5)
    assert job_phase(cloud.get(JOBS, "slow")) == "Failed"


def test_an_unhealthy_node_restarts_the_job_once_on_a_healthy_node(cloud: OperatorCloud) -> None:
    for name in ("hyperpod-i-a", "hyperpod-i-b", "hyperpod-i-c"):
        cloud.join(name)
    cloud.create(JOBS, job("fsdp", "sleep 100", retries=1))
    cloud.advance(0)
    assert nodes_of(cloud.pods("HPJob=fsdp")) == ["hyperpod-i-a", "hyperpod-i-b"]
    cloud.advance(40)

    # HyperPod marks the node as its emulator's sync does for a node in Failure
    cloud.server().update_node("hyperpod-i-a", labels={HEALTH: "UnschedulablePendingReplacement"},
                               ready=False)
    cloud.advance(1)

    restarted = cloud.get(JOBS, "fsdp")
    assert restarted is not None
    assert restarted["status"]["restartCount"] == 1
    restarting = next(c for c in restarted["status"]["conditions"] if c["type"] == "Restarting")
    assert "hyperpod-i-a" in restarting["message"]
    assert job_phase(restarted) == "Running"  # both pods run again: Restarting is False again
    assert restarting["status"] == "False"
    warning = [e for e in cloud.events("fsdp") if e[1] == "Restarting"]
    assert len(warning) == 1
    assert warning[0][0] == "Warning"
    assert "hyperpod-i-a" in warning[0][2]
    pods = cloud.pods("HPJob=fsdp")
    assert nodes_of(pods) == ["hyperpod-i-b", "hyperpod-i-c"]
    assert all(p["status"]["phase"] == "Running" for p in pods)

    cloud.advance(99)  # the run time starts over with the restart
    assert job_phase(cloud.get(JOBS, "fsdp")) == "Running"
    cloud.advance(1)
    assert job_phase(cloud.get(JOBS, "fsdp")) == "Succeeded"


def test_a_restart_waits_for_a_healthy_node_and_retries_run_out(cloud: OperatorCloud) -> None:
    cloud.join("hyperpod-i-a")
    cloud.join("hyperpod-i-cpu", C5)  # the operator's own pod runs here meanwhile
    cloud.create(JOBS, job("one", "sleep 60", replicas=1, retries=1))
    cloud.advance(0)
    cloud.server().set_node_ready("hyperpod-i-a", False)
    cloud.advance(1)

    # restarted, but no healthy node is free: the new pod waits
    waiting = cloud.get(JOBS, "one")
    assert job_phase(waiting) == "Restarting"
    pod = cloud.pods("HPJob=one")[0]
    assert pod["status"]["phase"] == "Pending"
    assert "nodeName" not in pod["spec"]

    cloud.server().set_node_ready("hyperpod-i-a", True)  # HyperPod rebooted it
    cloud.advance(1)
    assert job_phase(cloud.get(JOBS, "one")) == "Running"
    cloud.server().remove_node("hyperpod-i-a")
    cloud.advance(1)
    failed = cloud.get(JOBS, "one")
    assert failed is not None
    assert job_phase(failed) == "Failed"
    assert failed["status"]["restartCount"] == 1
    assert "hyperpod-i-a left the cluster" in failed["status"]["conditions"][-1]["message"]
    assert "jobMaxRetryCount: 1" in failed["status"]["conditions"][-1]["message"]


def test_without_max_retries_a_node_fault_fails_the_job(cloud: OperatorCloud) -> None:
    cloud.join("hyperpod-i-a")
    cloud.create(JOBS, job("once", "sleep 60", replicas=1))
    cloud.advance(0)
    cloud.server().update_node("hyperpod-i-a", labels={HEALTH: "Unschedulable"})
    cloud.advance(1)
    failed = cloud.get(JOBS, "once")
    assert job_phase(failed) == "Failed"
    assert failed is not None
    assert failed["status"]["restartCount"] == 0
    pod = cloud.pods("HPJob=once")[0]
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


def test_without_enough_nodes_pods_stay_pending_with_the_scheduler_s_words(
    cloud: OperatorCloud,
) -> None:
    cloud.join("hyperpod-i-a")
    cloud.join("hyperpod-i-b", C5)
    cloud.join("hyperpod-i-c", ready=False)
    cloud.create(JOBS, job("big", "sleep 10", replicas=2))
    cloud.advance(0)

    pods = cloud.pods("HPJob=big")
    assert nodes_of(pods) == ["hyperpod-i-a", None]
    pending = pods[1]
    assert pending["status"]["phase"] == "Pending"
    scheduled = pending["status"]["conditions"][0]
    message = ("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match "
               "Pod's node affinity/selector, 1 node(s) had untolerated taint "
               "{node.kubernetes.io/not-ready: }. preemption: 0/3 nodes are available: 3 "
               "Preemption is not helpful for scheduling.")
    assert (scheduled["type"], scheduled["status"], scheduled["reason"],
            scheduled["message"]) == ("PodScheduled", "False", "Unschedulable", message)
    assert cloud.events("big-pod-1") == [("Warning", "FailedScheduling", message)]
    assert job_phase(cloud.get(JOBS, "big")) == "Created"
    cloud.advance(5)
    assert len(cloud.events("big-pod-1")) == 1  # the same reason is told once

    cloud.server().set_node_ready("hyperpod-i-c", True)
    cloud.advance(1)
    assert nodes_of(cloud.pods("HPJob=big")) == ["hyperpod-i-a", "hyperpod-i-c"]
    assert job_phase(cloud.get(JOBS, "big")) == "Running"


def test_a_job_is_untouched_without_the_operator_and_its_pods_go_with_it(
    cloud: OperatorCloud,
) -> None:
    cloud.join("hyperpod-i-a")
    cloud.eks.delete_addon({"clusterName": "ml", "addonName": TRAINING})
    cloud.advance(D.addon_delete)
    # the CRD applied by hand (as a Helm chart would), no operator
    cloud.server().ensure_crds([c.manifest() for c in WORKLOADS[TRAINING].crds], "helm")
    cloud.create(JOBS, job("idle", "sleep 10", replicas=1))
    cloud.advance(60)
    idle = cloud.get(JOBS, "idle")
    assert idle is not None
    assert "status" not in idle
    assert cloud.pods("HPJob=idle") == []

    cloud.addon(TRAINING)
    cloud.advance(D.addon_create)
    assert job_phase(cloud.get(JOBS, "idle")) == "Running"
    cloud.server().store.delete(cloud.rtype(JOBS), "default", "idle")
    cloud.advance(1)  # the garbage collector deletes the pods of a job that is gone
    assert cloud.pods("HPJob=idle") == []


# --------------------------------------------------------------------------- logs

def _access(cloud: OperatorCloud, principals: Principals, policy: str) -> str:
    """A role with an access entry on ``ml`` and ``policy`` at cluster scope; its token."""
    arn, session = principals.role("logs")
    cloud.eks.create_access_entry({"clusterName": "ml", "principalArn": arn})
    cloud.eks.associate_access_policy({"clusterName": "ml", "principalArn": arn,
                                       "policyArn": access_policy_arn("aws", policy),
                                       "accessScope": {"type": "cluster"}})
    return eks_token(session, "ml")


def _get(server: KubeApiServer, path: str, token: str) -> tuple[int, str, str]:
    """GET ``path`` as ``token``: the status, the Content-Type and the body."""
    assert server.certificate_authority_data is not None
    context = ssl.create_default_context(
        cadata=base64.b64decode(server.certificate_authority_data).decode())
    connection = http.client.HTTPSConnection(server.host, server.port, context=context,
                                             timeout=30)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        answer = connection.getresponse()
        return answer.status, str(answer.headers["Content-Type"]), answer.read().decode()
    finally:
        connection.close()


def test_pod_logs_through_the_api_and_kubectl(cloud: OperatorCloud, principals: Principals,
                                              tmp_path: Path) -> None:
    cloud.join("hyperpod-i-a")
    cloud.create(JOBS, job("talk", "python train.py; sleep 40", replicas=1))
    cloud.advance(0)
    start = cloud.clock.now()
    server = cloud.server()
    token = _access(cloud, principals, VIEW)  # the view policy reads pods/log, as on EKS
    base = "/api/v1/namespaces/default/pods/talk-pod-0/log"

    status, kind, text = _get(server, base, token)
    assert (status, kind) == (200, "text/plain")
    assert text.splitlines() == ["Starting pod talk-pod-0 on node hyperpod-i-a",
                                 "+ sh -c python train.py; sleep 40"]
    cloud.advance(40)
    lines = _get(server, base, token)[2].splitlines()
    assert lines[2:] == ["progress: 25% (10s of 40s)", "progress: 50% (20s of 40s)",
                         "progress: 75% (30s of 40s)", "exited with code 0"]
    query = urllib.parse.urlencode({"tailLines": 2, "container": CONTAINER})
    assert _get(server, f"{base}?{query}", token)[2].splitlines() == [
        "progress: 75% (30s of 40s)", "exited with code 0"]
    assert _get(server, f"{base}?sinceSeconds=15", token)[2].splitlines() == [
        "progress: 75% (30s of 40s)", "exited with code 0"]
    end = (start + timedelta(seconds=40)).strftime("%Y-%m-%dT%H:%M:%S.%f")
    assert _get(server, f"{base}?timestamps=true&tailLines=1", token)[2] == (
        f"{end}000Z exited with code 0\n")  # the kubelet's RFC3339NanoFixed

    status, _kind, body = _get(server, f"{base}?container=nope", token)
    assert (status, json.loads(body)["reason"], json.loads(body)["message"]) == (
        400, "BadRequest", "container nope is not valid for pod talk-pod-0")
    status, _kind, body = _get(server, "/api/v1/namespaces/default/pods/ghost/log", token)
    assert (status, json.loads(body)["message"]) == (404, 'pods "ghost" not found')
    status, _kind, body = _get(server, f"{base}?previous=true", token)
    assert status == 400

    config = write_kubeconfig(tmp_path / "kubeconfig", server.url,
                              server.certificate_authority_data,
                              _access(cloud, principals, CLUSTER_ADMIN))
    kubectl = Kubectl(config, tmp_path / "home")
    assert kubectl.run("logs", "talk-pod-0", "--tail=2").splitlines() == [
        "progress: 75% (30s of 40s)", "exited with code 0"]
    assert kubectl.run("logs", "talk-pod-0", "-c", CONTAINER, "--tail=1") == (
        "exited with code 0\n")
    assert "container nope is not valid for pod talk-pod-0" in kubectl.fails(
        "logs", "talk-pod-0", "-c", "nope")
    listed = kubectl.run("get", "pods", "-l", "HPJob=talk", "-o", "wide").splitlines()
    assert listed[1].split()[:4] == ["talk-pod-0", "0/1", "Completed", "0"]
    assert "hyperpod-i-a" in listed[1]


def test_behave_logs_are_spread_over_the_run(cloud: OperatorCloud) -> None:
    cloud.join("hyperpod-i-a")
    cloud.emulation.workloads.behave("default", "said", seconds=20, logs=["a", "b", "c"])
    cloud.create(JOBS, job("said", "sleep 1", replicas=1))
    cloud.advance(0)
    def said() -> list[str]:
        lines = cloud.server().logs.lines("default", "said-pod-0", CONTAINER, previous=False,
                                          now=cloud.clock.now())
        assert lines is not None
        return [line.text for line in lines]

    assert said() == ["a"]
    cloud.advance(10)
    assert said() == ["a", "b"]
    cloud.advance(10)
    assert said() == ["a", "b", "c"]


# --------------------------------------------------------------------------- inference

def jumpstart(name: str, model_id: str, *, accept: bool = True, replicas: int = 1,
              endpoint: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"model": {"modelId": model_id, "modelVersion": "2.0.4",
                                      "acceptEula": accept},
                            "server": {"instanceType": G5}, "replicas": replicas}
    if endpoint:
        spec["sageMakerEndpoint"] = {"name": endpoint}
    return {"metadata": {"name": name}, "spec": spec}


def state(obj: dict[str, Any] | None) -> str:
    assert obj is not None
    assert obj["status"]["state"] == obj["status"]["deploymentStatus"][
        "deploymentObjectOverallState"]
    return str(obj["status"]["state"])


def test_a_jumpstart_model_deploys_registers_its_endpoint_and_is_deleted(
    cloud: OperatorCloud,
) -> None:
    cloud.join("hyperpod-i-a")
    cloud.join("hyperpod-i-b")
    cloud.create(JUMPSTART, jumpstart("llama-ep", "meta-textgeneration-llama-3-1-8b",
                                      replicas=2, endpoint="Llama-EP"))
    cloud.advance(0)
    pending = cloud.get(JUMPSTART, "llama-ep")
    assert state(pending) == "DeploymentPending"
    assert pending is not None
    assert pending["metadata"]["finalizers"] == [FINALIZER]
    cloud.advance(5)
    deploying = cloud.get(JUMPSTART, "llama-ep")
    assert state(deploying) == "DeploymentInProgress"
    assert nodes_of(cloud.pods("inference.sagemaker.aws.amazon.com/endpoint-name=llama-ep")) == [
        "hyperpod-i-a", "hyperpod-i-b"]
    cloud.advance(119)
    assert state(cloud.get(JUMPSTART, "llama-ep")) == "DeploymentInProgress"
    cloud.advance(1)

    complete = cloud.get(JUMPSTART, "llama-ep")
    assert state(complete) == "DeploymentComplete"
    assert complete is not None
    assert complete["status"]["deploymentStatus"]["status"] == {
        "replicas": 2, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 2}
    arn = "arn:aws:sagemaker:us-west-2:123456789012:endpoint/llama-ep"
    assert complete["status"]["endpoints"]["sagemaker"]["state"] == "CreationInProgress"
    assert complete["status"]["endpoints"]["sagemaker"]["endpointArn"] == arn
    assert [(c["type"], c["status"]) for c in complete["status"]["conditions"]] == [
        ("DeploymentPending", "False"), ("DeploymentInProgress", "False"),
        ("DeploymentComplete", "True")]
    endpoints = cloud.emulation.endpoints
    assert endpoints.describe_endpoint({"EndpointName": "Llama-EP"})["EndpointStatus"] == (
        "Creating")
    cloud.advance(30)
    registered = cloud.get(JUMPSTART, "llama-ep")
    assert registered is not None
    assert registered["status"]["endpoints"]["sagemaker"]["state"] == "CreationCompleted"
    described = endpoints.describe_endpoint({"EndpointName": "Llama-EP"})
    assert (described["EndpointArn"], described["EndpointStatus"]) == (arn, "InService")
    assert [e["EndpointName"] for e in endpoints.list_endpoints({})["Endpoints"]] == ["Llama-EP"]
    answer = endpoints.invoke_endpoint({"EndpointName": "Llama-EP", "Body": b'{"q": 1}'})
    assert json.loads(answer["Body"]) == {"model": "meta-textgeneration-llama-3-1-8b",
                                          "endpoint": "Llama-EP", "input": {"q": 1}}
    cloud.emulation.workloads.behave("default", "llama-ep",
                                     model_error=ModelError(400, "bad prompt"))
    with pytest.raises(AwsError) as refused:
        endpoints.invoke_endpoint({"EndpointName": "Llama-EP", "Body": b"x"})
    assert (refused.value.code, refused.value.status,
            refused.value.fields["OriginalStatusCode"]) == ("ModelError", 424, 400)

    # Deleting: the finalizer holds the object while the operator takes everything down
    cloud.server().store.delete(cloud.rtype(JUMPSTART), "default", "llama-ep")
    cloud.advance(0)
    deleting = cloud.get(JUMPSTART, "llama-ep")
    assert deleting is not None
    assert deleting["metadata"]["deletionTimestamp"]
    assert state(deleting) == "DeletionInProgress"
    assert cloud.pods("inference.sagemaker.aws.amazon.com/endpoint-name=llama-ep") == []
    with pytest.raises(AwsError) as gone:
        endpoints.describe_endpoint({"EndpointName": "Llama-EP"})
    assert gone.value.message == f'Could not find endpoint "{arn}".'
    cloud.advance(5)
    assert cloud.get(JUMPSTART, "llama-ep") is None


def test_a_gated_model_without_the_eula_fails(cloud: OperatorCloud) -> None:
    cloud.join("hyperpod-i-a")
    cloud.create(JUMPSTART, jumpstart("gated", "meta-textgeneration-llama-3-1-8b",
                                      accept=False))
    cloud.advance(0)
    failed = cloud.get(JUMPSTART, "gated")
    assert state(failed) == "DeploymentFailed"
    assert failed is not None
    assert "acceptEula" in failed["status"]["deploymentStatus"]["message"]
    assert cloud.pods("inference.sagemaker.aws.amazon.com/endpoint-name=gated") == []


def test_an_endpoint_without_nodes_of_its_type_waits_then_fails_at_its_deadline(
    cloud: OperatorCloud,
) -> None:
    cloud.join("hyperpod-i-a", C5)
    cloud.create(CONFIGS, {"metadata": {"name": "custom"}, "spec": {
        "modelName": "custom", "instanceType": G5, "replicas": 1,
        "maxDeployTimeInSeconds": 600, "invocationEndpoint": "invocations",
        "modelSourceConfig": {"modelSourceType": "s3",
                              "s3Storage": {"bucketName": "models", "region": "us-west-2"}},
        "worker": {"image": "djl:latest", "modelInvocationPort": {"containerPort": 8080},
                   "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"},
                   "resources": {}}}})
    cloud.advance(0)
    cloud.advance(5)
    waiting = cloud.get(CONFIGS, "custom")
    assert state(waiting) == "DeploymentInProgress"
    assert waiting is not None
    assert "0/1 replicas ready; 0/1 nodes are available: 1 node(s) didn't match" in (
        waiting["status"]["deploymentStatus"]["message"])
    assert cloud.emulation.next_due() == cloud.clock.now() + timedelta(seconds=595)
    cloud.advance(595)
    failed = cloud.get(CONFIGS, "custom")
    assert state(failed) == "DeploymentFailed"
    assert failed is not None
    assert "600 seconds" in failed["status"]["deploymentStatus"]["message"]
    assert cloud.pods("inference.sagemaker.aws.amazon.com/endpoint-name=custom") == []


def test_an_endpoint_pod_on_a_failed_node_is_made_again_elsewhere(cloud: OperatorCloud) -> None:
    cloud.join("hyperpod-i-a")
    cloud.join("hyperpod-i-b")
    cloud.emulation.workloads.behave("default", "small", seconds=0)
    cloud.create(JUMPSTART, jumpstart("small", "huggingface-llm-qwen2-7b"))
    for seconds in (0, 5):
        cloud.advance(seconds)
    label = "inference.sagemaker.aws.amazon.com/endpoint-name=small"
    assert state(cloud.get(JUMPSTART, "small")) == "DeploymentComplete"
    assert nodes_of(cloud.pods(label)) == ["hyperpod-i-a"]

    cloud.server().update_node("hyperpod-i-a", labels={HEALTH: "UnschedulablePendingReboot"})
    cloud.advance(1)
    assert nodes_of(cloud.pods(label)) == ["hyperpod-i-b"]
    complete = cloud.get(JUMPSTART, "small")
    assert complete is not None
    assert complete["status"]["deploymentStatus"]["status"]["readyReplicas"] == 1


def test_emulation_without_a_kubernetes_api_has_no_workload_due() -> None:
    emulation = Emulation(clock=VirtualClock(ticking=False), emit=lambda *_a, **_k: None,
                          account_id="123456789012", region="us-west-2")
    assert emulation.next_due() is None


def test_log_answers_follow_the_api_server_s_checks() -> None:
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    logs = PodLogs()
    pod: dict[str, Any] = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {
        "containers": [{"name": "a"}, {"name": "b"}]}}
    assert log_text(logs, pod, {"container": "a"}, now) == ""  # not on a node: no lines
    pod["spec"]["nodeName"] = "n"
    with pytest.raises(KubeError) as which:
        log_text(logs, pod, {}, now)
    assert which.value.message == (
        "a container name must be specified for pod p, choose one of: [a b]")
    logs.write("ns", "p", "a", [(now, "first"), (now + timedelta(seconds=5), "later")])
    assert log_text(logs, pod, {"container": "a"}, now) == "first\n"  # not yet written
    assert log_text(logs, pod, {"container": "a", "limitBytes": "3"}, now) == "fir"
    with pytest.raises(KubeError) as previous:
        log_text(logs, pod, {"container": "a", "previous": "true"}, now)
    assert previous.value.message == 'previous terminated container "a" in pod "p" not found'
    logs.restart("ns", "p", "a")
    assert log_text(logs, pod, {"container": "a", "previous": "true"},
                    now + timedelta(seconds=5)) == "first\nlater\n"
    with pytest.raises(KubeError):
        log_text(logs, pod, {"container": "a", "tailLines": "-1"}, now)
