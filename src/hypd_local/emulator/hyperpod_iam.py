"""What HyperPod checks of a cluster role before it turns managed Karpenter autoscaling on.

HyperPod assumes the ``ClusterRole`` to add and remove nodes, so the role must trust
``hyperpod.sagemaker.amazonaws.com`` (``sts:AssumeRole``) and be allowed
``sagemaker:BatchAddClusterNodes`` and ``sagemaker:BatchDeleteClusterNodes`` on the cluster.
``autoscaling_role_problem`` says what is wrong with a role, or None.

The role's policies are evaluated as IAM evaluates them (``hypd_local.iam.policy``): an action
is permitted when the role's own policies (inline and attached managed ones) allow it, none
denies it and, if the role has a permissions boundary, the boundary allows it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypd_local.iam.policy import Request, decide, trusts

AUTOSCALING_PRINCIPAL = "hyperpod.sagemaker.amazonaws.com"
ASSUME_ROLE = "sts:AssumeRole"
AUTOSCALING_ACTIONS = ("sagemaker:BatchAddClusterNodes", "sagemaker:BatchDeleteClusterNodes")


@dataclass(frozen=True)
class Role:
    """An IAM role as HyperPod sees it: policy documents are JSON text or parsed objects."""

    arn: str
    trust_policy: Any
    policies: tuple[Any, ...] = ()
    """Its inline policies and the default versions of its attached managed policies."""
    permissions_boundary: Any | None = None
    """The boundary policy's document; None when the role has no boundary."""


def autoscaling_role_problem(role: Role, cluster_arn: str) -> str | None:
    """Why HyperPod cannot use ``role`` to autoscale ``cluster_arn``, or None when it can."""
    if not trusts(role.trust_policy, AUTOSCALING_PRINCIPAL, ASSUME_ROLE):
        return (
            f"The cluster role '{role.arn}' does not trust {AUTOSCALING_PRINCIPAL}: its trust "
            f"policy must allow {ASSUME_ROLE} for that service principal."
        )
    context = {"aws:resourceaccount": [cluster_arn.split(":")[4]],
               "aws:principalaccount": [role.arn.split(":")[4]]}
    decisions = {action: decide(list(role.policies), role.permissions_boundary,
                                Request(action, cluster_arn, context))
                 for action in AUTOSCALING_ACTIONS}
    bounded = [a for a, d in decisions.items() if "permissions boundary" in d.reason]
    missing = [a for a, d in decisions.items() if not d.allowed and a not in bounded]
    if missing:
        return (
            f"The cluster role '{role.arn}' is not allowed {' and '.join(missing)} on "
            f"{cluster_arn}."
        )
    if bounded:
        return (
            f"The permissions boundary of the cluster role '{role.arn}' does not allow "
            f"{' and '.join(bounded)} on {cluster_arn}."
        )
    return None
