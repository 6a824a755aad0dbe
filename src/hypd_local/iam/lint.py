"""The static check of policies against the Service Authorization Reference.

For every statement of a policy document (identity-based, boundary or resource-based):

- ``unknown-action``: an ``Action`` the SAR does not list (a typo, or an action newer than the
  data: say which);
- ``star-only-action``: an action without resource types (authorised against ``*``) in a
  statement none of whose resources is ``*``: IAM ignores the grant;
- ``resource-mismatch``: an action with resource types none of which any of the statement's
  resources can name (``sagemaker:DescribeCluster`` on ``cluster/hypd-*`` is fine,
  ``s3:ListBucket`` on ``bucket/*`` is not);
- ``unused-resource``: a resource that no action of the statement can use;
- ``condition-key``: a condition key that the SAR does not list for an action of the
  statement (global ``aws:`` keys are allowed everywhere).

``lint_document`` checks one document whose values are already resolved (strings);
``lint_template`` every policy of a CloudFormation template (the SAM-transformed one), with a
resolver for its intrinsics.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hypd_local.iam.checks import MISSING_FROM_SAR
from hypd_local.iam.patterns import matches, overlaps_format
from hypd_local.iam.policy import statements
from hypd_local.iam.sar import Action, Reference, reference


@dataclass(frozen=True)
class Finding:
    where: str
    """``ApiFunctionRole / ApiFunctionRolePolicy0 / ReadCatalog`` (the statement's Sid or
    index)."""
    kind: str
    action: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.kind}: {self.action}: {self.detail}"


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _formats(sar: Reference, name: str, action: Action | None) -> list[str]:
    if action is not None:
        return [t.arn_format for t in action.resource_types]
    gap = MISSING_FROM_SAR.get(name.lower())
    return [sar.resource_type(*gap).arn_format] if gap else []


# An IAM OIDC provider's own keys (``<provider host and path>:aud``, ``:sub``, ``:amr``...): the
# SAR lists them only for a few named providers; IAM's documentation ("Available keys for AWS
# web identity federation") gives them for every OIDC provider.
_WEB_IDENTITY_KEY = re.compile(r"^[a-z0-9.-]+\.[a-z]+(/[^:]*)?:(aud|sub|amr|azp|oaud|email)$",
                               re.IGNORECASE)


def lint_statement(where: str, statement: Mapping[str, Any],
                   sar: Reference | None = None) -> list[Finding]:
    sar = sar or reference()
    findings: list[Finding] = []
    resources = _as_list(statement.get("Resource"))
    has_resources = "Resource" in statement
    actions: list[tuple[str, Action | None]] = []
    for pattern in _as_list(statement.get("Action")):
        found = sar.actions_matching(pattern) if pattern != "*" else []
        if pattern == "*":
            continue
        if not found:
            findings.append(Finding(where, "unknown-action", pattern,
                                    "not an action of the Service Authorization Reference"))
            if pattern.lower() in MISSING_FROM_SAR:
                actions.append((pattern, None))
            continue
        actions += [(a.full_name, a) for a in found]

    used: set[str] = set()
    for name, action in actions:
        formats = _formats(sar, name, action)
        if not has_resources:  # a trust or resource policy without Resource
            continue
        if action is not None and not action.supports_resources:
            stars = [r for r in resources if matches(r, "*")]
            used.update(stars)
            if not stars:
                findings.append(Finding(
                    where, "star-only-action", name,
                    f"supports no resource-level permissions: only \"*\" grants it, not "
                    f"{', '.join(resources)}"))
            continue
        fitting = [r for r in resources if r == "*" or any(overlaps_format(r, f)
                                                          for f in formats)]
        used.update(fitting)
        if not fitting:
            findings.append(Finding(
                where, "resource-mismatch", name,
                f"none of {', '.join(resources)} is a resource of its types "
                f"({', '.join(formats)})"))
    if actions:
        for resource in resources:
            if resource not in used:
                findings.append(Finding(where, "unused-resource", resource,
                                        "no action of the statement can use it"))

    for pairs in (statement.get("Condition") or {}).values():
        for key in pairs if isinstance(pairs, dict) else {}:
            for name, action in actions:
                if name.lower() == "sts:assumerolewithwebidentity" and _WEB_IDENTITY_KEY.match(
                    str(key)
                ):
                    continue
                if action is not None and not action.supports_key(str(key)):
                    findings.append(Finding(where, "condition-key", name,
                                            f"does not support the condition key {key}"))
    return findings


def lint_document(where: str, document: Any, sar: Reference | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for index, statement in enumerate(statements(document)):
        label = statement.get("Sid") or f"statement {index}"
        findings += lint_statement(f"{where} / {label}", statement, sar)
    return findings


_DOCUMENT_TYPES = ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy", "AWS::SQS::QueuePolicy",
                   "AWS::SNS::TopicPolicy")


def template_policies(template: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    """``(where, document)`` of every policy a CloudFormation template declares."""
    for logical_id, resource in (template.get("Resources") or {}).items():
        rtype = resource.get("Type")
        props = resource.get("Properties") or {}
        if rtype == "AWS::IAM::Role":
            for policy in props.get("Policies") or []:
                yield f"{logical_id} / {policy.get('PolicyName')}", policy.get("PolicyDocument")
        elif rtype in _DOCUMENT_TYPES:
            yield logical_id, props.get("PolicyDocument")


def lint_template(template: Mapping[str, Any], resolve: Callable[[Any, str], Any],
                  sar: Reference | None = None) -> list[Finding]:
    """Findings of every policy of ``template``; ``resolve(value, where)`` resolves its
    intrinsics (``hypd_local.template.Stack.resolve``)."""
    findings: list[Finding] = []
    for where, document in template_policies(template):
        findings += lint_document(where, resolve(document, where), sar)
    return findings
