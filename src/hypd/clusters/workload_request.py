"""The workloads' request bodies: ``POST /clusters/{tag}/training-jobs``, ``POST
/clusters/{tag}/inference-endpoints`` and ``.../{name}/invoke`` (docs/workloads.md).

Limits come from the custom resources' schemas (HyperPodPyTorchJob as the `hyp` CLI builds it;
the inference operator's JumpStartModel and InferenceEndpointConfig CRDs) and Kubernetes' names.
These are models: they import nothing of hypd.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    field_validator,
    model_validator,
)

from hypd.clusters.feature_request import PRIORITY_CLASS_PATTERN, TEAM_NAME_PATTERN

KUBERNETES_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""A DNS-1123 label: what Kubernetes allows as the name of a pod or a namespaced object."""
JOB_NAME_MAX = 50
"""The training operator names pods `<job>-pod-<i>`: a pod name is a 63-character label too."""
ENDPOINT_NAME_MAX = 63
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]*$"
"""What Kubernetes accepts as an environment variable's name (a C identifier, plus `.` and `-`)."""
INSTANCE_TYPE_PATTERN = r"^ml\.[a-z0-9-]+\.[a-z0-9]+$"
MODEL_ID_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
"""JumpStartModel's spec.model.modelId (and SageMaker endpoint names: sageMakerEndpoint.name)."""
MODEL_VERSION_PATTERN = r"^\d{1,4}\.\d{1,4}\.\d{1,4}$"
BUCKET_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
FILE_SYSTEM_PATTERN = r"^fs-[0-9a-f]{8,21}$"
MOUNT_PATH_PATTERN = r"^/[^:]*$"
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$"
"""A Kubernetes resource quantity (`500m`, `16Gi`, `1`)."""
RESOURCE_NAME_PATTERN = r"^([a-z0-9.-]+/)?[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


def _check_env(env: dict[str, str]) -> dict[str, str]:
    for name in env:
        if not re.match(ENV_NAME_PATTERN, name):
            raise ValueError(f"{name!r} is not a valid environment variable name")
    return env


Env = Annotated[dict[str, str], AfterValidator(_check_env)]


class Volume(_Model):
    """A PersistentVolumeClaim of the job's namespace, mounted in every pod."""

    claim: str = Field(
        pattern=KUBERNETES_NAME_PATTERN, max_length=253,
        description="The claim's name (the cluster's shared storage is hypd-shared in "
        "namespace default).",
    )
    mount_path: str = Field(alias="mountPath", pattern=MOUNT_PATH_PATTERN, max_length=1024)
    read_only: StrictBool = Field(default=False, alias="readOnly")


class TrainingJobRequest(_Model):
    """The body of ``POST /clusters/{tag}/training-jobs``: a HyperPodPyTorchJob."""

    name: str = Field(pattern=KUBERNETES_NAME_PATTERN, max_length=JOB_NAME_MAX,
                      description="The job's name (a DNS-1123 label).")
    image: str = Field(min_length=1, max_length=1024, description="The container image.")
    command: list[str] | None = Field(default=None, max_length=100)
    args: list[str] | None = Field(default=None, max_length=1000)
    env: Env = Field(default_factory=dict, max_length=200)
    instance_type: str = Field(alias="instanceType", pattern=INSTANCE_TYPE_PATTERN,
                               description="One of the cluster's instance groups' types.")
    node_count: int = Field(default=1, alias="nodeCount", ge=1, le=10000,
                            description="Nodes (one pod each).")
    processes_per_node: str | int = Field(
        default="auto", alias="processesPerNode",
        description="auto, gpu, cpu or a count (the operator's nprocPerNode).",
    )
    volumes: list[Volume] = Field(default_factory=list, max_length=20)
    max_retries: int | None = Field(
        default=None, alias="maxRetries", ge=0, le=100,
        description="Restarts of the whole job before it fails (runPolicy.jobMaxRetryCount).",
    )
    team: str | None = Field(
        default=None, pattern=TEAM_NAME_PATTERN, max_length=40,
        description="Task governance's team: the job is queued in its namespace.",
    )
    priority: str | None = Field(
        default=None, pattern=PRIORITY_CLASS_PATTERN, max_length=40,
        description="One of the scheduler config's priority classes (needs team).",
    )

    @field_validator("processes_per_node")
    @classmethod
    def _processes(cls, value: str | int) -> str | int:
        if isinstance(value, int):
            if value < 1:
                raise ValueError("a count of processes must be at least 1")
            return value
        if value in ("auto", "gpu", "cpu"):
            return value
        if value.isdigit() and int(value) >= 1:
            return int(value)
        raise ValueError("must be auto, gpu, cpu or a count")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.priority and not self.team:
            raise ValueError("priority needs team: it is a priority class of task governance")
        paths = [v.mount_path for v in self.volumes]
        twice = sorted({p for p in paths if paths.count(p) > 1})
        if twice:
            raise ValueError(f"volumes mount {', '.join(twice)} more than once")
        return self


