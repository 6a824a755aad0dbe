"""Recording the AWS calls each function makes on the local cloud, and checking them against
the function's policy statements in template.yaml (wildcards as IAM reads them; conditions
are not evaluated)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from fnmatch import fnmatchcase
from typing import Any

import pytest

from hypd_local.calls import Call, watch_calls
from hypd_local.template import read_template
from tests.conftest import ROOT

ACTION_OF_CALL = {
    # HeadBucket is authorised as s3:ListBucket.
    "s3:HeadBucket": "s3:ListBucket",
    # TransactWriteItems is authorised item by item; hypd's transactions only put.
    "dynamodb:TransactWriteItems": "dynamodb:PutItem",
}
NEEDS_NO_PERMISSION = {"sts:GetCallerIdentity"}


def policy_actions(logical_id: str) -> set[str]:
    template = read_template(ROOT / "template.yaml")
    actions: set[str] = set()
    for policy in template["Resources"][logical_id]["Properties"].get("Policies", []):
        for statement in policy.get("Statement", []) if isinstance(policy, dict) else []:
            if statement.get("Effect") == "Allow":
                action = statement["Action"]
                actions.update([action] if isinstance(action, str) else action)
    return actions


@pytest.fixture
def calls_by_function(cloud: Any) -> Iterator[dict[str, set[str]]]:
    """`service:Operation` of every boto3 call, by the function whose invocation made it."""
    recorded: dict[str, set[str]] = defaultdict(set)
    current = threading.local()

    def record(call: Call) -> None:
        function = getattr(current, "function", None)
        if function is not None:
            recorded[function].add(call.action)

    runtime = cloud.lambdas
    original = runtime.invoke

    def invoke(function: Any, event: Any) -> Any:
        outer = getattr(current, "function", None)
        current.function = function if isinstance(function, str) else function.logical_id
        try:
            return original(function, event)
        finally:
            current.function = outer

    runtime.invoke = invoke
    try:
        with watch_calls(record):
            yield recorded
    finally:
        runtime.invoke = original


def assert_allowed(calls_by_function: dict[str, set[str]], functions: Iterable[str]) -> None:
    """Every recorded call of each function is an action of its policy."""
    for function in functions:
        allowed = policy_actions(function)
        calls = {ACTION_OF_CALL.get(c, c) for c in calls_by_function[function]}
        assert calls, f"{function} made no AWS call"
        denied = sorted(
            call
            for call in calls - NEEDS_NO_PERMISSION
            if not any(fnmatchcase(call, pattern) for pattern in allowed)
        )
        assert denied == [], f"{function}'s policy does not allow {denied}"
