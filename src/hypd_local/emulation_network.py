"""The network interfaces the emulated services keep in the account's VPC, made and removed in
moto's EC2 as the emulators say they exist (`hypd_local.emulator.interfaces`).

HyperPod's (one per instance) and EKS's (two per control plane) are requester-managed: they
show in DescribeNetworkInterfaces with the service's description, hold their subnet, security
groups and VPC (DeleteSubnet, DeleteSecurityGroup, DeleteVpc answer DependencyViolation:
`hypd_local.patches.ec2`) and go ``eni_linger`` after their cluster or node, on the tick that
reaches that time (the emulators' `next_due` includes it)."""

from __future__ import annotations

import logging
from typing import Any

from hypd_local.emulator.eks import EksEmulator
from hypd_local.emulator.hyperpod import HyperPodEmulator
from hypd_local.emulator.interfaces import Interface

LOG = logging.getLogger(__name__)


class NetworkInterfaceSync:
    """Keeps moto's EC2 interfaces in line with what the emulators say exists."""

    account_id: str
    region: str
    eks: EksEmulator
    hyperpod: HyperPodEmulator
    _interfaces: dict[str, str | None]
    """Interface key -> the moto interface made for it (None: its subnet was not found)."""

    def _sync_interfaces(self) -> None:
        from moto.ec2.models import ec2_backends

        backend = ec2_backends[self.account_id][self.region]
        wanted = {i.key: i for i in (*self.eks.network_interfaces(),
                                     *self.hyperpod.network_interfaces())}
        for key in [k for k in self._interfaces if k not in wanted]:
            made = self._interfaces.pop(key)
            if made is not None:
                backend.enis.pop(made, None)
        for key, interface in wanted.items():
            if key not in self._interfaces:  # made once: one deleted by hand stays deleted
                self._interfaces[key] = _make(backend, interface)

    def network_interface_ids(self) -> list[str]:
        """The moto interfaces the emulated services hold now."""
        return [made for made in self._interfaces.values() if made is not None]


def _make(backend: Any, interface: Interface) -> str | None:
    """The interface in moto's EC2, with the groups that exist (moto would make the others);
    None when its subnet does not exist there."""
    try:
        subnet = backend.get_subnet(interface.subnet_id)
    except Exception:  # moto's InvalidSubnetIdNotFound: a subnet outside moto (unit tests)
        LOG.debug("no subnet %s for %s", interface.subnet_id, interface.key)
        return None
    groups = [g for g in interface.group_ids if backend.get_security_group_from_id(g)]
    eni = backend.create_network_interface(subnet, None, group_ids=groups,
                                           description=interface.description)
    eni.requester_managed = True
    return str(eni.id)
