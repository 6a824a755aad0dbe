"""What the capacity routes ask of the domain: each request judged against the live cluster and
the catalogue, and resolved into the operation to start, or found to match the cluster.

A route (`hypd.api.capacity`) parses its body (pydantic: a 400 naming the field), calls one
function here and answers: a `Start` becomes a 202 once `hypd.capacity.start` has started it
under the cluster's lock; an `Unchanged` is a 200 `changed: false` with what the request
matches. Every check runs before anything is recorded or started: a 400 names the field and
why, a 404 the missing group or node, a 409 the state that forbids it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from hypd.aws import sagemaker as sagemaker_api
from hypd.capacity import autoscaling
from hypd.capacity.changes import ACTION_STATUSES
from hypd.capacity.inputs import (
    NODE_ACTIONS,
    AddGroupInput,
    AutoscalingInput,
    CapacityInput,
    DeleteGroupInput,
    NodeActionInput,
    UpdateGroupInput,
)
from hypd.capacity.live import HyperPodClusterMissing, LiveCluster, read_live_cluster
from hypd.capacity.requests import (
    AddInstanceGroupRequest,
    AutoscalingRequest,
    UpdateInstanceGroupRequest,
    check_managed,
    plan_group_update,
)
from hypd.capacity.state import AutoscalingState, AutoscalingStore
from hypd.catalog.models import InstanceTypeFacts, TrainingPlan
from hypd.clusters.create_request import (
    Problem,
    TrainingPlanCapacity,
    catalog_error,
    hyperpod_cluster_name,
)
from hypd.clusters.store import ClusterStore
from hypd.create.validate import validate_group_against_catalog
from hypd.errors import AwsResourceNotFound, ConflictError, NotFoundError
from hypd.instance_groups.errors import (
    InstanceGroupExists,
    InstanceGroupNotFound,
    LastInstanceGroup,
    TooManyInstanceGroups,
)
from hypd.instance_groups.update import MAX_INSTANCE_GROUPS
from hypd.instance_groups.views import InstanceGroupView
from hypd.operations.models import OperationKind


class NodeNotFound(NotFoundError):
    code = "NodeNotFound"


class NodeActionNotAllowed(ConflictError):
    code = "NodeActionNotAllowed"


class InstanceGroupAutoscaled(ConflictError):
    """A group managed Karpenter scales cannot be deleted (remove it from autoscaling first)."""

    code = "InstanceGroupAutoscaled"


class AutoscalingPrerequisiteMissing(ConflictError):
    """The cluster misses a documented prerequisite of managed Karpenter (the same code as the
    prerequisites stage's error, for a check the API can make before starting)."""

    code = "AutoscalingPrerequisite"


class CapacityReads(Protocol):
    """What the checks read (the API's services): the cluster records, HyperPod and EC2, and
    the autoscaling state."""

    @property
    def clusters(self) -> ClusterStore: ...

    @property
    def sagemaker_client(self) -> Callable[[], Any]: ...

    @property
    def ec2_client(self) -> Callable[[], Any]: ...

    def autoscaling_store(self) -> AutoscalingStore: ...


class GroupCatalog(Protocol):
    """The catalogue a new group is judged on (what `validate_group_against_catalog` reads)."""

    @property
    def zones(self) -> Sequence[str]: ...

    @property
    def offerings(self) -> Mapping[str, set[str]]: ...

    @property
    def facts(self) -> Mapping[str, InstanceTypeFacts]: ...

    @property
    def training_plans(self) -> Mapping[str, TrainingPlan]: ...


@dataclass(frozen=True)
class Start:
    """The operation a request asks for: its kind, cluster and input (as it will record it)."""

    kind: OperationKind
    tag: str
    input: CapacityInput


V = TypeVar("V")


@dataclass(frozen=True)
class Unchanged(Generic[V]):
    """The request matches the cluster: nothing starts; `current` is what it matches."""

    current: V


@dataclass(frozen=True)
class AutoscalingNow:
    """A cluster's autoscaling: HyperPod's (in the live cluster) and what hypd recorded."""

    live: LiveCluster
    state: AutoscalingState | None


def managed_live(reads: CapacityReads, tag: str, *, active: bool = True) -> LiveCluster:
    """The live cluster of a cluster hypd created (that is ACTIVE, to change it)."""
    check_managed(reads.clusters.get(tag), active=active)
    return read_live_cluster(reads.sagemaker_client(), reads.ec2_client(), tag)


def autoscaled_groups(reads: CapacityReads, tag: str) -> set[str]:
    state = reads.autoscaling_store().get(tag)
    if state is None or not state.enabled or state.settings is None:
        return set()
    return set(state.settings.instance_groups)


# ---------------------------------------------------------------------------- instance groups
def instance_groups(
    reads: CapacityReads, tag: str
) -> tuple[LiveCluster, list[InstanceGroupView]]:
    """The live cluster and its groups' views (with whether Karpenter scales each)."""
    live = managed_live(reads, tag, active=False)
    scaled = autoscaled_groups(reads, tag)
    views = [
        live.view(str(g["InstanceGroupName"]), str(g["InstanceGroupName"]) in scaled)
        for g in live.groups
    ]
    return live, [v for v in views if v is not None]


def add_group(
    reads: CapacityReads,
    tag: str,
    request: AddInstanceGroupRequest,
    catalog: Callable[[], GroupCatalog],
) -> Start:
    """A new group: its name free, room for it, then judged on the catalogue (read only then)
    and resolved (zone, capacity)."""
    live = managed_live(reads, tag)
    if live.group(request.name) is not None:
        raise InstanceGroupExists(
            f"instance group {request.name} exists already in cluster {tag}",
            details={"instanceGroup": request.name, "field": "name"},
        )
    if len(live.groups) >= MAX_INSTANCE_GROUPS:
        raise TooManyInstanceGroups(
            f"cluster {tag} has {len(live.groups)} instance groups, the most a cluster holds",
            details={"instanceGroups": len(live.groups)},
        )
    found = catalog()
    group = validate_group_against_catalog(
        request,
        zone=request.availability_zone,
        default_zone=live.zone,
        zones=found.zones,
        offerings=found.offerings,
        facts=found.facts,
        training_plans=found.training_plans,
    )
    source = (
        "request"
        if request.availability_zone
        else "training-plan"
        if isinstance(request.capacity, TrainingPlanCapacity)
        else "cluster"
    )
    return Start(
        OperationKind.ADD_INSTANCE_GROUP,
        tag,
        AddGroupInput(
            tag=tag,
            group=group,
            availability_zone=group.resolved_capacity.availability_zone,
            availability_zone_source=source,
        ),
    )


def update_group(
    reads: CapacityReads, tag: str, name: str, request: UpdateInstanceGroupRequest
) -> Start | Unchanged[InstanceGroupView]:
    """A PATCH judged against the group it changes (`plan_group_update`), with the group's
    training plan for a new count."""
    live = managed_live(reads, tag)
    view = live.view(name, name in autoscaled_groups(reads, tag))
    if view is None:
        raise InstanceGroupNotFound(
            f"instance group {name} is not in cluster {tag}",
            details={"instanceGroup": name},
        )
    plan = None
    if view.capacity.training_plan_arn and request.count is not None:
        plans = {p.arn: p for p in sagemaker_api.list_training_plans(reads.sagemaker_client())}
        plan = plans.get(view.capacity.training_plan_arn)
    change = plan_group_update(request, view, training_plan=plan)
    if change is None:
        return Unchanged(view)
    return Start(
        OperationKind.UPDATE_INSTANCE_GROUP,
        tag,
        UpdateGroupInput(
            tag=tag,
            group=name,
            changes=change.changes,
            fields=change.fields,
            previous_count=view.count,
        ),
    )


def delete_group(reads: CapacityReads, tag: str, name: str) -> Start:
    """A group that is there, not the cluster's last, and not scaled by Karpenter."""
    live = managed_live(reads, tag)
    if live.group(name) is None:
        raise InstanceGroupNotFound(
            f"instance group {name} is not in cluster {tag}",
            details={"instanceGroup": name},
        )
    if len(live.groups) == 1:
        raise LastInstanceGroup(
            f"{name} is the last instance group of cluster {tag}; a HyperPod cluster keeps "
            "at least one (add another first)",
            details={"instanceGroup": name},
        )
    if name in autoscaled_groups(reads, tag):
        raise InstanceGroupAutoscaled(
            f"managed Karpenter scales instance group {name}: remove it from autoscaling "
            f"first (PUT /clusters/{tag}/autoscaling with the other groups, or turn "
            "autoscaling off)",
            details={"instanceGroup": name},
        )
    return Start(OperationKind.DELETE_INSTANCE_GROUP, tag, DeleteGroupInput(tag=tag, group=name))


# ---------------------------------------------------------------------------- nodes
def nodes(reads: CapacityReads, tag: str, instance_group: str | None) -> list[dict[str, Any]]:
    """The cluster's nodes as ListClusterNodes gives them (of one group)."""
    check_managed(reads.clusters.get(tag), active=False)
    name = hyperpod_cluster_name(tag)
    try:
        return sagemaker_api.list_cluster_nodes(
            reads.sagemaker_client(), name, instance_group=instance_group
        )
    except AwsResourceNotFound as exc:
        raise HyperPodClusterMissing(
            f"cluster {tag} has no HyperPod cluster {name} (yet, or any more)",
            details={"tag": tag, "clusterName": name},
        ) from exc


def node_action(reads: CapacityReads, tag: str, node_id: str, kind: OperationKind) -> Start:
    """A node action (`kind`) on a node that is there, in a status HyperPod takes it from."""
    live = managed_live(reads, tag)
    node = sagemaker_api.describe_cluster_node(reads.sagemaker_client(), live.name, node_id)
    if node is None:
        raise NodeNotFound(
            f"cluster {tag} has no node {node_id} (see GET /clusters/{tag}/nodes)",
            details={"nodeId": node_id},
        )
    status = (node.get("InstanceStatus") or {}).get("Status")
    action = NODE_ACTIONS[kind]
    allowed = ACTION_STATUSES[action]
    if status not in allowed:
        raise NodeActionNotAllowed(
            f"node {node_id} is {status}; HyperPod can {kind.value.split('-')[0]} a node "
            f"that is {' or '.join(sorted(allowed))}",
            details={"nodeId": node_id, "status": status},
        )
    return Start(
        kind,
        tag,
        NodeActionInput(
            tag=tag, node_id=node_id, group=str(node.get("InstanceGroupName")), action=action
        ),
    )


# ---------------------------------------------------------------------------- autoscaling
def _autoscaling_now(reads: CapacityReads, tag: str, live: LiveCluster) -> AutoscalingNow:
    return AutoscalingNow(live, reads.autoscaling_store().get(tag))


def autoscaling_of(reads: CapacityReads, tag: str) -> AutoscalingNow:
    """A cluster's autoscaling, HyperPod's and hypd's."""
    return _autoscaling_now(reads, tag, managed_live(reads, tag, active=False))


def set_autoscaling(
    reads: CapacityReads, tag: str, request: AutoscalingRequest
) -> Start | Unchanged[AutoscalingNow]:
    """A toggle: off unless it is off already; on with the settings the request resolves to,
    once the cluster and the groups meet the prerequisites, unless it is on with them."""
    live = managed_live(reads, tag)
    state = reads.autoscaling_store().get(tag)
    current = state.settings if state is not None and state.enabled else None
    mode = (live.autoscaling or {}).get("Mode")
    status = (live.autoscaling or {}).get("Status")
    if not request.enabled:
        if mode != "Enable" and status is None and not current:
            return Unchanged(_autoscaling_now(reads, tag, live))
        return Start(
            OperationKind.DISABLE_AUTOSCALING, tag, AutoscalingInput(tag=tag, enabled=False)
        )
    settings = autoscaling.resolve_settings(request, current)
    if settings is None:
        raise catalog_error(
            [Problem("instanceGroups", "name the groups Karpenter scales (1-10)")]
        )
    blockers = autoscaling.cluster_problems(live)
    if blockers:
        raise AutoscalingPrerequisiteMissing(
            f"cluster {tag} cannot use managed Karpenter: " + "; ".join(blockers),
            details={"problems": blockers},
        )
    problems = autoscaling.group_problems(live, settings.instance_groups)
    if problems:
        raise catalog_error(problems)
    if _matches(state, settings, mode, status):
        return Unchanged(_autoscaling_now(reads, tag, live))
    return Start(
        OperationKind.ENABLE_AUTOSCALING,
        tag,
        AutoscalingInput(
            tag=tag,
            enabled=True,
            settings=settings,
            warnings=autoscaling.warnings(live, settings.instance_groups),
        ),
    )


def _matches(
    state: AutoscalingState | None,
    settings: autoscaling.AutoscalingSettings,
    mode: str | None,
    status: str | None,
) -> bool:
    """An enable that matches: HyperPod's autoscaling is in service and hypd made exactly
    these settings' objects."""
    return bool(
        mode == "Enable"
        and status == "InService"
        and state is not None
        and state.enabled
        and state.settings == settings
    )
