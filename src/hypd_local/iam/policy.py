"""IAM policy evaluation: statements, wildcards, conditions and permissions boundaries.

``evaluate(documents, request)`` is IAM's evaluation of one request against a set of policy
documents (``Allow`` / explicit ``Deny`` / nothing), ``decide`` combines a principal's
identity-based policies with its permissions boundary as IAM does:

1. an explicit ``Deny`` in any of them denies;
2. else the request is allowed only if an identity-based policy allows it *and*, when the
   principal has a permissions boundary, the boundary allows it too.

A statement applies when its ``Action`` / ``NotAction`` (case-insensitive wildcards),
``Resource`` / ``NotResource`` (case-sensitive wildcards, with policy variables), ``Principal`` /
``NotPrincipal`` (for resource-based and trust policies) and every condition match. Conditions
follow the IAM reference: every operator of a block must hold, every key of an operator must
hold, any of a key's values may match; a key absent from the context fails a positive operator
and satisfies a negated one (``StringNotEquals``...), ``...IfExists`` is true when the key is
absent, ``ForAnyValue:`` needs one context value to match, ``ForAllValues:`` every one (and
holds for an absent key), ``Null`` tests presence.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from hypd_local.iam.patterns import matches

Context = Mapping[str, Sequence[str]]
"""Condition keys in lower case -> their values (a single-valued key has one)."""


class Outcome(Enum):
    ALLOW = "allow"
    DENY = "deny"  # an explicit Deny
    NONE = "none"  # no statement applies: an implicit deny


@dataclass(frozen=True)
class Request:
    """One authorisation: an action on one resource (``*`` for actions without resource
    types), with its request context and, for resource-based policies, the calling principal
    (``{"AWS": [arn, account]}`` or ``{"Service": [name]}``)."""

    action: str
    resource: str = "*"
    context: Context = field(default_factory=dict)
    principal: Mapping[str, Sequence[str]] | None = None


def parse(document: Any) -> dict[str, Any]:
    """A policy document from JSON text (moto stores them so) or a parsed object."""
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return {"Statement": []}
    return document if isinstance(document, dict) else {"Statement": []}


def statements(document: Any) -> list[dict[str, Any]]:
    found = parse(document).get("Statement") or []
    if isinstance(found, dict):
        found = [found]
    return [s for s in found if isinstance(s, dict)]


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------------------- variables
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_ESCAPES = {"*": "*", "?": "?", "$": "$"}


class _Unresolved(Exception):
    pass


def substitute(value: str, context: Context) -> str:
    """Replace the policy variables of ``value`` (``${aws:PrincipalAccount}``) from ``context``;
    raises _Unresolved for one the context does not hold (IAM then does not match)."""

    def replace(match: re.Match[str]) -> str:
        inner = match.group(1)
        if inner in _ESCAPES:
            return _ESCAPES[inner]
        key, _, default = inner.partition(",")
        values = context.get(key.strip().lower())
        if values:
            return str(values[0])
        if default.strip().startswith("'") and default.strip().endswith("'"):
            return default.strip()[1:-1]
        raise _Unresolved(inner)

    return _VARIABLE.sub(replace, value)


# ---------------------------------------------------------------------------- matching
def _action_matches(statement: Mapping[str, Any], action: str) -> bool:
    if "Action" in statement:
        return any(matches(str(p), action, case_sensitive=False)
                   for p in _as_list(statement["Action"]))
    if "NotAction" in statement:
        return not any(matches(str(p), action, case_sensitive=False)
                       for p in _as_list(statement["NotAction"]))
    return False


def _resource_pattern_matches(pattern: str, resource: str, context: Context) -> bool:
    try:
        pattern = substitute(pattern, context)
    except _Unresolved:
        return False
    return matches(pattern, resource)


def _resource_matches(statement: Mapping[str, Any], request: Request) -> bool:
    if "Resource" in statement:
        return any(_resource_pattern_matches(str(p), request.resource, request.context)
                   for p in _as_list(statement["Resource"]))
    if "NotResource" in statement:
        return not any(_resource_pattern_matches(str(p), request.resource, request.context)
                       for p in _as_list(statement["NotResource"]))
    # Trust policies have no Resource: the role itself is the resource.
    return request.principal is not None


def _principal_matches(given: Any, caller: Mapping[str, Sequence[str]]) -> bool:
    if given == "*":
        return True
    if not isinstance(given, dict):
        return False
    for kind, patterns in given.items():
        values = caller.get(kind, ())
        for pattern in _as_list(patterns):
            text = _text(pattern)
            if text == "*" and values:
                return True
            for value in values:
                # "AWS": "123456789012" names the account (its root), hence every principal of it
                if text == value or (kind == "AWS" and text == f"arn:aws:iam::{value}:root"):
                    return True
    return False


def _principal_ok(statement: Mapping[str, Any], request: Request) -> bool:
    if request.principal is None:
        return "Principal" not in statement and "NotPrincipal" not in statement
    if "Principal" in statement:
        return _principal_matches(statement["Principal"], request.principal)
    if "NotPrincipal" in statement:
        return not _principal_matches(statement["NotPrincipal"], request.principal)
    return False


# ---------------------------------------------------------------------------- conditions
_NEGATED = frozenset({
    "stringnotequals", "stringnotequalsignorecase", "stringnotlike", "numericnotequals",
    "datenotequals", "notipaddress", "arnnotequals", "arnnotlike",
})


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _date(text: str) -> datetime | None:
    try:
        if re.fullmatch(r"\d+(\.\d+)?", text):
            return datetime.fromtimestamp(float(text), UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except ValueError:
        return None


def _compare(base: str, policy_value: str, context_value: str) -> bool:
    """The positive form of operator ``base`` (lower case, no IfExists / set prefix)."""
    if base in ("stringequals", "stringnotequals"):
        return context_value == policy_value
    if base in ("stringequalsignorecase", "stringnotequalsignorecase"):
        return context_value.lower() == policy_value.lower()
    if base in ("stringlike", "stringnotlike"):
        return matches(policy_value, context_value)
    if base in ("arnequals", "arnlike", "arnnotequals", "arnnotlike"):
        return matches(policy_value, context_value)
    if base == "bool":
        return context_value.lower() == policy_value.lower()
    if base == "binaryequals":
        return context_value == policy_value
    if base.startswith("numeric"):
        a, b = _number(context_value), _number(policy_value)
        if a is None or b is None:
            return False
        op = base[len("numeric"):]
        return {"equals": a == b, "notequals": a == b, "lessthan": a < b,
                "lessthanequals": a <= b, "greaterthan": a > b,
                "greaterthanequals": a >= b}.get(op, False)
    if base.startswith("date"):
        x, y = _date(context_value), _date(policy_value)
        if x is None or y is None:
            return False
        op = base[len("date"):]
        return {"equals": x == y, "notequals": x == y, "lessthan": x < y,
                "lessthanequals": x <= y, "greaterthan": x > y,
                "greaterthanequals": x >= y}.get(op, False)
    if base in ("ipaddress", "notipaddress"):
        try:
            return ipaddress.ip_address(context_value) in ipaddress.ip_network(
                policy_value, strict=False)
        except ValueError:
            return False
    raise ValueError(f"unknown condition operator {base!r}")


KNOWN_OPERATORS = frozenset({
    "stringequals", "stringnotequals", "stringequalsignorecase", "stringnotequalsignorecase",
    "stringlike", "stringnotlike", "numericequals", "numericnotequals", "numericlessthan",
    "numericlessthanequals", "numericgreaterthan", "numericgreaterthanequals", "dateequals",
    "datenotequals", "datelessthan", "datelessthanequals", "dategreaterthan",
    "dategreaterthanequals", "bool", "binaryequals", "ipaddress", "notipaddress", "arnequals",
    "arnlike", "arnnotequals", "arnnotlike", "null",
})


def split_operator(operator: str) -> tuple[str | None, str, bool]:
    """``ForAnyValue:StringLikeIfExists`` -> ("foranyvalue", "stringlike", True)."""
    qualifier, _, name = operator.rpartition(":")
    lower = name.lower()
    if_exists = lower.endswith("ifexists") and lower != "ifexists"
    base = lower[: -len("ifexists")] if if_exists else lower
    return (qualifier.lower() or None), base, if_exists


def _values_match(base: str, policy_values: list[str], context_values: Sequence[str],
                  qualifier: str | None) -> bool:
    negated = base in _NEGATED

    def one(value: str) -> bool:
        hit = any(_compare(base, p, value) for p in policy_values)
        return not hit if negated else hit

    if qualifier == "forallvalues":
        return all(one(v) for v in context_values)
    if negated and qualifier is None:
        return all(one(v) for v in context_values)
    return any(one(v) for v in context_values)


def condition_holds(operator: str, key: str, policy_value: Any, context: Context) -> bool:
    qualifier, base, if_exists = split_operator(operator)
    if base not in KNOWN_OPERATORS:
        raise ValueError(f"unknown condition operator {operator!r}")
    values = context.get(key.lower())
    present = values is not None and len(values) > 0
    if base == "null":
        wanted_absent = any(_text(v).lower() == "true" for v in _as_list(policy_value))
        return (not present) if wanted_absent else present
    if not present:
        if if_exists or qualifier == "forallvalues":
            return True
        return base in _NEGATED and qualifier is None
    assert values is not None
    try:
        resolved = [substitute(_text(v), context) for v in _as_list(policy_value)]
    except _Unresolved:
        return False
    return _values_match(base, resolved, [str(v) for v in values], qualifier)


def _conditions_hold(statement: Mapping[str, Any], context: Context) -> bool:
    block = statement.get("Condition") or {}
    if not isinstance(block, dict):
        return False
    for operator, pairs in block.items():
        if not isinstance(pairs, dict):
            return False
        for key, value in pairs.items():
            if not condition_holds(operator, key, value, context):
                return False
    return True


# ---------------------------------------------------------------------------- evaluation
def applies(statement: Mapping[str, Any], request: Request) -> bool:
    return (_action_matches(statement, request.action)
            and _resource_matches(statement, request)
            and _principal_ok(statement, request)
            and _conditions_hold(statement, request.context))


def evaluate(documents: Iterable[Any], request: Request) -> Outcome:
    allowed = False
    for document in documents:
        for statement in statements(document):
            if not applies(statement, request):
                continue
            effect = statement.get("Effect")
            if effect == "Deny":
                return Outcome.DENY
            if effect == "Allow":
                allowed = True
    return Outcome.ALLOW if allowed else Outcome.NONE


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""
    """Why not, in AWS's words: ``because no identity-based policy allows the X action``."""


def decide(identity: Sequence[Any], boundary: Any | None, request: Request) -> Decision:
    """IAM's decision for a principal's own request (same account, no resource policy)."""
    own = evaluate(identity, request)
    if own is Outcome.DENY:
        return Decision(False, "with an explicit deny in an identity-based policy")
    limit = evaluate([boundary], request) if boundary is not None else Outcome.ALLOW
    if limit is Outcome.DENY:
        return Decision(False, "with an explicit deny in a permissions boundary")
    if own is not Outcome.ALLOW:
        return Decision(False, f"because no identity-based policy allows the {request.action} "
                               "action")
    if limit is not Outcome.ALLOW:
        return Decision(False, f"because no permissions boundary allows the {request.action} "
                               "action")
    return Decision(True)


def trusts(trust_policy: Any, service: str, action: str = "sts:AssumeRole",
           context: Context | None = None) -> bool:
    """Does a role's trust policy let ``service`` (a service principal) assume it?"""
    request = Request(action, "*", dict(context or {}), {"Service": [service]})
    return evaluate([trust_policy], request) is Outcome.ALLOW
