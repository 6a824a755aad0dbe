"""Workloads end to end through the REST API on the local cloud: every check refuses before
anything is submitted; a training job runs on the emulated operator's pods, survives a node
fault with one restart shown beside the fault, succeeds and has its logs read; an endpoint is
deployed to ready, listed, invoked through SageMaker's runtime, and deleted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient, ApiError
from hypd_cli.demo import follow
from tests.e2e.capacity import CLUSTER, TAG, make_unhealthy, run, stages
from tests.support import create_body, group_body

TLS_BUCKET = "hyperpod-tls-train"
TRAINING_ON = {"trainingOperator": {"enabled": True}}
INFERENCE_ON = {"inferenceOperator": {"enabled": True, "tlsCertificateBucket": TLS_BUCKET}}


def create(api: ApiClient, cloud: Any, features: dict[str, Any] | None = None,
           *groups: dict[str, Any]) -> None:
    """Cluster `train` (2 ml.g6.4xlarge `workers` by default), with `features` on."""
    s3 = cloud.client("s3")
    for bucket in ("team-data", TLS_BUCKET):
        s3.create_bucket(Bucket=bucket,
                         CreateBucketConfiguration={"LocationConstraint": cloud.region})
    body = create_body(instanceGroups=list(groups) or [group_body()],
                       **({"features": features} if features else {}))
    operation = follow(api, cloud, str(api.post("/clusters", body)["operationId"]),
                       timeout=240)
    assert operation["status"] == "SUCCEEDED", operation.get("error")


def job_body(**fields: Any) -> dict[str, Any]:
    return {"name": "llama-fsdp", "image": "repo/fsdp:1", "instanceType": "ml.g6.4xlarge",
            "nodeCount": 2, "command": ["bash", "-c", "sleep 600"],
            "volumes": [{"claim": "hypd-shared", "mountPath": "/shared"}], **fields}


def refused(call: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call()
    return caught.value


def workload_objects(cloud: Any, plural: str, group: str = "sagemaker.amazonaws.com"
                     ) -> list[dict[str, Any]]:
    store = cloud.emulation.kube.get(CLUSTER).store
    rtype = store.find_type(group, "v1", plural)
    return [] if rtype is None else list(store.list(rtype, None)[0])


def operation_kinds(api: ApiClient) -> list[str]:
    return sorted(o["kind"] for o in api.get("/operations", clusterTag=TAG)["operations"])


def test_every_check_refuses_before_anything_is_submitted(api: ApiClient, cloud: Any) -> None:
    create(api, cloud)
    before = operation_kinds(api)

    off = refused(lambda: api.call("submitTrainingJob", tag=TAG, body=job_body()))
    assert (off.status, off.code) == (409, "FeatureNotEnabled")
    assert off.details["feature"] == "trainingOperator"
    assert 'PATCH /clusters/train/features {"trainingOperator": {"enabled": true}}' in (
        off.message)
    endpoint = {"name": "ep", "instanceType": "ml.g6.4xlarge",
                "jumpStart": {"modelId": "huggingface-llm-falcon-7b", "acceptEula": True}}
    off = refused(lambda: api.call("deployInferenceEndpoint", tag=TAG, body=endpoint))
    assert (off.status, off.details["feature"]) == (409, "inferenceOperator")

    accepted = api.call("setFeatures", tag=TAG, body=TRAINING_ON)
    assert run(api, cloud, accepted)["status"] == "SUCCEEDED"
    before = operation_kinds(api)

    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"instanceType": "ml.p5.48xlarge"}, 400, "instanceType"),
        ({"nodeCount": 3}, 400, "nodeCount"),
        ({"volumes": [{"claim": "no-such-claim", "mountPath": "/data"}]}, 400,
         "volumes[0].claim"),
        ({"name": "Not_A_Name"}, 400, "name"),
        ({"name": "x" * 51}, 400, "name"),
        ({"team": "ml"}, 409, "team"),
        ({"priority": "training"}, 400, "priority"),
        ({"surprise": True}, 400, "surprise"),
    ]
    for fields, status, field in cases:
        error = refused(lambda f=fields: api.call("submitTrainingJob", tag=TAG,
                                                  body=job_body(**f)))
        assert error.status == status, (fields, error)
        assert field in error.message or field in str(error.details), (fields, error)

    assert workload_objects(cloud, "hyperpodpytorchjobs") == []
    assert operation_kinds(api) == before

    # The name is taken: a second submit of the same job is refused before it starts.
    first = api.call("submitTrainingJob", tag=TAG, body=job_body())
    assert run(api, cloud, first)["status"] == "SUCCEEDED"
    taken = refused(lambda: api.call("submitTrainingJob", tag=TAG, body=job_body()))
    assert (taken.status, taken.code) == (409, "WorkloadExists")
    assert "name" in taken.message
    assert len(workload_objects(cloud, "hyperpodpytorchjobs")) == 1

    missing = refused(lambda: api.call("getTrainingJob", tag=TAG, name="nope"))
    assert missing.status == 404


def node_of(pod: dict[str, Any]) -> str:
    return str(pod["node"])


def wait_job(api: ApiClient, cloud: Any, name: str, done: Callable[[dict[str, Any]], bool],
             seconds: float = 3600, tag: str = TAG) -> dict[str, Any]:
    """Advance the virtual clock, 30 s at a time, until `done` holds for the job's view."""
    waited = 0.0
    while True:
        job = api.call("getTrainingJob", tag=tag, name=name)
        if done(job):
            return job
        assert waited < seconds, job
        cloud.clock.advance(30)
        cloud.emulation.tick(wait=True)
        cloud.wait_for_executions(timeout=120)
        waited += 30


