"""What HyperPod checks of a cluster role before it turns managed Karpenter autoscaling on.

HyperPod assumes the ``ClusterRole`` to add and remove nodes, so the role must trust
``hyperpod.sagemaker.amazonaws.com`` (``sts:AssumeRole``) and be allowed
``sagemaker:BatchAddClusterNodes`` and ``sagemaker:BatchDeleteClusterNodes`` on the cluster.
``autoscaling_role_problem`` says what is wrong with a role, or None.

The evaluation is IAM's for simple statements: ``Effect`` Allow / Deny, ``Action`` /
``NotAction`` and ``Resource`` / ``NotResource`` as strings or lists with ``*`` and ``?``
wildcards (actions case-insensitive), trust ``Principal`` ``"*"`` or ``{"Service": ...}``.
An explicit Deny wins over any Allow. An action is permitted when the role's own policies
(inline and attached managed ones, taken together) allow it and, if the role has a
permissions boundary, the boundary allows it too. Conditions are not evaluated: an Allow with
a Condition counts as allowing, a Deny with a Condition is not applied, so an unevaluated
condition never makes a check fail.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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
    if not _decides(_statements([role.trust_policy]), ASSUME_ROLE, None, AUTOSCALING_PRINCIPAL):
        return (
            f"The cluster role '{role.arn}' does not trust {AUTOSCALING_PRINCIPAL}: its trust "
            f"policy must allow {ASSUME_ROLE} for that service principal."
        )
    identity = _statements(role.policies)
    missing = [a for a in AUTOSCALING_ACTIONS if not _decides(identity, a, cluster_arn)]
    if missing:
        return (
            f"The cluster role '{role.arn}' is not allowed {' and '.join(missing)} on "
            f"{cluster_arn}."
        )
    if role.permissions_boundary is not None:
        boundary = _statements([role.permissions_boundary])
        missing = [a for a in AUTOSCALING_ACTIONS if not _decides(boundary, a, cluster_arn)]
        if missing:
            return (
                f"The permissions boundary of the cluster role '{role.arn}' does not allow "
                f"{' and '.join(missing)} on {cluster_arn}."
            )
    return None


def _statements(documents: Iterable[Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for document in documents:
        if isinstance(document, str):
            try:
                document = json.loads(document)
            except ValueError:  # not a policy: it allows nothing
                continue
        statements = document.get("Statement") if isinstance(document, dict) else None
        if isinstance(statements, dict):
            statements = [statements]
        found += [s for s in statements or [] if isinstance(s, dict)]
    return found


def _decides(
    statements: list[dict[str, Any]], action: str, resource: str | None,
    principal: str | None = None,
) -> bool:
    """True when some statement allows ``action`` (on ``resource``, for ``principal``) and
    none denies it."""
    allowed = False
    for statement in statements:
        if not _applies(statement, action, resource, principal):
            continue
        if statement.get("Effect") == "Deny":
            if "Condition" not in statement:
                return False
        elif statement.get("Effect") == "Allow":
            allowed = True
    return allowed


def _applies(
    statement: dict[str, Any], action: str, resource: str | None, principal: str | None
) -> bool:
    if not _matches(statement, "Action", "NotAction", action, case_sensitive=False):
        return False
    if resource is not None and not _matches(
        statement, "Resource", "NotResource", resource, case_sensitive=True
    ):
        return False
    if principal is not None:
        given = statement.get("Principal")
        if given != "*":
            services = given.get("Service") if isinstance(given, dict) else None
            if principal not in _as_list(services):
                return False
    return True


def _matches(
    statement: dict[str, Any], key: str, not_key: str, value: str, *, case_sensitive: bool
) -> bool:
    if key in statement:
        return any(_wildcard(p, value, case_sensitive) for p in _as_list(statement[key]))
    if not_key in statement:
        return not any(_wildcard(p, value, case_sensitive) for p in _as_list(statement[not_key]))
    return False


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _wildcard(pattern: str, value: str, case_sensitive: bool) -> bool:
    regex = "".join(
        ".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern
    )
    flags = 0 if case_sensitive else re.IGNORECASE
    return re.fullmatch(regex, value, flags | re.DOTALL) is not None
