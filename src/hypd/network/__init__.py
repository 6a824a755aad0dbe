"""The one network function: every capacity path gets its compute subnet from here.

`ensure_compute_subnet` answers with a subnet by a fixed priority:

1. the subnet the request names (verified, never modified);
2. else a compatible per-AZ compute subnet hypd already made in the VPC (found by its tags);
3. else a new /20 with hypd's per-AZ route table (default route via a NAT gateway) and the VPC's
   S3 gateway endpoint attached to that table.

It is idempotent: everything is found by tags before it is created, so re-running after a crash
at any step finishes what the crashed run began and creates nothing twice. See docs/network.md.

A little over 400 lines, kept whole: it is the one network function, read top to bottom in the
order of the priorities above; the subnet arithmetic is apart in `subnets`.
"""

from __future__ import annotations

import ipaddress
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hypd.aws import ec2 as ec2_api
from hypd.aws.ec2 import RouteTable, Subnet, SubnetCidrConflict, Vpc
from hypd.errors import ClientRequestError, PermanentError
from hypd.network.subnets import COMPUTE_PREFIX, next_free_block, usable_addresses

__all__ = [
    "TAG_AVAILABILITY_ZONE",
    "TAG_CLUSTER",
    "TAG_DEDICATED_TO",
    "TAG_NAT_GATEWAY",
    "TAG_ROLE",
    "ComputeSubnet",
    "ComputeSubnetRequest",
    "InvalidSubnet",
    "NetworkExhausted",
    "SubnetCidrConflict",
    "SubnetMismatch",
    "SubnetNotFound",
    "SubnetSource",
    "SubnetTooSmall",
    "TooManyAddresses",
    "VpcNotFound",
    "ensure_compute_subnet",
]

TAG_ROLE = "hypd:role"
ROLE_COMPUTE = "compute"
ROLE_COMPUTE_ROUTES = "compute-routes"
TAG_CLUSTER = "hypd:cluster"
TAG_AVAILABILITY_ZONE = "hypd:availability-zone"
TAG_DEDICATED_TO = "hypd:dedicated-to"
TAG_NAT_GATEWAY = "hypd:nat-gateway"
NO_NAT_GATEWAY = "none"

MAX_CREATE_ATTEMPTS = 5
"""New-subnet attempts per call when concurrent creators keep taking the block we chose."""


# ---------------------------------------------------------------------------- errors
class InvalidSubnet(ClientRequestError):
    """The subnet the request names cannot hold this capacity; `details.field` names the field."""

    status = 400
    code = "InvalidSubnet"

    def __init__(self, message: str, *, field: str, subnet_id: str, **details: Any) -> None:
        super().__init__(message, details={"field": field, "subnetId": subnet_id, **details})
        self.field = field


class SubnetNotFound(InvalidSubnet):
    code = "SubnetNotFound"


class SubnetMismatch(InvalidSubnet):
    """The named subnet is in another VPC or Availability Zone than the request."""

    code = "SubnetMismatch"


class SubnetTooSmall(InvalidSubnet):
    """The named subnet has fewer free addresses than the requested nodes need."""

    code = "SubnetTooSmall"


class TooManyAddresses(ClientRequestError):
    """The requested nodes need more addresses than a compute subnet (/20) holds."""

    status = 400
    code = "TooManyAddresses"


class VpcNotFound(PermanentError):
    code = "VpcNotFound"


class NetworkExhausted(PermanentError):
    """No free /20 is left in any of the VPC's IPv4 CIDR blocks."""

    code = "NetworkExhausted"


# ---------------------------------------------------------------------------- models
class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)


class ComputeSubnetRequest(_Model):
    """What a capacity path needs: room for `node_count` nodes in one VPC and zone."""

    vpc_id: str = Field(alias="vpcId")
    availability_zone: str = Field(alias="availabilityZone")
    node_count: int = Field(alias="nodeCount", ge=0)
    ips_per_node: int = Field(alias="ipsPerNode", ge=0)
    """IPv4 addresses one node takes (see `hypd.network.subnets.ips_per_node`)."""
    subnet_id: str | None = Field(default=None, alias="subnetId")
    """An explicit subnet: used as is after verification."""
    subnet_field: str = Field(default="subnetId", alias="subnetField")
    """The request field `subnet_id` came from, named by errors (`instanceGroups[0].subnetId`)."""
    cluster_tag: str | None = Field(default=None, alias="clusterTag")
    group_name: str | None = Field(default=None, alias="groupName")
    dedicated: bool = False
    """The group wants a subnet of its own, which outlives it and passes to a successor group of
    the same name."""

    @model_validator(mode="after")
    def _dedicated_needs_a_group(self) -> ComputeSubnetRequest:
        if self.dedicated and not self.group_name:
            raise ValueError("a dedicated subnet needs the instance group's name (groupName)")
        return self

    @property
    def required_ips(self) -> int:
        return self.node_count * self.ips_per_node