def in_phase(*phases: str) -> Callable[[dict[str, Any]], bool]:
    return lambda job: job["phase"] in phases


def test_a_job_survives_a_node_fault_with_one_restart_shown(api: ApiClient,
                                                            cloud: Any) -> None:
    create(api, cloud, TRAINING_ON, group_body(count=3))
    accepted = api.call("submitTrainingJob", tag=TAG,
                        body=job_body(maxRetries=2, command=["bash", "-c",
                                                             "python train.py; sleep 1200"]))
    assert accepted["kind"] == "submit-training-job"
    operation = run(api, cloud, accepted)
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert list(stages(operation)) == ["submit"]

    job = wait_job(api, cloud, "llama-fsdp", in_phase("Running"))
    assert job["restarts"] == 0
    assert len(job["pods"]) == 2
    assert all(p["phase"] == "Running" for p in job["pods"])
    listed = api.call("listTrainingJobs", tag=TAG)["jobs"]
    assert [(j["name"], j["phase"], j["managedByHypd"]) for j in listed] == [
        ("llama-fsdp", "Running", True)]

    hit = node_of(job["pods"][0])
    make_unhealthy(cloud, hit.removeprefix("hyperpod-"))
    job = wait_job(api, cloud, "llama-fsdp",
                   lambda j: j["restarts"] == 1 and j["phase"] == "Running", seconds=900)

    assert job["restarts"] == 1
    assert hit not in {node_of(p) for p in job["pods"]}
    nodes = {n["node"]: n for n in job["nodes"]}
    assert nodes[hit]["current"] is False
    # each node the job runs on names its group, read from the node's label
    assert {n.get("instanceGroup") for n in job["nodes"] if n["current"]} == {"workers"}
    (fault,) = nodes[hit]["faults"]
    assert fault["status"] == "Unhealthy"
    assert fault["recommended"] == "replace"
    assert "NvidiaErrorTerminate" in (fault.get("reason") or "")
    assert any(c["type"] == "Restarting" for c in job["conditions"])
    assert any(e["reason"] == "Restarting" and hit in (e.get("message") or "")
               for e in job["events"])

    job = wait_job(api, cloud, "llama-fsdp", in_phase("Succeeded", "Failed"))
    assert job["phase"] == "Succeeded", job
    assert job["completionTime"] >= job["startTime"]

    logs = api.call("getTrainingJobLogs", tag=TAG, name="llama-fsdp", tail=5)
    assert logs["pod"] == "llama-fsdp-pod-0"
    lines = logs["logs"].splitlines()
    assert 0 < len(lines) <= 5
    every = api.call("getTrainingJobLogs", tag=TAG, name="llama-fsdp", tail=10000)["logs"]
    assert every.endswith(logs["logs"])
    wrong = refused(lambda: api.call("getTrainingJobLogs", tag=TAG, name="llama-fsdp",
                                     pod="other-pod-0"))
    assert wrong.status == 400
    assert "pod" in wrong.message

    deleted = run(api, cloud, api.call("deleteTrainingJob", tag=TAG, name="llama-fsdp"))
    assert deleted["status"] == "SUCCEEDED", deleted.get("error")
    assert workload_objects(cloud, "hyperpodpytorchjobs") == []
    assert api.call("listTrainingJobs", tag=TAG)["jobs"] == []


