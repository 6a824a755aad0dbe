"""Routes: /clusters/{tag}/instance-groups, /clusters/{tag}/nodes, /clusters/{tag}/autoscaling.

Every change is checked against the live cluster before anything is recorded
(`hypd.capacity.service`): a 400 names the field and why, a 404 the missing group or node, a
409 the state that forbids it. A request that matches reality answers 200 with
`changed: false` and starts nothing; any other starts an operation (202) under the cluster's
lock, one at a time per cluster (see docs/capacity.md). Each route parses, calls one domain
function and answers.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel

from hypd import clock
from hypd.api.context import logger, metrics, services
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
from hypd.capacity import service
from hypd.capacity.requests import (
    AddInstanceGroupRequest,
    AutoscalingRequest,
    UpdateInstanceGroupRequest,
)
from hypd.capacity.start import capacity_operation
from hypd.clusters.create_request import GROUP_NAME_PATTERN
from hypd.create.catalog import catalog_for_groups
from hypd.operations.models import Operation, OperationKind

GroupName = Annotated[
    str, Path(pattern=GROUP_NAME_PATTERN, max_length=63, description="The group's name.")
]
TAGS = ["capacity"]


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


def start(change: service.Start) -> Response[str]:
    """Record and start the operation a request resolved to: 202."""
    kind, tag = change.kind, change.tag
    operation = capacity_operation(kind, tag, change.input)
    logger().set_correlation_id(operation.id)
    operation = services().starter.launch(operation)
    metrics().add_metric(name="OperationStarted", unit=MetricUnit.Count, value=1)
    logger().info("operation started", kind=kind.value, cluster_tag=tag)
    return _accepted(operation)


def _read(schema: str, description: str) -> dict[int, OpenAPIResponse]:
    """The responses of a route that reads the live cluster."""
    return {
        200: json_response(schema, description),
        **{status: ERROR_RESPONSES[status] for status in (400, 404, 409, 503)},
    }


ACCEPTED = {
    202: accepted_response("The operation was started; poll GET /operations/{operationId}."),
    400: ERROR_RESPONSES[400],
    404: ERROR_RESPONSES[404],
    409: ERROR_RESPONSES[409],
    503: ERROR_RESPONSES[503],
}

router = APIGatewayRouter()


# -------------------------------------------------------------------- instance groups
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
    responses=_read("InstanceGroupList", "The cluster's instance groups."),
)
def list_instance_groups(tag: Tag) -> InstanceGroupList:
    live, groups = service.instance_groups(services(), tag)
    return InstanceGroupList(tag=tag, cluster_status=live.status, instance_groups=groups)


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
    responses=ACCEPTED,
)
def add_instance_group(
    tag: Tag, request: Annotated[AddInstanceGroupRequest, Body()]
) -> Response[str]:
    return start(
        service.add_group(
            services(), tag, request, lambda: catalog_for_groups(services(), [request])
        )
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
        **ACCEPTED,
        200: json_response("InstanceGroupUnchanged", "The request matches the group."),
    },
)
def update_instance_group(
    tag: Tag, name: GroupName, request: Annotated[UpdateInstanceGroupRequest, Body()]
) -> Response[str]:
    change = service.update_group(services(), tag, name, request)
    if isinstance(change, service.Unchanged):
        return _unchanged(InstanceGroupUnchanged(changed=False, instance_group=change.current))
    return start(change)


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
    responses=ACCEPTED,
)
def delete_instance_group(tag: Tag, name: GroupName) -> Response[str]:
    return start(service.delete_group(services(), tag, name))


# -------------------------------------------------------------------- nodes
@router.get(
    "/clusters/<tag>/nodes",
    summary="List a cluster's nodes as HyperPod describes them",
    operation_id="listNodes",
    tags=TAGS,
    responses=_read("NodeList", "The cluster's nodes, oldest first."),
)
def list_nodes(
    tag: Tag,
    instance_group: Annotated[
        str | None,
        Query(alias="instanceGroup", pattern=GROUP_NAME_PATTERN, max_length=63,
              description="Only this group's nodes."),
    ] = None,
) -> NodeList:
    nodes = service.nodes(services(), tag, instance_group)
    return NodeList(tag=tag, nodes=[node_view(n) for n in nodes])


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
    responses=ACCEPTED,
)
def reboot_node(tag: Tag, node_id: NodeId) -> Response[str]:
    return start(service.node_action(services(), tag, node_id, OperationKind.REBOOT_NODE))


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
    responses=ACCEPTED,
)
def replace_node(tag: Tag, node_id: NodeId) -> Response[str]:
    return start(service.node_action(services(), tag, node_id, OperationKind.REPLACE_NODE))


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
    responses=ACCEPTED,
)
def delete_node(tag: Tag, node_id: NodeId) -> Response[str]:
    return start(service.node_action(services(), tag, node_id, OperationKind.DELETE_NODE))


# -------------------------------------------------------------------- autoscaling
@router.get(
    "/clusters/<tag>/autoscaling",
    summary="Get a cluster's managed Karpenter autoscaling",
    operation_id="getAutoscaling",
    tags=TAGS,
    responses=_read("AutoscalingView", "HyperPod's autoscaling and what hypd made."),
)
def get_autoscaling(tag: Tag) -> AutoscalingView:
    return autoscaling_view(tag, service.autoscaling_of(services(), tag))


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
        **ACCEPTED,
        200: json_response("AutoscalingUnchanged", "The request matches the cluster."),
    },
)
def set_autoscaling(
    tag: Tag, request: Annotated[AutoscalingRequest, Body()]
) -> Response[str]:
    change = service.set_autoscaling(services(), tag, request)
    if isinstance(change, service.Unchanged):
        return _unchanged(
            AutoscalingUnchanged(changed=False, autoscaling=autoscaling_view(tag, change.current))
        )
    return start(change)


def autoscaling_view(tag: str, now: service.AutoscalingNow) -> AutoscalingView:
    state, found = now.state, now.live.autoscaling or {}
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
        cluster_role=now.live.described.get("ClusterRole"),
        node_class=state.node_class if state else None,
        node_pool=state.node_pool if state else None,
        last_operation_id=state.operation_id if state else None,
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
