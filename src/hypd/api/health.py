"""Routes: /clusters/{tag}/health, /clusters/{tag}/nodes/{nodeId}/health,
/clusters/{tag}/health-policy.

The health the events recorded (docs/health.md), read against the cluster's nodes as HyperPod
lists them now (`hypd.health.report`): a node HyperPod replaced is reported as gone, not as
unhealthy forever.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hypd.api.context import services
from hypd.api.errors import ERROR_RESPONSES, json_response
from hypd.api.models import HealthPolicyView, HealthSummaryView, NodeHealthHistory, NodeHealthView
from hypd.api.params import NodeId, Tag
from hypd.capacity.requests import check_managed
from hypd.health.policy import HealthPolicy
from hypd.health.records import NodeHealth
from hypd.health.report import cluster_health, node_health

TAGS = ["health"]


def _view(node: NodeHealth, group: str | None = None) -> NodeHealthView:
    """The node's health; its group as HyperPod lists it now, else as its events named it."""
    return NodeHealthView(node_id=node.node_id, instance_group=group or node.instance_group,
                          status=node.latest.status, latest=node.latest)


router = APIGatewayRouter()


@router.get(
    "/clusters/<tag>/health",
    summary="A cluster's health: nodes by health status, unhealthy nodes, recent events",
    description=(
        "From the HyperPod and EKS events hypd received: the nodes HyperPod lists now by "
        "their latest health status, every unhealthy one with its reason, HyperPod's "
        "recommendation and what was done (HyperPod's own repair, hypd's operation, or why "
        "nothing), nodes that left the cluster, the last Warn/Error cluster events, the "
        "add-ons' health and the health policy."
    ),
    operation_id="getClusterHealth",
    tags=TAGS,
    responses={
        200: json_response("HealthSummaryView", "The cluster's health."),
        400: ERROR_RESPONSES[400],
        404: ERROR_RESPONSES[404],
        503: ERROR_RESPONSES[503],
    },
)
def get_cluster_health(tag: Tag) -> HealthSummaryView:
    services().clusters.get(tag)
    report = cluster_health(tag, services().health_store(), services().sagemaker_client)
    policy = services().policy_store().find(tag)
    return HealthSummaryView(
        tag=tag,
        cluster_status=report.cluster.status,
        status_time=report.cluster.status_time,
        nodes=report.nodes,
        counts=report.counts,
        unhealthy=[_view(node, group) for node, group in report.unhealthy],
        gone=[_view(node) for node in report.gone],
        recent_events=report.cluster.events,
        addons=report.cluster.addons,
        policy=policy or HealthPolicy(),
        policy_is_default=policy is None,
    )


@router.get(
    "/clusters/<tag>/nodes/<nodeId>/health",
    summary="A node's health and its history",
    description=(
        "The node's latest health and the last 50 health events, newest first, each with "
        "what was done about it. 404 when no health event of the node was received."
    ),
    operation_id="getNodeHealth",
    tags=TAGS,
    responses={
        200: json_response("NodeHealthHistory", "The node's health history."),
        400: ERROR_RESPONSES[400],
        404: ERROR_RESPONSES[404],
        503: ERROR_RESPONSES[503],
    },
)
def get_node_health(tag: Tag, node_id: NodeId) -> NodeHealthHistory:
    services().clusters.get(tag)
    node = node_health(services().health_store(), tag, node_id)
    return NodeHealthHistory(tag=tag, node_id=node_id, instance_group=node.instance_group,
                             latest=node.latest, history=node.history)


@router.get(
    "/clusters/<tag>/health-policy",
    summary="A cluster's health policy",
    operation_id="getHealthPolicy",
    tags=TAGS,
    responses={
        200: json_response("HealthPolicyView", "The policy (the default when none is set)."),
        400: ERROR_RESPONSES[400],
        404: ERROR_RESPONSES[404],
        503: ERROR_RESPONSES[503],
    },
)
def get_health_policy(tag: Tag) -> HealthPolicyView:
    services().clusters.get(tag)
    policy = services().policy_store().find(tag)
    return HealthPolicyView(tag=tag, policy=policy or HealthPolicy(), default=policy is None)


@router.put(
    "/clusters/<tag>/health-policy",
    summary="Set what hypd does when HyperPod recommends a repair it does not take",
    description=(
        "action: notify (the default) only notifies; reboot reboots a node HyperPod "
        "recommends rebooting; replace reboots or replaces as HyperPod recommends. "
        "maxActionsPerHour bounds the repairs per cluster in any 60 minutes, "
        "nodeCooldownMinutes the time between two repairs of one node. Every repair is a "
        "reboot-node or replace-node operation with its own record. The body replaces the "
        "policy; omitted fields take their defaults. For clusters hypd created."
    ),
    operation_id="setHealthPolicy",
    tags=TAGS,
    responses={
        200: json_response("HealthPolicyView", "The policy now in force."),
        400: ERROR_RESPONSES[400],
        404: ERROR_RESPONSES[404],
        409: ERROR_RESPONSES[409],
        503: ERROR_RESPONSES[503],
    },
)
def set_health_policy(
    tag: Tag, policy: Annotated[HealthPolicy, Body()]
) -> HealthPolicyView:
    check_managed(services().clusters.get(tag), active=False)
    services().policy_store().put(tag, policy)
    return HealthPolicyView(tag=tag, policy=policy, default=False)
