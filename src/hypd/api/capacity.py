"""Routes: /clusters/{tag}/instance-groups, /clusters/{tag}/nodes, /clusters/{tag}/autoscaling.

Every change is checked against the live cluster before anything is recorded: a 400 names the
field and why, a 404 the missing group or node, a 409 the state that forbids it. A request that
matches reality answers 200 with `changed: false` and starts nothing; any other starts an
operation (202) under the cluster's lock, one at a time per cluster (see docs/capacity.md).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel

from hypd import clock
from hypd.api.errors import ERROR_RESPONSES, accepted_response, json_response
from hypd.api.models import (
    AutoscalingUnchanged,
    AutoscalingView,
    InstanceGroupList,
    InstanceGroupUnchanged,
    NodeList,
    NodeView,
    OperationAccepted,
)
from hypd.api.params import NodeId, Tag
from hypd.api.services import ApiServices
from hypd.aws import sagemaker as sagemaker_api
from hypd.capacity import autoscaling
from hypd.capacity.changes import ACTION_STATUSES
from hypd.capacity.inputs import (
    NODE_ACTIONS,
    AddGroupInput,
    AutoscalingInput,
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
from hypd.capacity.start import capacity_operation
from hypd.capacity.state import AutoscalingState
from hypd.clusters.create_request import (
    GROUP_NAME_PATTERN,
    Problem,
    TrainingPlanCapacity,
    catalog_error,
    hyperpod_cluster_name,
)
from hypd.create.catalog import catalog_for_groups
from hypd.create.validate import validate_group_against_catalog
from hypd.errors import AwsResourceNotFound, ConflictError, NotFoundError
from hypd.instance_groups.errors import (
    InstanceGroupExists,
    InstanceGroupNotFound,
    LastInstanceGroup,
    TooManyInstanceGroups,
)
from hypd.instance_groups.update import MAX_INSTANCE_GROUPS
from hypd.operations.models import Operation, OperationKind

GroupName = Annotated[
    str, Path(pattern=GROUP_NAME_PATTERN, max_length=63, description="The group's name.")
]
TAGS = ["capacity"]

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


def _json(status: int, model: BaseModel) -> Response[str]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(model.model_dump(mode="json", by_alias=True)),
    )


def _unchanged(model: BaseModel) -> Response[str]:
    """200: the request matches reality and nothing was started."""
    return _json(200, model)


def _accepted(operation: Operation) -> Response[str]:
    return _json(
        202,
        OperationAccepted(operation_id=operation.id, status=operation.status, kind=operation.kind),
    )


def build_router(services: ApiServices) -> APIGatewayRouter:
    router = APIGatewayRouter()
    logger = Logger(child=True)
    metrics = Metrics()

    def managed_live(tag: str, *, active: bool = True) -> LiveCluster:
        """The live cluster of a cluster hypd created (that is ACTIVE, to change it)."""
        check_managed(services.clusters.get(tag), active=active)
        return read_live_cluster(services.sagemaker_client(), services.ec2_client(), tag)

    def autoscaled_groups(tag: str) -> set[str]:
        state = services.autoscaling_store().get(tag)
        if state is None or not state.enabled or state.settings is None:
            return set()
        return set(state.settings.instance_groups)

    def start(kind: OperationKind, tag: str, request: BaseModel) -> Response[str]:
        operation = capacity_operation(kind, tag, request)
        logger.set_correlation_id(operation.id)
        operation = services.starter.launch(operation)
        metrics.add_metric(name="OperationStarted", unit=MetricUnit.Count, value=1)
        logger.info("operation started", kind=kind.value, cluster_tag=tag)
        return _accepted(operation)

    accepted = {
        202: accepted_response("The operation was started; poll GET /operations/{operationId}."),
        400: ERROR_RESPONSES[400],
        404: ERROR_RESPONSES[404],
        409: ERROR_RESPONSES[409],
        503: ERROR_RESPONSES[503],
    }

    # ---------------------------------------------------------------- instance groups
    @router.get(
        "/clusters/<tag>/instance-groups",
        summary="List a cluster's instance groups as HyperPod describes them",
        description=(
            "Each group in the terms of its create request: type, count (the target) and the "
            "instances up now, capacity type, deep health checks, EFA-only, zone and subnet "
            "(dedicated or shared), labels and taints, and whether Karpenter scales it."
        ),
        operation_id="listInstanceGroups",
        tags=TAGS,
        responses={
            200: json_response("InstanceGroupList", "The cluster's instance groups."),
            400: ERROR_RESPONSES[400],
            404: ERROR_RESPONSES[404],
            409: ERROR_RESPONSES[409],
            503: ERROR_RESPONSES[503],
        },
    )
    def list_instance_groups(tag: Tag) -> InstanceGroupList:
        live = managed_live(tag, active=False)
        scaled = autoscaled_groups(tag)
        views = [
            live.view(str(g["InstanceGroupName"]), str(g["InstanceGroupName"]) in scaled)
            for g in live.groups
        ]
        return InstanceGroupList(
            tag=tag,
            cluster_status=live.status,
            instance_groups=[v for v in views if v is not None],
        )

    @router.post(
        "/clusters/<tag>/instance-groups",
        summary="Add an instance group: capacity type, zone, subnet and network fixed at creation",
        description=(
            "The body is an instanceGroups item of POST /clusters (with an optional "
            "availabilityZone). Checked first against the catalogue and the cluster: the name "
            "is free (409 InstanceGroupExists), the zone offers the type, a training plan's zone "
            "is reconciled with the request (the plan's zone is taken when none is given; a "
            "different one is a 400 on capacity.trainingPlanArn), EFA-only needs several network "
            "cards, no taints with deep health checks. Then an add-instance-group operation "
            "(network: the group's compute subnet from the one network function; hyperpod: "
            "UpdateCluster; verify: its nodes Running and schedulable) starts: 202."
        ),
        operation_id="addInstanceGroup",
        tags=TAGS,
        status_code=202,
        responses=accepted,
    )
    def add_instance_group(
        tag: Tag, request: Annotated[AddInstanceGroupRequest, Body()]
    ) -> Response[str]:
        live = managed_live(tag)
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
        catalog = catalog_for_groups(services, [request])
        group = validate_group_against_catalog(
            request,
            zone=request.availability_zone,
            default_zone=live.zone,
            zones=catalog.zones,
            offerings=catalog.offerings,
            facts=catalog.facts,
            training_plans=catalog.training_plans,
        )
        source = (
            "request"
            if request.availability_zone
            else "training-plan"
            if isinstance(request.capacity, TrainingPlanCapacity)
            else "cluster"
        )
        return start(
            OperationKind.ADD_INSTANCE_GROUP,
            tag,
            AddGroupInput(
                tag=tag,
                group=group,
                availability_zone=group.resolved_capacity.availability_zone,
                availability_zone_source=source,
            ),
        )

    @router.patch(
        "/clusters/<tag>/instance-groups/<name>",
        summary="Scale an instance group or change its labels and taints",
        description=(
            "Only the fields sent are acted on: count, minCount, labels (the whole map) and "
            "taints (the whole list). A create-time field (see GET /catalog/instance-group-"
            "fields) with a value other than the group's is a 400 ImmutableField naming the "
            "field and why; restating the current value is fine. A request that matches the "
            "group answers 200 with changed: false; any other starts an update-instance-group "
            "operation (202). Every other member of the group is resubmitted as HyperPod "
            "describes it (one allowlist), so nothing it carries is reset."
        ),
        operation_id="updateInstanceGroup",
        tags=TAGS,
        status_code=202,
        responses={
            **accepted,
            200: json_response("InstanceGroupUnchanged", "The request matches the group."),
        },
    )
    def update_instance_group(
        tag: Tag, name: GroupName, request: Annotated[UpdateInstanceGroupRequest, Body()]
    ) -> Response[str]:
        live = managed_live(tag)
        view = live.view(name, name in autoscaled_groups(tag))
        if view is None:
            raise InstanceGroupNotFound(
                f"instance group {name} is not in cluster {tag}",
                details={"instanceGroup": name},
            )
        plan = None
        if view.capacity.training_plan_arn and request.count is not None:
            plans = {p.arn: p for p in sagemaker_api.list_training_plans(
                services.sagemaker_client())}
            plan = plans.get(view.capacity.training_plan_arn)
        change = plan_group_update(request, view, training_plan=plan)
        if change is None:
            return _unchanged(InstanceGroupUnchanged(changed=False, instance_group=view))
        return start(
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

    @router.delete(
        "/clusters/<tag>/instance-groups/<name>",
        summary="Delete an instance group (its dedicated subnet is kept for a successor)",
        description=(
            "Starts a delete-instance-group operation (UpdateCluster InstanceGroupsToDelete, "
            "then its nodes gone from HyperPod and Kubernetes). The last group of a cluster "
            "cannot be deleted (409 LastInstanceGroup), nor one Karpenter scales (409 "
            "InstanceGroupAutoscaled: remove it from autoscaling first). A dedicated subnet "
            "outlives the group: a new group of the same name finds it again."
        ),
        operation_id="deleteInstanceGroup",
        tags=TAGS,
        status_code=202,
        responses=accepted,
    )
    def delete_instance_group(tag: Tag, name: GroupName) -> Response[str]:
        live = managed_live(tag)
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
        if name in autoscaled_groups(tag):
            raise InstanceGroupAutoscaled(
                f"managed Karpenter scales instance group {name}: remove it from autoscaling "
                f"first (PUT /clusters/{tag}/autoscaling with the other groups, or turn "
                "autoscaling off)",
                details={"instanceGroup": name},
            )
        return start(
            OperationKind.DELETE_INSTANCE_GROUP, tag, DeleteGroupInput(tag=tag, group=name)
        )

    # ---------------------------------------------------------------- nodes
    @router.get(
        "/clusters/<tag>/nodes",
        summary="List a cluster's nodes as HyperPod describes them",
        operation_id="listNodes",
        tags=TAGS,
        responses={
            200: json_response("NodeList", "The cluster's nodes, oldest first."),
            400: ERROR_RESPONSES[400],
            404: ERROR_RESPONSES[404],
            409: ERROR_RESPONSES[409],
            503: ERROR_RESPONSES[503],
        },
    )
    def list_nodes(
        tag: Tag,
        instance_group: Annotated[
            str | None,
            Query(alias="instanceGroup", pattern=GROUP_NAME_PATTERN, max_length=63,
                  description="Only this group's nodes."),
        ] = None,
    ) -> NodeList:
        check_managed(services.clusters.get(tag), active=False)
        name = hyperpod_cluster_name(tag)
        try:
            nodes = sagemaker_api.list_cluster_nodes(
                services.sagemaker_client(), name, instance_group=instance_group
            )
        except AwsResourceNotFound as exc:
            raise HyperPodClusterMissing(
                f"cluster {tag} has no HyperPod cluster {name} (yet, or any more)",
                details={"tag": tag, "clusterName": name},
            ) from exc
        return NodeList(tag=tag, nodes=[node_view(n) for n in nodes])

    def node_action(tag: str, node_id: str, kind: OperationKind) -> Response[str]:
        live = managed_live(tag)
        node = sagemaker_api.describe_cluster_node(services.sagemaker_client(), live.name, node_id)
        if node is None:
            raise NodeNotFound(
                f"cluster {tag} has no node {node_id} (see GET /clusters/{tag}/nodes)",
                details={"nodeId": node_id},
            )
        status = (node.get("InstanceStatus") or {}).get("Status")
        allowed = ACTION_STATUSES[NODE_ACTIONS[kind]]
        if status not in allowed:
            raise NodeActionNotAllowed(
                f"node {node_id} is {status}; HyperPod can {kind.value.split('-')[0]} a node "
                f"that is {' or '.join(sorted(allowed))}",
                details={"nodeId": node_id, "status": status},
            )
        return start(
            kind,
            tag,
            NodeActionInput(
                tag=tag,
                node_id=node_id,
                group=str(node.get("InstanceGroupName")),
                action=NODE_ACTIONS[kind],
            ),
        )

    @router.post(
        "/clusters/<tag>/nodes/<nodeId>/reboot",
        summary="Reboot a node",
        description=(
            "Starts a reboot-node operation (BatchRebootClusterNodes, then the node Running and "
            "schedulable again). The node must be Running or Failure (else 409)."
        ),
        operation_id="rebootNode",
        tags=TAGS,
        status_code=202,
        responses=accepted,
    )
    def reboot_node(tag: Tag, node_id: NodeId) -> Response[str]:
        return node_action(tag, node_id, OperationKind.REBOOT_NODE)

    @router.post(
        "/clusters/<tag>/nodes/<nodeId>/replace",
        summary="Replace a node with a new instance",
        description=(
            "Starts a replace-node operation (BatchReplaceClusterNodes, then the old instance "
            "gone and the group back at its count). The node must be Running or Failure."
        ),
        operation_id="replaceNode",
        tags=TAGS,
        status_code=202,
        responses=accepted,
    )
    def replace_node(tag: Tag, node_id: NodeId) -> Response[str]:
        return node_action(tag, node_id, OperationKind.REPLACE_NODE)

    @router.delete(
        "/clusters/<tag>/nodes/<nodeId>",
        summary="Delete a node (its group's count goes down by one)",
        description=(
            "Starts a delete-node operation (BatchDeleteClusterNodes, then the node gone from "
            "HyperPod and Kubernetes)."
        ),
        operation_id="deleteNode",
        tags=TAGS,
        status_code=202,
        responses=accepted,
    )
    def delete_node(tag: Tag, node_id: NodeId) -> Response[str]:
        return node_action(tag, node_id, OperationKind.DELETE_NODE)

    # ---------------------------------------------------------------- autoscaling
    def autoscaling_view(tag: str, live: LiveCluster) -> AutoscalingView:
        state = services.autoscaling_store().get(tag)
        found = live.autoscaling or {}
        settings = state.settings if state is not None and state.enabled else None
        return AutoscalingView(
            tag=tag,
            enabled=bool(state and state.enabled),
            status=found.get("Status"),
            mode=found.get("Mode"),
            failure_message=found.get("FailureMessage"),
            instance_groups=list(settings.instance_groups) if settings else [],
            consolidate_after=settings.consolidate_after if settings else None,
            consolidation_policy=settings.consolidation_policy if settings else None,
            role_arn=state.role_arn if state else None,
            cluster_role=live.described.get("ClusterRole"),
            node_class=state.node_class if state else None,
            node_pool=state.node_pool if state else None,
            last_operation_id=state.operation_id if state else None,
        )

    @router.get(
        "/clusters/<tag>/autoscaling",
        summary="Get a cluster's managed Karpenter autoscaling",
        operation_id="getAutoscaling",
        tags=TAGS,
        responses={
            200: json_response("AutoscalingView", "HyperPod's autoscaling and what hypd made."),
            400: ERROR_RESPONSES[400],
            404: ERROR_RESPONSES[404],
            409: ERROR_RESPONSES[409],
            503: ERROR_RESPONSES[503],
        },
    )
    def get_autoscaling(tag: Tag) -> AutoscalingView:
        return autoscaling_view(tag, managed_live(tag, active=False))

    @router.put(
        "/clusters/<tag>/autoscaling",
        summary="Turn managed Karpenter autoscaling on or off (a validated, idempotent toggle)",
        description=(
            "enabled: true checks the prerequisites (continuous provisioning, automatic node "
            "recovery, 1-10 existing groups with on-demand or spot capacity, no deep health "
            "checks, one zone each), then an enable-autoscaling operation makes the cluster "
            "role, turns on AutoScaling in HyperPod, waits for it, and applies a "
            "HyperpodNodeClass and a NodePool whose consolidation scales idle groups toward "
            "zero. enabled: false removes what enabling made. Only the fields sent are acted "
            "on; a request that matches the cluster answers 200 with changed: false."
        ),
        operation_id="setAutoscaling",
        tags=TAGS,
        status_code=202,
        responses={
            **accepted,
            200: json_response("AutoscalingUnchanged", "The request matches the cluster."),
        },
    )
    def set_autoscaling(
        tag: Tag, request: Annotated[AutoscalingRequest, Body()]
    ) -> Response[str]:
        live = managed_live(tag)
        state = services.autoscaling_store().get(tag)
        current = state.settings if state is not None and state.enabled else None
        mode = (live.autoscaling or {}).get("Mode")
        status = (live.autoscaling or {}).get("Status")
        if not request.enabled:
            if mode != "Enable" and status is None and not current:
                return _unchanged(
                    AutoscalingUnchanged(changed=False, autoscaling=autoscaling_view(tag, live))
                )
            return start(
                OperationKind.DISABLE_AUTOSCALING,
                tag,
                AutoscalingInput(tag=tag, enabled=False),
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
            return _unchanged(
                AutoscalingUnchanged(changed=False, autoscaling=autoscaling_view(tag, live))
            )
        return start(
            OperationKind.ENABLE_AUTOSCALING,
            tag,
            AutoscalingInput(
                tag=tag,
                enabled=True,
                settings=settings,
                warnings=autoscaling.warnings(live, settings.instance_groups),
            ),
        )

    return router


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


def node_view(node: dict[str, Any]) -> NodeView:
    status = node.get("InstanceStatus") or {}

    def time(key: str) -> str | None:
        value = node.get(key)
        return clock.isoformat(value) if isinstance(value, datetime) else value

    return NodeView(
        node_id=str(node["InstanceId"]),
        instance_group=str(node.get("InstanceGroupName")),
        instance_type=node.get("InstanceType"),
        status=status.get("Status"),
        message=status.get("Message"),
        launch_time=time("LaunchTime"),
        last_software_update_time=time("LastSoftwareUpdateTime"),
        private_dns_hostname=node.get("PrivateDnsHostname"),
    )
