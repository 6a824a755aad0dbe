"""EC2 adapter: the VPC facts and the few writes the network function needs, and the
catalogue's reads (zones, instance type offerings, instance type facts).

Every call translates `ClientError` with `hypd.aws.errors.translate`, except the codes the
network function decides on (a missing subnet, an overlapping CIDR, an association or route that
already exists), which become a return value or a named error here.

One module, a little over 400 lines: every EC2 call hypd makes, one adapter per service (the
rule of hypd.aws); split by caller it would scatter the error translation it shares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from botocore.exceptions import ClientError

from hypd.aws.errors import NETWORK_ERRORS, all_pages, error_code, translate
from hypd.aws.partitions import gateway_endpoint_service
from hypd.catalog.models import Accelerator, AvailabilityZone, Gpu, InstanceTypeFacts
from hypd.errors import TemporaryError


class SubnetCidrConflict(TemporaryError):
    """EC2 refused a new subnet because its CIDR overlaps one created since we looked.

    The network function handles it by re-reading the VPC; it escapes only when the VPC keeps
    changing under it, and then a retry after a delay is the right answer.
    """

    code = "SubnetCidrConflict"


# ---------------------------------------------------------------------------- facts
@dataclass(frozen=True)
class Vpc:
    vpc_id: str
    cidr_blocks: list[str]
    """Associated IPv4 blocks, the primary first."""


@dataclass(frozen=True)
class Subnet:
    subnet_id: str
    vpc_id: str
    availability_zone: str
    cidr_block: str
    available_ips: int
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RouteTable:
    route_table_id: str
    vpc_id: str
    subnet_ids: list[str]
    """Subnets explicitly associated with this table."""
    main: bool
    default_route_target: str | None
    """What 0.0.0.0/0 points at (NAT gateway, internet gateway, ...), if anything."""
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NatGateway:
    nat_gateway_id: str
    subnet_id: str
    state: str


@dataclass(frozen=True)
class VpcEndpoint:
    vpc_endpoint_id: str
    route_table_ids: list[str]
    state: str


# ---------------------------------------------------------------------------- helpers
def _tags(resource: dict[str, Any]) -> dict[str, str]:
    return {tag["Key"]: tag["Value"] for tag in resource.get("Tags") or []}


def _tag_specification(resource_type: str, tags: dict[str, str]) -> dict[str, Any]:
    """`TagSpecifications=...` for a create call (EC2 rejects an empty tag list)."""
    if not tags:
        return {}
    tag_list = [{"Key": key, "Value": value} for key, value in sorted(tags.items())]
    return {"TagSpecifications": [{"ResourceType": resource_type, "Tags": tag_list}]}


def _filters(values: dict[str, str]) -> list[dict[str, Any]]:
    return [{"Name": name, "Values": [value]} for name, value in values.items()]


def _subnet(raw: dict[str, Any]) -> Subnet:
    return Subnet(
        subnet_id=raw["SubnetId"],
        vpc_id=raw["VpcId"],
        availability_zone=raw["AvailabilityZone"],
        cidr_block=raw["CidrBlock"],
        available_ips=int(raw.get("AvailableIpAddressCount", 0)),
        tags=_tags(raw),
    )


def _route_table(raw: dict[str, Any]) -> RouteTable:
    associations = raw.get("Associations") or []
    default_target = None
    for route in raw.get("Routes") or []:
        if route.get("DestinationCidrBlock") == "0.0.0.0/0":
            default_target = route.get("NatGatewayId") or route.get("GatewayId")
    return RouteTable(
        route_table_id=raw["RouteTableId"],
        vpc_id=raw["VpcId"],
        subnet_ids=sorted(a["SubnetId"] for a in associations if a.get("SubnetId")),
        main=any(a.get("Main") for a in associations),
        default_route_target=default_target,
        tags=_tags(raw),
    )


# ---------------------------------------------------------------------------- reads
def s3_service_name(client: Any) -> str:
    """The S3 gateway endpoint service of the client's Region, as AWS names it in the Region's
    partition (`com.amazonaws.us-west-2.s3`; see `partitions.gateway_endpoint_service`)."""
    return gateway_endpoint_service(client.meta.region_name, "s3")


def describe_vpc(client: Any, vpc_id: str) -> Vpc | None:
    """The VPC with its associated IPv4 CIDR blocks, or None if there is no such VPC."""
    try:
        vpcs = client.describe_vpcs(VpcIds=[vpc_id])["Vpcs"]
    except ClientError as exc:
        if error_code(exc) in {"InvalidVpcID.NotFound", "InvalidVpcID.Malformed"}:
            return None
        raise translate(exc, f"describing VPC {vpc_id}") from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, f"describing VPC {vpc_id}") from exc
    if not vpcs:
        return None
    raw = vpcs[0]
    primary = raw.get("CidrBlock")
    blocks = [primary] if primary else []
    for association in raw.get("CidrBlockAssociationSet") or []:
        # A block being disassociated still holds its subnets; one that failed never did.
        state = (association.get("CidrBlockState") or {}).get("State", "associated")
        cidr = association.get("CidrBlock")
        if cidr and cidr not in blocks and state in {"associated", "associating"}:
            blocks.append(cidr)
    return Vpc(vpc_id=raw["VpcId"], cidr_blocks=blocks)


def describe_subnet(client: Any, subnet_id: str) -> Subnet | None:
    """The subnet, or None if no subnet has this id (or the id is not a subnet id at all)."""
    try:
        subnets = client.describe_subnets(SubnetIds=[subnet_id])["Subnets"]
    except ClientError as exc:
        if error_code(exc) in {"InvalidSubnetID.NotFound", "InvalidSubnetID.Malformed"}:
            return None
        raise translate(exc, f"describing subnet {subnet_id}") from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, f"describing subnet {subnet_id}") from exc
    return _subnet(subnets[0]) if subnets else None


def list_subnets(
    client: Any, vpc_id: str, *, filters: dict[str, str] | None = None
) -> list[Subnet]:
    """The VPC's subnets, narrowed by EC2 filters (`{"tag:hypd:role": "compute"}`)."""
    raw = all_pages(
        client,
        "describe_subnets",
        "Subnets",
        f"listing subnets of VPC {vpc_id}",
        Filters=_filters({"vpc-id": vpc_id, **(filters or {})}),
    )
    return sorted((_subnet(s) for s in raw), key=lambda s: s.subnet_id)


