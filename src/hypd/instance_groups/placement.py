"""Where a new instance group's nodes go: its request to the one network function.

The create pipeline and the add-instance-group operation both size a group's compute subnet
here: every node takes its primary address, one per EFA interface beyond the first unless the
group is EFA-only, and the VPC CNI's pod addresses.
"""

from __future__ import annotations

from hypd.catalog.models import InstanceTypeFacts
from hypd.clusters.create_request import InstanceGroupRequest
from hypd.network import ComputeSubnetRequest
from hypd.network.subnets import ips_per_node

POD_IPS_PER_NODE = 32
"""Subnet addresses the VPC CNI takes for pods on one node (its warm pool on a GPU node)."""


def node_addresses(group: InstanceGroupRequest, facts: InstanceTypeFacts | None) -> int:
    """The IPv4 addresses one node of `group` takes from its subnet."""
    efa = (facts.maximum_efa_interfaces or 0) if facts and facts.efa_supported else 0
    return ips_per_node(
        efa_interfaces=max(0, efa - 1), efa_only=group.efa_only, pod_ips=POD_IPS_PER_NODE
    )


def subnet_request(
    group: InstanceGroupRequest,
    facts: InstanceTypeFacts | None,
    *,
    vpc_id: str,
    availability_zone: str,
    cluster_tag: str,
    field: str,
) -> ComputeSubnetRequest:
    """The compute-subnet request of `group` in `availability_zone` of the VPC; `field` is the
    request field errors name (e.g. ``instanceGroups[1]``)."""
    return ComputeSubnetRequest(
        vpc_id=vpc_id,
        availability_zone=availability_zone,
        node_count=group.count,
        ips_per_node=node_addresses(group, facts),
        subnet_field=field,
        cluster_tag=cluster_tag,
        group_name=group.name,
        dedicated=group.dedicated_subnet,
    )