def test_a_failing_job_fails_with_its_exit_code(api: ApiClient, cloud: Any) -> None:
    create(api, cloud, TRAINING_ON)
    body = job_body(name="crash", nodeCount=1, command=["bash", "-c", "sleep 60; exit 3"])
    assert run(api, cloud, api.call("submitTrainingJob", tag=TAG, body=body))[
        "status"] == "SUCCEEDED"
    job = wait_job(api, cloud, "crash", in_phase("Succeeded", "Failed"))
    assert job["phase"] == "Failed"
    assert job["pods"][0]["phase"] == "Failed"


def test_an_endpoint_is_deployed_listed_invoked_and_deleted(api: ApiClient,
                                                            cloud: Any) -> None:
    create(api, cloud, INFERENCE_ON)
    body = {"name": "falcon", "instanceType": "ml.g6.4xlarge", "replicas": 2,
            "jumpStart": {"modelId": "huggingface-llm-falcon-7b-bf16", "acceptEula": True},
            "sageMakerEndpointName": "falcon"}
    accepted = api.call("deployInferenceEndpoint", tag=TAG, body=body)
    assert accepted["kind"] == "deploy-endpoint"
    operation = run(api, cloud, accepted)
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert [s["status"] for s in operation["stages"]] == ["SUCCEEDED"] * 3

    endpoint = api.call("getInferenceEndpoint", tag=TAG, name="falcon")
    assert endpoint["state"] == "DeploymentComplete"
    assert endpoint["ready"] is True
    assert endpoint["readyReplicas"] == 2
    assert endpoint["sageMaker"]["state"] == "CreationCompleted"
    assert endpoint["invoke"] == "/clusters/train/inference-endpoints/falcon/invoke"
    listed = api.call("listInferenceEndpoints", tag=TAG)["endpoints"]
    assert [(e["name"], e["type"], e["ready"]) for e in listed] == [
        ("falcon", "jumpstart", True)]

    answer = api.call("invokeInferenceEndpoint", tag=TAG, name="falcon",
                      body={"body": {"inputs": "What is HyperPod?"}})
    assert answer["endpointName"] == "falcon"
    assert answer["body"]["input"] == {"inputs": "What is HyperPod?"}

    deleted = run(api, cloud, api.call("deleteInferenceEndpoint", tag=TAG, name="falcon"))
    assert deleted["status"] == "SUCCEEDED", deleted.get("error")
    assert api.call("listInferenceEndpoints", tag=TAG)["endpoints"] == []
    sagemaker = cloud.client("sagemaker")
    assert [e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"]] == []


def test_an_endpoint_without_sagemaker_cannot_be_invoked(api: ApiClient, cloud: Any) -> None:
    create(api, cloud, INFERENCE_ON)
    body = {"name": "custom", "instanceType": "ml.g6.4xlarge",
            "model": {"source": {"s3": {"bucket": "team-data", "prefix": "model/"}},
                      "image": "repo/server:1", "port": 8080}}
    operation = run(api, cloud, api.call("deployInferenceEndpoint", tag=TAG, body=body))
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    assert stages(operation)["register"]["status"] == "SKIPPED"
    endpoint = api.call("getInferenceEndpoint", tag=TAG, name="custom")
    assert endpoint["type"] == "custom"
    assert endpoint["ready"] is True
    assert endpoint.get("invoke") is None
    error = refused(lambda: api.call("invokeInferenceEndpoint", tag=TAG, name="custom",
                                     body={"body": "hello", "contentType": "text/plain"}))
    assert error.status == 409
    assert "not registered" in error.message


def test_a_gated_model_without_the_eula_fails_with_the_operators_message(
        api: ApiClient, cloud: Any) -> None:
    create(api, cloud, INFERENCE_ON)
    body = {"name": "llama", "instanceType": "ml.g6.4xlarge",
            "jumpStart": {"modelId": "meta-textgeneration-llama-3-1-8b", "acceptEula": False}}
    operation = run(api, cloud, api.call("deployInferenceEndpoint", tag=TAG, body=body))
    assert operation["status"] == "FAILED"
    assert operation["error"]["code"] == "DeploymentFailed"
    assert "eula" in operation["error"]["message"].lower()
    assert stages(operation)["deploy"]["status"] == "FAILED"
