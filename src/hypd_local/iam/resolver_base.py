"""What every service's resolver of `hypd_local.iam.resolvers` shares: the resolver's type,
its refusal (`Unresolvable`), tags, ``iam:PassRole`` and ``iam:CreateServiceLinkedRole``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypd_local.iam.checks import Check, Target
from hypd_local.iam.world import World

Resolver = Callable[[str, dict[str, Any], World], list[Check] | None]


HYPERPOD_SERVICE_LINKED_ROLE = ("hyperpod.sagemaker.amazonaws.com",
                                "AWSServiceRoleForSageMakerHyperPod")


class Unresolvable(LookupError):
    """The local cloud does not know how this request names its resources."""


def _tags(items: Any) -> dict[str, str]:
    """Tags as a ``[{"Key", "Value"}]`` list or a ``{key: value}`` map."""
    if isinstance(items, dict):
        return {str(k): str(v) for k, v in items.items()}
    return {str(t.get("Key")): str(t.get("Value", "")) for t in items or []
            if isinstance(t, dict)}


def pass_role(world: World, role_arn: str, service: str) -> Check:
    """``iam:PassRole`` of ``role_arn`` to ``service``."""
    record = world.directory.role(role_arn)
    return Check("iam:PassRole",
                 (Target(role_arn, "role", tags=dict(record.tags) if record else None),),
                 keys={"iam:PassedToService": [service]})


_SERVICE_LINKED_ROLE_NAMES = {
    "eks.amazonaws.com": "AWSServiceRoleForAmazonEKS",
    "fsx.amazonaws.com": "AWSServiceRoleForAmazonFSx",
    HYPERPOD_SERVICE_LINKED_ROLE[0]: HYPERPOD_SERVICE_LINKED_ROLE[1],
}


def service_linked_role_check(w: World, service: str, role_name: str | None = None) -> Check:
    """``iam:CreateServiceLinkedRole`` of ``service``'s role (as the service asks its caller
    for on first use in an account)."""
    name = role_name or _SERVICE_LINKED_ROLE_NAMES.get(service, "*")
    arn = w.directory.service_linked_role_arn(service, name)
    return Check("iam:CreateServiceLinkedRole", (Target(arn, "role"),),
                 keys={"iam:AWSServiceName": [service]})
