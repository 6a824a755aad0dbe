"""docs/openapi.json is generated from the code, and its routes are the template's Api events."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.unit.support import ROOT

HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}
MUTATING = {"post", "put", "patch", "delete"}


@pytest.fixture
def rendered(fresh_imports: None) -> str:
    """`python -m hypd.api.openapi`'s output (hypd.api imported only for this test)."""
    from hypd.api.openapi import render

    return render()


def test_committed_document_is_current(rendered: str) -> None:
    committed = (ROOT / "docs" / "openapi.json").read_text()
    assert committed == rendered, "docs/openapi.json is stale: run `python -m hypd.api.openapi`"


def test_the_mcp_server_reads_the_packaged_document_without_the_routers() -> None:
    # docs/openapi.json is the package's file (a link), so the two cannot differ
    docs = ROOT / "docs" / "openapi.json"
    assert docs.is_symlink()
    assert docs.resolve() == ROOT / "src" / "hypd_cli" / "openapi.json"
    # and the MCP server reads it, as shipped, in a process that imports no router to start
    probe = (
        "import sys; import hypd_cli.mcp_server; "
        "from hypd_cli.mcp_binding import openapi_document; "
        "assert openapi_document()['paths']; "
        "print(','.join(m for m in ('hypd.api.app', 'hypd.api.clusters', 'hypd.api.capacity', "
        "'hypd.api.catalog', 'hypd.api.health', 'hypd.api.operations') if m in sys.modules))"
    )
    done = subprocess.run(  # noqa: S603 - this interpreter and a fixed probe
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == ""


def template_routes(template: dict[str, Any]) -> set[tuple[str, str]]:
    events = template["Resources"]["ApiFunction"]["Properties"]["Events"]
    return {
        (event["Properties"]["Path"], event["Properties"]["Method"].lower())
        for event in events.values()
        if event["Type"] == "Api"
    }


def test_document_routes_are_the_api_functions_events(
    template: dict[str, Any], rendered: str
) -> None:
    document = json.loads(rendered)
    documented = {
        (path, method)
        for path, item in document["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }
    routes = template_routes(template)
    assert documented - routes == set(), "documented routes API Gateway does not route"
    assert routes - documented == set(), "routed paths missing from the document"
    assert len(routes) == 48


def test_every_operation_documents_its_errors_with_the_shared_body(rendered: str) -> None:
    document = json.loads(rendered)
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            # Validation errors are 400s: a 422 is only the mismatch of an Idempotency-Key.
            assert ("422" in responses) is (method in MUTATING), f"{method} {path}"
            for status in ("400", "500"):
                schema = responses[status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, f"{method} {path}"
    assert document["security"] == [{"sigv4": []}]


def test_an_error_body_always_carries_code_message_and_details(rendered: str) -> None:
    schema = json.loads(rendered)["components"]["schemas"]["ErrorBody"]
    assert schema["required"] == ["code", "message", "details"]
    assert schema["additionalProperties"] is False


def test_no_parameter_is_documented_as_null(rendered: str) -> None:
    # A query or path parameter is sent as text or not at all: never JSON null (a fuzzer
    # would otherwise send the text "null" as a valid value)
    document = json.loads(rendered)
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                options = parameter["schema"].get("anyOf", [])
                assert {"type": "null"} not in options, (method, path, parameter["name"])
                assert "type" in parameter["schema"] or "$ref" in parameter["schema"]


def test_every_route_that_calls_aws_documents_503(rendered: str) -> None:
    # A throttled or unavailable DynamoDB or AWS API is a 503 (errors.py) on any route that
    # calls one; only the instance-group field catalogue is static
    document = json.loads(rendered)
    static = {"listInstanceGroupFields"}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            documents_503 = "503" in operation["responses"]
            assert documents_503 is (operation["operationId"] not in static), (method, path)


def test_every_mutating_operation_takes_an_idempotency_key_and_documents_its_answers(
    rendered: str,
) -> None:
    from hypd.api.idempotency import KEY_PATTERN, MAX_KEY_LENGTH

    document = json.loads(rendered)
    for path, item in document["paths"].items():
        for method, operation in item.items():
            headers = {p["name"]: p for p in operation.get("parameters", []) if p["in"] == "header"}
            if method not in MUTATING:
                assert headers == {}, (method, path)
                continue
            # The header, optional, with the limits the middleware enforces
            key = headers["Idempotency-Key"]
            assert key["required"] is False
            assert key["schema"] == {
                "type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH,
                "pattern": KEY_PATTERN,
            }
            # A mismatch and a request still being served, with the shared error body
            responses = operation["responses"]
            for status in ("422", "429"):
                schema = responses[status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)
            assert "Retry-After" in responses["429"]["headers"]
            # and every success may be a replay, marked so
            for status, response in responses.items():
                if status.startswith("2"):
                    assert "Idempotent-Replayed" in response["headers"], (method, path, status)


def test_every_route_a_cluster_absent_from_aws_refuses_documents_its_409(rendered: str) -> None:
    # hypd.api.absent_clusters answers 409 (ClusterDeleted, ClusterNotActive) on every
    # /clusters/{tag}/... route but the reads of hypd's own records
    document = json.loads(rendered)
    record_reads = {"getHealthPolicy", "getNodeHealth"}
    for path, item in document["paths"].items():
        if not path.startswith("/clusters/{tag}/"):
            continue
        for method, operation in item.items():
            refuses = operation["operationId"] not in record_reads
            assert refuses is ("409" in operation["responses"]), (method, path)
    described = document["paths"]["/clusters/{tag}/nodes"]["get"]["responses"]["409"]
    assert "ClusterDeleted: " in described["description"]
    assert "ClusterNotActive: " in described["description"]
