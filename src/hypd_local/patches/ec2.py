"""EC2: what a network interface holds cannot be deleted under it; a deleted subnet's
route-table associations go with it; a NAT gateway's interface is EC2's (requester-managed,
InterfaceType ``nat_gateway``).

moto deletes a subnet or a security group whatever network interfaces are in it (and a VPC
once its subnets are gone). EC2 refuses with ``DependencyViolation`` while an interface is in
the subnet, uses the group, or is in the VPC; the messages are EC2's (as CloudFormation and
Terraform users quote them: aws-cloudformation/cloudformation-coverage-roadmap#1327,
aws/aws-cdk#14456). The local cloud's services leave interfaces behind for a while after
their clusters are gone (`hypd_local.emulation_network`), so a teardown in the wrong order,
or too early, fails here as it does on AWS.

A resource's tags are read from its own entry (``TaggedEC2Resource.get_tags``): moto runs a
DescribeTags filter over every tag of the account for each resource, so every Describe* call
with a filter (each resource's filter value reads its tags) cost the square of the account's
resources: with fifty clusters' networks, DescribeVpcEndpoints and DescribeRouteTables were a
tenth of the process's time. The answer is the same list.
"""

from __future__ import annotations

from typing import Any

from hypd_local.patches.engine import active, replace


def _interfaces(backend: Any) -> list[Any]:
    return list(backend.enis.values())


def subnet_in_use(backend: Any, subnet_id: str) -> bool:
    return any(getattr(eni.subnet, "id", None) == subnet_id for eni in _interfaces(backend))


def group_in_use(backend: Any, group_id: str) -> bool:
    return any(getattr(group, "id", group) == group_id
               for eni in _interfaces(backend) for group in eni.group_set)


def vpc_in_use(backend: Any, vpc_id: str) -> bool:
    return any(getattr(eni.subnet, "vpc_id", None) == vpc_id for eni in _interfaces(backend))


def drop_associations(backend: Any, subnet_id: str) -> None:
    """A deleted subnet's route-table associations go with it, as in EC2 (moto keeps them,
    and then refuses to delete the table: DependencyViolation)."""
    for table in backend.route_tables.values():
        for association, subnet in list(table._associations.items()):
            if subnet == subnet_id:
                del table._associations[association]


def resource_tags(backend: Any, resource_id: str) -> list[dict[str, str]]:
    """What moto's ``describe_tags(filters={"resource-id": [resource_id]})`` answers, read
    from the resource's own entry instead of filtering every tag of the account."""
    from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix

    tags = dict(backend.tags.get(resource_id) or {})  # a copy: another request may tag it
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "") if tags else ""
    return [{"resource_id": resource_id, "key": key, "value": value, "resource_type": kind}
            for key, value in tags.items()]


NAT_INTERFACE = "Interface for NAT Gateway {gateway}"
"""The description EC2 gives a NAT gateway's interface."""


def patch_ec2() -> None:
    from moto.ec2.exceptions import DependencyViolationError
    from moto.ec2.models import EC2Backend
    from moto.ec2.models.core import TaggedEC2Resource
    from moto.ec2.models.nat_gateways import NatGateway

    nat_init = NatGateway.__init__

    # A NAT gateway's interface is one EC2 makes and manages for the gateway ("Requester-
    # managed network interfaces", EC2 user guide): moto makes it as if the account had, so a
    # client that waits for the requester-managed interfaces of a VPC to go would wait for it.
    def patched_nat_init(self: Any, *args: Any, **kwargs: Any) -> None:
        nat_init(self, *args, **kwargs)
        self._eni.requester_managed = True
        self._eni.interface_type = "nat_gateway"
        self._eni.description = NAT_INTERFACE.format(gateway=self.id)

    delete_subnet = EC2Backend.delete_subnet
    delete_security_group = EC2Backend.delete_security_group
    delete_vpc = EC2Backend.delete_vpc

    def patched_delete_subnet(self: Any, subnet_id: str) -> Any:
        if active() is not None and subnet_in_use(self, subnet_id):
            raise DependencyViolationError(
                f"The subnet '{subnet_id}' has dependencies and cannot be deleted.")
        deleted = delete_subnet(self, subnet_id)
        if active() is not None:
            drop_associations(self, subnet_id)
        return deleted

    def patched_delete_security_group(self: Any, name: str | None = None,
                                      group_id: str | None = None) -> Any:
        if active() is not None:
            group = self.get_security_group_by_name_or_id(group_id or name)
            if group is not None and group_in_use(self, group.id):
                raise DependencyViolationError(f"resource {group.id} has a dependent object")
        return delete_security_group(self, name=name, group_id=group_id)

    def patched_delete_vpc(self: Any, vpc_id: str) -> Any:
        if active() is not None and vpc_in_use(self, vpc_id):
            raise DependencyViolationError(
                f"The vpc '{vpc_id}' has dependencies and cannot be deleted.")
        return delete_vpc(self, vpc_id)

    original_get_tags = TaggedEC2Resource.get_tags

    def get_tags(self: Any) -> list[dict[str, str]]:
        if active() is None or not self.id:
            return original_get_tags(self)
        return resource_tags(self.ec2_backend, self.id)

    replace(TaggedEC2Resource, "get_tags", get_tags)
    replace(EC2Backend, "delete_subnet", patched_delete_subnet)
    replace(EC2Backend, "delete_security_group", patched_delete_security_group)
    replace(EC2Backend, "delete_vpc", patched_delete_vpc)
    replace(NatGateway, "__init__", patched_nat_init)
