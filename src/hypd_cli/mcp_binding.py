"""Binding the MCP tools to the REST API's OpenAPI document (shipped with the package): the
route, summary, description, parameters and the input and output schemas of each tool."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import mcp_types as types
from pydantic.json_schema import models_json_schema

from hypd_cli.mcp_tools import _PARAMETER_HINTS, TOOL_SPECS, WAIT_SECONDS_SCHEMA, ToolSpec

OPENAPI_FILE = "openapi.json"
_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options"})
_COMPONENT_REF = re.compile(r"^#/components/schemas/(?P<name>[^/]+)$")
CLIENT_HEADERS = frozenset({"Idempotency-Key"})
"""Headers a route documents that are the HTTP client's to send, not a tool's inputs (a
tool call is one request; a repeat of it is the agent's choice, as a new call)."""


@dataclass(frozen=True)
class BoundTool:
    """A tool bound to its REST operation."""

    spec: ToolSpec
    method: str
    path: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    summary: str
    description: str

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def read_only(self) -> bool:
        """The tool only reads: its operation is a GET. Every other one creates, changes,
        deletes or runs something (`endpoint_invoke`, a POST, runs the model: not read-only).
        The one definition of the tool's MCP readOnlyHint and of what a server started without
        ``--allow-write`` serves."""
        return self.method == "GET"

    def to_mcp(self) -> types.Tool:
        read_only = self.read_only
        return types.Tool(
            name=self.name,
            title=self.summary,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=types.ToolAnnotations(
                title=self.summary,
                read_only_hint=read_only,
                destructive_hint=None if read_only else self.spec.destructive,
                idempotent_hint=read_only or self.spec.idempotent,
                open_world_hint=True,
            ),
        )


def openapi_document() -> dict[str, Any]:
    """The REST API's OpenAPI document, shipped with the package (`OPENAPI_FILE`, which
    docs/openapi.json links to): generated from the API's code by ``python -m hypd.api.openapi``,
    and checked against it by tests/unit/test_openapi.py. Read, not generated, so the server
    does not import the API's routers (nor Powertools' resolver) to start."""
    text = resources.files("hypd_cli").joinpath(OPENAPI_FILE).read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def bind_tools(
    document: Mapping[str, Any], specs: Iterable[ToolSpec] = TOOL_SPECS
) -> list[BoundTool]:
    """Bind each tool to its operation in `document` (raises ValueError on any mismatch)."""
    operations = _operations_by_id(document)
    components = document.get("components", {}).get("schemas", {})
    tools = []
    for spec in specs:
        if spec.operation_id not in operations:
            raise ValueError(f"tool {spec.name}: no operation {spec.operation_id} in the API")
        method, path, operation = operations[spec.operation_id]
        tools.append(_bind(spec, method, path, operation, components))
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise ValueError(f"tool names are not unique: {names}")
    return tools


def _operations_by_id(document: Mapping[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    found: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            if method in _HTTP_METHODS:
                found[operation["operationId"]] = (method.upper(), path, operation)
    return found


def _bind(
    spec: ToolSpec,
    method: str,
    path: str,
    operation: Mapping[str, Any],
    components: Mapping[str, Any],
) -> BoundTool:
    parameters = operation.get("parameters", [])
    answers = _response_refs(operation)
    models = {m.__name__ for m in (spec.response, spec.unchanged) if m is not None}
    if answers and answers != models:
        raise ValueError(
            f"tool {spec.name}: {spec.operation_id} answers {' or '.join(sorted(answers))}, "
            f"not {' or '.join(sorted(models))}"
        )
    body_ref = _body_ref(operation)
    if spec.body is not None:
        if body_ref != spec.body.__name__:
            raise ValueError(
                f"tool {spec.name}: {spec.operation_id} takes {body_ref}, not {spec.body.__name__}"
            )
        body_schema = spec.body.model_json_schema(by_alias=True)
        clash = sorted(p["name"] for p in parameters if p["in"] == "query"
                       and p["name"] in body_schema.get("properties", {}))
        if clash:
            raise ValueError(
                f"tool {spec.name}: query parameter(s) {', '.join(clash)} share a name with "
                "the body's fields"
            )
        input_schema = _with_parameters(body_schema, parameters, components)
    elif body_ref is not None:
        raise ValueError(f"tool {spec.name}: {spec.operation_id} takes a {body_ref} body")
    else:
        input_schema = _parameters_schema(parameters, components)
    if spec.waits:
        input_schema["properties"]["wait_seconds"] = dict(WAIT_SECONDS_SCHEMA)
    if spec.confirm is not None:
        input_schema["properties"]["confirm"] = {
            "type": "string",
            "description": spec.confirm.description,
        }
        if spec.confirm.required:
            input_schema["required"] = [*input_schema.get("required", []), "confirm"]
    summary = str(operation.get("summary") or spec.name)
    text = [summary.rstrip(".") + "."]
    if operation.get("description"):
        text.append(str(operation["description"]))
    if spec.advice:
        text.append(spec.advice)
    if spec.confirm is not None:
        text.append(spec.confirm.advice)
    text.append(f"REST API: {method} {path} (operationId {spec.operation_id}).")
    return BoundTool(
        spec=spec,
        method=method,
        path=path,
        path_params=tuple(p["name"] for p in parameters if p["in"] == "path"),
        query_params=tuple(p["name"] for p in parameters if p["in"] == "query"),
        input_schema=input_schema,
        output_schema=_output_schema(spec),
        summary=summary,
        description="\n\n".join(text),
    )


def _body_ref(operation: Mapping[str, Any]) -> str | None:
    """The component name of the operation's JSON body (None when it takes no body)."""
    schema = (
        operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    ).get("schema")
    if schema is None:
        return None
    options = schema.get("anyOf", [schema])
    refs = [_COMPONENT_REF.match(o.get("$ref", "")) for o in options]
    names = [m.group("name") for m in refs if m is not None]
    if len(names) != 1:
        raise ValueError(f"{operation['operationId']}: the body is not one schema: {schema}")
    return names[0]


def _parameters_schema(
    parameters: Iterable[Mapping[str, Any]], components: Mapping[str, Any]
) -> dict[str, Any]:
    """One JSON object schema of the operation's path and query parameters."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in parameters:
        if parameter["in"] == "header" and parameter["name"] in CLIENT_HEADERS:
            continue
        if parameter["in"] not in ("path", "query"):
            raise ValueError(f"parameter {parameter['name']} in {parameter['in']} is not supported")
        name = parameter["name"]
        schema = {k: v for k, v in parameter.get("schema", {}).items() if k != "title"}
        description = parameter.get("description") or _PARAMETER_HINTS.get(name)
        if description:
            schema["description"] = description
        properties[name] = schema
        if parameter.get("required"):
            required.append(name)
    result: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        result["required"] = required
    return _self_contained(result, components)


def _with_parameters(
    body: dict[str, Any],
    parameters: Iterable[Mapping[str, Any]],
    components: Mapping[str, Any],
) -> dict[str, Any]:
    """The body's schema with the operation's path parameters (required) and query parameters
    first among its properties. A body field named like a path parameter gives way to it: the
    PATCH body's ``name`` can only restate the group's name, which the path gives. (A query
    parameter may not share a body field's name: `_bind` refuses it.)"""
    path = _parameters_schema(parameters, components)
    if not path["properties"]:
        return body
    named = path["properties"]
    merged = {
        **body,
        "properties": {
            **named, **{k: v for k, v in body.get("properties", {}).items() if k not in named}
        },
        "required": [
            *path.get("required", []), *[r for r in body.get("required", []) if r not in named]
        ],
    }
    if "$defs" in path:
        merged["$defs"] = {**body.get("$defs", {}), **path["$defs"]}
    return merged


def _response_refs(operation: Mapping[str, Any]) -> set[str]:
    """The component names of the operation's documented success responses (200, 201, 202)."""
    names = set()
    for status in ("200", "201", "202"):
        content = operation.get("responses", {}).get(status, {}).get("content", {})
        schema = content.get("application/json", {}).get("schema")
        match = _COMPONENT_REF.match((schema or {}).get("$ref", ""))
        if match:
            names.add(match.group("name"))
    return names


def _output_schema(spec: ToolSpec) -> dict[str, Any]:
    """The response model's schema; for a change that may be found made, either answer's."""
    if spec.unchanged is None:
        return spec.response.model_json_schema(by_alias=True, mode="serialization")
    answers = (spec.response, spec.unchanged)
    _, definitions = models_json_schema(
        [(model, "serialization") for model in answers], by_alias=True,
        ref_template="#/$defs/{model}",
    )
    return {
        # MCP clients of protocol versions up to 2025-11-25 take only an object at the root:
        # both answers are objects.
        "type": "object",
        "description": (
            f"202 {spec.response.__name__}: an operation started, poll it; or 200 "
            f"{spec.unchanged.__name__} (changed: false): the request matches, nothing started."
        ),
        "anyOf": [{"$ref": f"#/$defs/{model.__name__}"} for model in answers],
        **definitions,
    }


def _self_contained(schema: dict[str, Any], components: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with its ``#/components/schemas/X`` references moved into its own ``$defs``."""
    defs: dict[str, Any] = {}
    pending: list[str] = []

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: rewrite(v) for k, v in node.items()}
            match = _COMPONENT_REF.match(str(node.get("$ref", "")))
            if match:
                name = match.group("name")
                out["$ref"] = f"#/$defs/{name}"
                if name not in defs and name not in pending:
                    pending.append(name)
            return out
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    result: dict[str, Any] = rewrite(schema)
    while pending:
        name = pending.pop()
        defs[name] = {}  # taken before its references are followed (a model may nest itself)
        defs[name] = rewrite(copy.deepcopy(components[name]))
    if defs:
        result["$defs"] = {**result.get("$defs", {}), **defs}
    return result
