"""The emulated operators end to end on a local cloud: a training job restarted when HyperPod
marks its node unhealthy (the ``/_local/faults/hyperpod/node-unhealthy`` route) and running
again after the reboot; the SageMaker endpoints the inference operator registers, through
boto3's ``sagemaker`` (DescribeEndpoint, ListEndpoints) and ``sagemaker-runtime``
(InvokeEndpoint, which signs as ``sagemaker`` too), authorised as IAM would for an issued
principal, and the ``/_local/faults/workloads/behave`` route over HTTP.

The clock is frozen: the test moves it, nothing sleeps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from botocore.exceptions import ClientError

from hypd_local import LocalCloud
from hypd_local.clock import VirtualClock
from hypd_local.emulation import Emulation
from tests.emulator.test_eks import INFERENCE_CONFIG, TRAINING
from tests.kube.test_addon_workloads import D
from tests.kube.test_emulated_operators import job, job_phase
from tests.local_cloud.conftest import FIXTURE_TEMPLATE
from tests.local_cloud.test_emulation import (
    active_eks,
    create_hyperpod,
    group_spec,
    nodes,
    unique,
    wait_for_hyperpod,
)
from tests.local_cloud.test_features_cloud import session_with

INFERENCE = "amazon-sagemaker-hyperpod-inference"
GROUP = "inference.sagemaker.aws.amazon.com"


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    with LocalCloud(FIXTURE_TEMPLATE, clock=VirtualClock(ticking=False)) as running:
        yield running


def emulation(cloud: LocalCloud) -> Emulation:
    assert cloud.emulation is not None
    return cloud.emulation


def advance(cloud: LocalCloud, seconds: float) -> None:
    cloud.clock.advance(seconds)
    emulation(cloud).tick(wait=True)  # the real-time ticker may have held the tick


def deployed_endpoint(cloud: LocalCloud, endpoint: str) -> str:
    """An EKS cluster with the inference add-on, a node of the type, and a JumpStartModel
    whose SageMaker endpoint ``endpoint`` is registered; the model's name."""
    cluster, _network = active_eks(cloud, unique("serving"))
    eks = cloud.client("eks")
    for addon in ("cert-manager", "aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver",
                  "metrics-server"):
        eks.create_addon(clusterName=cluster["name"], addonName=addon)
    advance(cloud, D.addon_create)
    eks.create_addon(clusterName=cluster["name"], addonName=INFERENCE,
                     configurationValues=INFERENCE_CONFIG)
    advance(cloud, D.addon_create)
    kube = emulation(cloud).kube
    assert kube is not None
    server = kube.get(cluster["name"])
    assert server is not None
    server.join_node("hyperpod-i-0serving", {
        "node.kubernetes.io/instance-type": "ml.g5.8xlarge",
        "sagemaker.amazonaws.com/node-health-status": "Schedulable"})
    models = server.store.find_type(GROUP, "v1", "jumpstartmodels")
    assert models is not None
    name = unique("qwen")
    server.store.create(models, "default", {"metadata": {"name": name}, "spec": {
        "model": {"modelId": "huggingface-llm-qwen2-7b", "acceptEula": False},
        "server": {"instanceType": "ml.g5.8xlarge"},
        "sageMakerEndpoint": {"name": endpoint}}}, "kubectl")
    for seconds in (0, 5, 0, 120, 30):
        advance(cloud, seconds)
    stored = server.store.get(models, "default", name)
    assert stored["status"]["endpoints"]["sagemaker"]["state"] == "CreationCompleted"
    return name


def error(info: pytest.ExceptionInfo[ClientError]) -> tuple[str, str, int]:
    response: Any = info.value.response
    return (response["Error"]["Code"], response["Error"]["Message"],
            response["ResponseMetadata"]["HTTPStatusCode"])


