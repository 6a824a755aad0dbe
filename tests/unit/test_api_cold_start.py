"""The API function's cold start, without timing: what its init imports, which route module a
request loads, and that `ROUTE_MODULES` is the routers' own list (docs/performance.md)."""

from __future__ import annotations

import copy
import importlib
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from hypd_local.template import describe_functions
from tests.unit.support import ROOT, TEMPLATE_PATH, FakeLambdaContext, load_event

# What the handler's init must not import: every route module and the domain behind them, the
# AWS SDK, the X-Ray SDK, and what only some routes use.
NOT_AT_INIT = (
    "hypd.api.capacity",
    "hypd.api.catalog",
    "hypd.api.clusters",
    "hypd.api.features",
    "hypd.api.health",
    "hypd.api.models",
    "hypd.api.operations",
    "hypd.api.services",
    "hypd.api.teams",
    "hypd.api.teardown",
    "hypd.api.workloads",
    "hypd.aws.clients",
    "hypd.aws.dynamodb",
    "hypd.clusters.create_request",
    "hypd.clusters.store",
    "hypd.features.state",
    "hypd.kubernetes.client",
    "hypd.operations.store",
    "hypd.wiring",
    "boto3",
    "botocore.client",
    "botocore.session",
    "aws_xray_sdk",
    "aws_lambda_powertools.utilities.parser",
    "kubernetes",
    "yaml",
    "jinja2",
    "requests",
)

PROBE = """
import json, sys
sys.path.insert(0, {code_dir!r})
import app
before = sorted(m for m in {watched!r} if m in sys.modules)
app.prime()
from hypd.aws import clients
import boto3
print(json.dumps({{
    "at_init": before,
    "primed": sorted(m for m in {watched!r} if m in sys.modules),
    "clients": len(clients._CLIENTS),
    "session": boto3.DEFAULT_SESSION is not None,
}}))
"""


def api_function_environment() -> dict[str, str]:
    """A fresh interpreter's environment for ApiFunction, as Lambda's (tracing on), with this
    checkout's src first (the venv's editable install may name another checkout)."""
    (api,) = [fn for fn in describe_functions(TEMPLATE_PATH) if fn.logical_id == "ApiFunction"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "POWERTOOLS_"))}
    return {**env, **api.standalone_environment(), "PYTHONPATH": str(ROOT / "src")}


def test_init_imports_what_routing_needs_and_priming_loads_the_rest() -> None:
    # Given a new execution environment of the API function (a fresh interpreter)
    probe = PROBE.format(code_dir=str(ROOT / "functions" / "api"), watched=NOT_AT_INIT)
    done = subprocess.run(  # noqa: S603 - this interpreter and a fixed probe
        [sys.executable, "-c", probe],
        env=api_function_environment(),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(done.stdout.splitlines()[-1])
    # Then its init imported none of the route modules, the SDKs or the domain behind them
    assert report["at_init"] == []
    # And SnapStart's priming loads them all but makes no client and no session
    expected = [m for m in NOT_AT_INIT if m not in {"yaml", "jinja2", "requests", "kubernetes",
                                                    "aws_lambda_powertools.utilities.parser"}]
    assert report["primed"] == sorted(expected)
    assert report["clients"] == 0
    assert report["session"] is False


def _router_routes(module: str) -> set[str]:
    router = importlib.import_module(f"hypd.api.{module}").router
    return {f"{method} {rule}" for rule, methods, *_ in router._routes for method in methods}


@pytest.mark.usefixtures("fresh_imports")
def test_route_modules_lists_every_router_and_its_routes() -> None:
    from hypd.api.app import ROUTE_MODULES

    routers = {
        path.stem
        for path in (ROOT / "src" / "hypd" / "api").glob("*.py")
        if "\nrouter = " in path.read_text()
    }
    assert set(ROUTE_MODULES) == routers
    for module, routes in ROUTE_MODULES.items():
        assert len(set(routes)) == len(routes), module
        assert set(routes) == _router_routes(module), module


def _could_match_one_path(rule: str, other: str) -> bool:
    """Whether a request path can match both rules (`<name>`: any one segment)."""
    ours, theirs = rule.strip("/").split("/"), other.strip("/").split("/")
    return len(ours) == len(theirs) and all(
        a == b or a.startswith("<") or b.startswith("<") for a, b in zip(ours, theirs, strict=True)
    )


def test_no_request_can_match_routes_of_two_modules() -> None:
    from hypd.api.app import declared_routes

    routes = list(declared_routes())
    clashes = [
        (first, second)
        for index, first in enumerate(routes)
        for second in routes[index + 1:]
        if first[0] != second[0]
        and first[1] == second[1]
        and _could_match_one_path(first[2], second[2])
    ]
    assert clashes == []


def _request(method: str, path: str) -> dict[str, Any]:
    event = copy.deepcopy(load_event("api-get-operation.json"))
    event.update(httpMethod=method, path=path, resource=path, pathParameters=None)
    return event


@pytest.mark.usefixtures("fresh_imports")
def test_a_request_loads_its_route_module_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    from hypd.api.app import ROUTE_MODULES, build_app

    made: list[str] = []

    def services() -> Any:
        made.append("services")
        return object()  # the field catalogue reads no store

    def loaded() -> set[str]:
        return {module for module in ROUTE_MODULES if f"hypd.api.{module}" in sys.modules}

    app = build_app(services)
    context: Any = FakeLambdaContext("hypd-api")
    assert loaded() == set()
    # An unknown route loads nothing and is the API's 404
    response = app.resolve(_request("GET", "/nothing/here"), context)
    assert response["statusCode"] == 404
    assert loaded() == set()
    # A route loads its module, once, and the services
    for _ in range(2):
        response = app.resolve(_request("GET", "/catalog/instance-group-fields"), context)
        assert response["statusCode"] == 200, response["body"]
    assert loaded() == {"catalog"}
    assert made == ["services"]
    assert app.route_modules("delete", "/clusters/demo") == ["teardown"]
    assert app.route_modules("GET", "/clusters/demo/nodes/i-1/health") == ["health"]
