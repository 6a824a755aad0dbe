"""Helpers for the HyperPod emulator tests: a fake clock, an event recorder, a shape checker.

``check_shape`` walks a botocore shape and reports every way a value breaks it: unknown or
missing members, wrong types, enum values, lengths, ranges and (where Python's ``re`` can
compile them) patterns. Every request the tests send and every response the emulator returns
go through it, so the emulator cannot drift from the service model.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import botocore.session

from hypd_local.emulator.hyperpod import HyperPodDurations, HyperPodEmulator
from hypd_local.emulator.hyperpod_catalog import Catalog
from hypd_local.emulator.hyperpod_iam import EXECUTION_ACTIONS, Role

ACCOUNT = "123456789012"
REGION = "us-west-2"
EKS_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/hp-eks"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/HyperPodExecution"
CLUSTER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/HyperPodClusterRole"
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
EXECUTION_ROLE = Role(
    ROLE,
    {"Statement": [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
                    "Action": "sts:AssumeRole"}]},
    ({"Statement": [{"Effect": "Allow", "Action": sorted(EXECUTION_ACTIONS), "Resource": "*"}]},),
)
"""An execution role allowed what the instances need (the groups of ``group`` use it)."""


@cache
def sagemaker_model() -> Any:
    return botocore.session.get_session().get_service_model("sagemaker")


class FakeClock:
    def __init__(self, start: datetime = START) -> None:
        self.t = start

    def now(self) -> datetime:
        return self.t

    def advance(self, **kwargs: float) -> datetime:
        self.t += timedelta(**kwargs)
        return self.t


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, dict[str, Any], list[str]]] = []

    def __call__(self, source: str, detail_type: str, detail: dict[str, Any],
                 resources: list[str]) -> None:
        self.items.append((source, detail_type, detail, resources))

    def of(self, detail_type: str) -> list[dict[str, Any]]:
        return [d for _s, t, d, _r in self.items if t == detail_type]

    def statuses(self) -> list[str]:
        return [d["ClusterStatus"] for d in self.of("SageMaker HyperPod Cluster State Change")]


def _compiles(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def check_shape(shape: Any, value: Any, path: str = "$") -> list[str]:
    errors: list[str] = []
    t = shape.type_name
    md = shape.metadata
    if t == "structure":
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {type(value).__name__}"]
        for key in value:
            if key not in shape.members:
                errors.append(f"{path}: unknown member {key}")
        for key in shape.required_members:
            if key not in value:
                errors.append(f"{path}: missing required member {key}")
        for key, member in shape.members.items():
            if key in value:
                errors += check_shape(member, value[key], f"{path}.{key}")
    elif t == "list":
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        if "min" in md and len(value) < md["min"]:
            errors.append(f"{path}: {len(value)} items < min {md['min']}")
        if "max" in md and len(value) > md["max"]:
            errors.append(f"{path}: {len(value)} items > max {md['max']}")
        for i, item in enumerate(value):
            errors += check_shape(shape.member, item, f"{path}[{i}]")
    elif t == "map":
        if not isinstance(value, dict):
            return [f"{path}: expected a map"]
        for k, v in value.items():
            errors += check_shape(shape.key, k, f"{path}<key>")
            errors += check_shape(shape.value, v, f"{path}.{k}")
    elif t == "string":
        if not isinstance(value, str):
            return [f"{path}: expected a string, got {value!r}"]
        if shape.enum and value not in shape.enum:
            errors.append(f"{path}: {value!r} not in enum {shape.name}")
        if "min" in md and len(value) < md["min"]:
            errors.append(f"{path}: length {len(value)} < min {md['min']}")
        if "max" in md and len(value) > md["max"]:
            errors.append(f"{path}: length {len(value)} > max {md['max']}")
        pattern = _compiles(md["pattern"]) if "pattern" in md else None
        if pattern is not None and not pattern.fullmatch(value):
            errors.append(f"{path}: {value!r} does not match {md['pattern']}")
    elif t in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            return [f"{path}: expected an integer, got {value!r}"]
        if "min" in md and value < md["min"]:
            errors.append(f"{path}: {value} < min {md['min']}")
        if "max" in md and value > md["max"]:
            errors.append(f"{path}: {value} > max {md['max']}")
    elif t == "boolean":
        if not isinstance(value, bool):
            errors.append(f"{path}: expected a boolean")
    elif t == "timestamp":
        if not isinstance(value, datetime) or value.tzinfo is None:
            errors.append(f"{path}: expected an aware datetime, got {value!r}")
    elif t in ("double", "float") and (
        not isinstance(value, int | float) or isinstance(value, bool)
    ):
        errors.append(f"{path}: expected a number")
    return errors


def _pascal(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


class Checked:
    """Calls emulator operations, checking the request and the response against the model."""

    def __init__(self, emulator: HyperPodEmulator) -> None:
        self.emulator = emulator

    def __getattr__(self, op: str) -> Any:
        operation = sagemaker_model().operation_model(_pascal(op))
        method = getattr(self.emulator, op)

        def call(**req: Any) -> dict[str, Any]:
            errors = check_shape(operation.input_shape, req, "request")
            assert not errors, errors
            out: dict[str, Any] = method(req)
            if operation.output_shape is not None:
                errors = check_shape(operation.output_shape, out, "response")
                assert not errors, errors
            return out

        return call


def make(
    durations: HyperPodDurations | None = None,
    catalog: Catalog | None = None,
    **kwargs: Any,
) -> tuple[HyperPodEmulator, Checked, FakeClock, Events]:
    clock = FakeClock()
    events = Events()
    emulator = HyperPodEmulator(clock, events, ACCOUNT, REGION, durations, catalog, **kwargs)
    return emulator, Checked(emulator), clock, events


def group(name: str = "workers", count: int = 2, itype: str = "ml.g5.8xlarge",
          **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "InstanceGroupName": name,
        "InstanceType": itype,
        "InstanceCount": count,
        "ExecutionRole": ROLE,
        "LifeCycleConfig": {"SourceS3Uri": "s3://bucket/lcc/", "OnCreate": "on_create.sh"},
    }
    spec.update(extra)
    return spec


def cluster_request(name: str = "hp1", groups: list[dict[str, Any]] | None = None,
                    **extra: Any) -> dict[str, Any]:
    req: dict[str, Any] = {
        "ClusterName": name,
        "InstanceGroups": groups if groups is not None else [group()],
        "VpcConfig": {"SecurityGroupIds": ["sg-0123456789abcdef0"],
                      "Subnets": ["subnet-0aaaaaaaaaaaaaaaa"]},
        "Orchestrator": {"Eks": {"ClusterArn": EKS_ARN}},
        "Tags": [{"Key": "team", "Value": "ml"}],
    }
    req.update(extra)
    return req