class SubnetSource(StrEnum):
    EXPLICIT = "explicit"
    EXISTING = "existing"
    CREATED = "created"


class ComputeSubnet(_Model):
    subnet_id: str = Field(alias="subnetId")
    vpc_id: str = Field(alias="vpcId")
    availability_zone: str = Field(alias="availabilityZone")
    cidr_block: str = Field(alias="cidrBlock")
    available_ips: int = Field(alias="availableIps")
    source: SubnetSource
    dedicated_to: str | None = Field(default=None, alias="dedicatedTo")
    route_table_id: str | None = Field(default=None, alias="routeTableId")
    nat_gateway_id: str | None = Field(default=None, alias="natGatewayId")
    """The NAT gateway the subnet's default route uses (None: no default route)."""
    s3_endpoint_id: str | None = Field(default=None, alias="s3EndpointId")


# ---------------------------------------------------------------------------- the function
def ensure_compute_subnet(ec2: Any, request: ComputeSubnetRequest) -> ComputeSubnet:
    """The compute subnet for `request`, by the fixed priority: explicit, existing, new /20.

    `ec2` is a boto3 EC2 client. Safe to re-run: a subnet left unfinished by a crashed run is
    found by its tags and finished.

    Raises:
        SubnetNotFound, SubnetMismatch, SubnetTooSmall: the explicit subnet cannot be used (400).
        TooManyAddresses: the nodes need more addresses than a new /20 holds (400).
        VpcNotFound: the VPC does not exist.
        NetworkExhausted: no free /20 is left in the VPC's CIDR blocks.
        SubnetCidrConflict: concurrent creators kept taking the chosen block (temporary).
        AwsThrottled, AwsUnavailable, AwsAccessDenied, AwsRequestRejected: from EC2.
    """
    if request.subnet_id:
        return _explicit_subnet(ec2, request, request.subnet_id)
    vpc = ec2_api.describe_vpc(ec2, request.vpc_id)
    if vpc is None:
        raise VpcNotFound(f"VPC {request.vpc_id} does not exist", details={"vpcId": request.vpc_id})
    for _attempt in range(MAX_CREATE_ATTEMPTS):
        existing = _find_compatible(ec2, request)
        if existing is not None:
            return _finish(ec2, vpc, existing, SubnetSource.EXISTING)
        if request.required_ips > usable_addresses(COMPUTE_PREFIX):
            raise TooManyAddresses(
                f"{request.node_count} nodes x {request.ips_per_node} addresses need "
                f"{request.required_ips} addresses; a compute subnet (/{COMPUTE_PREFIX}) holds "
                f"{usable_addresses(COMPUTE_PREFIX)}",
                details={"requiredIps": request.required_ips},
            )
        block = _plan_block(ec2, vpc)
        try:
            created = ec2_api.create_subnet(
                ec2, vpc.vpc_id, request.availability_zone, str(block), _subnet_tags(request)
            )
        except SubnetCidrConflict:
            # Someone created a subnet in this block since we read the VPC: most likely a
            # concurrent call for this zone. Re-read: reuse theirs if it fits, else plan again.
            continue
        return _finish(ec2, vpc, created, SubnetSource.CREATED)
    raise SubnetCidrConflict(
        f"new compute subnet in {vpc.vpc_id} ({request.availability_zone}): the chosen block "
        f"was taken {MAX_CREATE_ATTEMPTS} times by concurrent creators",
        details={"vpcId": vpc.vpc_id, "awsErrorCode": "InvalidSubnet.Conflict"},
    )


