"""Pure address planning for compute subnets: no AWS, only `ipaddress`.

HyperPod compute subnets are /20 blocks (4,091 usable addresses once AWS keeps its five) carved
from the VPC's IPv4 CIDR blocks, lowest address first, never overlapping any existing subnet of
the VPC (EKS control-plane /24s, subnets the user made, other compute subnets).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator

COMPUTE_PREFIX = 20
"""Every subnet hypd creates for HyperPod compute is a /20."""

AWS_RESERVED_ADDRESSES = 5
"""AWS keeps the first four and the last address of every subnet."""

PRIMARY_INTERFACE_IPS = 1
"""Every node's primary network interface holds one IPv4 address."""


def usable_addresses(prefix: int = COMPUTE_PREFIX) -> int:
    """The addresses AWS lets instances use in a fresh subnet of this size (4,091 for a /20)."""
    return int(2 ** (32 - prefix)) - AWS_RESERVED_ADDRESSES


def ips_per_node(*, efa_interfaces: int = 0, efa_only: bool = False, pod_ips: int = 0) -> int:
    """The IPv4 addresses one node takes from its subnet.

    The primary interface holds one address, plus `pod_ips` when the VPC CNI gives pods subnet
    addresses. Each further EFA interface holds one address too, unless it is EFA-only: an
    EFA-only interface carries no IP, which is why EFA-only groups need far smaller subnets.
    """
    if efa_interfaces < 0 or pod_ips < 0:
        raise ValueError("efa_interfaces and pod_ips must not be negative")
    efa_ips = 0 if efa_only else efa_interfaces
    return PRIMARY_INTERFACE_IPS + efa_ips + pod_ips


def _ipv4_networks(cidrs: Iterable[str]) -> list[ipaddress.IPv4Network]:
    """IPv4 networks of `cidrs`; IPv6 blocks are skipped (compute subnets are IPv4)."""
    networks: list[ipaddress.IPv4Network] = []
    for cidr in cidrs:
        network = ipaddress.ip_network(cidr, strict=False)
        if isinstance(network, ipaddress.IPv4Network):
            networks.append(network)
    return networks


def _aligned_blocks(vpc: ipaddress.IPv4Network, prefix: int) -> Iterator[ipaddress.IPv4Network]:
    """Every /`prefix` block wholly inside `vpc`, lowest first (none if `vpc` is smaller)."""
    if vpc.prefixlen > prefix:
        return iter(())
    return vpc.subnets(new_prefix=prefix)


def next_free_block(
    vpc_cidrs: Iterable[str], used_cidrs: Iterable[str], prefix: int = COMPUTE_PREFIX
) -> ipaddress.IPv4Network | None:
    """The first /`prefix` inside the VPC's CIDR blocks that overlaps no used CIDR, or None.

    `vpc_cidrs` are searched in the order given (the primary block first, then secondary
    associations); inside a block, lower addresses come first. `used_cidrs` are the VPC's
    existing subnets, of any size. IPv6 entries in either list are ignored.
    """
    used = sorted(_ipv4_networks(used_cidrs))
    for vpc in _ipv4_networks(vpc_cidrs):
        inside = [net for net in used if net.overlaps(vpc)]
        for block in _aligned_blocks(vpc, prefix):
            if not any(block.overlaps(net) for net in inside):
                return block
    return None
