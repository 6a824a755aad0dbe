"""Strict input validation against the botocore service model.

``validate(service_model, operation_name, params)`` checks, recursively: required members, types,
enums, patterns (Java regexes, matched against the whole value like Java's ``String.matches``),
min/max length of strings, lists and maps, min/max value of numbers, unknown members, union
structures (exactly one member set) and the documented mutually exclusive members in
:data:`EXCLUSIVE_RULES`. All violations are collected and raised as one ``AwsError`` with the
service's validation code (``ValidationException`` for SageMaker, ``InvalidParameterException``
for EKS) in AWS's wording::

    2 validation errors detected: Value 'x y' at 'ClusterName' failed to satisfy constraint:
    Member must satisfy regular expression pattern: ...; Value null at 'InstanceGroups[0].
    ExecutionRole' failed to satisfy constraint: Member must not be null

Member paths use the model's member names, ``[i]`` for list items and ``[key]`` for map values.
(AWS's own messages use lower-camel names and ``.member.N``; the path format here is chosen to be
readable and unambiguous.)

One module, a little over 400 lines, on purpose: the walk over a shape, the Java-regex
translation and the exclusive-member rules produce one list of violations in AWS's order and
wording, and read best side by side.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from hypd_local.emulator.errors import AwsError, validation_error_code

RuleKind = Literal["at_most_one", "exactly_one", "at_least_one"]


@dataclass(frozen=True)
class ExclusiveRule:
    """A documented constraint between members of one structure shape."""

    shape: str
    members: tuple[str, ...]
    kind: RuleKind
    source: str  # where the model documents it


# service name -> rules. Found by searching the models' documentation of the emulated operations
# for "mutually exclusive" / "either ... or" / "not both"; union shapes need no entry.
EXCLUSIVE_RULES: dict[str, tuple[ExclusiveRule, ...]] = {
    "sagemaker": (
        ExclusiveRule(
            "ClusterInstanceGroupSpecification", ("InstanceType", "InstanceRequirements"),
            "at_most_one",
            "InstanceRequirements: 'The InstanceType and InstanceRequirements properties are "
            "mutually exclusive.'",
        ),
        ExclusiveRule(
            "ClusterOrchestrator", ("Eks", "Slurm"), "exactly_one",
            "CreateClusterRequest.Orchestrator: 'you must provide exactly one orchestrator "
            "configuration: either Eks or Slurm'",
        ),
        ExclusiveRule(
            "DescribeClusterNodeRequest", ("NodeId", "NodeLogicalId"), "exactly_one",
            "NodeLogicalId: 'You can specify either NodeLogicalId or InstanceId, but not both.'",
        ),
        ExclusiveRule(
            "BatchDeleteClusterNodesRequest", ("NodeIds", "NodeLogicalIds"), "at_least_one",
            "NodeLogicalIds: 'You must specify either NodeLogicalIds, InstanceIds, or both'",
        ),
        ExclusiveRule(
            "BatchRebootClusterNodesRequest", ("NodeIds", "NodeLogicalIds"), "at_least_one",
            "NodeIds: 'Either NodeIds or NodeLogicalIds must be provided (or both)'",
        ),
        ExclusiveRule(
            "BatchReplaceClusterNodesRequest", ("NodeIds", "NodeLogicalIds"), "at_least_one",
            "NodeIds: 'Either NodeIds or NodeLogicalIds must be provided (or both)'",
        ),
    ),
    "eks": (),
}

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


# --- Java regex -> Python re ----------------------------------------------------------------


@functools.cache
def _general_categories() -> dict[str, str]:
    """Character-class bodies (ranges) for every two-letter Unicode general category."""
    ranges: dict[str, list[str]] = {}
    category = unicodedata.category
    start = 0
    current = category(chr(0))
    for code in range(1, sys.maxunicode + 2):
        cat = category(chr(code)) if code <= sys.maxunicode else ""
        if 0xD800 <= code <= 0xDFFF:
            cat = "Cs"
        if cat != current:
            if current != "Cs":
                ranges.setdefault(current, []).append(_range(start, code - 1))
            start, current = code, cat
    return {cat: "".join(parts) for cat, parts in ranges.items()}


def _category_ranges(category: str) -> str:
    """A character-class body for a general category like ``L`` (all letters) or ``Lu``."""
    table = _general_categories()
    return "".join(body for cat, body in sorted(table.items()) if cat.startswith(category))


def _range(start: int, end: int) -> str:
    def esc(code: int) -> str:
        return f"\\U{code:08x}"

    return esc(start) if start == end else f"{esc(start)}-{esc(end)}"


_JAVA_CLASSES = {
    "Alpha": "a-zA-Z", "Digit": "0-9", "Alnum": "a-zA-Z0-9", "Upper": "A-Z", "Lower": "a-z",
    "Punct": "!-/:-@\\[-`{-~", "Space": " \\t\\n\\x0b\\f\\r", "XDigit": "0-9a-fA-F",
    "ASCII": "\\x00-\\x7f", "Print": "\\x20-\\x7e", "Graph": "\\x21-\\x7e",
    "Cntrl": "\\x00-\\x1f\\x7f", "Blank": " \\t",
}
_PROPERTY = re.compile(
    r"\\([pP])\{(?:Is|general_category=|gc=)?([A-Za-z_]+)\}|\\([pP])([LMNPSZC])"
)


_SURROGATE_PAIR = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})", re.IGNORECASE)
_QUANTIFIER = re.compile(r"(\{(\d+)(,\d*)?\}|[*+?])[?+]?")


def _join_surrogates(found: re.Match[str]) -> str:
    high, low = int(found.group(1), 16), int(found.group(2), 16)
    return f"\\U{0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00):08x}"


def java_to_python(pattern: str) -> str:
    r"""Translate the Java regex constructs Python's ``re`` lacks into equivalents.

    ``\p{..}`` / ``\P{..}`` (Unicode categories and POSIX classes), ``\h``, ``\z``,
    ``\Q..\E``, UTF-16 surrogate pairs (``\uD800\uDC00``) and quantified anchors (``${1,256}``,
    which Java accepts and Python does not).
    """
    pattern = _SURROGATE_PAIR.sub(_join_surrogates, pattern)
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt == "Q":
                end = pattern.find("\\E", i + 2)
                literal = pattern[i + 2:] if end < 0 else pattern[i + 2:end]
                out.append(re.escape(literal))
                i = len(pattern) if end < 0 else end + 2
                continue
            if nxt in "pP":
                found = _PROPERTY.match(pattern, i)
                if found is None:
                    raise ValueError(f"unsupported property escape in {pattern!r} at {i}")
                negated = (found.group(1) or found.group(3)) == "P"
                name = found.group(2) or found.group(4)
                body = _JAVA_CLASSES.get(name) or _category_ranges(name)
                if not body:
                    raise ValueError(f"unknown property {name!r} in {pattern!r}")
                if in_class:
                    if negated:
                        raise ValueError(f"negated property inside a class in {pattern!r}")
                    out.append(body)
                else:
                    out.append(f"[{'^' if negated else ''}{body}]")
                i = found.end()
                continue
            if nxt == "h":
                out.append(" \\t\\xa0" if in_class else "[ \\t\\xa0]")
                i += 2
                continue
            if nxt == "z":
                out.append("\\Z")
                i += 2
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
            out.append(ch)
            i += 1
            # a leading ']' or '^]' is literal in both dialects
            if pattern[i:i + 1] == "^":
                out.append("^")
                i += 1
            if pattern[i:i + 1] == "]":
                out.append("\\]")
                i += 1
            continue
        if ch == "[" and in_class:
            out.append("\\[")  # Java's nested classes are not used by AWS models; keep literal
            i += 1
            continue
        if ch == "]" and in_class:
            in_class = False
        if ch in "^$" and not in_class:
            quantifier = _QUANTIFIER.match(pattern, i + 1)
            if quantifier is not None:
                # a repeated anchor is the anchor (at least once) or nothing (zero times)
                at_least = quantifier.group(2)
                if (at_least is not None and int(at_least) > 0) or quantifier.group(1) == "+":
                    out.append(ch)
                i = quantifier.end()
                continue
        out.append(ch)
        i += 1
    return "".join(out)


@functools.cache
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The model pattern compiled for Python (cached)."""
    return re.compile(java_to_python(pattern))