# ---------------------------------------------------------------------------- 1. explicit
def _explicit_subnet(ec2: Any, request: ComputeSubnetRequest, subnet_id: str) -> ComputeSubnet:
    field = request.subnet_field
    subnet = ec2_api.describe_subnet(ec2, subnet_id)
    if subnet is None:
        raise SubnetNotFound(
            f"{field}: subnet {subnet_id} does not exist", field=field, subnet_id=subnet_id
        )
    if subnet.vpc_id != request.vpc_id:
        raise SubnetMismatch(
            f"{field}: subnet {subnet_id} is in VPC {subnet.vpc_id}, not {request.vpc_id}",
            field=field,
            subnet_id=subnet_id,
            vpcId=subnet.vpc_id,
            expectedVpcId=request.vpc_id,
        )
    if subnet.availability_zone != request.availability_zone:
        raise SubnetMismatch(
            f"{field}: subnet {subnet_id} is in {subnet.availability_zone}, "
            f"not {request.availability_zone}",
            field=field,
            subnet_id=subnet_id,
            availabilityZone=subnet.availability_zone,
            expectedAvailabilityZone=request.availability_zone,
        )
    if subnet.available_ips < request.required_ips:
        raise SubnetTooSmall(
            f"{field}: subnet {subnet_id} has {subnet.available_ips} free addresses; "
            f"{request.node_count} nodes need {request.required_ips}",
            field=field,
            subnet_id=subnet_id,
            availableIps=subnet.available_ips,
            requiredIps=request.required_ips,
        )
    # The caller's subnet is theirs: report its route table, change nothing.
    tables = ec2_api.list_route_tables(
        ec2, subnet.vpc_id, filters={"association.subnet-id": subnet.subnet_id}
    )
    table = tables[0] if tables else None
    return _result(subnet, SubnetSource.EXPLICIT, table, None)


# ---------------------------------------------------------------------------- 2. existing
def _usable_by(subnet: Subnet, request: ComputeSubnetRequest) -> bool:
    """A dedicated subnet serves only its group's name; a dedicated request only its own."""
    owner = subnet.tags.get(TAG_DEDICATED_TO)
    if request.dedicated:
        return owner == request.group_name
    return owner is None or owner == request.group_name


def _find_compatible(ec2: Any, request: ComputeSubnetRequest) -> Subnet | None:
    candidates = ec2_api.list_subnets(
        ec2,
        request.vpc_id,
        filters={
            f"tag:{TAG_ROLE}": ROLE_COMPUTE,
            "availability-zone": request.availability_zone,
        },
    )
    usable = [
        subnet
        for subnet in candidates
        if subnet.availability_zone == request.availability_zone
        and _usable_by(subnet, request)
        and subnet.available_ips >= request.required_ips
    ]
    if not usable:
        return None

    def preference(subnet: Subnet) -> tuple[bool, bool, ipaddress.IPv4Network]:
        # The group's own dedicated subnet first, then the cluster's, then the lowest block:
        # every caller with the same view chooses the same subnet.
        own = request.group_name is not None and (
            subnet.tags.get(TAG_DEDICATED_TO) == request.group_name
        )
        same_cluster = subnet.tags.get(TAG_CLUSTER) == request.cluster_tag
        return (not own, not same_cluster, ipaddress.IPv4Network(subnet.cidr_block))

    return min(usable, key=preference)


# ---------------------------------------------------------------------------- 3. new /20
def _plan_block(ec2: Any, vpc: Vpc) -> ipaddress.IPv4Network:
    used = [subnet.cidr_block for subnet in ec2_api.list_subnets(ec2, vpc.vpc_id)]
    block = next_free_block(vpc.cidr_blocks, used, COMPUTE_PREFIX)
    if block is None:
        raise NetworkExhausted(
            f"VPC {vpc.vpc_id} has no free /{COMPUTE_PREFIX} left in its CIDR blocks "
            f"{', '.join(vpc.cidr_blocks)}; associate another CIDR block or name a subnet",
            details={"vpcId": vpc.vpc_id, "cidrBlocks": list(vpc.cidr_blocks)},
        )
    return block


def _subnet_tags(request: ComputeSubnetRequest) -> dict[str, str]:
    tags = {
        "Name": f"hypd-compute-{request.availability_zone}",
        TAG_ROLE: ROLE_COMPUTE,
        TAG_AVAILABILITY_ZONE: request.availability_zone,
    }
    if request.cluster_tag:
        tags[TAG_CLUSTER] = request.cluster_tag
    if request.dedicated and request.group_name:
        tags[TAG_DEDICATED_TO] = request.group_name
        tags["Name"] = f"hypd-compute-{request.availability_zone}-{request.group_name}"
    return tags


def _finish(ec2: Any, vpc: Vpc, subnet: Subnet, source: SubnetSource) -> ComputeSubnet:
    """Give a hypd compute subnet its route table and S3 endpoint, unless it has a table already.

    A subnet someone explicitly associated with a table of their own keeps it untouched.
    """
    table = _associated_table(ec2, vpc.vpc_id, subnet.subnet_id)
    if table is None:
        table = _ensure_route_table(ec2, vpc.vpc_id, subnet.availability_zone, subnet.subnet_id)
        ec2_api.associate_route_table(ec2, table.route_table_id, subnet.subnet_id)
        # A concurrent caller may have associated it first (with the same table, found by tag).
        table = _associated_table(ec2, vpc.vpc_id, subnet.subnet_id) or table
    endpoint_id = None
    if table.tags.get(TAG_ROLE) == ROLE_COMPUTE_ROUTES:
        endpoint_id = _ensure_s3_endpoint(ec2, vpc.vpc_id, table.route_table_id)
    return _result(subnet, source, table, endpoint_id)