def list_route_tables(
    client: Any, vpc_id: str, *, filters: dict[str, str] | None = None
) -> list[RouteTable]:
    raw = all_pages(
        client,
        "describe_route_tables",
        "RouteTables",
        f"listing route tables of VPC {vpc_id}",
        Filters=_filters({"vpc-id": vpc_id, **(filters or {})}),
    )
    return sorted((_route_table(t) for t in raw), key=lambda t: t.route_table_id)


def list_nat_gateways(client: Any, vpc_id: str) -> list[NatGateway]:
    """The VPC's NAT gateways that can carry traffic now (state available)."""
    raw = all_pages(
        client,
        "describe_nat_gateways",
        "NatGateways",
        f"listing NAT gateways of VPC {vpc_id}",
        Filter=[
            {"Name": "vpc-id", "Values": [vpc_id]},
            {"Name": "state", "Values": ["available"]},
        ],
    )
    gateways = [
        NatGateway(nat_gateway_id=g["NatGatewayId"], subnet_id=g["SubnetId"], state=g["State"])
        for g in raw
    ]
    return sorted(gateways, key=lambda g: g.nat_gateway_id)


def list_service_interfaces(client: Any, vpc_id: str) -> list[str]:
    """The network interfaces AWS services hold in the VPC for their resources (RequesterManaged:
    an EKS control plane's, a HyperPod node's), which they release a few minutes after the
    resource is gone. Until then the subnets they sit in, and so the VPC, cannot be deleted.
    A NAT gateway's (InterfaceType ``nat_gateway``) is not among them: it goes with its
    gateway."""
    raw = all_pages(
        client,
        "describe_network_interfaces",
        "NetworkInterfaces",
        f"listing network interfaces of VPC {vpc_id}",
        Filters=_filters({"vpc-id": vpc_id}),
    )
    return sorted(str(i["NetworkInterfaceId"]) for i in raw
                  if i.get("RequesterManaged") and i.get("InterfaceType") != "nat_gateway")


CNI_CLUSTER_TAG = "cluster.k8s.amazonaws.com/name"
"""The tag the Amazon VPC CNI puts on each network interface it makes: the EKS cluster's name."""


