"""The MCP server's tools, declared once: each names the REST operation it calls (by
operationId), the pydantic models of its body and answers, and what an agent should know
(`hypd_cli.mcp_server` serves them; `hypd_cli.mcp_binding` binds them to the OpenAPI document).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from hypd.api.event_models import EventList
from hypd.api.models import (
    AutoscalingUnchanged,
    AutoscalingView,
    AvailabilityZoneList,
    ClusterList,
    ClusterView,
    DiscoverRequest,
    FeaturesUnchanged,
    FeaturesView,
    HealthPolicyView,
    HealthSummaryView,
    InstanceGroupFieldList,
    InstanceGroupList,
    InstanceGroupUnchanged,
    InstanceTypeList,
    NodeHealthHistory,
    NodeList,
    OperationAccepted,
    OperationList,
    OperationView,
    TeamList,
    TeamUnchanged,
    TeamView,
    TrainingPlanList,
)
from hypd.api.teardown_models import (
    ClusterForgotten,
    ProtectionRequest,
    ProtectionView,
    TeardownPlan,
)
from hypd.api.upgrade_models import UpgradePlan, UpgradesView
from hypd.api.workload_models import (
    EndpointList,
    EndpointView,
    InvokeResult,
    TrainingJobList,
    TrainingJobLogs,
    TrainingJobView,
)
from hypd.capacity.requests import (
    AddInstanceGroupRequest,
    AutoscalingRequest,
    UpdateInstanceGroupRequest,
)
from hypd.clusters.create_request import CreateClusterRequest
from hypd.clusters.feature_request import FEATURE_NAMES, FeaturesRequest, TeamRequest
from hypd.clusters.workload_request import EndpointRequest, InvokeRequest, TrainingJobRequest
from hypd.health.policy import HealthPolicy
from hypd.upgrades.inputs import UpgradeRequest

WAIT_SECONDS_MAX = 300
"""The longest ``operation_get_status`` waits in one call (larger values are capped)."""


# ---------------------------------------------------------------------------- confirmations
class Confirm(Protocol):
    """What a destructive tool's ``confirm`` argument must repeat, exactly, before the tool
    runs: the name of what the call removes or interrupts, which the user has agreed to. A
    missing or different value is refused before any request (`hypd_cli.mcp_server`)."""

    @property
    def required(self) -> bool:
        """Every call needs it (the input schema lists ``confirm`` as required)."""
        ...

    @property
    def action(self) -> str:
        """What the call does to its target, for the refusal: ``deletes cluster``."""
        ...

    @property
    def advice(self) -> str:
        """Appended to the tool's description: what to show the user, what to repeat."""
        ...

    @property
    def description(self) -> str:
        """The description of the ``confirm`` argument in the tool's input schema."""
        ...

    def expected(self, arguments: Mapping[str, Any]) -> str | None:
        """The value ``confirm`` must have for these arguments; None when the call removes
        nothing, or its target is missing (then that argument's absence is the error)."""
        ...


REFUSED = "Without it, or with any other value, the call is refused and nothing is done."


@dataclass(frozen=True)
class ConfirmTarget:
    """A `Confirm` naming the call's target by one of its parameters. A target named by more
    than one (a node in a cluster, a job in a cluster's namespace) is confirmed by the most
    specific one, the node's id or the job's name: that is what the user is shown and asked
    about, and the cluster's tag beside it is already the agent's context."""

    parameter: str
    """The argument that names the target: ``tag``, ``name``, ``nodeId``, ``team``."""
    target: str
    """The target for a reader: ``the cluster's tag``."""
    action: str
    show: str
    """What the agent shows the user before asking (the agent guide says the same)."""
    required: bool = True

    @property
    def advice(self) -> str:
        return (
            f"Destructive: first show the user {self.show}, and ask. Only once they have said "
            f"yes, call with confirm set to {self.target} ({self.parameter}). {REFUSED}"
        )

    @property
    def description(self) -> str:
        return (
            f"Ask the user first. Only once they have said yes: {self.target} "
            f"({self.parameter}) again, exactly. {REFUSED}"
        )

    def expected(self, arguments: Mapping[str, Any]) -> str | None:
        value = arguments.get(self.parameter)
        # Any value but none names a target: the path takes it as text.
        return None if value is None or value == "" else str(value)


