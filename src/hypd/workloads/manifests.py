"""The custom resources hypd writes for a workload (pure; docs/workloads.md shows them).

A training job is a HyperPodPyTorchJob built as the `hyp` CLI builds one (one replica spec
``pod``, container ``pytorch-job-container``, the instance type as node selector, the queue
labels of task governance); an endpoint is a JumpStartModel or an InferenceEndpointConfig.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypd.clusters.workload_request import EndpointRequest, TrainingJobRequest

MANAGED_BY = {"app.kubernetes.io/managed-by": "hypd"}
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
JOB_POD_LABEL = "HPJob"
"""The training operator labels a job's pods ``HPJob=<job>``."""
CONTAINER = "pytorch-job-container"
REPLICA_SPEC = "pod"
MODEL_MOUNT = "/opt/ml/model"
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    plural: str
    feature: str
    """The managed feature whose operator reconciles it (its API name)."""


TRAINING_JOB = Kind("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob", "hyperpodpytorchjobs",
                    "trainingOperator")
JUMPSTART_MODEL = Kind("inference.sagemaker.aws.amazon.com/v1", "JumpStartModel",
                       "jumpstartmodels", "inferenceOperator")
CUSTOM_ENDPOINT = Kind("inference.sagemaker.aws.amazon.com/v1", "InferenceEndpointConfig",
                       "inferenceendpointconfigs", "inferenceOperator")
ENDPOINT_KINDS = (JUMPSTART_MODEL, CUSTOM_ENDPOINT)
KINDS = {k.kind: k for k in (TRAINING_JOB, *ENDPOINT_KINDS)}


def team_namespace(team: str) -> str:
    """The namespace task governance makes for a team's compute quota."""
    return f"hyperpod-ns-{team}"


def team_queue(team: str) -> str:
    return f"hyperpod-ns-{team}-localqueue"


def namespace_of(team: str | None) -> str:
    return team_namespace(team) if team else DEFAULT_NAMESPACE


def queue_labels(team: str | None, priority: str | None) -> dict[str, str]:
    labels: dict[str, str] = {}
    if team:
        labels[QUEUE_LABEL] = team_queue(team)
    if priority:
        labels[PRIORITY_LABEL] = f"{priority}-priority"
    return labels


@dataclass(frozen=True)
class Devices:
    """What a pod asks for to get its node's accelerators (from the instance type's facts)."""

    gpus: int = 0
    neuron_devices: int = 0
    efa_interfaces: int = 0

    def resources(self) -> dict[str, dict[str, str]]:
        amounts = {
            name: str(count)
            for name, count in (("nvidia.com/gpu", self.gpus),
                                ("aws.amazon.com/neurondevice", self.neuron_devices),
                                ("vpc.amazonaws.com/efa", self.efa_interfaces))
            if count
        }
        return {"requests": dict(amounts), "limits": dict(amounts)} if amounts else {}


def _env(env: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": name, "value": value} for name, value in env.items()]


def training_job(request: TrainingJobRequest, devices: Devices) -> dict[str, Any]:
    """The HyperPodPyTorchJob for `request`."""
    labels = queue_labels(request.team, request.priority)
    container: dict[str, Any] = {"name": CONTAINER, "image": request.image}
    if request.command:
        container["command"] = list(request.command)
    if request.args:
        container["args"] = list(request.args)
    if request.env:
        container["env"] = _env(request.env)
    resources = devices.resources()
    if resources:
        container["resources"] = resources
    pod: dict[str, Any] = {
        "nodeSelector": {INSTANCE_TYPE_LABEL: request.instance_type},
        "containers": [container],
    }
    if request.volumes:
        container["volumeMounts"] = [
            {"name": f"volume-{i}", "mountPath": v.mount_path,
             **({"readOnly": True} if v.read_only else {})}
            for i, v in enumerate(request.volumes)
        ]
        pod["volumes"] = [
            {"name": f"volume-{i}", "persistentVolumeClaim": {"claimName": v.claim}}
            for i, v in enumerate(request.volumes)
        ]
    spec: dict[str, Any] = {
        "nprocPerNode": str(request.processes_per_node),
        "replicaSpecs": [{
            "name": REPLICA_SPEC,
            "replicas": request.node_count,
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod},
        }],
    }
    if request.max_retries is not None:
        # As `hyp create hyp-pytorch-job --max-retry`: keep the pods of failed attempts.
        spec["runPolicy"] = {"jobMaxRetryCount": request.max_retries, "cleanPodPolicy": "None"}
    return {
        "apiVersion": TRAINING_JOB.api_version,
        "kind": TRAINING_JOB.kind,
        "metadata": {"name": request.name, "namespace": namespace_of(request.team),
                     "labels": {**MANAGED_BY, **labels}},
        "spec": spec,
    }


def endpoint_kind(request: EndpointRequest) -> Kind:
    return JUMPSTART_MODEL if request.jump_start is not None else CUSTOM_ENDPOINT


def endpoint(request: EndpointRequest, region: str) -> dict[str, Any]:
    """The JumpStartModel or InferenceEndpointConfig for `request`."""
    kind = endpoint_kind(request)
    labels = queue_labels(request.team, None)
    metadata = {"name": request.name, "namespace": namespace_of(request.team),
                "labels": {**MANAGED_BY, **labels}}
    spec: dict[str, Any]
    if request.jump_start is not None:
        model: dict[str, Any] = {"modelId": request.jump_start.model_id,
                                 "acceptEula": request.jump_start.accept_eula}
        if request.jump_start.model_version:
            model["modelVersion"] = request.jump_start.model_version
        spec = {"model": model, "server": {"instanceType": request.instance_type},
                "replicas": request.replicas}
        if request.sagemaker_endpoint_name:
            spec["sageMakerEndpoint"] = {"name": request.sagemaker_endpoint_name}
    else:
        custom = request.model
        assert custom is not None  # the request has exactly one of the two
        source: dict[str, Any]
        if custom.source.s3 is not None:
            source = {"modelSourceType": "s3",
                      "s3Storage": {"bucketName": custom.source.s3.bucket, "region": region}}
            location = custom.source.s3.prefix
        else:
            assert custom.source.fsx is not None
            source = {"modelSourceType": "fsx",
                      "fsxStorage": {"fileSystemId": custom.source.fsx.file_system_id}}
            location = custom.source.fsx.path
        if location:
            source["modelLocation"] = location
        worker: dict[str, Any] = {
            "image": custom.image,
            "modelInvocationPort": {"containerPort": custom.port},
            "modelVolumeMount": {"name": "model-weights", "mountPath": MODEL_MOUNT},
            "resources": custom.resources.model_dump(exclude_defaults=True),
        }
        if custom.env:
            worker["environmentVariables"] = _env(custom.env)
        spec = {
            "modelName": request.name,
            "instanceType": request.instance_type,
            "replicas": request.replicas,
            "invocationEndpoint": custom.invocation_path,
            "modelSourceConfig": source,
            "worker": worker,
        }
        if request.sagemaker_endpoint_name:
            spec["endpointName"] = request.sagemaker_endpoint_name
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata,
            "spec": spec}
