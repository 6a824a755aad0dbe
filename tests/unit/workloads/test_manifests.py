"""The custom resources hypd writes for workloads (docs/workloads.md)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from hypd.clusters.workload_request import EndpointRequest, TrainingJobRequest
from hypd.workloads import manifests
from hypd.workloads.manifests import Devices


def job(**fields: Any) -> TrainingJobRequest:
    body = {"name": "llama-fsdp", "image": "repo/fsdp:1", "instanceType": "ml.g5.8xlarge",
            **fields}
    return TrainingJobRequest.model_validate(body)


def test_training_job_is_built_as_hyp_builds_it() -> None:
    request = job(command=["hyperpodrun"], args=["train.py"], env={"EPOCHS": "3"},
                  nodeCount=2, volumes=[{"claim": "hypd-shared", "mountPath": "/shared"}],
                  maxRetries=3, team="ml-research", priority="training")
    manifest = manifests.training_job(request, Devices(gpus=1, efa_interfaces=1))

    assert manifest["apiVersion"] == "sagemaker.amazonaws.com/v1"
    assert manifest["kind"] == "HyperPodPyTorchJob"
    assert manifest["metadata"] == {
        "name": "llama-fsdp", "namespace": "hyperpod-ns-ml-research",
        "labels": {"app.kubernetes.io/managed-by": "hypd",
                   "kueue.x-k8s.io/queue-name": "hyperpod-ns-ml-research-localqueue",
                   "kueue.x-k8s.io/priority-class": "training-priority"}}
    spec = manifest["spec"]
    assert spec["nprocPerNode"] == "auto"
    assert spec["runPolicy"] == {"jobMaxRetryCount": 3, "cleanPodPolicy": "None"}
    (replica,) = spec["replicaSpecs"]
    assert replica["name"] == "pod"
    assert replica["replicas"] == 2
    assert replica["template"]["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "hyperpod-ns-ml-research-localqueue",
        "kueue.x-k8s.io/priority-class": "training-priority"}
    pod = replica["template"]["spec"]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": "ml.g5.8xlarge"}
    assert pod["volumes"] == [{"name": "volume-0",
                               "persistentVolumeClaim": {"claimName": "hypd-shared"}}]
    (container,) = pod["containers"]
    assert container == {
        "name": "pytorch-job-container", "image": "repo/fsdp:1",
        "command": ["hyperpodrun"], "args": ["train.py"],
        "env": [{"name": "EPOCHS", "value": "3"}],
        "resources": {"requests": {"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "1"},
                      "limits": {"nvidia.com/gpu": "1", "vpc.amazonaws.com/efa": "1"}},
        "volumeMounts": [{"name": "volume-0", "mountPath": "/shared"}],
    }


def test_a_plain_job_goes_to_default_without_retries_or_devices() -> None:
    manifest = manifests.training_job(job(processesPerNode="4"), Devices())
    assert manifest["metadata"]["namespace"] == "default"
    assert manifest["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "hypd"}
    assert manifest["spec"]["nprocPerNode"] == "4"
    assert "runPolicy" not in manifest["spec"]
    container = manifest["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    assert set(container) == {"name", "image"}


def test_neuron_devices_are_requested() -> None:
    resources = Devices(neuron_devices=16, efa_interfaces=8).resources()
    assert resources["requests"] == {"aws.amazon.com/neurondevice": "16",
                                     "vpc.amazonaws.com/efa": "8"}


@pytest.mark.parametrize(("fields", "field"), [
    ({"name": "Llama"}, "name"),
    ({"name": "x" * 51}, "name"),
    ({"instanceType": "g5.8xlarge"}, "instanceType"),
    ({"nodeCount": 0}, "nodeCount"),
    ({"processesPerNode": "many"}, "processesPerNode"),
    ({"processesPerNode": 0}, "processesPerNode"),
    ({"env": {"1X": "a"}}, "env"),
    ({"priority": "training"}, None),
    ({"volumes": [{"claim": "a", "mountPath": "/d"}, {"claim": "b", "mountPath": "/d"}]}, None),
    ({"volumes": [{"claim": "a", "mountPath": "relative"}]}, "mountPath"),
    ({"surprise": 1}, "surprise"),
])
def test_bad_job_requests_name_the_field(fields: dict[str, Any], field: str | None) -> None:
    with pytest.raises(ValidationError) as caught:
        job(**fields)
    if field is not None:
        assert any(field in map(str, e["loc"]) for e in caught.value.errors())


def endpoint(**fields: Any) -> EndpointRequest:
    return EndpointRequest.model_validate({"name": "llama-ep", "instanceType": "ml.g5.8xlarge",
                                           **fields})


def test_jumpstart_endpoint() -> None:
    request = endpoint(jumpStart={"modelId": "meta-textgeneration-llama-3-1-8b",
                                  "modelVersion": "2.0.4", "acceptEula": True},
                       sageMakerEndpointName="llama-ep")
    manifest = manifests.endpoint(request, "us-west-2")
    assert manifest == {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1", "kind": "JumpStartModel",
        "metadata": {"name": "llama-ep", "namespace": "default",
                     "labels": {"app.kubernetes.io/managed-by": "hypd"}},
        "spec": {"model": {"modelId": "meta-textgeneration-llama-3-1-8b",
                           "modelVersion": "2.0.4", "acceptEula": True},
                 "server": {"instanceType": "ml.g5.8xlarge"}, "replicas": 1,
                 "sageMakerEndpoint": {"name": "llama-ep"}},
    }


def test_custom_endpoint_from_s3_and_fsx() -> None:
    model = {"source": {"s3": {"bucket": "my-models", "prefix": "llama/"}},
             "image": "djl:1", "port": 8080,
             "resources": {"requests": {"nvidia.com/gpu": "1"}}, "env": {"OPTION_X": "1"}}
    manifest = manifests.endpoint(endpoint(name="my-model", replicas=2, model=model),
                                  "us-west-2")
    assert manifest["kind"] == "InferenceEndpointConfig"
    spec = manifest["spec"]
    assert "endpointName" not in spec
    assert spec["modelName"] == "my-model"
    assert spec["replicas"] == 2
    assert spec["invocationEndpoint"] == "invocations"
    assert spec["modelSourceConfig"] == {
        "modelSourceType": "s3", "s3Storage": {"bucketName": "my-models", "region": "us-west-2"},
        "modelLocation": "llama/"}
    assert spec["worker"] == {
        "image": "djl:1", "modelInvocationPort": {"containerPort": 8080},
        "modelVolumeMount": {"name": "model-weights", "mountPath": "/opt/ml/model"},
        "resources": {"requests": {"nvidia.com/gpu": "1"}},
        "environmentVariables": [{"name": "OPTION_X", "value": "1"}]}

    model["source"] = {"fsx": {"fileSystemId": "fs-0123456789abcdef0"}}
    spec = manifests.endpoint(endpoint(model=model, team="ml"), "us-west-2")["spec"]
    assert spec["modelSourceConfig"] == {"modelSourceType": "fsx",
                                         "fsxStorage": {"fileSystemId": "fs-0123456789abcdef0"}}


@pytest.mark.parametrize("fields", [
    {},
    {"jumpStart": {"modelId": "m", "acceptEula": True},
     "model": {"source": {"s3": {"bucket": "bkt"}}, "image": "i", "port": 1}},
    {"model": {"source": {}, "image": "i", "port": 1}},
    {"model": {"source": {"s3": {"bucket": "bkt"}}, "image": "i", "port": 1,
               "resources": {"requests": {"nvidia.com/gpu": "lots"}}}},
    {"jumpStart": {"modelId": "m", "acceptEula": True}, "sageMakerEndpointName": "a_b"},
])
def test_bad_endpoint_requests_are_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        endpoint(**fields)
