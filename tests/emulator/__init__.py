"""Model-driven value generation shared by the emulator tests.

Everything here is derived from the botocore service models: no hand-picked members.
"""

from __future__ import annotations

import functools
import re
import re._constants as sre_constants  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from datetime import UTC, datetime
from typing import Any

import botocore.session

from hypd_local.emulator.validation import EXCLUSIVE_RULES, compile_pattern, java_to_python

SAGEMAKER_OPERATIONS = (
    "CreateCluster", "UpdateCluster", "DescribeCluster", "ListClusters", "DeleteCluster",
    "ListClusterNodes", "DescribeClusterNode", "BatchDeleteClusterNodes",
    "BatchRebootClusterNodes", "BatchReplaceClusterNodes", "UpdateClusterSoftware",
    "ListTrainingPlans", "DescribeTrainingPlan", "SearchTrainingPlanOfferings",
    "ListClusterEvents", "DescribeClusterEvent",
)
EKS_OPERATIONS = (
    "CreateCluster", "DescribeCluster", "DeleteCluster", "ListClusters", "CreateAddon",
    "DescribeAddon", "DeleteAddon", "ListAddons", "DescribeAddonVersions", "CreateAccessEntry",
    "DescribeAccessEntry", "DeleteAccessEntry", "ListAccessEntries", "AssociateAccessPolicy",
    "DisassociateAccessPolicy", "ListAssociatedAccessPolicies",
)
EMULATED = {"sagemaker": SAGEMAKER_OPERATIONS, "eks": EKS_OPERATIONS}
TIMESTAMP = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)