def test_a_registered_endpoint_is_described_listed_and_invoked(cloud: LocalCloud) -> None:
    model = deployed_endpoint(cloud, "Qwen-Chat")
    arn = f"arn:aws:sagemaker:{cloud.region}:123456789012:endpoint/qwen-chat"
    sagemaker = cloud.client("sagemaker")
    described = sagemaker.describe_endpoint(EndpointName="Qwen-Chat")
    assert (described["EndpointArn"], described["EndpointStatus"]) == (arn, "InService")
    assert [e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"]] == ["Qwen-Chat"]
    with pytest.raises(ClientError) as unknown:
        sagemaker.describe_endpoint(EndpointName="nope")
    assert error(unknown)[:2] == (
        "ValidationException",
        f'Could not find endpoint "arn:aws:sagemaker:{cloud.region}:123456789012:endpoint/nope".')

    runtime = cloud.client("sagemaker-runtime")
    answer = runtime.invoke_endpoint(EndpointName="Qwen-Chat", Body=b'{"inputs": "hi"}',
                                     ContentType="application/json")
    assert json.loads(answer["Body"].read()) == {
        "model": "huggingface-llm-qwen2-7b", "endpoint": "Qwen-Chat", "input": {"inputs": "hi"}}
    assert (answer["ContentType"], answer["InvokedProductionVariant"]) == (
        "application/json", "AllTraffic")
    with pytest.raises(ClientError) as missing:
        runtime.invoke_endpoint(EndpointName="nope", Body=b"{}")
    assert error(missing) == ("ValidationError", "Endpoint nope of account 123456789012 not "
                              "found.", 400)

    # The answer and the model's errors a test sets over HTTP
    route = f"{cloud.local_url}/_local/faults/workloads/behave"
    assert requests.post(route, json={"namespace": "default", "name": model,
                                      "response": "plain text"}, timeout=30).status_code == 201
    assert runtime.invoke_endpoint(EndpointName="Qwen-Chat", Body=b"x")["Body"].read() == (
        b"plain text")
    assert requests.post(route, json={"namespace": "default", "name": model, "modelError": {
        "status": 500, "message": "CUDA out of memory"}}, timeout=30).status_code == 201
    with pytest.raises(ClientError) as failed:
        runtime.invoke_endpoint(EndpointName="Qwen-Chat", Body=b"x")
    code, message, status = error(failed)
    assert (code, status) == ("ModelError", 424)
    assert 'with message "CUDA out of memory"' in message
    assert failed.value.response["OriginalStatusCode"] == 500
    assert requests.post(route, json={"namespace": "default", "name": model},
                         timeout=30).status_code == 201


def test_invoking_needs_sagemaker_invoke_endpoint_on_the_endpoint(cloud: LocalCloud) -> None:
    deployed_endpoint(cloud, "guarded")
    arn = f"arn:aws:sagemaker:{cloud.region}:123456789012:endpoint/guarded"
    allowed = session_with(cloud, {"Effect": "Allow", "Action": "sagemaker:InvokeEndpoint",
                                   "Resource": arn},
                           {"Effect": "Allow", "Action": "sagemaker:DescribeEndpoint",
                            "Resource": arn})
    assert allowed.client("sagemaker").describe_endpoint(
        EndpointName="guarded")["EndpointStatus"] == "InService"
    body = allowed.client("sagemaker-runtime").invoke_endpoint(
        EndpointName="guarded", Body=b"{}")["Body"].read()
    assert json.loads(body)["endpoint"] == "guarded"

    other = session_with(cloud, {"Effect": "Allow", "Action": "sagemaker:InvokeEndpoint",
                                 "Resource": arn.replace("guarded", "other")})
    with pytest.raises(ClientError) as denied:
        other.client("sagemaker-runtime").invoke_endpoint(EndpointName="guarded", Body=b"{}")
    code, message, status = error(denied)
    assert (code, status) == ("AccessDeniedException", 403)
    assert f"sagemaker:InvokeEndpoint on resource: {arn}" in message


def test_a_node_hyperpod_marks_unhealthy_restarts_the_job_until_it_is_rebooted(
    cloud: LocalCloud,
) -> None:
    cluster, network = active_eks(cloud, unique("training"))
    eks = cloud.client("eks")
    for addon in ("cert-manager", "eks-pod-identity-agent"):
        eks.create_addon(clusterName=cluster["name"], addonName=addon)
    advance(cloud, D.addon_create)
    eks.create_addon(clusterName=cluster["name"], addonName=TRAINING)
    advance(cloud, D.addon_create)
    hyperpod = unique("hp")
    create_hyperpod(cloud, hyperpod, cluster["arn"], network,
                    [group_spec(cloud, "workers", "ml.g5.8xlarge", 2)])
    wait_for_hyperpod(cloud, hyperpod, "InService")
    advance(cloud, 0)
    kube = emulation(cloud).kube
    assert kube is not None
    server = kube.get(cluster["name"])
    assert server is not None
    jobs = server.store.find_type("sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs")
    assert jobs is not None

    def current() -> dict[str, Any]:
        return server.store.get(jobs, "default", "fsdp")

    server.store.create(jobs, "default", job("fsdp", "sleep 3600", retries=1), "kubectl")
    advance(cloud, 0)
    assert job_phase(current()) == "Running"
    pods = server.store.builtin_type("", "pods")
    on = server.store.get(pods, "default", "fsdp-pod-0")["spec"]["nodeName"]
    node_id = on.removeprefix("hyperpod-")
    assert node_id in {n["InstanceId"] for n in nodes(cloud, hyperpod)}

    marked = requests.post(f"{cloud.local_url}/_local/faults/hyperpod/node-unhealthy", json={
        "clusterName": hyperpod, "nodeId": node_id, "action": "Reboot", "repair": True},
        timeout=30)
    assert marked.status_code == 201
    advance(cloud, 0)
    restarting = current()
    assert restarting["status"]["restartCount"] == 1
    assert job_phase(restarting) == "Restarting"  # one healthy node for two pods
    assert on in restarting["status"]["conditions"][-1]["message"]

    for _ in range(20):  # HyperPod reboots the node (a few virtual minutes)
        if job_phase(current()) == "Running":
            break
        advance(cloud, 60)
    assert job_phase(current()) == "Running"
    assert current()["status"]["restartCount"] == 1