class JumpStart(_Model):
    model_id: str = Field(alias="modelId", pattern=MODEL_ID_PATTERN, max_length=63)
    model_version: str | None = Field(default=None, alias="modelVersion",
                                      pattern=MODEL_VERSION_PATTERN)
    accept_eula: StrictBool = Field(
        alias="acceptEula",
        description="Accept the model's end-user license (gated models need true).",
    )


class S3Source(_Model):
    bucket: str = Field(pattern=BUCKET_PATTERN)
    prefix: str | None = Field(default=None, max_length=1024)


class FsxSource(_Model):
    file_system_id: str = Field(alias="fileSystemId", pattern=FILE_SYSTEM_PATTERN)
    path: str | None = Field(default=None, max_length=1024)


class ModelSource(_Model):
    s3: S3Source | None = None
    fsx: FsxSource | None = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.s3 is None) == (self.fsx is None):
            raise ValueError("give exactly one of s3 and fsx")
        return self


class Resources(_Model):
    requests: dict[str, str] = Field(default_factory=dict)
    limits: dict[str, str] = Field(default_factory=dict)

    @field_validator("requests", "limits")
    @classmethod
    def _quantities(cls, value: dict[str, str]) -> dict[str, str]:
        for name, quantity in value.items():
            if not re.match(RESOURCE_NAME_PATTERN, name):
                raise ValueError(f"{name!r} is not a resource name")
            if not re.match(QUANTITY_PATTERN, quantity):
                raise ValueError(f"{name}: {quantity!r} is not a Kubernetes quantity")
        return value


class CustomModel(_Model):
    source: ModelSource
    image: str = Field(min_length=1, max_length=1024)
    port: int = Field(ge=1, le=65535, description="The port the model server listens on.")
    resources: Resources = Field(default_factory=Resources)
    env: Env = Field(default_factory=dict, max_length=200)
    invocation_path: str = Field(default="invocations", alias="invocationPath",
                                 pattern=r"^[A-Za-z0-9/_.-]{1,256}$")


class EndpointRequest(_Model):
    """The body of ``POST /clusters/{tag}/inference-endpoints``: a JumpStart model
    (JumpStartModel) or a custom one (InferenceEndpointConfig)."""

    name: str = Field(pattern=KUBERNETES_NAME_PATTERN, max_length=ENDPOINT_NAME_MAX)
    instance_type: str = Field(alias="instanceType", pattern=INSTANCE_TYPE_PATTERN)
    replicas: int = Field(default=1, ge=1, le=1000)
    jump_start: JumpStart | None = Field(default=None, alias="jumpStart")
    model: CustomModel | None = None
    sagemaker_endpoint_name: str | None = Field(
        default=None, alias="sageMakerEndpointName", pattern=MODEL_ID_PATTERN, max_length=63,
        description="Register the endpoint with SageMaker under this name (then it can be "
        "invoked through SageMaker's runtime and hypd's invoke route).",
    )
    team: str | None = Field(default=None, pattern=TEAM_NAME_PATTERN, max_length=40)

    @model_validator(mode="after")
    def _one(self) -> Self:
        if (self.jump_start is None) == (self.model is None):
            raise ValueError("give exactly one of jumpStart (a JumpStart model) and model "
                             "(a custom model)")
        return self


class InvokeRequest(_Model):
    """The body of ``POST .../inference-endpoints/{name}/invoke``."""

    body: Any = Field(description="The request: JSON (sent as JSON) or a string.")
    content_type: str = Field(default="application/json", alias="contentType", max_length=1024)
    accept: str | None = Field(default=None, max_length=1024)

    @model_validator(mode="after")
    def _present(self) -> Self:
        if self.body is None:
            raise ValueError("body is required")
        return self


class WorkloadInput(_Model):
    """A workload operation's input: where the object is and, for a submit, what it is."""

    tag: str
    eks_name: str = Field(alias="eksName")
    namespace: str
    name: str
    kind: str = Field(description="HyperPodPyTorchJob, JumpStartModel or InferenceEndpointConfig")
    manifest: dict[str, Any] | None = None
    """The object to create (a submit)."""
    sagemaker_endpoint_name: str | None = Field(default=None, alias="sageMakerEndpointName")