@functools.cache
def model(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


# --- strings from regexes --------------------------------------------------------------------

_CATEGORY_SAMPLE = {
    "CATEGORY_DIGIT": "0", "CATEGORY_NOT_DIGIT": "a", "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": "a", "CATEGORY_WORD": "a", "CATEGORY_NOT_WORD": "-",
}


_CATEGORY_REGEX = {
    "CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W",
}


def _in_class(char: str, items: list[tuple[Any, Any]]) -> bool:
    code = ord(char)
    for op, arg in items:
        name = str(op)
        if name == "LITERAL" and arg == code:
            return True
        if name == "RANGE" and arg[0] <= code <= arg[1]:
            return True
        if name == "CATEGORY" and re.fullmatch(_CATEGORY_REGEX[str(arg)], char):
            return True
    return False


def _pick(items: list[tuple[Any, Any]]) -> str:
    if items and str(items[0][0]) == "NEGATE":
        for char in "aZ0-_x.!":
            if not _in_class(char, items[1:]):
                return char
        return "\u00e9"
    op, arg = items[0]
    name = str(op)
    if name == "LITERAL":
        return chr(arg)
    if name == "RANGE":
        return chr(arg[0])
    return _CATEGORY_SAMPLE[str(arg)]


class _Generator:
    """Builds a string from a parsed regex with chosen repeat counts."""

    def __init__(self, default: int, special: int | None = None, count: int = 0) -> None:
        self.default = default
        self.special = special
        self.count = count
        self.index = 0

    def run(self, parsed: Any) -> str:
        out: list[str] = []
        for op, arg in parsed:
            name = str(op)
            if name == "LITERAL":
                out.append(chr(arg))
            elif name == "NOT_LITERAL":
                out.append("a" if arg != ord("a") else "b")
            elif name == "ANY":
                out.append("a")
            elif name == "IN":
                out.append(_pick(arg))
            elif name == "CATEGORY":
                out.append(_CATEGORY_SAMPLE[str(arg)])
            elif name == "BRANCH":
                out.append(self.run(arg[1][0]))
            elif name == "SUBPATTERN":
                out.append(self.run(arg[-1]))
            elif name in {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}:
                low, high, sub = arg
                index = self.index
                self.index += 1
                wanted = self.default
                if self.special is not None:
                    wanted = self.count if index == self.special else low
                if high != sre_constants.MAXREPEAT:
                    wanted = min(wanted, high)
                wanted = max(wanted, low)
                out.extend(self.run(sub) for _ in range(wanted))
            elif name == "ATOMIC_GROUP":
                out.append(self.run(arg))
            # AT, ASSERT, ASSERT_NOT, GROUPREF: contribute nothing
        return "".join(out)


def _repeat_count(parsed: Any) -> int:
    count = 0
    for op, arg in parsed:
        name = str(op)
        if name in {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}:
            count += 1 + _repeat_count(arg[2])
        elif name == "SUBPATTERN":
            count += _repeat_count(arg[-1])
        elif name == "BRANCH":
            count += _repeat_count(arg[1][0])
        elif name == "ATOMIC_GROUP":
            count += _repeat_count(arg)
    return count


@functools.cache
def matching_string(pattern: str | None, low: int, high: int) -> str | None:
    """A string of length ``low..high`` matching the Java ``pattern`` (None if none found)."""
    if pattern is None:
        return "a" * max(low, 1) if high >= max(low, 1) else ""
    compiled = compile_pattern(pattern)
    parsed = sre_parse.parse(java_to_python(pattern))
    counts = (0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 100, 128, 256, 512)
    candidates: list[_Generator] = [_Generator(n) for n in counts]
    repeats = _repeat_count(parsed)
    for special in reversed(range(repeats)):
        candidates += [_Generator(1, special, n) for n in counts]
    for generator in candidates:
        text = generator.run(parsed)
        if low <= len(text) <= high and compiled.fullmatch(text):
            return text
    return None


def violating_string(pattern: str, low: int, high: int) -> str | None:
    """A string of length ``low..high`` that does not match ``pattern``."""
    compiled = compile_pattern(pattern)
    for base in ("!", "\n", " ", "#", "a b", "-", "A", "a", "0"):
        for size in sorted({len(base), low, max(low, 1), min(high, 8)}):
            if size < 1 and base:
                continue
            text = (base * (size // len(base) + 1))[:size] if size else ""
            if low <= len(text) <= high and compiled.fullmatch(text) is None:
                return text
    if low == 0 and compiled.fullmatch("") is None:
        return ""
    return None


# --- values from shapes ----------------------------------------------------------------------


def bounds(shape: Any) -> tuple[int, int]:
    low = int(shape.metadata.get("min", 0))
    high = int(shape.metadata.get("max", 10**6))
    return low, high


def sample_string(shape: Any) -> str:
    enum = shape.metadata.get("enum")
    if enum:
        return str(enum[0])
    low, high = bounds(shape)
    text = matching_string(shape.metadata.get("pattern"), max(low, 1), high)
    if text is None:
        text = matching_string(shape.metadata.get("pattern"), low, high)
    if text is None:
        raise AssertionError(f"cannot generate a value for {shape.name}: {shape.metadata}")
    return text


def sample_number(shape: Any) -> int | float:
    low = shape.metadata.get("min")
    high = shape.metadata.get("max")
    value: int | float = 1
    if low is not None and value < low:
        value = low
    if high is not None and value > high:
        value = high
    if shape.type_name in {"float", "double"}:
        return float(value)
    return int(value)


def rules_for(service: str, shape_name: str) -> list[Any]:
    return [r for r in EXCLUSIVE_RULES.get(service, ()) if r.shape == shape_name]


def minimal(service: str, shape: Any, stack: tuple[str, ...] = ()) -> Any:
    """The smallest valid value of ``shape``."""
    kind = shape.type_name
    if kind == "structure":
        if getattr(shape, "is_document_type", False):
            return {}
        out: dict[str, Any] = {}
        wanted = list(shape.required_members)
        if shape.metadata.get("union") and shape.members:
            wanted.append(next(iter(shape.members)))
        for rule in rules_for(service, shape.name):
            if rule.kind in {"exactly_one", "at_least_one"} and not any(
                m in wanted for m in rule.members
            ):
                wanted.append(rule.members[0])
        for name in wanted:
            out[name] = minimal(service, shape.members[name], (*stack, shape.name))
        return out
    if kind == "list":
        low, _ = bounds(shape)
        return [minimal(service, shape.member, stack) for _ in range(low)]
    if kind == "map":
        low, _ = bounds(shape)
        return {f"{sample_string(shape.key)}{i or ''}": minimal(service, shape.value, stack)
                for i in range(low)}
    if kind == "string":
        return sample_string(shape)
    if kind in {"integer", "long", "float", "double"}:
        return sample_number(shape)
    if kind == "boolean":
        return True
    if kind == "timestamp":
        return TIMESTAMP
    if kind == "blob":
        low, _ = bounds(shape)
        return b"x" * max(low, 1)
    raise AssertionError(f"unexpected shape type {kind}")


def wrong_type(shape: Any) -> Any:
    """A value of a JSON type the shape does not accept."""
    return {"string": 123, "integer": "1", "long": "1", "float": "1.5", "double": "1.5",
            "boolean": "true", "timestamp": "yesterday", "blob": 7, "list": "x", "map": "x",
            "structure": "x"}[shape.type_name]