# --- validation ------------------------------------------------------------------------------


def _render(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'"
    if isinstance(value, list):
        return "[" + ", ".join(_render(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}={_render(v)}" for k, v in value.items()) + "}"
    return f"'{value!r}'"


class _Collector:
    def __init__(self, rules: tuple[ExclusiveRule, ...]) -> None:
        self.errors: list[str] = []
        self.rules: dict[str, list[ExclusiveRule]] = {}
        for rule in rules:
            self.rules.setdefault(rule.shape, []).append(rule)

    def fail(self, value: Any, path: str, constraint: str) -> None:
        self.errors.append(
            f"Value {_render(value)} at '{path}' failed to satisfy constraint: {constraint}"
        )

    def check(self, shape: Any, value: Any, path: str) -> None:
        kind = shape.type_name
        handler = getattr(self, f"_check_{kind}", None)
        if handler is None:
            return
        handler(shape, value, path)

    def _check_structure(self, shape: Any, value: Any, path: str) -> None:
        if getattr(shape, "is_document_type", False):
            return
        if not isinstance(value, Mapping):
            self.fail(value, path, "Member must be of type structure")
            return
        for name in shape.required_members:
            if value.get(name) is None:
                self.fail(None, _join(path, name), "Member must not be null")
        for name, item in value.items():
            member = shape.members.get(name)
            if member is None:
                self.fail(item, _join(path, str(name)),
                          f"Member is not a member of {shape.name}")
                continue
            if item is None:
                continue
            self.check(member, item, _join(path, name))
        present = [n for n in shape.members if value.get(n) is not None]
        if shape.metadata.get("union") and len(present) != 1:
            self.fail(_subset(value, present), path or shape.name,
                      f"Member must have exactly one of [{', '.join(shape.members)}] set")
        for rule in self.rules.get(shape.name, ()):
            count = sum(1 for n in rule.members if value.get(n) is not None)
            names = ", ".join(rule.members)
            where = path or shape.name
            if rule.kind == "at_most_one" and count > 1:
                self.fail(_subset(value, rule.members), where,
                          f"Members [{names}] are mutually exclusive: specify at most one")
            elif rule.kind == "exactly_one" and count != 1:
                self.fail(_subset(value, rule.members), where,
                          f"Member must have exactly one of [{names}] set")
            elif rule.kind == "at_least_one" and count == 0:
                self.fail(None, where, f"Member must have at least one of [{names}] set")

    def _check_list(self, shape: Any, value: Any, path: str) -> None:
        if not isinstance(value, list):
            self.fail(value, path, "Member must be of type list")
            return
        self._length(shape, value, path)
        for index, item in enumerate(value):
            if item is None:
                self.fail(None, f"{path}[{index}]", "Member must not be null")
            else:
                self.check(shape.member, item, f"{path}[{index}]")

    def _check_map(self, shape: Any, value: Any, path: str) -> None:
        if not isinstance(value, Mapping):
            self.fail(value, path, "Member must be of type map")
            return
        self._length(shape, value, path)
        for key, item in value.items():
            self.check(shape.key, key, f"{path}.key")
            if item is None:
                self.fail(None, f"{path}[{key}]", "Member must not be null")
            else:
                self.check(shape.value, item, f"{path}[{key}]")

    def _check_string(self, shape: Any, value: Any, path: str) -> None:
        if not isinstance(value, str):
            self.fail(value, path, "Member must be of type string")
            return
        self._length(shape, value, path)
        enum = shape.metadata.get("enum")
        if enum and value not in enum:
            self.fail(value, path, f"Member must satisfy enum value set: [{', '.join(enum)}]")
        pattern = shape.metadata.get("pattern")
        if pattern is not None and compile_pattern(pattern).fullmatch(value) is None:
            self.fail(value, path,
                      f"Member must satisfy regular expression pattern: {pattern}")

    def _number(self, shape: Any, value: Any, path: str, kind: str, bounds: tuple[int, int] | None
                ) -> None:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if kind in {"float", "double"}:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or (bounds is not None and not bounds[0] <= value <= bounds[1]):
            self.fail(value, path, f"Member must be of type {kind}")
            return
        low = shape.metadata.get("min")
        high = shape.metadata.get("max")
        if low is not None and value < low:
            self.fail(value, path, f"Member must have value greater than or equal to {low}")
        if high is not None and value > high:
            self.fail(value, path, f"Member must have value less than or equal to {high}")

    def _check_integer(self, shape: Any, value: Any, path: str) -> None:
        self._number(shape, value, path, "integer", INT32)

    def _check_long(self, shape: Any, value: Any, path: str) -> None:
        self._number(shape, value, path, "long", INT64)

    def _check_float(self, shape: Any, value: Any, path: str) -> None:
        self._number(shape, value, path, "float", None)

    def _check_double(self, shape: Any, value: Any, path: str) -> None:
        self._number(shape, value, path, "double", None)

    def _check_boolean(self, shape: Any, value: Any, path: str) -> None:
        if not isinstance(value, bool):
            self.fail(value, path, "Member must be of type boolean")

    def _check_timestamp(self, shape: Any, value: Any, path: str) -> None:
        if not isinstance(value, datetime):
            self.fail(value, path, "Member must be of type timestamp")

    def _check_blob(self, shape: Any, value: Any, path: str) -> None:
        if not isinstance(value, bytes | bytearray):
            self.fail(value, path, "Member must be of type blob")
            return
        self._length(shape, value, path)

    def _length(self, shape: Any, value: Any, path: str) -> None:
        low = shape.metadata.get("min")
        high = shape.metadata.get("max")
        if low is not None and len(value) < low:
            self.fail(value, path, f"Member must have length greater than or equal to {low}")
        if high is not None and len(value) > high:
            self.fail(value, path, f"Member must have length less than or equal to {high}")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _subset(value: Mapping[str, Any], names: Any) -> dict[str, Any]:
    return {n: value[n] for n in names if value.get(n) is not None}


def violations(service_model: Any, operation_name: str, params: Mapping[str, Any]) -> list[str]:
    """Every violation of the operation's input constraints, AWS-worded, in document order."""
    shape = service_model.operation_model(operation_name).input_shape
    if shape is None:
        return [] if not params else [f"Value {_render(dict(params))} at '' failed to satisfy "
                                      "constraint: the operation takes no input"]
    collector = _Collector(EXCLUSIVE_RULES.get(service_model.service_name, ()))
    collector.check(shape, params, "")
    return collector.errors


def validate(service_model: Any, operation_name: str, params: Mapping[str, Any]) -> None:
    """Raise the service's validation error if ``params`` violates the operation's model."""
    errors = violations(service_model, operation_name, params)
    if not errors:
        return
    count = len(errors)
    noun = "error" if count == 1 else "errors"
    message = f"{count} validation {noun} detected: " + "; ".join(errors)
    raise AwsError(message, code=validation_error_code(service_model), status=400)