def _associated_table(ec2: Any, vpc_id: str, subnet_id: str) -> RouteTable | None:
    tables = ec2_api.list_route_tables(ec2, vpc_id, filters={"association.subnet-id": subnet_id})
    return tables[0] if tables else None


def _ensure_route_table(
    ec2: Any, vpc_id: str, availability_zone: str, subnet_id: str
) -> RouteTable:
    """hypd's route table for compute subnets in this zone, created if missing, with its
    default route through the zone's NAT gateway (else the VPC's first) when there is one."""
    tables = _compute_route_tables(ec2, vpc_id, availability_zone)
    if tables and tables[0].default_route_target is not None:
        return tables[0]
    nat_gateway_id = _choose_nat_gateway(ec2, vpc_id, availability_zone)
    if not tables:
        tags = {
            "Name": f"hypd-compute-{availability_zone}",
            TAG_ROLE: ROLE_COMPUTE_ROUTES,
            TAG_AVAILABILITY_ZONE: availability_zone,
            TAG_NAT_GATEWAY: nat_gateway_id or NO_NAT_GATEWAY,
        }
        # The token ties a retry of this step to the table it already created.
        ec2_api.create_route_table(ec2, vpc_id, tags, client_token=f"hypd-rt-{subnet_id}")
        # Two callers finishing different subnets at once may each make one; every caller
        # then uses the lowest id (an extra stays empty, and deleting it could pull it from
        # under a caller about to associate with it).
        tables = _compute_route_tables(ec2, vpc_id, availability_zone)
    table = tables[0]
    if nat_gateway_id is not None and table.default_route_target is None:
        # A table made while the VPC had no NAT gateway gets its route once one exists.
        ec2_api.create_default_route(ec2, table.route_table_id, nat_gateway_id)
        tables = _compute_route_tables(ec2, vpc_id, availability_zone)
        table = next(t for t in tables if t.route_table_id == table.route_table_id)
    return table


def _compute_route_tables(ec2: Any, vpc_id: str, availability_zone: str) -> list[RouteTable]:
    return ec2_api.list_route_tables(
        ec2,
        vpc_id,
        filters={
            f"tag:{TAG_ROLE}": ROLE_COMPUTE_ROUTES,
            f"tag:{TAG_AVAILABILITY_ZONE}": availability_zone,
        },
    )


def _choose_nat_gateway(ec2: Any, vpc_id: str, availability_zone: str) -> str | None:
    gateways = ec2_api.list_nat_gateways(ec2, vpc_id)
    if not gateways:
        return None
    zones = {s.subnet_id: s.availability_zone for s in ec2_api.list_subnets(ec2, vpc_id)}
    in_zone = [g for g in gateways if zones.get(g.subnet_id) == availability_zone]
    return (in_zone or gateways)[0].nat_gateway_id


def _ensure_s3_endpoint(ec2: Any, vpc_id: str, route_table_id: str) -> str:
    service = ec2_api.s3_service_name(ec2)
    endpoints = ec2_api.list_gateway_endpoints(ec2, vpc_id, service)
    if endpoints:
        endpoint = endpoints[0]
        if route_table_id not in endpoint.route_table_ids:
            ec2_api.add_endpoint_route_table(ec2, endpoint.vpc_endpoint_id, route_table_id)
        return endpoint.vpc_endpoint_id
    created = ec2_api.create_gateway_endpoint(
        ec2,
        vpc_id,
        service,
        [route_table_id],
        tags={"Name": f"hypd-s3-{vpc_id}", TAG_ROLE: "s3-endpoint"},
        client_token=f"hypd-s3-{vpc_id}-{route_table_id}",
    )
    return created.vpc_endpoint_id


def _result(
    subnet: Subnet, source: SubnetSource, table: RouteTable | None, endpoint_id: str | None
) -> ComputeSubnet:
    target = table.default_route_target if table else None
    return ComputeSubnet(
        subnet_id=subnet.subnet_id,
        vpc_id=subnet.vpc_id,
        availability_zone=subnet.availability_zone,
        cidr_block=subnet.cidr_block,
        available_ips=subnet.available_ips,
        source=source,
        dedicated_to=subnet.tags.get(TAG_DEDICATED_TO),
        route_table_id=table.route_table_id if table else None,
        nat_gateway_id=target if target and target.startswith("nat-") else None,
        s3_endpoint_id=endpoint_id,
    )