@dataclass(frozen=True)
class ConfirmFeaturesOff:
    """`features_set`'s `Confirm`: only a call that turns features off (``enabled: false``)
    needs one, so ``confirm`` is optional in its schema. It names the features turned off, in
    the API's order (`FEATURE_NAMES`) joined by commas: ``inferenceOperator``, or
    ``trainingOperator,observability``. Read from the arguments alone, so a refusal needs no
    request, and read as the API reads its body (`FeaturesRequest`), so no spelling the API
    accepts (a field's Python name) turns a feature off unconfirmed."""

    required: bool = False
    action: str = "turns off"

    @property
    def advice(self) -> str:
        return (
            "Turning a feature off is destructive: first show the user what uses it "
            "(features_get's requiredBy, and the training jobs and endpoints that need the "
            "training or inference operator: training_job_list, endpoint_list), and ask. Only "
            "once they have said yes, call with confirm set to the name of the feature turned "
            "off (several: their names joined by commas in this order: "
            f"{','.join(FEATURE_NAMES)}). {REFUSED}"
        )

    @property
    def description(self) -> str:
        return (
            "Only for a call that turns a feature off (enabled: false). Ask the user first. "
            "Only once they have said yes: the name of the feature turned off (several: "
            f"their names joined by commas in this order: {','.join(FEATURE_NAMES)}). {REFUSED}"
        )

    def expected(self, arguments: Mapping[str, Any]) -> str | None:
        body = {key: value for key, value in arguments.items() if key in _FEATURES_KEYS}
        try:
            request = FeaturesRequest.model_validate(body)
        except ValidationError:
            return None  # the API refuses the same body (400 naming the field): nothing changes
        off = [name for name, feature in request.named().items() if feature.enabled is False]
        return ",".join(off) or None


_FEATURES_KEYS = frozenset(
    key for name, field in FeaturesRequest.model_fields.items() for key in (name, field.alias)
    if key
)
"""The keys of the features' body: each feature's API name, and its Python name (which the
model accepts too)."""


# ---------------------------------------------------------------------------- the tools
@dataclass(frozen=True)
class ToolSpec:
    """A tool: its name, the REST operation it calls, and what an agent should know."""

    name: str
    operation_id: str
    response: type[BaseModel]
    """The pydantic model of the operation's success response: the tool's output schema."""
    body: type[BaseModel] | None = None
    """The pydantic model of the operation's request body: the tool's input schema."""
    advice: str = ""
    """Appended to the operation's summary and description in the tool's description."""
    waits: bool = False
    """Takes ``wait_seconds``: polls the operation until it changes or ends."""
    unchanged: type[BaseModel] | None = None
    """For a change the API may find already made: the model of its 200 ``changed: false``
    answer (``response`` is then the 202's); the output schema is the union of the two."""
    destructive: bool = False
    """May remove or interrupt something (MCP's destructiveHint)."""
    idempotent: bool = False
    """Calling it again with the same arguments changes nothing more (MCP's idempotentHint)."""
    confirm: Confirm | None = None
    """What the tool's ``confirm`` argument must repeat: a destructive tool an agent cannot
    call by accident."""
    unconfirmed: str = ""
    """Why a destructive tool needs no ``confirm``: each one has either, or is refused."""

    def __post_init__(self) -> None:
        if self.destructive and self.confirm is None and not self.unconfirmed:
            raise ValueError(
                f"tool {self.name} is destructive: give it a confirm, or say in unconfirmed "
                "why it needs none"
            )
        if self.confirm is not None and not self.destructive:
            raise ValueError(f"tool {self.name}: a confirm, but not destructive")