def list_cni_interfaces(client: Any, vpc_id: str, eks_name: str) -> list[dict[str, str]]:
    """The network interfaces the Amazon VPC CNI made in the VPC for EKS cluster `eks_name`
    (tag `CNI_CLUSTER_TAG`), each ``{"id", "status", "subnetId"}``. The CNI leaves an
    interface ``available`` when its node goes without detaching it cleanly; nothing deletes
    it then, and it holds its subnet (DeleteSubnet: DependencyViolation)."""
    raw = all_pages(
        client,
        "describe_network_interfaces",
        "NetworkInterfaces",
        f"listing the network interfaces of EKS cluster {eks_name} in VPC {vpc_id}",
        Filters=_filters({"vpc-id": vpc_id, f"tag:{CNI_CLUSTER_TAG}": eks_name}),
    )
    return sorted(({"id": str(i["NetworkInterfaceId"]), "status": str(i.get("Status")),
                    "subnetId": str(i.get("SubnetId"))} for i in raw), key=lambda i: i["id"])


def delete_network_interface(client: Any, interface_id: str) -> bool:
    """Delete an unattached interface; True when it is gone, False while EC2 says it is in
    use (attached again since it was listed)."""
    return _delete_unless_in_use(
        lambda: client.delete_network_interface(NetworkInterfaceId=interface_id),
        f"deleting network interface {interface_id}", "InvalidNetworkInterfaceID.NotFound",
        in_use="InvalidNetworkInterface.InUse")


def list_gateway_endpoints(client: Any, vpc_id: str, service_name: str) -> list[VpcEndpoint]:
    """The VPC's gateway endpoints for `service_name` that are not being deleted."""
    raw = all_pages(
        client,
        "describe_vpc_endpoints",
        "VpcEndpoints",
        f"listing {service_name} endpoints of VPC {vpc_id}",
        Filters=_filters(
            {"vpc-id": vpc_id, "service-name": service_name, "vpc-endpoint-type": "Gateway"}
        ),
    )
    endpoints = [
        VpcEndpoint(
            vpc_endpoint_id=e["VpcEndpointId"],
            route_table_ids=sorted(e.get("RouteTableIds") or []),
            state=str(e.get("State", "")).lower(),
        )
        for e in raw
    ]
    usable = [e for e in endpoints if e.state not in {"deleting", "deleted", "failed", "rejected"}]
    return sorted(usable, key=lambda e: e.vpc_endpoint_id)


# ---------------------------------------------------------------------------- writes
def create_subnet(
    client: Any, vpc_id: str, availability_zone: str, cidr_block: str, tags: dict[str, str]
) -> Subnet:
    """Create a tagged subnet (tags are applied atomically, so a crash leaves no untagged one).

    Raises:
        SubnetCidrConflict: the CIDR overlaps a subnet created since the VPC was read.
    """
    action = f"creating subnet {cidr_block} in {vpc_id} ({availability_zone})"
    try:
        raw = client.create_subnet(
            VpcId=vpc_id,
            AvailabilityZone=availability_zone,
            CidrBlock=cidr_block,
            **_tag_specification("subnet", tags),
        )["Subnet"]
    except ClientError as exc:
        if error_code(exc) == "InvalidSubnet.Conflict":
            raise SubnetCidrConflict(
                f"{action}: InvalidSubnet.Conflict", details={"awsErrorCode": error_code(exc)}
            ) from exc
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc
    subnet = _subnet(raw)
    # CreateSubnet's answer may omit the tags it applied.
    return subnet if subnet.tags else replace(subnet, tags=dict(tags))


def _delete_unless_in_use(call: Callable[[], Any], action: str, not_found: str, *,
                          in_use: str = "DependencyViolation") -> bool:
    """`call()` (a deletion); True when the resource is gone (already, or now), False while
    EC2 refuses with `in_use` (it is still in use)."""
    try:
        call()
    except ClientError as exc:
        code = error_code(exc)
        if code == not_found:
            return True
        if code == in_use:
            return False
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc
    return True


def delete_subnet(client: Any, subnet_id: str) -> bool:
    """Delete the subnet; True when it is gone, False while EC2 refuses with
    DependencyViolation (network interfaces of deleted clusters linger for minutes)."""
    return _delete_unless_in_use(lambda: client.delete_subnet(SubnetId=subnet_id),
                                 f"deleting subnet {subnet_id}", "InvalidSubnetID.NotFound")


