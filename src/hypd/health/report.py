"""The health the events recorded (`hypd.health.records`), read against the cluster's nodes as
HyperPod lists them now: a node HyperPod replaced is reported as gone, not as unhealthy forever.
What `GET /clusters/{tag}/health` and `GET /clusters/{tag}/nodes/{nodeId}/health` answer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypd.aws import sagemaker as sagemaker_api
from hypd.clusters.create_request import hyperpod_cluster_name
from hypd.errors import AwsResourceNotFound, NotFoundError
from hypd.health.events import HEALTHY
from hypd.health.records import ClusterHealth, HealthStore, NodeHealth


@dataclass(frozen=True)
class ClusterHealthReport:
    nodes: int
    """The nodes HyperPod lists now."""
    counts: dict[str, int]
    """Listed nodes by health status (a node with no health event counts as Healthy)."""
    unhealthy: list[tuple[NodeHealth, str | None]]
    """Listed nodes that are not Healthy, each with its group as HyperPod lists it now."""
    gone: list[NodeHealth]
    """Nodes with recorded health that HyperPod no longer lists, by node id."""
    cluster: ClusterHealth
    """The cluster's state, events and add-ons, as the events left them."""


def cluster_health(
    tag: str, health: HealthStore, sagemaker_client: Callable[[], Any]
) -> ClusterHealthReport:
    """The cluster's recorded health against its nodes as ListClusterNodes gives them now (a
    HyperPod cluster that is gone lists none)."""
    recorded = {n.node_id: n for n in health.nodes(tag)}
    try:
        listed = {
            str(n["InstanceId"]): n
            for n in sagemaker_api.list_cluster_nodes(
                sagemaker_client(), hyperpod_cluster_name(tag)
            )
        }
    except AwsResourceNotFound:
        listed = {}
    counts: Counter[str] = Counter()
    unhealthy: list[tuple[NodeHealth, str | None]] = []
    for node_id in listed:
        node = recorded.get(node_id)
        status = node.latest.status if node else HEALTHY
        counts[status] += 1
        if node is not None and status != HEALTHY:
            unhealthy.append((node, listed[node_id].get("InstanceGroupName")))
    return ClusterHealthReport(
        nodes=len(listed),
        counts=dict(counts),
        unhealthy=unhealthy,
        gone=[n for node_id, n in sorted(recorded.items()) if node_id not in listed],
        cluster=health.cluster(tag),
    )


def node_health(health: HealthStore, tag: str, node_id: str) -> NodeHealth:
    """The node's recorded health and history.

    Raises:
        NotFoundError: no health event of the node was received.
    """
    node = health.node(tag, node_id)
    if node is None:
        raise NotFoundError(
            f"no health event of node {node_id} of cluster {tag} was received",
            details={"nodeId": node_id},
        )
    return node
