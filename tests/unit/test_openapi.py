"""docs/openapi.json is generated from the code, and its routes are the template's Api events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.support import ROOT

HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


@pytest.fixture
def rendered(fresh_imports: None) -> str:
    """`python -m hypd.api.openapi`'s output (hypd.api imported only for this test)."""
    from hypd.api.openapi import render

    return render()


def test_committed_document_is_current(rendered: str) -> None:
    committed = (ROOT / "docs" / "openapi.json").read_text()
    assert committed == rendered, "docs/openapi.json is stale: run `python -m hypd.api.openapi`"


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
    assert len(routes) == 26


def test_every_operation_documents_its_errors_with_the_shared_body(rendered: str) -> None:
    document = json.loads(rendered)
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert "422" not in responses, f"{method} {path}"
            for status in ("400", "500"):
                schema = responses[status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, f"{method} {path}"
    assert document["security"] == [{"sigv4": []}]
