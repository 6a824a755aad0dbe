"""Validation tests generated from the botocore models.

For every emulated operation the input shape is walked; for each member a minimal valid request
that contains it is built, and one variant per constraint the model puts on it (missing required
member, wrong type, bad enum, too short/long, out of range, pattern mismatch, unknown member,
union / documented mutual exclusion). The valid request must pass; each variant must be rejected
with the service's validation code and a message naming the member and the constraint.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from hypd_local.emulator.errors import AwsError, validation_error_code
from hypd_local.emulator.validation import (
    EXCLUSIVE_RULES,
    INT32,
    INT64,
    compile_pattern,
    validate,
    violations,
)
from tests.emulator import (
    EMULATED,
    bounds,
    matching_string,
    minimal,
    model,
    rules_for,
    sample_string,
    violating_string,
    wrong_type,
)

Step = tuple[str, str]  # ("m", member) | ("i", "") list item | ("v", "") map value | ("k", "") key
MAX_DEPTH = 12


@dataclass
class Case:
    id: str
    service: str
    operation: str
    valid: dict[str, Any]
    invalid: dict[str, Any]
    fragment: str


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def walk(shape: Any, steps: tuple[Step, ...] = (), stack: tuple[str, ...] = ()
         ) -> Iterator[tuple[tuple[Step, ...], Any, bool]]:
    """(steps, shape, required) for every member reachable from ``shape`` (root included)."""
    if len(steps) > MAX_DEPTH:
        return
    if steps == ():
        yield steps, shape, False
    kind = shape.type_name
    if kind == "structure" and not getattr(shape, "is_document_type", False):
        if shape.name in stack:
            return
        for name, member in shape.members.items():
            child = (*steps, ("m", name))
            yield child, member, name in shape.required_members
            yield from walk(member, child, (*stack, shape.name))
    elif kind == "list":
        child = (*steps, ("i", ""))
        yield child, shape.member, False
        yield from walk(shape.member, child, stack)
    elif kind == "map":
        yield (*steps, ("k", "")), shape.key, False
        child = (*steps, ("v", ""))
        yield child, shape.value, False
        yield from walk(shape.value, child, stack)


class Located:
    """Where a member lives in a request: its container, key and path."""

    def __init__(self, container: Any, key: Any, path: str, is_key: bool = False) -> None:
        self.container = container
        self.key = key
        self.path = path
        self.is_key = is_key

    def set(self, value: Any) -> None:
        if self.is_key:
            self.container[value] = self.container.pop(self.key)
        else:
            self.container[self.key] = value

    def delete(self) -> None:
        del self.container[self.key]


def ensure(service: str, root_shape: Any, root: dict[str, Any], steps: tuple[Step, ...]
           ) -> Located:
    """Make the member at ``steps`` present in ``root`` (keeping it valid) and locate it."""
    shape = root_shape
    value: Any = root
    path = ""
    located = Located({"": root}, "", "")
    for kind, name in steps:
        if kind == "m":
            member = shape.members[name]
            if name not in value:
                value[name] = minimal(service, member)
            exclusive: set[str] = set()
            if shape.metadata.get("union"):
                exclusive |= set(shape.members)
            for rule in rules_for(service, shape.name):
                if rule.kind in {"at_most_one", "exactly_one"} and name in rule.members:
                    exclusive |= set(rule.members)
            for other in exclusive - {name}:
                value.pop(other, None)
            path = _join(path, name)
            located = Located(value, name, path)
            value, shape = value[name], member
        elif kind == "i":
            if not value:
                value.append(minimal(service, shape.member))
            path = f"{path}[0]"
            located = Located(value, 0, path)
            value, shape = value[0], shape.member
        else:
            if not value:
                value[sample_string(shape.key)] = minimal(service, shape.value)
            key = next(iter(value))
            if kind == "k":
                return Located(value, key, f"{path}.key", is_key=True)
            path = f"{path}[{key}]"
            located = Located(value, key, path)
            value, shape = value[key], shape.value
    return located


def _constraint(path: str, text: str) -> str:
    return f"at '{path}' failed to satisfy constraint: {text}"


def variants(service: str, shape: Any, required: bool, located: Located, is_root: bool
             ) -> Iterator[tuple[str, Any, str]]:
    """(kind, new value or a sentinel, expected message fragment) per constraint on ``shape``."""
    path = located.path
    meta = shape.metadata
    kind = shape.type_name
    if required:
        yield "missing", _DELETE, f"Value null {_constraint(path, 'Member must not be null')}"
    document = kind == "structure" and getattr(shape, "is_document_type", False)
    if not is_root and not located.is_key and not document:
        yield "type", wrong_type(shape), _constraint(path, f"Member must be of type {kind}")
    low, high = bounds(shape)
    if kind == "string":
        if meta.get("enum"):
            yield ("enum", "NOT_AN_ENUM_VALUE",
                   _constraint(path, "Member must satisfy enum value set"))
        if "min" in meta and low > 0:
            yield ("too-short", "a" * (low - 1),
                   _constraint(path, f"Member must have length greater than or equal to {low}"))
        if "max" in meta and high < 100_000:
            text = matching_string(meta.get("pattern"), high + 1, high + 1) or "a" * (high + 1)
            yield ("too-long", text,
                   _constraint(path, f"Member must have length less than or equal to {high}"))
        if meta.get("pattern") is not None and not meta.get("enum"):
            bad = violating_string(meta["pattern"], low, high)
            if bad is not None:
                yield ("pattern", bad, _constraint(
                    path, f"Member must satisfy regular expression pattern: {meta['pattern']}"))
    elif kind in {"list", "map"}:
        if "min" in meta and low > 0:
            yield ("too-short", [] if kind == "list" else {},
                   _constraint(path, f"Member must have length greater than or equal to {low}"))
        if "max" in meta and high < 5_000:
            if kind == "list":
                items: Any = [minimal(service, shape.member) for _ in range(high + 1)]
            else:
                key = sample_string(shape.key)
                items = {f"{key}{i}": minimal(service, shape.value) for i in range(high + 1)}
            yield ("too-long", items,
                   _constraint(path, f"Member must have length less than or equal to {high}"))
    elif kind in {"integer", "long", "float", "double"}:
        limits = INT32 if kind == "integer" else INT64
        if "min" in meta and meta["min"] - 1 >= limits[0]:
            yield ("below-min", meta["min"] - 1, _constraint(
                path, f"Member must have value greater than or equal to {meta['min']}"))
        if "max" in meta and meta["max"] + 1 <= limits[1]:
            yield ("above-max", meta["max"] + 1, _constraint(
                path, f"Member must have value less than or equal to {meta['max']}"))
    elif kind == "structure" and not document:
        yield ("unknown-member", _UNKNOWN,
               _constraint(_join(path, "NotAMember"), f"Member is not a member of {shape.name}"))
        where = path or shape.name
        names = list(shape.members)
        if meta.get("union"):
            yield ("union-none", _Fields(()),
                   _constraint(where, f"Member must have exactly one of [{', '.join(names)}] set"))
            if len(names) > 1:
                yield ("union-two", _Fields(tuple(names[:2])),
                       _constraint(where,
                                   f"Member must have exactly one of [{', '.join(names)}] set"))
        for rule in rules_for(service, shape.name):
            listed = ", ".join(rule.members)
            if rule.kind == "at_most_one":
                yield ("exclusive-all", _Fields(rule.members), _constraint(
                    where, f"Members [{listed}] are mutually exclusive"))
            if rule.kind == "exactly_one":
                yield ("exactly-one-none", _Fields(()), _constraint(
                    where, f"Member must have exactly one of [{listed}] set"))
                yield ("exactly-one-all", _Fields(rule.members), _constraint(
                    where, f"Member must have exactly one of [{listed}] set"))
            if rule.kind == "at_least_one":
                yield ("at-least-one-none", _Fields(()), _constraint(
                    where, f"Member must have at least one of [{listed}] set"))


_DELETE = object()
_UNKNOWN = object()


@dataclass(frozen=True)
class _Fields:
    """Set exactly these (rule / union) members of a structure to minimal values."""

    names: tuple[str, ...]


def _apply(service: str, shape: Any, located: Located, change: Any) -> None:
    if change is _DELETE:
        located.delete()
    elif change is _UNKNOWN:
        located.container[located.key]["NotAMember"] = "x"
    elif isinstance(change, _Fields):
        target = located.container[located.key]
        related = set(change.names)
        if shape.metadata.get("union"):
            related |= set(shape.members)
        for rule in rules_for(service, shape.name):
            related |= set(rule.members)
        for name in related:
            target.pop(name, None)
        for name in change.names:
            target[name] = minimal(service, shape.members[name])
    else:
        located.set(change)


def generate_cases() -> list[Case]:
    cases: list[Case] = []
    for service, operations in EMULATED.items():
        service_model = model(service)
        for operation in operations:
            root_shape = service_model.operation_model(operation).input_shape
            for steps, shape, required in walk(root_shape):
                base = minimal(service, root_shape)
                located = ensure(service, root_shape, base, steps)
                for kind, change, fragment in variants(service, shape, required, located,
                                                       steps == ()):
                    invalid = copy.deepcopy(base)
                    target = ensure(service, root_shape, invalid, steps)
                    _apply(service, shape, target, change)
                    cases.append(Case(f"{service}:{operation}:{located.path or '<root>'}:{kind}",
                                      service, operation, base, invalid, fragment))
    return cases


CASES = generate_cases()


def test_generation_covers_every_operation_and_constraint_kind() -> None:
    operations = {(c.service, c.operation) for c in CASES}
    assert operations == {(s, o) for s, ops in EMULATED.items() for o in ops}
    kinds = {c.id.rsplit(":", 1)[1] for c in CASES}
    assert kinds >= {"missing", "type", "enum", "too-short", "too-long", "pattern", "below-min",
                     "above-max", "unknown-member", "union-none", "union-two", "exclusive-all",
                     "exactly-one-none", "exactly-one-all", "at-least-one-none"}
    assert len(CASES) > 1000


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_generated_case(case: Case) -> None:
    service_model = model(case.service)
    assert violations(service_model, case.operation, case.valid) == []
    with pytest.raises(AwsError) as caught:
        validate(service_model, case.operation, case.invalid)
    error = caught.value
    assert error.code == validation_error_code(service_model)
    assert error.status == 400
    assert case.fragment in error.message, error.message
    assert error.message.split(":")[0].endswith("detected")


@pytest.mark.parametrize(("service", "operation"),
                         [(s, o) for s, ops in EMULATED.items() for o in ops])
def test_minimal_request_passes(service: str, operation: str) -> None:
    shape = model(service).operation_model(operation).input_shape
    validate(model(service), operation, minimal(service, shape))


def test_service_validation_codes() -> None:
    assert validation_error_code(model("sagemaker")) == "ValidationException"
    assert validation_error_code(model("eks")) == "InvalidParameterException"


@pytest.mark.parametrize("service", ["sagemaker", "eks"])
def test_every_pattern_of_the_service_compiles(service: str) -> None:
    service_model = model(service)
    patterns = {service_model.shape_for(name).metadata.get("pattern")
                for name in service_model.shape_names}
    patterns.discard(None)
    assert patterns
    for pattern in patterns:
        compile_pattern(pattern)


@pytest.mark.parametrize(("service", "operation"),
                         [(s, o) for s, ops in EMULATED.items() for o in ops])
def test_every_pattern_of_emulated_operations_has_a_matching_sample(
        service: str, operation: str) -> None:
    root = model(service).operation_model(operation).input_shape
    for _, shape, _ in walk(root):
        if shape.type_name == "string" and shape.metadata.get("pattern"):
            assert compile_pattern(shape.metadata["pattern"]).fullmatch(sample_string(shape))


def test_java_property_classes_are_translated() -> None:
    pattern = compile_pattern(r"([\p{L}\p{Z}\p{N}_.:/=+\-@]*)")
    assert pattern.fullmatch("Équipe 7 日本 _.:/=+-@")
    assert pattern.fullmatch("a!b") is None
    assert compile_pattern(r"\p{Lu}+").fullmatch("ÀB")
    assert compile_pattern(r"\p{Lu}+").fullmatch("àb") is None
    assert compile_pattern(r"\P{N}+").fullmatch("ab")
    assert compile_pattern(r"\P{N}+").fullmatch("a1") is None
    assert compile_pattern(r"\p{Alnum}+").fullmatch("aZ9")
    assert compile_pattern(r"\Qa.b\E").fullmatch("a.b")
    assert compile_pattern(r"\Qa.b\E").fullmatch("axb") is None


def test_rules_name_real_shapes_and_members() -> None:
    for service, rules in EXCLUSIVE_RULES.items():
        service_model = model(service)
        for rule in rules:
            shape = service_model.shape_for(rule.shape)
            assert set(rule.members) <= set(shape.members), rule


def test_message_style_for_several_errors() -> None:
    service_model = model("sagemaker")
    with pytest.raises(AwsError) as caught:
        validate(service_model, "CreateCluster", {
            "ClusterName": "bad name",
            "InstanceGroups": [{"InstanceGroupName": "g", "InstanceCount": 7000,
                                "ExecutionRole": "arn:aws:iam::123456789012:role/r",
                                "InstanceType": "ml.t3.medium",
                                "InstanceRequirements": {"InstanceTypes": ["ml.t3.medium"]}}],
        })
    message = caught.value.message
    assert message.startswith("3 validation errors detected: Value 'bad name' at 'ClusterName' "
                               "failed to satisfy constraint: Member must satisfy regular "
                               "expression pattern: ")
    assert ("Value 7000 at 'InstanceGroups[0].InstanceCount' failed to satisfy constraint: "
            "Member must have value less than or equal to 6758") in message
    assert "at 'InstanceGroups[0]' failed to satisfy constraint: Members [InstanceType, " \
           "InstanceRequirements] are mutually exclusive" in message


def test_eks_message_names_member() -> None:
    with pytest.raises(AwsError) as caught:
        validate(model("eks"), "CreateCluster", {"name": "c", "roleArn": "r"})
    assert caught.value.code == "InvalidParameterException"
    assert caught.value.message == (
        "1 validation error detected: Value null at 'resourcesVpcConfig' failed to satisfy "
        "constraint: Member must not be null")
