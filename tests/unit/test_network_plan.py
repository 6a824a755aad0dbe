"""hypd.network.subnets: the next free /20 and per-node address needs (pure, no AWS)."""

from __future__ import annotations

import ipaddress

import pytest

from hypd.network.subnets import ips_per_node, next_free_block, usable_addresses


def block(vpc_cidrs: list[str], used: list[str], prefix: int = 20) -> str | None:
    found = next_free_block(vpc_cidrs, used, prefix)
    return str(found) if found else None


# ---------------------------------------------------------------------------- next_free_block
def test_empty_vpc_gets_its_first_block() -> None:
    assert block(["10.0.0.0/16"], []) == "10.0.0.0/20"


def test_blocks_are_taken_lowest_first() -> None:
    # Given the first two /20s are used
    used = ["10.0.0.0/20", "10.0.16.0/20"]
    # Then the third follows
    assert block(["10.0.0.0/16"], used) == "10.0.32.0/20"


def test_a_gap_between_used_blocks_is_filled_first() -> None:
    used = ["10.0.0.0/20", "10.0.32.0/20"]
    assert block(["10.0.0.0/16"], used) == "10.0.16.0/20"


def test_an_odd_sized_subnet_blocks_every_20_it_touches() -> None:
    # Given EKS control-plane /24s in the first /20 and a /19 covering the third and fourth
    used = ["10.0.0.0/24", "10.0.1.0/24", "10.0.32.0/19"]
    # Then the first /20 is unusable (it overlaps the /24s), the second is free; once a /28
    # lands in the second, the next free block lies past the /19
    assert block(["10.0.0.0/16"], used) == "10.0.16.0/20"
    used.append("10.0.16.0/28")
    assert block(["10.0.0.0/16"], used) == "10.0.64.0/20"


def test_a_larger_existing_subnet_covers_several_blocks() -> None:
    used = ["10.0.0.0/17"]
    assert block(["10.0.0.0/16"], used) == "10.0.128.0/20"


def test_control_plane_subnets_at_the_top_leave_the_bottom_for_compute() -> None:
    used = [f"10.0.{240 + i}.0/24" for i in range(3)]
    assert block(["10.0.0.0/16"], used) == "10.0.0.0/20"
    taken = [f"10.0.{16 * i}.0/20" for i in range(15)]
    assert block(["10.0.0.0/16"], used + taken) is None


def test_a_secondary_cidr_block_is_used_when_the_primary_is_full() -> None:
    # Given a full primary /20 and a secondary /16
    vpc = ["10.0.0.0/20", "100.64.0.0/16"]
    assert block(vpc, ["10.0.0.0/21", "10.0.8.0/21"]) == "100.64.0.0/20"


def test_the_primary_block_is_searched_before_secondary_ones() -> None:
    assert block(["10.0.0.0/16", "10.1.0.0/16"], []) == "10.0.0.0/20"
    assert block(["10.1.0.0/16", "10.0.0.0/16"], []) == "10.1.0.0/20"


def test_a_vpc_block_smaller_than_a_20_is_skipped() -> None:
    assert block(["10.0.0.0/24", "10.1.0.0/16"], []) == "10.1.0.0/20"
    assert block(["10.0.0.0/24"], []) is None


def test_exhausted_address_space_gives_none() -> None:
    used = [str(net) for net in ipaddress.ip_network("10.0.0.0/16").subnets(new_prefix=20)]
    assert block(["10.0.0.0/16"], used) is None
    assert block(["10.0.0.0/16", "10.1.0.0/16"], [*used, "10.1.0.0/16"]) is None


def test_only_ipv4_is_planned() -> None:
    # Given a dual-stack VPC whose subnets also hold IPv6 blocks
    vpc = ["2600:1f14:abc:de00::/56", "10.0.0.0/16"]
    used = ["2600:1f14:abc:de00::/64", "10.0.0.0/20"]
    # Then IPv6 is ignored and the answer is an IPv4 /20
    found = next_free_block(vpc, used)
    assert isinstance(found, ipaddress.IPv4Network)
    assert str(found) == "10.0.16.0/20"
    assert next_free_block(["2600:1f14:abc:de00::/56"], []) is None


def test_subnets_outside_the_vpc_do_not_matter() -> None:
    assert block(["10.0.0.0/16"], ["10.1.0.0/20", "192.168.0.0/24"]) == "10.0.0.0/20"


def test_other_prefixes_can_be_planned() -> None:
    assert block(["10.0.0.0/16"], ["10.0.0.0/24"], prefix=24) == "10.0.1.0/24"


# ---------------------------------------------------------------------------- addresses
def test_a_20_has_4091_usable_addresses() -> None:
    assert usable_addresses() == 4091
    assert usable_addresses(24) == 251


def test_efa_only_interfaces_take_no_addresses() -> None:
    # A node with 32 EFA interfaces: 1 + 31 further interfaces, none of them when EFA-only
    assert ips_per_node(efa_interfaces=31) == 32
    assert ips_per_node(efa_interfaces=31, efa_only=True) == 1
    assert ips_per_node(efa_interfaces=31, efa_only=True, pod_ips=10) == 11


def test_negative_interface_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        ips_per_node(efa_interfaces=-1)