POLL = "Poll the returned operationId with operation_get_status until it ends."
CONFIRM = "Ask the user to confirm first."
NODE_WORK = (
    "the node (node_list: its group, status) and the training jobs whose pods run on it "
    "(training_job_list, then training_job_get's pods[].instanceId)"
)


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "cluster_list_all",
        "listClusters",
        ClusterList,
        advice="Call this first: the cluster the user wants may exist already.",
    ),
    ToolSpec(
        "cluster_get",
        "getCluster",
        ClusterView,
        advice="Summarise a created cluster from this record once its operation SUCCEEDED.",
    ),
    ToolSpec(
        "cluster_create",
        "createCluster",
        OperationAccepted,
        body=CreateClusterRequest,
        advice=(
            "Inspect first (cluster_list_all, catalog_availability_zones, "
            "catalog_instance_types, catalog_training_plans) and offer the user only choices "
            "the catalogue shows; ask only for the tag, zone, instance types and counts, "
            "capacity type and storage (an S3 bucket must exist already). Then poll the "
            "returned operationId with operation_get_status until it ends. Never call this "
            "twice for one tag: a 409 ClusterExists means use that cluster, or resume its "
            "failed creation with operation_retry (details.lastOperationId)."
        ),
    ),
    ToolSpec(
        "cluster_discover",
        "discoverClusters",
        OperationAccepted,
        body=DiscoverRequest,
        advice=POLL,
    ),
    ToolSpec(
        "operation_list",
        "listOperations",
        OperationList,
        advice=(
            "Use it to find the operation of an interrupted conversation (by clusterTag) "
            "and resume it."
        ),
    ),
    ToolSpec(
        "operation_get_status",
        "getOperation",
        OperationView,
        waits=True,
        advice=(
            f"With wait_seconds (at most {WAIT_SECONDS_MAX}) it waits until the operation's "
            "status or one of its stages changes, or the operation ends, reading it every "
            "few seconds; call it again until the status is SUCCEEDED, FAILED or CANCELLED. "
            "The timeline lists each stage's attempts: a running one says what it is waiting "
            "for (waitingFor) and when it looks next (nextLookAt). A FAILED operation's failed "
            "stage carries the error; resume it with operation_retry."
        ),
    ),
    ToolSpec(
        "operation_retry",
        "retryOperation",
        OperationView,
        advice=(
            "Fix the failed stage's cause first when it lies outside hypd (e.g. a missing "
            "bucket), then retry and poll with operation_get_status."
        ),
    ),
    ToolSpec(
        "operation_cancel",
        "cancelOperation",
        OperationView,
        advice="Only when the user asks. Poll with operation_get_status until CANCELLED.",
        destructive=True,
        unconfirmed="It removes nothing: the stages that succeeded stay, and operation_retry "
        "resumes the operation where it stopped.",
    ),
    ToolSpec(
        "events_list_recent",
        "listEvents",
        EventList,
        advice=(
            "Read-only. What happened lately, newest last: give cluster for one cluster's "
            "events, detailType for one kind, limit for how many (default 50). Each event's "
            "detail says what changed (an operation's status, stage and error; a cluster's "
            "status; a node's health and repair); follow an operation it names with "
            "operation_get_status. To see only what came after an earlier answer, pass its "
            "next as since."
        ),
    ),
    ToolSpec(
        "catalog_availability_zones",
        "listAvailabilityZones",
        AvailabilityZoneList,
        advice="Offer only these zones.",
    ),
    ToolSpec(
        "catalog_instance_types",
        "listInstanceTypes",
        InstanceTypeList,
        advice="Call it with the chosen availabilityZone and offer only the types it lists.",
    ),
    ToolSpec(
        "catalog_training_plans",
        "listTrainingPlans",
        TrainingPlanList,
        advice="For capacity type training-plan: offer Active or Scheduled plans only.",
    ),
    ToolSpec(
        "catalog_instance_group_fields",
        "listInstanceGroupFields",
        InstanceGroupFieldList,
        advice=(
            "Read it before changing a group: only the mutable fields (count, minCount, labels, "
            "taints) can change; each create-time field says why not and what to do instead."
        ),
    ),
    ToolSpec(
        "instance_group_list",
        "listInstanceGroups",
        InstanceGroupList,
        advice=(
            "Call this first for any capacity change: the group the user means may exist "
            "already, and it shows each group's create-time facts (type, capacity, zone, "
            "subnet) and its counts."
        ),
    ),
    ToolSpec(
        "instance_group_add",
        "addInstanceGroup",
        OperationAccepted,
        body=AddInstanceGroupRequest,
        advice=(
            "Inspect first (instance_group_list, catalog_instance_types with the cluster's "
            "zone, catalog_training_plans for reserved capacity) and offer the user only "
            "choices the catalogue shows. Ask only for the group's name, instance type, count "
            "and capacity type (on-demand, spot or a training plan); ask about the zone only "
            "for a training plan (the plan pins it; any other group takes the cluster's zone, "
            "so leave availabilityZone out). These are fixed for the group's life. " + POLL
            + " A 409 InstanceGroupExists means the group is there: use it."
        ),
    ),
    ToolSpec(
        "instance_group_update",
        "updateInstanceGroup",
        OperationAccepted,
        body=UpdateInstanceGroupRequest,
        unchanged=InstanceGroupUnchanged,
        advice=(
            "Send only what changes: count, minCount, labels (the whole map) or taints (the "
            "whole list). Never try to change a create-time field (instanceType, capacity, "
            "availabilityZone, dedicatedSubnet, efaOnly, deepHealthChecks; see "
            "catalog_instance_group_fields): that is a 400 ImmutableField; add a new group "
            "with the value instead (instance_group_add), move the work, then delete the old "
            "one. A lower count removes nodes and the work on them: " + CONFIRM + " An answer "
            "with changed: false means the group already matches: nothing started, nothing to "
            "poll. Otherwise: " + POLL
        ),
        destructive=True,
        idempotent=True,
        unconfirmed="Whether a call removes nodes depends on the group's count now, which the "
        "call does not read, and another update restores any count; the agent guide has the "
        "agent ask before scaling down.",
    ),
    ToolSpec(
        "instance_group_delete",
        "deleteInstanceGroup",
        OperationAccepted,
        advice=(
            "Removes the group's nodes. The last group cannot be deleted (409 "
            "LastInstanceGroup), nor one Karpenter scales (409 InstanceGroupAutoscaled: take it "
            "out of autoscaling_set first). " + POLL
        ),
        destructive=True,
        idempotent=True,
        confirm=ConfirmTarget(
            "name", "the group's name", "deletes instance group",
            show="the group and its nodes (instance_group_list, node_list with instanceGroup)",
        ),
    ),
    ToolSpec(
        "node_list",
        "listNodes",
        NodeList,
        advice="Find a node's id and status here before any node action.",
    ),
    ToolSpec(
        "node_reboot",
        "rebootNode",
        OperationAccepted,
        advice="Interrupts the node's pods. " + POLL,
        destructive=True,
        # Not removed, but every pod on the node is interrupted: the user's to decide.
        confirm=ConfirmTarget("nodeId", "the node's id", "reboots node", show=NODE_WORK),
    ),
    ToolSpec(
        "node_replace",
        "replaceNode",
        OperationAccepted,
        advice=(
            "For an unhealthy node: a new instance takes its place and its local data is "
            "lost. " + POLL
        ),
        destructive=True,
        confirm=ConfirmTarget("nodeId", "the node's id", "replaces node", show=NODE_WORK),
    ),
    ToolSpec(
        "node_delete",
        "deleteNode",
        OperationAccepted,
        advice="The node's group keeps one node fewer. " + POLL,
        destructive=True,
        idempotent=True,
        confirm=ConfirmTarget("nodeId", "the node's id", "deletes node", show=NODE_WORK),
    ),
    ToolSpec(
        "autoscaling_get",
        "getAutoscaling",
        AutoscalingView,
        advice="Read it before autoscaling_set: whether managed Karpenter is on, and for "
        "which groups.",
    ),
    ToolSpec(
        "autoscaling_set",
        "setAutoscaling",
        OperationAccepted,
        body=AutoscalingRequest,
        unchanged=AutoscalingUnchanged,
        advice=(
            "enabled: true with instanceGroups (1-10 existing groups of on-demand or spot "
            "capacity without deep health checks, in one zone: see instance_group_list) turns "
            "managed Karpenter on; tell the user it scales idle groups toward zero. enabled: "
            "false turns it off. An answer with changed: false means it is already as asked: "
            "nothing started. Otherwise: " + POLL
        ),
        destructive=True,
        idempotent=True,
        unconfirmed="A setting that another call restores (enabled: false), which removes no "
        "node itself: Karpenter later scales idle groups down; the agent guide has the agent "
        "ask before turning it on.",
    ),
    ToolSpec(
        "cluster_health_get",
        "getClusterHealth",
        HealthSummaryView,
        advice=(
            "Start here when the user asks about unhealthy, failing or repaired nodes. Each "
            "node in unhealthy has its latest entry: reason, HyperPod's recommendation "
            "(recommended: reboot or replace) and taken, what was done: by hyperpod (HyperPod "
            "repairs it itself: wait), by hypd (the reboot-node or replace-node operation "
            "taken.operationId: follow it with operation_get_status), or by none with "
            "taken.reason (policy: the health policy only notifies; cooldown, rate-limit: the "
            "policy's bounds; node-status; not-recommended). gone lists nodes HyperPod no "
            "longer lists (replaced or deleted). Then node_health_get for one node's history."
        ),
    ),
    ToolSpec(
        "node_health_get",
        "getNodeHealth",
        NodeHealthHistory,
        advice=(
            "For a node cluster_health_get or node_list names (nodeId i-...). Each entry says "
            "what was done about it (taken, as in cluster_health_get); a repair hypd started "
            "is taken.operationId: read it with operation_get_status. A 404 NotFound means no "
            "health event of the node was received: as far as hypd knows it has been healthy."
        ),
    ),
    ToolSpec(
        "health_policy_get",
        "getHealthPolicy",
        HealthPolicyView,
        advice=(
            "Read it before health_policy_set and tell the user the current policy; default: "
            "true means none was set (notify: hypd repairs nothing)."
        ),
    ),
    ToolSpec(
        "health_policy_set",
        "setHealthPolicy",
        HealthPolicyView,
        body=HealthPolicy,
        advice=(
            "action replace turns on automatic repair: when HyperPod recommends rebooting or "
            "replacing a node and does not do it itself, hypd starts the reboot-node or "
            "replace-node operation, at most maxActionsPerHour repairs per cluster in any 60 "
            "minutes and never twice for one node within nodeCooldownMinutes. reboot allows "
            "reboots only; notify (the default) repairs nothing. Repairs interrupt the node's "
            "pods and a replacement loses its local data: " + CONFIRM + " The body replaces "
            "the whole policy, and omitted fields take their defaults (2 an hour, 60 minutes), "
            "not their current values: send every field to keep. Starts no operation: the "
            "answer is the policy now in force; each later repair is an operation of its own "
            "(operation_list with clusterTag). A 400 names the field out of range."
        ),
        destructive=True,
        idempotent=True,
        unconfirmed="A policy that another call restores, which repairs nothing itself: each "
        "later repair is an operation of its own, within the policy's bounds; the agent guide "
        "has the agent ask first.",
    ),
    ToolSpec(
        "features_get",
        "getFeatures",
        FeaturesView,
        advice=(
            "Read it before features_set and tell the user what is on. Each feature has "
            "enabled, status (ACTIVE; CREATING, UPDATING or DELETING: wait; DEGRADED or FAILED: "
            "problems says why; DISABLED), version, its settings, requires (what is installed "
            "first when it is turned on) and requiredBy (for task governance: the teams that "
            "need it); prerequisites says of each shared add-on who installed it (hypd or "
            "other) and which features need it. kubernetesReadable: false means the CRDs and "
            "controllers could not be checked."
        ),
    ),
    ToolSpec(
        "features_set",
        "setFeatures",
        OperationAccepted,
        body=FeaturesRequest,
        unchanged=FeaturesUnchanged,
        advice=(
            "Read the features with features_get first. Then send only the features and "
            "fields the user asked to change, never one you were not asked to change, and "
            "never features_get's answer sent back: what is not sent is left exactly as it is "
            "(explicit diff), what is sent is acted on; leave a field out rather than send it "
            "as null (a null is sent too). {\"trainingOperator\": {\"enabled\": "
            "true}} turns one feature on; {\"tieredCheckpointing\": {\"memoryPercent\": 30}} "
            "changes one setting of a feature that is on (a setting of a feature that is off is "
            "a 400 naming the field: send enabled: true with it, if the user wants it on). "
            "{\"inferenceOperator\": {\"enabled\": true}} is enough: hypd makes the bucket for "
            "its TLS certificates (and removes it with the operator); send tlsCertificateBucket "
            "only when the user names a bucket of theirs (hyperpod-tls...), which hypd never "
            "deletes. "
            "Turning a feature off removes its add-on and what only it needed, and stops the "
            "work that uses it. Task governance cannot be turned off while teams have quotas "
            "(409 naming them: team_delete first, confirmed). An answer with changed: false "
            "means the features already are as asked: nothing started. Otherwise: " + POLL
            + " Then features_get: each feature turned on should be ACTIVE."
        ),
        destructive=True,
        idempotent=True,
        confirm=ConfirmFeaturesOff(),
    ),
    ToolSpec(
        "team_list",
        "listTeams",
        TeamList,
        advice=(
            "Task governance's teams, each a compute quota: resources (instances per type), "
            "sharing, status, and the queue the team's jobs name (kueue.x-k8s.io/queue-name). "
            "Empty when task governance is off (features_get)."
        ),
    ),
    ToolSpec(
        "team_get",
        "getTeam",
        TeamView,
        advice=(
            "Read it before team_set to keep what the user does not change. A 404 means the "
            "cluster has no such team."
        ),
    ),
    ToolSpec(
        "team_set",
        "setTeam",
        OperationAccepted,
        body=TeamRequest,
        unchanged=TeamUnchanged,
        advice=(
            "Task governance must be on (features_get; a 409 says it is off: turn it on with "
            "features_set {\"taskGovernance\": {\"enabled\": true}} only if the user agrees). "
            "The body replaces the team's whole quota: omitted fields take their defaults "
            "(sharing LendAndBorrow, preemptTeamTasks LowerPriority, active true), not their "
            "current values, so read team_get first and send every field to keep. Each "
            "resources[].instanceType must be the type of one of the cluster's groups "
            "(instance_group_list; a 400 names the field). A smaller quota can preempt the "
            "team's running work. " + CONFIRM + " An answer with changed: false means the "
            "quota already says this: nothing started. Otherwise: " + POLL
        ),
        destructive=True,
        idempotent=True,
        unconfirmed="It replaces a quota, which another team_set restores, and whether the new "
        "one is smaller (and may preempt work) depends on the current one, which the call "
        "does not read; the agent guide has the agent read team_get and ask first.",
    ),
    ToolSpec(
        "team_delete",
        "deleteTeam",
        OperationAccepted,
        advice=(
            "Removes the team's quota: its jobs lose their guaranteed capacity. " + POLL
        ),
        destructive=True,
        idempotent=True,
        confirm=ConfirmTarget(
            "team", "the team's name", "deletes team",
            show="the team's quota and queue (team_get) and its jobs (training_job_list)",
        ),
    ),
    ToolSpec(
        "training_job_submit",
        "submitTrainingJob",
        OperationAccepted,
        body=TrainingJobRequest,
        advice=(
            "Before submitting, read the cluster's groups (instance_group_list: instanceType "
            "must be one of their types and nodeCount must fit their counts, unless "
            "autoscaling is on for one) and features_get (the training operator must be "
            "ACTIVE; a 409 FeatureNotEnabled says it is off: turn it on with features_set "
            "{\"trainingOperator\": {\"enabled\": true}} only if the user agrees). The shared "
            "storage claim is hypd-shared (namespace default); team needs task governance "
            "(team_list). Each refusal is a 4xx naming the field: fix that field, nothing was "
            "submitted. " + POLL + " Then training_job_get until phase is Succeeded or Failed."
        ),
    ),
    ToolSpec(
        "training_job_list",
        "listTrainingJobs",
        TrainingJobList,
        advice="Every HyperPodPyTorchJob of the cluster, whoever made it, with its phase.",
    ),
    ToolSpec(
        "training_job_get",
        "getTrainingJob",
        TrainingJobView,
        advice=(
            "phase is Pending, Created, Running, Restarting, Succeeded or Failed (Deleting once "
            "deleted). restarts counts restarts of the whole job; nodes lists every node a pod "
            "of the job ran on, with the health faults recorded on it while the job ran: tell "
            "the user which node failed and how it was repaired. Poll it (every minute or so) "
            "until the phase is Succeeded or Failed when the user waits for the job."
        ),
    ),
    ToolSpec(
        "training_job_logs",
        "getTrainingJobLogs",
        TrainingJobLogs,
        advice=(
            "The first pod's logs (rank 0) unless pod names another (training_job_get lists "
            "them); tail limits the lines (default 200). A 409 means the job has no pod yet."
        ),
    ),
    ToolSpec(
        "training_job_delete",
        "deleteTrainingJob",
        OperationAccepted,
        advice="Stops the job and deletes its pods. " + POLL,
        destructive=True,
        idempotent=True,
        confirm=ConfirmTarget(
            "name", "the job's name", "deletes training job",
            show="the job, its phase and its pods (training_job_get)",
        ),
    ),
    ToolSpec(
        "endpoint_deploy",
        "deployInferenceEndpoint",
        OperationAccepted,
        body=EndpointRequest,
        advice=(
            "Give exactly one of jumpStart (modelId; acceptEula true only when the user "
            "accepted the model's license) and model (a custom model: image, port and source "
            "s3 or fsx). Read instance_group_list and features_get first: instanceType must be "
            "one of the groups' types and replicas must fit; the inference operator must be "
            "ACTIVE (409 FeatureNotEnabled otherwise). sageMakerEndpointName registers the "
            "endpoint with SageMaker, which endpoint_invoke needs. Deploying takes minutes: "
            + POLL
        ),
    ),
    ToolSpec(
        "endpoint_list",
        "listInferenceEndpoints",
        EndpointList,
        advice="Every JumpStartModel and InferenceEndpointConfig with its state.",
    ),
    ToolSpec(
        "endpoint_get",
        "getInferenceEndpoint",
        EndpointView,
        advice=(
            "ready is true once the deployment is complete; invoke is set once its SageMaker "
            "endpoint exists (then endpoint_invoke works); message says why a deployment "
            "failed."
        ),
    ),
    ToolSpec(
        "endpoint_invoke",
        "invokeInferenceEndpoint",
        InvokeResult,
        body=InvokeRequest,
        advice=(
            "Sends body to the model (JSON by default; the model's input format, e.g. "
            "{\"inputs\": \"...\", \"parameters\": {...}} for JumpStart text models). A 409 "
            "means the endpoint is not registered with SageMaker or not ready yet; a 424 is "
            "the model's own error."
        ),
    ),
    ToolSpec(
        "endpoint_delete",
        "deleteInferenceEndpoint",
        OperationAccepted,
        advice="Removes the endpoint and its SageMaker endpoint. " + POLL,
        destructive=True,
        idempotent=True,
        confirm=ConfirmTarget(
            "name", "the endpoint's name", "deletes inference endpoint",
            show="the endpoint, its model and its SageMaker endpoint (endpoint_get)",
        ),
    ),
    ToolSpec(
        "cluster_teardown_plan",
        "getTeardownPlan",
        TeardownPlan,
        advice=(
            "Show this to the user before cluster_delete: every resource that will be deleted, "
            "in order, what is kept and why, and what blocks the deletion now (blockers)."
        ),
    ),
    ToolSpec(
        "cluster_delete",
        "deleteCluster",
        OperationAccepted,
        unchanged=ClusterForgotten,
        advice=(
            "Deletes the cluster and everything hypd made for it. force=true stops running "
            "jobs and endpoints: only if the user said so. forget=true is for a discovered "
            "cluster (hypd never deletes those): it removes hypd's record only. " + POLL
        ),
        destructive=True,
        idempotent=True,
        confirm=ConfirmTarget(
            "tag", "the cluster's tag", "deletes cluster",
            show="the teardown plan (cluster_teardown_plan): every resource it deletes, what "
            "it keeps, what blocks it",
        ),
    ),
    ToolSpec(
        "cluster_upgrades_get",
        "getUpgrades",
        UpgradesView,
        advice=(
            "Read it before cluster_upgrade and tell the user: the Kubernetes version and its "
            "support dates (extended support costs more per cluster hour), the next version, "
            "each add-on and whether it is compatible with the next version, the chart, each "
            "group's HyperPod software, insights not PASSING, and every blocker with its "
            "action."
        ),
    ),
    ToolSpec(
        "cluster_upgrade",
        "upgradeCluster",
        OperationAccepted,
        body=UpgradeRequest,
        unchanged=UpgradePlan,
        advice=(
            "First call it with dryRun=true and show the user the plan: every step, its "
            "estimate, the blockers and warnings. Send only the targets the user asked for "
            "(kubernetesVersion, addons, chart, nodes); force only if the user said so after "
            "seeing the insight it skips. Without dryRun it starts an upgrade-cluster "
            "operation. " + POLL
        ),
        destructive=True,
        confirm=ConfirmTarget(
            "tag", "the cluster's tag", "upgrades cluster",
            show="the plan (cluster_upgrade with dryRun=true): every step, its estimate and "
            "what it changes",
        ),
    ),
    ToolSpec(
        "cluster_protection_set",
        "setProtection",
        ProtectionView,
        body=ProtectionRequest,
        advice="enabled: true refuses cluster_delete until it is turned off again.",
        idempotent=True,
    ),
)

# Parameters the OpenAPI document does not describe.
_PARAMETER_HINTS = {
    "tag": "The cluster's tag.",
    "clusterTag": "Only the operations of this cluster tag.",
    "status": "Only the operations with this status.",
    "operationId": "The operation's id (op-...), as the tool that started it returned.",
    "limit": "At most this many items in one page.",
    "nextToken": "The nextToken of the previous page, to read the next one.",
}

WAIT_SECONDS_SCHEMA: dict[str, Any] = {
    "type": "integer",
    "minimum": 0,
    "maximum": WAIT_SECONDS_MAX,
    "default": 0,
    "description": (
        f"Wait up to this many seconds (at most {WAIT_SECONDS_MAX}) for the operation's status "
        "or one of its stages to change, or for the operation to end; 0 reads it at once."
    ),
}