def list_vpc_endpoints(client: Any, vpc_id: str, *, filters: dict[str, str] | None = None
                       ) -> list[dict[str, Any]]:
    """The VPC's endpoints (any type), as DescribeVpcEndpoints answers them."""
    return [dict(e) for e in all_pages(
        client, "describe_vpc_endpoints", "VpcEndpoints", f"listing endpoints of VPC {vpc_id}",
        Filters=_filters({"vpc-id": vpc_id, **(filters or {})}))]


def delete_vpc_endpoint(client: Any, vpc_endpoint_id: str) -> None:
    """Start deleting the endpoint (one already gone is not an error: DeleteVpcEndpoints
    reports it as unsuccessful, which is ignored)."""
    action = f"deleting VPC endpoint {vpc_endpoint_id}"
    try:
        client.delete_vpc_endpoints(VpcEndpointIds=[vpc_endpoint_id])
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, action) from exc


def delete_route_table(client: Any, route_table_id: str) -> bool:
    """Delete the table; True when it is gone, False while EC2 refuses with DependencyViolation
    (a subnet is still associated: deleting the subnet removes its association)."""
    return _delete_unless_in_use(
        lambda: client.delete_route_table(RouteTableId=route_table_id),
        f"deleting route table {route_table_id}", "InvalidRouteTableID.NotFound")


def create_route_table(
    client: Any, vpc_id: str, tags: dict[str, str], client_token: str
) -> RouteTable:
    """Create a tagged route table; the same `client_token` returns the same table."""
    action = f"creating route table in {vpc_id}"
    try:
        raw = client.create_route_table(
            VpcId=vpc_id,
            ClientToken=client_token,
            **_tag_specification("route-table", tags),
        )["RouteTable"]
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, action) from exc
    table = _route_table(raw)
    return table if table.tags else replace(table, tags=dict(tags))


def create_default_route(client: Any, route_table_id: str, nat_gateway_id: str) -> None:
    """0.0.0.0/0 -> the NAT gateway; a default route that is already there is left alone."""
    action = f"adding default route via {nat_gateway_id} to {route_table_id}"
    try:
        client.create_route(
            RouteTableId=route_table_id,
            DestinationCidrBlock="0.0.0.0/0",
            NatGatewayId=nat_gateway_id,
        )
    except ClientError as exc:
        if error_code(exc) == "RouteAlreadyExists":
            return
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc


def associate_route_table(client: Any, route_table_id: str, subnet_id: str) -> None:
    """Associate the subnet with the table; an association that already exists is fine.

    The caller checks first; `Resource.AlreadyAssociated` means a concurrent caller got there
    first, and the caller re-reads to see with which table.
    """
    action = f"associating {subnet_id} with route table {route_table_id}"
    try:
        client.associate_route_table(RouteTableId=route_table_id, SubnetId=subnet_id)
    except ClientError as exc:
        if error_code(exc) == "Resource.AlreadyAssociated":
            return
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc


def create_gateway_endpoint(
    client: Any,
    vpc_id: str,
    service_name: str,
    route_table_ids: list[str],
    tags: dict[str, str],
    client_token: str,
) -> VpcEndpoint:
    """Create a gateway endpoint attached to the route tables; the token makes it idempotent."""
    action = f"creating {service_name} gateway endpoint in {vpc_id}"
    try:
        raw = client.create_vpc_endpoint(
            VpcEndpointType="Gateway",
            VpcId=vpc_id,
            ServiceName=service_name,
            RouteTableIds=route_table_ids,
            ClientToken=client_token,
            **_tag_specification("vpc-endpoint", tags),
        )["VpcEndpoint"]
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, action) from exc
    return VpcEndpoint(
        vpc_endpoint_id=raw["VpcEndpointId"],
        route_table_ids=sorted(raw.get("RouteTableIds") or route_table_ids),
        state=str(raw.get("State", "")).lower(),
    )


def add_endpoint_route_table(client: Any, vpc_endpoint_id: str, route_table_id: str) -> None:
    """Attach one more route table to a gateway endpoint (attaching it twice is harmless)."""
    action = f"adding route table {route_table_id} to endpoint {vpc_endpoint_id}"
    try:
        client.modify_vpc_endpoint(VpcEndpointId=vpc_endpoint_id, AddRouteTableIds=[route_table_id])
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, action) from exc


