"""The network interfaces a service makes in the account's VPC (docs/emulator.md, "Deletions").

HyperPod puts one in its group's subnet for every instance, EKS two for its control plane in
the cluster's subnets; both stay a while after what made them is gone (the emulators' durations
``eni_linger``). Each emulator only says which interfaces exist at a time
(``network_interfaces()``); the local cloud makes and removes them in moto's EC2
(`hypd_local.emulation_network`), so DescribeNetworkInterfaces shows them and DeleteSubnet,
DeleteSecurityGroup and DeleteVpc answer DependencyViolation while they are there.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Interface:
    """One requester-managed network interface a service keeps in the account's VPC."""

    key: str
    """What it belongs to, unique per interface (e.g. ``hyperpod:<cluster ARN>:<instance>``)."""
    subnet_id: str
    group_ids: tuple[str, ...]
    description: str
