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


def autoscaling_role_problem(role: Role, cluster_arn: str,
                             tags: dict[str, str] | None = None) -> str | None:
    """Why HyperPod cannot use ``role`` to autoscale ``cluster_arn`` (whose ``tags`` its
    policies may condition on), or None when it can."""
    if not trusts(role.trust_policy, AUTOSCALING_PRINCIPAL, ASSUME_ROLE):
        return (
            f"The cluster role '{role.arn}' does not trust {AUTOSCALING_PRINCIPAL}: its trust "
            f"policy must allow {ASSUME_ROLE} for that service principal."
        )
    context = {"aws:resourceaccount": [cluster_arn.split(":")[4]],
               "aws:principalaccount": [role.arn.split(":")[4]]}
    for key, value in (tags or {}).items():
        context[f"aws:resourcetag/{key.lower()}"] = [value]
        context[f"sagemaker:resourcetag/{key.lower()}"] = [value]
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


# What the instances of a HyperPod cluster on EKS do with their execution role: AWS's managed
# AmazonSageMakerClusterInstanceRolePolicy and what AWS's reference execution role adds to it
# (awsome-distributed-training, sagemaker-iam-role-stack.yaml): their network interfaces in the
# cluster's subnets, the VPC facts they read, images from ECR, EKS Pod Identity for pods. An
# action -> the resource it is used on ("*" for actions without resource types; "{eks}" is the
# orchestrating EKS cluster's ARN).
EXECUTION_ACTIONS: dict[str, str] = {
    "ec2:CreateNetworkInterface": "arn:{p}:ec2:{r}:{a}:network-interface/*",
    "ec2:CreateNetworkInterfacePermission": "arn:{p}:ec2:{r}:{a}:network-interface/*",
    "ec2:DeleteNetworkInterfacePermission": "arn:{p}:ec2:{r}:{a}:network-interface/*",
    "ec2:DeleteNetworkInterface": "arn:{p}:ec2:{r}:{a}:network-interface/*",
    "ec2:AssignPrivateIpAddresses": "arn:{p}:ec2:{r}:{a}:network-interface/*",
    "ec2:DescribeNetworkInterfaces": "*",
    "ec2:DescribeVpcs": "*",
    "ec2:DescribeDhcpOptions": "*",
    "ec2:DescribeSubnets": "*",
    "ec2:DescribeSecurityGroups": "*",
    "ecr:GetAuthorizationToken": "*",
    "ecr:BatchGetImage": "arn:{p}:ecr:{r}:{a}:repository/*",
    "ecr:GetDownloadUrlForLayer": "arn:{p}:ecr:{r}:{a}:repository/*",
    "eks-auth:AssumeRoleForPodIdentity": "{eks}",
}


def execution_role_problem(role: Role | None, role_arn: str, group: str, *, partition: str,
                           region: str, account: str, eks_arn: str | None) -> str | None:
    """Why the instances of ``group`` cannot run with ``role``, or None when they can."""
    if role is None:
        return f"Instance group '{group}': the execution role '{role_arn}' does not exist."
    if not trusts(role.trust_policy, "sagemaker.amazonaws.com", ASSUME_ROLE):
        return (f"Instance group '{group}': the execution role '{role_arn}' does not trust "
                "sagemaker.amazonaws.com.")
    context = {"aws:resourceaccount": [account], "aws:principalaccount": [account]}
    missing = []
    for action, pattern in EXECUTION_ACTIONS.items():
        if pattern == "{eks}":
            if not eks_arn:
                continue
            resource = eks_arn
        else:
            resource = pattern.format(p=partition, r=region, a=account)
        if not decide(list(role.policies), role.permissions_boundary,
                      Request(action, resource, context)).allowed:
            missing.append(action)
    if missing:
        return (f"Instance group '{group}': the execution role '{role_arn}' is not allowed "
                f"{', '.join(missing)}, which the cluster's instances need.")
    return None