def remove_endpoint_route_table(client: Any, vpc_endpoint_id: str, route_table_id: str
                                ) -> None:
    """Detach a route table from a gateway endpoint (the reverse of
    `add_endpoint_route_table`)."""
    action = f"removing route table {route_table_id} from endpoint {vpc_endpoint_id}"
    try:
        client.modify_vpc_endpoint(VpcEndpointId=vpc_endpoint_id,
                                   RemoveRouteTableIds=[route_table_id])
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, action) from exc


# ---------------------------------------------------------------------------- catalogue
# DescribeInstanceTypes takes at most 100 types; filters are kept to the same size.
_INSTANCE_TYPES_PER_CALL = 100
_USABLE_OPT_IN = {"opt-in-not-required", "opted-in"}


def _chunks(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def list_availability_zones(client: Any) -> list[AvailabilityZone]:
    """The Region's Availability Zones that are available and opted in (no Local Zones)."""
    try:
        raw = client.describe_availability_zones()["AvailabilityZones"]
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, "listing Availability Zones") from exc
    return sorted(
        (
            AvailabilityZone(
                name=zone["ZoneName"],
                zone_id=zone["ZoneId"],
                state=zone["State"],
                region=zone["RegionName"],
            )
            for zone in raw
            if zone.get("ZoneType", "availability-zone") == "availability-zone"
            and zone.get("State") == "available"
            and zone.get("OptInStatus", "opt-in-not-required") in _USABLE_OPT_IN
        ),
        key=lambda z: z.name,
    )


def list_zone_offerings(client: Any, instance_types: Sequence[str]) -> list[tuple[str, str]]:
    """``(instance type, zone)`` for every zone of the Region offering one of the EC2 types."""
    offerings: list[tuple[str, str]] = []
    for chunk in _chunks(sorted(set(instance_types)), _INSTANCE_TYPES_PER_CALL):
        raw = all_pages(
            client,
            "describe_instance_type_offerings",
            "InstanceTypeOfferings",
            "listing instance type offerings",
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": chunk}],
        )
        offerings.extend((o["InstanceType"], o["Location"]) for o in raw)
    return sorted(set(offerings))


def describe_instance_types(
    client: Any, instance_types: Sequence[str]
) -> dict[str, InstanceTypeFacts]:
    """vCPUs, memory, GPUs, Neuron devices, network cards and EFA of each EC2 type."""
    facts: dict[str, InstanceTypeFacts] = {}
    for chunk in _chunks(sorted(set(instance_types)), _INSTANCE_TYPES_PER_CALL):
        raw = all_pages(
            client,
            "describe_instance_types",
            "InstanceTypes",
            "describing instance types",
            InstanceTypes=chunk,
        )
        facts.update((t["InstanceType"], _instance_type_facts(t)) for t in raw)
    return facts


def _instance_type_facts(raw: dict[str, Any]) -> InstanceTypeFacts:
    gpu_info = raw.get("GpuInfo") or {}
    neuron_info = raw.get("NeuronInfo") or {}
    network = raw.get("NetworkInfo") or {}
    return InstanceTypeFacts(
        ec2_instance_type=raw["InstanceType"],
        vcpus=(raw.get("VCpuInfo") or {}).get("DefaultVCpus"),
        memory_mib=(raw.get("MemoryInfo") or {}).get("SizeInMiB"),
        gpus=tuple(
            Gpu(
                name=gpu.get("Name", ""),
                manufacturer=gpu.get("Manufacturer", ""),
                count=int(gpu.get("Count", 0)),
                memory_mib=(gpu.get("MemoryInfo") or {}).get("SizeInMiB"),
            )
            for gpu in gpu_info.get("Gpus") or []
        ),
        total_gpu_memory_mib=gpu_info.get("TotalGpuMemoryInMiB"),
        neuron_devices=tuple(
            Accelerator(
                name=device.get("Name", ""),
                count=int(device.get("Count", 0)),
                core_count=(device.get("CoreInfo") or {}).get("Count"),
                memory_mib=(device.get("MemoryInfo") or {}).get("SizeInMiB"),
            )
            for device in neuron_info.get("NeuronDevices") or []
        ),
        maximum_network_cards=network.get("MaximumNetworkCards"),
        efa_supported=bool(network.get("EfaSupported", False)),
        maximum_efa_interfaces=(network.get("EfaInfo") or {}).get("MaximumEfaInterfaces"),
    )
