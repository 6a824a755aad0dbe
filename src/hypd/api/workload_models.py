"""Response models of the workload routes (docs/workloads.md; camelCase on the wire).

The views are built by `hypd.workloads.views`; these models give them their OpenAPI schema.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from hypd.api.models import ApiModel


class _View(ApiModel):
    # A reader that shows the objects as the cluster holds them: a field the operator adds
    # later must not make the answer invalid.
    model_config = ConfigDict(populate_by_name=True, extra="allow")


class Condition(_View):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = Field(default=None, alias="lastTransitionTime")


class KubeEvent(_View):
    time: str | None = None
    type: str | None = None
    reason: str | None = None
    message: str | None = None
    object: str = Field(description="Kind/name of the object the event is about.")
    count: int | None = None


class JobPod(_View):
    name: str
    phase: str
    node: str | None = None
    instance_id: str | None = Field(default=None, alias="instanceId")
    ready: bool
    restarts: int
    start_time: str | None = Field(default=None, alias="startTime")
    message: str | None = None


class NodeFault(_View):
    time: str
    status: str
    reason: str | None = None
    repair_action: str | None = Field(default=None, alias="repairAction")
    recommended: str | None = None
    taken: dict[str, Any] | None = None


class JobNode(_View):
    node: str
    instance_id: str | None = Field(default=None, alias="instanceId")
    current: bool = Field(description="A pod of the job runs there now.")
    first_scheduled: str | None = Field(default=None, alias="firstScheduled")
    instance_group: str | None = Field(default=None, alias="instanceGroup")
    health: NodeFault | None = Field(default=None, description="hypd's latest health record.")
    faults: list[NodeFault] = Field(
        default_factory=list, description="Unhealthy records of the node while the job ran."
    )


class TrainingJobSummary(_View):
    name: str
    namespace: str
    phase: str = Field(description="The last condition whose status is True (Pending before "
                       "any; Deleting once deleted).")
    instance_type: str | None = Field(default=None, alias="instanceType")
    node_count: int | None = Field(default=None, alias="nodeCount")
    image: str | None = None
    restarts: int
    created_at: str | None = Field(default=None, alias="createdAt")
    managed_by_hypd: bool = Field(alias="managedByHypd")
    queue: str | None = None
    priority: str | None = None
    max_retries: int | None = Field(default=None, alias="maxRetries")
    start_time: str | None = Field(default=None, alias="startTime")
    completion_time: str | None = Field(default=None, alias="completionTime")


class TrainingJobView(TrainingJobSummary):
    conditions: list[Condition]
    pods: list[JobPod]
    nodes: list[JobNode]
    events: list[KubeEvent]


class TrainingJobList(ApiModel):
    tag: str
    jobs: list[TrainingJobSummary]


class TrainingJobLogs(ApiModel):
    name: str
    namespace: str
    pod: str
    container: str | None = None
    logs: str


class SageMakerEndpoint(_View):
    endpoint_name: str = Field(alias="endpointName")
    state: str | None = None
    endpoint_arn: str | None = Field(default=None, alias="endpointArn")


class EndpointView(_View):
    name: str
    namespace: str
    type: str = Field(description="jumpstart or custom")
    state: str = Field(description="The inference operator's status.state.")
    ready: bool = Field(description="deploymentObjectOverallState is DeploymentComplete.")
    instance_type: str | None = Field(default=None, alias="instanceType")
    replicas: int
    ready_replicas: int = Field(alias="readyReplicas")
    available_replicas: int = Field(alias="availableReplicas")
    created_at: str | None = Field(default=None, alias="createdAt")
    managed_by_hypd: bool = Field(alias="managedByHypd")
    jump_start: dict[str, Any] | None = Field(default=None, alias="jumpStart")
    model: dict[str, Any] | None = None
    conditions: list[Condition]
    message: str | None = None
    sage_maker: SageMakerEndpoint | None = Field(default=None, alias="sageMaker")
    invoke: str | None = Field(
        default=None, description="hypd's invoke route, once the SageMaker endpoint exists."
    )


class EndpointList(ApiModel):
    tag: str
    endpoints: list[EndpointView]


class InvokeResult(ApiModel):
    endpoint_name: str = Field(alias="endpointName")
    content_type: str | None = Field(default=None, alias="contentType")
    body: Any = Field(description="The model's answer: JSON when it answered JSON, else text.")
    invoked_production_variant: str | None = Field(default=None,
                                                    alias="invokedProductionVariant")
