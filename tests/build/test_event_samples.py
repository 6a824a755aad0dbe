"""Every API route and every EventBridge rule of the template has a sample event in events/.

The samples are what `sam local invoke -e` and the unit tests feed the handlers; a route or a
rule without one is untested from its real event shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hypd_local.template import read_template, resources_of_type
from tests.build.support import ROOT, TEMPLATE

pytestmark = pytest.mark.build

EVENTS = ROOT / "events"
FUNCTIONS = resources_of_type(read_template(TEMPLATE), "AWS::Serverless::Function")


def _samples() -> list[dict[str, Any]]:
    return [json.loads(path.read_text()) for path in sorted(EVENTS.glob("*.json"))]


def _events(kind: str) -> list[dict[str, Any]]:
    return [
        event["Properties"]
        for function in FUNCTIONS.values()
        for event in (function["Properties"].get("Events") or {}).values()
        if event["Type"] == kind
    ]


def test_every_api_route_has_a_sample_proxy_event() -> None:
    samples = {(e["httpMethod"], e["resource"]) for e in _samples() if "httpMethod" in e}
    routes = {(r["Method"].upper(), r["Path"]) for r in _events("Api")}
    assert routes
    assert routes - samples == set()


def _matches(value: str, allowed: list[Any]) -> bool:
    """`value` is one of a pattern's values: an exact string or a `{prefix: ...}`."""
    return any(
        value == a if isinstance(a, str) else value.startswith(a["prefix"]) for a in allowed
    )


def test_every_eventbridge_rule_has_a_sample_event() -> None:
    samples = [e for e in _samples() if "detail-type" in e]
    rules = _events("EventBridgeRule")
    assert rules
    for rule in rules:
        pattern = rule["Pattern"]
        assert any(
            _matches(e["source"], pattern["source"])
            and _matches(e["detail-type"], pattern["detail-type"])
            for e in samples
        ), f"no sample event in events/ matches {pattern['source']} {pattern['detail-type']}"
