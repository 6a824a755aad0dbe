"""Request and response models of the REST API (camelCase on the wire)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.clusters.models import (
    CLUSTER_TAG_PATTERN,
    ClusterSource,
    ClusterStatus,
    EksCluster,
    HyperPodCluster,
)
from hypd.health.policy import HealthPolicy
from hypd.health.records import AddonHealth, ClusterEvent, HealthEntry
from hypd.instance_groups.views import InstanceGroupView
from hypd.operations.models import (
    OPERATION_ID_PATTERN,
    AttemptStatus,
    OperationKind,
    OperationStatus,
    StageStatus,
)


class ApiModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class ErrorBody(ApiModel):
    # Every error carries all three (`hypd.api.errors.error_response`): the document says so.
    model_config = ConfigDict(
        populate_by_name=True, extra="forbid", json_schema_serialization_defaults_required=True
    )
    code: str = Field(description="Machine-readable error code.")
    message: str = Field(description="What went wrong, naming the field when input was bad.")
    details: dict[str, Any] = Field(
        default_factory=dict,
        description="Facts about the error; for bad input, `errors` lists each problem with "
        "its field and where it was sent (`in`: body, query, path or header).",
    )


class DiscoverRequest(ApiModel):
    cluster_names: list[str] | None = Field(
        default=None,
        alias="clusterNames",
        min_length=1,
        max_length=100,
        description=(
            "Import only the EKS or HyperPod clusters with these names (and their linked "
            "clusters). Omit to import every cluster in the account and Region."
        ),
    )


class OperationAccepted(ApiModel):
    operation_id: str = Field(alias="operationId", pattern=OPERATION_ID_PATTERN)
    status: OperationStatus
    kind: OperationKind


class StageView(ApiModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    name: str
    status: StageStatus
    started_at: str | None = Field(
        default=None, alias="startedAt", description="When the first attempt started."
    )
    attempt_started_at: str | None = Field(
        default=None, alias="attemptStartedAt", description="When the latest attempt started."
    )
    ended_at: str | None = Field(default=None, alias="endedAt")
    attempts: int
    error: dict[str, str] | None = None
    output: dict[str, Any] | None = None


class TimelineEntry(ApiModel):
    stage: str
    attempt: int = Field(ge=1, description="n of the stage's attempt (the first is 1).")
    status: AttemptStatus
    started_at: str = Field(alias="startedAt")
    ended_at: str | None = Field(default=None, alias="endedAt")
    looks: int = Field(
        ge=0, description="How many times the attempt's tasks looked (the first look included)."
    )
    waiting_for: str | None = Field(
        default=None,
        alias="waitingFor",
        description="Why its last look waited, in words (e.g. `EKS cluster hypd-demo is "
        "CREATING`); once the attempt ended, what it waited for last.",
    )
    next_look_at: str | None = Field(
        default=None,
        alias="nextLookAt",
        description="While it runs: when it looks again (for a wait an event ends, the "
        "latest look if no event comes).",
    )
    error: dict[str, str] | None = Field(
        default=None, description="What ended a FAILED attempt: code and message."
    )


class RetryView(ApiModel):
    number: int = Field(description="n of the retry; its execution is named {operationId}-r{n}.")
    requested_at: str = Field(alias="requestedAt")
    previous_status: OperationStatus = Field(
        alias="previousStatus", description="How the attempt before this retry ended."
    )
    previous_error: dict[str, str] | None = Field(
        default=None,
        alias="previousError",
        description="The error that ended the attempt before this retry (kept here; the "
        "retry clears it from the operation and its stages).",
    )
    failed_stage: str | None = Field(default=None, alias="failedStage")
    previous_execution_arn: str | None = Field(default=None, alias="previousExecutionArn")
    resume_from: str | None = Field(
        default=None,
        alias="resumeFrom",
        description="The first stage that had not succeeded, where the retry resumed.",
    )


class OperationView(ApiModel):
    id: str = Field(pattern=OPERATION_ID_PATTERN)
    kind: OperationKind
    cluster_tag: str | None = Field(default=None, alias="clusterTag")
    status: OperationStatus
    stages: list[StageView]
    input: dict[str, Any]
    output: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    execution_arn: str | None = Field(
        default=None, alias="executionArn", description="The current execution."
    )
    retries: list[RetryView] = Field(
        default_factory=list, description="Every retry, oldest first, with what it replaced."
    )
    cancel_requested_at: str | None = Field(
        default=None,
        alias="cancelRequestedAt",
        description="When a client asked to cancel the current attempt.",
    )
    created_at: str = Field(alias="createdAt")
    updated_at: str = Field(alias="updatedAt")
    version: int
    timeline: list[TimelineEntry] = Field(
        default_factory=list,
        description="Every stage's attempts in the order they started (each stage keeps its "
        "latest 20; `attempts` of the stage counts them all): start, end, status, looks, and "
        "what it waits for and when it looks next.",
    )


class OperationList(ApiModel):
    operations: list[OperationView]
    next_token: str | None = Field(default=None, alias="nextToken")


class ClusterView(ApiModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    tag: str = Field(pattern=CLUSTER_TAG_PATTERN)
    source: ClusterSource
    region: str | None = None
    eks: EksCluster | None = None
    hyperpod: HyperPodCluster | None = None
    created_at: str = Field(alias="createdAt")
    updated_at: str = Field(alias="updatedAt")
    last_seen_at: str | None = Field(default=None, alias="lastSeenAt")
    last_operation_id: str | None = Field(default=None, alias="lastOperationId")
    status: ClusterStatus | None = Field(
        default=None,
        description="A cluster hypd creates: CREATING until its create operation ends, then "
        "ACTIVE or FAILED. Absent for a discovered cluster.",
    )


class ClusterList(ApiModel):
    clusters: list[ClusterView]
    next_token: str | None = Field(default=None, alias="nextToken")


# ---------------------------------------------------------------- catalogue
class AvailabilityZoneView(ApiModel):
    name: str = Field(description="The zone's name in this account, e.g. us-west-2c.")
    zone_id: str = Field(
        alias="zoneId", description="The zone's ID, the same in every account (e.g. usw2-az3)."
    )
    state: str


class AvailabilityZoneList(ApiModel):
    region: str | None = None
    availability_zones: list[AvailabilityZoneView] = Field(alias="availabilityZones")


class GpuView(ApiModel):
    name: str
    manufacturer: str
    count: int
    memory_mib: int | None = Field(default=None, alias="memoryMiB")


class NeuronDeviceView(ApiModel):
    name: str
    count: int
    core_count: int | None = Field(default=None, alias="coreCount")
    memory_mib: int | None = Field(default=None, alias="memoryMiB")


class InstanceTypeView(ApiModel):
    instance_type: str = Field(alias="instanceType", description="The HyperPod (ml.*) type.")
    ec2_instance_type: str = Field(alias="ec2InstanceType", description="The EC2 type behind it.")
    availability_zones: list[str] = Field(
        alias="availabilityZones", description="The Region's zones that offer it."
    )
    vcpus: int | None = Field(default=None, alias="vCpus")
    memory_mib: int | None = Field(default=None, alias="memoryMiB")
    gpus: list[GpuView] = Field(default_factory=list)
    total_gpu_memory_mib: int | None = Field(default=None, alias="totalGpuMemoryMiB")
    neuron_devices: list[NeuronDeviceView] = Field(default_factory=list, alias="neuronDevices")
    maximum_network_cards: int | None = Field(default=None, alias="maximumNetworkCards")
    efa_supported: bool | None = Field(
        default=None,
        alias="efaSupported",
        description="Whether the type supports EFA (needed for EFA-only network interfaces).",
    )
    maximum_efa_interfaces: int | None = Field(default=None, alias="maximumEfaInterfaces")


class InstanceTypeList(ApiModel):
    availability_zone: str | None = Field(
        default=None, alias="availabilityZone", description="The zone asked for, if any."
    )
    instance_types: list[InstanceTypeView] = Field(alias="instanceTypes")


class ReservedCapacityView(ApiModel):
    instance_type: str | None = Field(default=None, alias="instanceType")
    total_instance_count: int | None = Field(default=None, alias="totalInstanceCount")
    availability_zone: str | None = Field(default=None, alias="availabilityZone")
    availability_zone_id: str | None = Field(default=None, alias="availabilityZoneId")
    status: str | None = None


class TrainingPlanView(ApiModel):
    name: str
    arn: str
    status: str
    status_message: str | None = Field(default=None, alias="statusMessage")
    instance_types: list[str] = Field(
        alias="instanceTypes", description="The instance types of its reserved capacities."
    )
    availability_zones: list[str] = Field(
        alias="availabilityZones",
        description="The zones of its reserved capacities (a plan has no zone of its own).",
    )
    total_instance_count: int | None = Field(default=None, alias="totalInstanceCount")
    available_instance_count: int | None = Field(default=None, alias="availableInstanceCount")
    in_use_instance_count: int | None = Field(default=None, alias="inUseInstanceCount")
    start_time: str | None = Field(default=None, alias="startTime")
    end_time: str | None = Field(default=None, alias="endTime")
    duration_hours: int | None = Field(default=None, alias="durationHours")
    target_resources: list[str] = Field(default_factory=list, alias="targetResources")
    reserved_capacities: list[ReservedCapacityView] = Field(alias="reservedCapacities")


class TrainingPlanList(ApiModel):
    training_plans: list[TrainingPlanView] = Field(alias="trainingPlans")


# ---------------------------------------------------------------- capacity
class InstanceGroupList(ApiModel):
    tag: str
    cluster_status: str = Field(alias="clusterStatus", description="HyperPod's ClusterStatus.")
    instance_groups: list[InstanceGroupView] = Field(alias="instanceGroups")


class InstanceGroupUnchanged(ApiModel):
    """A PATCH that matches the group: nothing was started."""

    changed: bool = Field(description="Always false: the request matches the group.")
    instance_group: InstanceGroupView = Field(alias="instanceGroup")


class NodeView(ApiModel):
    node_id: str = Field(alias="nodeId")
    instance_group: str = Field(alias="instanceGroup")
    instance_type: str | None = Field(default=None, alias="instanceType")
    status: str | None = Field(default=None, description="HyperPod's InstanceStatus.Status.")
    message: str | None = Field(default=None, description="HyperPod's InstanceStatus.Message.")
    launch_time: str | None = Field(default=None, alias="launchTime")
    last_software_update_time: str | None = Field(default=None, alias="lastSoftwareUpdateTime")
    private_dns_hostname: str | None = Field(default=None, alias="privateDnsHostname")


class NodeList(ApiModel):
    tag: str
    nodes: list[NodeView]


class AutoscalingView(ApiModel):
    tag: str
    enabled: bool = Field(description="Whether hypd has turned managed Karpenter on.")
    status: str | None = Field(
        default=None,
        description="HyperPod's AutoScaling.Status (InService, Creating, Deleting, Failed); "
        "absent when HyperPod has no autoscaling configuration.",
    )
    mode: str | None = Field(default=None, description="HyperPod's AutoScaling.Mode.")
    failure_message: str | None = Field(default=None, alias="failureMessage")
    instance_groups: list[str] = Field(default_factory=list, alias="instanceGroups")
    consolidate_after: str | None = Field(default=None, alias="consolidateAfter")
    consolidation_policy: str | None = Field(default=None, alias="consolidationPolicy")
    role_arn: str | None = Field(default=None, alias="roleArn")
    cluster_role: str | None = Field(
        default=None, alias="clusterRole", description="The ClusterRole HyperPod names."
    )
    node_class: str | None = Field(default=None, alias="nodeClass")
    node_pool: str | None = Field(default=None, alias="nodePool")
    last_operation_id: str | None = Field(default=None, alias="lastOperationId")


class AutoscalingUnchanged(ApiModel):
    """A PUT that matches reality: nothing was started."""

    changed: bool = Field(description="Always false: the request matches the cluster.")
    autoscaling: AutoscalingView


class InstanceGroupFieldView(ApiModel):
    name: str = Field(description="The field of the group body.")
    sagemaker_members: list[str] = Field(
        alias="sageMakerMembers", description="The ClusterInstanceGroupSpecification members."
    )
    mutable: bool = Field(description="Whether PATCH /clusters/{tag}/instance-groups/{name} "
                          "may change it.")
    description: str
    reason: str | None = Field(default=None, description="Why it is create-time only.")
    instead: str | None = Field(default=None, description="What to do instead of changing it.")


class InstanceGroupFieldList(ApiModel):
    fields: list[InstanceGroupFieldView]


# ---------------------------------------------------------------------------- health
class NodeHealthView(ApiModel):
    node_id: str = Field(alias="nodeId")
    instance_group: str | None = Field(default=None, alias="instanceGroup")
    status: str
    latest: HealthEntry


class HealthSummaryView(ApiModel):
    tag: str
    cluster_status: str | None = Field(
        default=None, alias="clusterStatus", description="From the last state-change event."
    )
    status_time: str | None = Field(default=None, alias="statusTime")
    nodes: int = Field(description="Nodes HyperPod lists now.")
    counts: dict[str, int] = Field(
        description="Nodes by health status (a node with no health event counts as Healthy)."
    )
    unhealthy: list[NodeHealthView] = Field(description="Listed nodes that are not Healthy.")
    gone: list[NodeHealthView] = Field(
        default_factory=list,
        description="Nodes with recorded health that HyperPod no longer lists (replaced or "
        "deleted).",
    )
    recent_events: list[ClusterEvent] = Field(alias="recentEvents")
    addons: dict[str, AddonHealth]
    policy: HealthPolicy
    policy_is_default: bool = Field(alias="policyIsDefault")


class NodeHealthHistory(ApiModel):
    tag: str
    node_id: str = Field(alias="nodeId")
    instance_group: str | None = Field(default=None, alias="instanceGroup")
    latest: HealthEntry
    history: list[HealthEntry] = Field(description="Newest first, at most 50.")


class HealthPolicyView(ApiModel):
    tag: str
    policy: HealthPolicy
    default: bool = Field(description="No policy was set: this is the default.")


# ---------------------------------------------------------------------------- features
class FeaturesView(ApiModel):
    """Each managed feature as it really is (read from AWS and Kubernetes)."""

    tag: str
    features: dict[str, dict[str, Any]] = Field(
        description="By feature: enabled, status, version, its settings, requires, requiredBy "
        "(and problems, when something is wrong)."
    )
    prerequisites: dict[str, dict[str, Any]] = Field(
        description="The shared prerequisite add-ons: installed, status, installedBy (hypd or "
        "other), requiredBy."
    )
    kubernetes_readable: bool = Field(alias="kubernetesReadable")


class FeaturesUnchanged(ApiModel):
    changed: bool = False
    features: FeaturesView


# ---------------------------------------------------------------------------- teams
class TeamView(ApiModel):
    """A task governance team: its compute quota as SageMaker holds it."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")
    name: str
    status: str | None = None
    resources: list[dict[str, Any]]
    sharing: dict[str, Any]
    namespace: str
    queue: str = Field(description="The LocalQueue a team's jobs name (kueue.x-k8s.io/queue-name).")


class TeamList(ApiModel):
    tag: str
    teams: list[TeamView]


class TeamUnchanged(ApiModel):
    changed: bool = False
    team: TeamView
