"""The hypd MCP server: one tool per REST operation, for AI agents (``hypd mcp serve``).

Every tool calls exactly one operation of the REST API, by its operationId, through the CLI's
API client (`ApiClient.call`; never boto3 or kubectl), so the API's validation protects agents
like every other client.

A tool is bound to its operation by operationId in the OpenAPI document the API generates from
its own code (shipped with the package; docs/openapi.json links to it), and takes from it the
route, the summary and description, the path and query parameters with their JSON schemas, and the
response schemas (the tool's output schema: the response model, or for a change the API may
find already made, the union of its 202 `OperationAccepted` and its 200 ``changed: false``
model). A tool whose operation takes a body takes the body's pydantic model as its input
schema, with the operation's path parameters beside the body's fields: `cluster_create` takes
`CreateClusterRequest`'s schema, `instance_group_update` ``tag`` and ``name`` and
`UpdateInstanceGroupRequest`'s fields, `health_policy_set` ``tag`` and `HealthPolicy`'s, so an
agent sees exactly what the API validates.
`operation_get_status` also takes ``wait_seconds`` (capped at `WAIT_SECONDS_MAX`): it polls the
operation every few seconds until the operation's status or one of its stages changes, or the
operation ends.

An error of the API comes back as a tool error (``isError``) carrying its HTTP status, code,
message and details (an endpoint that does not answer: code ``ApiUnreachable``), as text: a
line to read, then ``{"error": {status, code, message, details}}``. It has no
``structuredContent``: that must conform to the tool's output schema, and a client may check it
also on an error (the TypeScript SDK does, and would reject the result).

The agent guide (agent-guide.md, package data) is served three ways: as the server's
instructions, as the resource `GUIDE_URI` and as the prompt `GUIDE_PROMPT`.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from hypd import __version__
from hypd.api.health import HealthPolicyView, HealthSummaryView, NodeHealthHistory
from hypd.api.models import (
    AutoscalingUnchanged,
    AutoscalingView,
    AvailabilityZoneList,
    ClusterList,
    ClusterView,
    DiscoverRequest,
    InstanceGroupFieldList,
    InstanceGroupList,
    InstanceGroupUnchanged,
    InstanceTypeList,
    NodeList,
    OperationAccepted,
    OperationList,
    OperationView,
    TrainingPlanList,
)
from hypd.capacity.requests import (
    AddInstanceGroupRequest,
    AutoscalingRequest,
    UpdateInstanceGroupRequest,
)
from hypd.clusters.create_request import CreateClusterRequest
from hypd.health.policy import HealthPolicy
from hypd_cli.api_client import ApiClientError, ApiError

logger = logging.getLogger(__name__)

SERVER_NAME = "hypd"
GUIDE_URI = "hypd://agent-guide"
ERROR_KEY = "error"
"""The key of a tool error's JSON text block: ``{"error": {status, code, message, details}}``."""
GUIDE_PROMPT = "hypd_agent_guide"
GUIDE_FILE = "agent-guide.md"
OPENAPI_FILE = "openapi.json"

WAIT_SECONDS_MAX = 300
"""The longest ``operation_get_status`` waits in one call (larger values are capped)."""
POLL_SECONDS = 2.0
"""How often a waiting ``operation_get_status`` reads the operation."""
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})

_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options"})
_COMPONENT_REF = re.compile(r"^#/components/schemas/(?P<name>[^/]+)$")


# ---------------------------------------------------------------------------- the tools
@dataclass(frozen=True)
class ToolSpec:
    """A tool: its name, the REST operation it calls, and what an agent should know."""

    name: str
    operation_id: str
    response: type[BaseModel]
    """The pydantic model of the operation's success response: the tool's output schema."""
    body: type[BaseModel] | None = None
    """The pydantic model of the operation's request body: the tool's input schema."""
    advice: str = ""
    """Appended to the operation's summary and description in the tool's description."""
    waits: bool = False
    """Takes ``wait_seconds``: polls the operation until it changes or ends."""
    unchanged: type[BaseModel] | None = None
    """For a change the API may find already made: the model of its 200 ``changed: false``
    answer (``response`` is then the 202's); the output schema is the union of the two."""
    destructive: bool = False
    """May remove or interrupt something (MCP's destructiveHint)."""
    idempotent: bool = False
    """Calling it again with the same arguments changes nothing more (MCP's idempotentHint)."""


POLL = "Poll the returned operationId with operation_get_status until it ends."
CONFIRM = "Ask the user to confirm first."


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "cluster_list_all",
        "listClusters",
        ClusterList,
        advice="Call this first: the cluster the user wants may exist already.",
    ),
    ToolSpec(
        "cluster_get",
        "getCluster",
        ClusterView,
        advice="Summarise a created cluster from this record once its operation SUCCEEDED.",
    ),
    ToolSpec(
        "cluster_create",
        "createCluster",
        OperationAccepted,
        body=CreateClusterRequest,
        advice=(
            "Inspect first (cluster_list_all, catalog_availability_zones, "
            "catalog_instance_types, catalog_training_plans) and offer the user only choices "
            "the catalogue shows; ask only for the tag, zone, instance types and counts, "
            "capacity type and storage (an S3 bucket must exist already). Then poll the "
            "returned operationId with operation_get_status until it ends. Never call this "
            "twice for one tag: a 409 ClusterExists means use that cluster, or resume its "
            "failed creation with operation_retry (details.lastOperationId)."
        ),
    ),
    ToolSpec(
        "cluster_discover",
        "discoverClusters",
        OperationAccepted,
        body=DiscoverRequest,
        advice=POLL,
    ),
    ToolSpec(
        "operation_list",
        "listOperations",
        OperationList,
        advice=(
            "Use it to find the operation of an interrupted conversation (by clusterTag) "
            "and resume it."
        ),
    ),
    ToolSpec(
        "operation_get_status",
        "getOperation",
        OperationView,
        waits=True,
        advice=(
            f"With wait_seconds (at most {WAIT_SECONDS_MAX}) it waits until the operation's "
            "status or one of its stages changes, or the operation ends, reading it every "
            "few seconds; call it again until the status is SUCCEEDED, FAILED or CANCELLED. "
            "A FAILED operation's failed stage carries the error; resume it with "
            "operation_retry."
        ),
    ),
    ToolSpec(
        "operation_retry",
        "retryOperation",
        OperationView,
        advice=(
            "Fix the failed stage's cause first when it lies outside hypd (e.g. a missing "
            "bucket), then retry and poll with operation_get_status."
        ),
    ),
    ToolSpec(
        "operation_cancel",
        "cancelOperation",
        OperationView,
        advice="Only when the user asks. Poll with operation_get_status until CANCELLED.",
        destructive=True,
    ),
    ToolSpec(
        "catalog_availability_zones",
        "listAvailabilityZones",
        AvailabilityZoneList,
        advice="Offer only these zones.",
    ),
    ToolSpec(
        "catalog_instance_types",
        "listInstanceTypes",
        InstanceTypeList,
        advice="Call it with the chosen availabilityZone and offer only the types it lists.",
    ),
    ToolSpec(
        "catalog_training_plans",
        "listTrainingPlans",
        TrainingPlanList,
        advice="For capacity type training-plan: offer Active or Scheduled plans only.",
    ),
    ToolSpec(
        "catalog_instance_group_fields",
        "listInstanceGroupFields",
        InstanceGroupFieldList,
        advice=(
            "Read it before changing a group: only the mutable fields (count, minCount, labels, "
            "taints) can change; each create-time field says why not and what to do instead."
        ),
    ),
    ToolSpec(
        "instance_group_list",
        "listInstanceGroups",
        InstanceGroupList,
        advice=(
            "Call this first for any capacity change: the group the user means may exist "
            "already, and it shows each group's create-time facts (type, capacity, zone, "
            "subnet) and its counts."
        ),
    ),
    ToolSpec(
        "instance_group_add",
        "addInstanceGroup",
        OperationAccepted,
        body=AddInstanceGroupRequest,
        advice=(
            "Inspect first (instance_group_list, catalog_instance_types with the cluster's "
            "zone, catalog_training_plans for reserved capacity) and offer the user only "
            "choices the catalogue shows. Ask only for the group's name, instance type, count "
            "and capacity type (on-demand, spot or a training plan); ask about the zone only "
            "for a training plan (the plan pins it; any other group takes the cluster's zone, "
            "so leave availabilityZone out). These are fixed for the group's life. " + POLL
            + " A 409 InstanceGroupExists means the group is there: use it."
        ),
    ),
    ToolSpec(
        "instance_group_update",
        "updateInstanceGroup",
        OperationAccepted,
        body=UpdateInstanceGroupRequest,
        unchanged=InstanceGroupUnchanged,
        advice=(
            "Send only what changes: count, minCount, labels (the whole map) or taints (the "
            "whole list). Never try to change a create-time field (instanceType, capacity, "
            "availabilityZone, dedicatedSubnet, efaOnly, deepHealthChecks; see "
            "catalog_instance_group_fields): that is a 400 ImmutableField; add a new group "
            "with the value instead (instance_group_add), move the work, then delete the old "
            "one. An answer with changed: false means the group already matches: nothing "
            "started, nothing to poll. Otherwise: " + POLL
        ),
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        "instance_group_delete",
        "deleteInstanceGroup",
        OperationAccepted,
        advice=(
            "Removes the group's nodes. " + CONFIRM + " The last group cannot be deleted (409 "
            "LastInstanceGroup), nor one Karpenter scales (409 InstanceGroupAutoscaled: take it "
            "out of autoscaling_set first). " + POLL
        ),
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        "node_list",
        "listNodes",
        NodeList,
        advice="Find a node's id and status here before any node action.",
    ),
    ToolSpec(
        "node_reboot",
        "rebootNode",
        OperationAccepted,
        advice="Interrupts the node's pods. " + CONFIRM + " " + POLL,
        destructive=True,
    ),
    ToolSpec(
        "node_replace",
        "replaceNode",
        OperationAccepted,
        advice=(
            "For an unhealthy node: a new instance takes its place and its local data is "
            "lost. " + CONFIRM + " " + POLL
        ),
        destructive=True,
    ),
    ToolSpec(
        "node_delete",
        "deleteNode",
        OperationAccepted,
        advice="The node's group keeps one node fewer. " + CONFIRM + " " + POLL,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        "autoscaling_get",
        "getAutoscaling",
        AutoscalingView,
        advice="Read it before autoscaling_set: whether managed Karpenter is on, and for "
        "which groups.",
    ),
    ToolSpec(
        "autoscaling_set",
        "setAutoscaling",
        OperationAccepted,
        body=AutoscalingRequest,
        unchanged=AutoscalingUnchanged,
        advice=(
            "enabled: true with instanceGroups (1-10 existing groups of on-demand or spot "
            "capacity without deep health checks, in one zone: see instance_group_list) turns "
            "managed Karpenter on; tell the user it scales idle groups toward zero. enabled: "
            "false turns it off. An answer with changed: false means it is already as asked: "
            "nothing started. Otherwise: " + POLL
        ),
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        "cluster_health_get",
        "getClusterHealth",
        HealthSummaryView,
        advice=(
            "Start here when the user asks about unhealthy, failing or repaired nodes. Each "
            "node in unhealthy has its latest entry: reason, HyperPod's recommendation "
            "(recommended: reboot or replace) and taken, what was done: by hyperpod (HyperPod "
            "repairs it itself: wait), by hypd (the reboot-node or replace-node operation "
            "taken.operationId: follow it with operation_get_status), or by none with "
            "taken.reason (policy: the health policy only notifies; cooldown, rate-limit: the "
            "policy's bounds; node-status; not-recommended). gone lists nodes HyperPod no "
            "longer lists (replaced or deleted). Then node_health_get for one node's history."
        ),
    ),
    ToolSpec(
        "node_health_get",
        "getNodeHealth",
        NodeHealthHistory,
        advice=(
            "For a node cluster_health_get or node_list names (nodeId i-...). Each entry says "
            "what was done about it (taken, as in cluster_health_get); a repair hypd started "
            "is taken.operationId: read it with operation_get_status. A 404 NotFound means no "
            "health event of the node was received: as far as hypd knows it has been healthy."
        ),
    ),
    ToolSpec(
        "health_policy_get",
        "getHealthPolicy",
        HealthPolicyView,
        advice=(
            "Read it before health_policy_set and tell the user the current policy; default: "
            "true means none was set (notify: hypd repairs nothing)."
        ),
    ),
    ToolSpec(
        "health_policy_set",
        "setHealthPolicy",
        HealthPolicyView,
        body=HealthPolicy,
        advice=(
            "action replace turns on automatic repair: when HyperPod recommends rebooting or "
            "replacing a node and does not do it itself, hypd starts the reboot-node or "
            "replace-node operation, at most maxActionsPerHour repairs per cluster in any 60 "
            "minutes and never twice for one node within nodeCooldownMinutes. reboot allows "
            "reboots only; notify (the default) repairs nothing. Repairs interrupt the node's "
            "pods and a replacement loses its local data: " + CONFIRM + " The body replaces "
            "the whole policy, and omitted fields take their defaults (2 an hour, 60 minutes), "
            "not their current values: send every field to keep. Starts no operation: the "
            "answer is the policy now in force; each later repair is an operation of its own "
            "(operation_list with clusterTag). A 400 names the field out of range."
        ),
        destructive=True,
        idempotent=True,
    ),
)

# Parameters the OpenAPI document does not describe.
_PARAMETER_HINTS = {
    "tag": "The cluster's tag.",
    "clusterTag": "Only the operations of this cluster tag.",
    "status": "Only the operations with this status.",
    "operationId": "The operation's id (op-...), as the tool that started it returned.",
    "limit": "At most this many items in one page.",
    "nextToken": "The nextToken of the previous page, to read the next one.",
}

WAIT_SECONDS_SCHEMA: dict[str, Any] = {
    "type": "integer",
    "minimum": 0,
    "maximum": WAIT_SECONDS_MAX,
    "default": 0,
    "description": (
        f"Wait up to this many seconds (at most {WAIT_SECONDS_MAX}) for the operation's status "
        "or one of its stages to change, or for the operation to end; 0 reads it at once."
    ),
}


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

    def to_mcp(self) -> types.Tool:
        read_only = self.method == "GET"
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
        if any(p["in"] != "path" for p in parameters):
            raise ValueError(
                f"tool {spec.name}: an operation with a body takes path parameters only"
            )
        input_schema = _with_path_parameters(
            spec.body.model_json_schema(by_alias=True), parameters, components
        )
    elif body_ref is not None:
        raise ValueError(f"tool {spec.name}: {spec.operation_id} takes a {body_ref} body")
    else:
        input_schema = _parameters_schema(parameters, components)
    if spec.waits:
        input_schema["properties"]["wait_seconds"] = dict(WAIT_SECONDS_SCHEMA)
    summary = str(operation.get("summary") or spec.name)
    text = [summary.rstrip(".") + "."]
    if operation.get("description"):
        text.append(str(operation["description"]))
    if spec.advice:
        text.append(spec.advice)
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


def _with_path_parameters(
    body: dict[str, Any],
    parameters: Iterable[Mapping[str, Any]],
    components: Mapping[str, Any],
) -> dict[str, Any]:
    """The body's schema with the operation's path parameters first among its properties, and
    required. A body field named like a path parameter gives way to it: the PATCH body's
    ``name`` can only restate the group's name, which the path gives."""
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


# ---------------------------------------------------------------------------- calling them
class RestClient(Protocol):
    """What the tools need of `hypd_cli.api_client.ApiClient`: its one door by operationId."""

    def call(
        self, operation_id: str, /, *, body: dict[str, Any] | None = None, **params: Any
    ) -> dict[str, Any]: ...


Progress = Callable[[float, float | None, str | None], Awaitable[None]]


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


class ToolError(Exception):
    """A tool call that failed: the API's status, code, message and details, or the client's."""

    def __init__(
        self, code: str, message: str, *, status: int | None = None, details: Any = None
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.details = details if details is not None else {}

    def result(self) -> types.CallToolResult:
        """The tool error: text only. ``structuredContent`` must conform to the tool's output
        schema (the operation's success response), which an error does not; the TypeScript
        SDK checks it also on an error result and rejects the whole call. So the error is a
        line to read, then the same as JSON (`ERROR_KEY`) for a client that parses it."""
        prefix = f"HTTP {self.status} " if self.status is not None else ""
        text = f"{prefix}{self.code}: {self.message}"
        if self.details:
            text += "\ndetails: " + json.dumps(self.details, sort_keys=True)
        error = {
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "details": self.details,
        }
        return types.CallToolResult(
            content=[
                types.TextContent(text=text),
                types.TextContent(text=json.dumps({ERROR_KEY: error}, sort_keys=True)),
            ],
            is_error=True,
        )


@dataclass
class HypdTools:
    """The tools over one API client."""

    client: RestClient
    tools: list[BoundTool]
    poll_seconds: float = POLL_SECONDS
    wait_seconds_max: int = WAIT_SECONDS_MAX
    clock: Callable[[], float] = anyio.current_time
    """Seconds on a monotonic clock (the event loop's); tests give a virtual one."""
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep
    """How a wait pauses between reads; tests give one that moves their virtual clock."""
    _by_name: dict[str, BoundTool] = field(init=False)

    def __post_init__(self) -> None:
        self._by_name = {t.name: t for t in self.tools}

    def list(self) -> list[types.Tool]:
        return [t.to_mcp() for t in self.tools]

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, progress: Progress = _no_progress
    ) -> types.CallToolResult:
        tool = self._by_name.get(name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")
        try:
            return await self._call(tool, dict(arguments or {}), progress)
        except ToolError as exc:
            return exc.result()

    async def _call(
        self, tool: BoundTool, arguments: dict[str, Any], progress: Progress
    ) -> types.CallToolResult:
        operation_id = tool.spec.operation_id
        wait = 0.0
        if tool.spec.waits:
            wait = _wait_seconds(arguments.pop("wait_seconds", 0), self.wait_seconds_max)
        if tool.spec.body is not None:
            # The path parameters go to the path; the rest is the body, sent as given: the API
            # validates it (400 naming the field).
            path = {name: arguments.pop(name) for name in tool.path_params if name in arguments}
            params = _parameters(tool, path)
            return _result(await self._request(operation_id, params, body=arguments))
        params = _parameters(tool, arguments)
        result = await self._request(operation_id, params)
        if not wait:
            return _result(result)
        result, note = await self._wait(operation_id, params, result, wait, progress)
        return _result(result, note)

    async def _wait(
        self,
        operation_id: str,
        params: dict[str, Any],
        operation: dict[str, Any],
        wait: float,
        progress: Progress,
    ) -> tuple[dict[str, Any], str]:
        """Read the operation every `poll_seconds` until it changes or ends, or `wait` passes."""
        started = self.clock()
        first = _progress_key(operation)
        while operation.get("status") not in TERMINAL:
            elapsed = self.clock() - started
            if elapsed >= wait:
                return operation, (
                    f"Waited {elapsed:.0f} s: no change, the operation is still "
                    f"{_where(operation)}. Call operation_get_status again."
                )
            await self.sleep(min(self.poll_seconds, wait - elapsed))
            operation = await self._request(operation_id, params)
            await progress(min(self.clock() - started, wait), wait, _where(operation))
            if _progress_key(operation) != first:
                break
        elapsed = self.clock() - started
        if operation.get("status") in TERMINAL:
            return operation, (
                f"Waited {elapsed:.0f} s: the operation has ended ({_where(operation)})."
            )
        return operation, (
            f"Waited {elapsed:.0f} s: the operation changed, it is now {_where(operation)}. "
            "Call operation_get_status again until it ends."
        )

    async def _request(
        self, operation_id: str, params: dict[str, Any], *, body: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Run the one REST operation `operation_id` (in a worker thread: the client blocks)."""
        call = functools.partial(self.client.call, operation_id, body=body, **params)
        try:
            return await anyio.to_thread.run_sync(call)
        except ApiError as exc:
            raise ToolError(
                exc.code, exc.message, status=exc.status, details=exc.details
            ) from None
        except ApiClientError as exc:  # unreachable, or no usable credentials
            raise ToolError(type(exc).__name__, str(exc)) from None


def _wait_seconds(value: Any, cap: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError("ValidationError", f"wait_seconds: expected a number, got {value!r}")
    return float(max(0, min(value, cap)))


def _parameters(tool: BoundTool, arguments: dict[str, Any]) -> dict[str, Any]:
    """The call's path and query parameters; ToolError for unknown or missing ones."""
    unknown = sorted(set(arguments) - set(tool.path_params) - set(tool.query_params))
    if unknown:
        expected = ", ".join([*tool.path_params, *tool.query_params]) or "none"
        raise ToolError(
            "ValidationError",
            f"unknown argument(s) {', '.join(unknown)} (expected: {expected})",
        )
    for name in tool.path_params:
        if arguments.get(name) is None or arguments.get(name) == "":
            raise ToolError("ValidationError", f"{name}: this argument is required")
    return {name: value for name, value in arguments.items() if value is not None}


def _progress_key(operation: Mapping[str, Any]) -> tuple[Any, ...]:
    """What changes as an operation progresses: its status and each stage's status."""
    stages = tuple(
        (s.get("name"), s.get("status"), s.get("attempts")) for s in operation.get("stages", [])
    )
    return operation.get("status"), stages


def _where(operation: Mapping[str, Any]) -> str:
    status = str(operation.get("status"))
    stages = operation.get("stages", [])
    current = next(
        (s for s in stages if s.get("status") in ("RUNNING", "FAILED")),
        None,
    )
    if current is None:
        return status
    return f"{status}, stage {current.get('name')} {current.get('status')}"


def _result(result: dict[str, Any], note: str | None = None) -> types.CallToolResult:
    content = [types.TextContent(text=json.dumps(result, sort_keys=True))]
    if note:
        content.append(types.TextContent(text=note))
    return types.CallToolResult(content=content, structured_content=result)


# ---------------------------------------------------------------------------- the server
def agent_guide() -> str:
    """The agent guide shipped with the package (agent-guide.md)."""
    return resources.files("hypd_cli").joinpath(GUIDE_FILE).read_text(encoding="utf-8")


def build_server(tools: HypdTools) -> Server[Any]:
    """The MCP server: the tools, and the agent guide as instructions, resource and prompt."""
    guide = agent_guide()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.list())

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        async def progress(done: float, total: float | None, message: str | None) -> None:
            try:
                await ctx.session.report_progress(done, total, message)
            except Exception:  # progress is a courtesy: never fail the call for it
                logger.debug("progress notification failed", exc_info=True)

        return await tools.call(params.name, params.arguments, progress)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=GUIDE_URI,
                    name="agent-guide",
                    title="hypd agent guide",
                    description="The workflow rules for agents using the hypd tools.",
                    mime_type="text/markdown",
                )
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != GUIDE_URI:
            raise MCPError(types.INVALID_PARAMS, f"Unknown resource: {params.uri}")
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=GUIDE_URI, mime_type="text/markdown", text=guide)
            ]
        )

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=GUIDE_PROMPT,
                    title="hypd agent guide",
                    description="Load the workflow rules for creating and operating "
                    "HyperPod clusters with the hypd tools.",
                )
            ]
        )

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != GUIDE_PROMPT:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        return types.GetPromptResult(
            description="The hypd agent guide",
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(text=guide)),
            ],
        )

    return Server(
        SERVER_NAME,
        version=__version__,
        title="hypd",
        description="A serverless control plane for SageMaker HyperPod on EKS: one tool per "
        "REST operation.",
        instructions=guide,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def serve(client: RestClient, *, poll_seconds: float = POLL_SECONDS) -> None:
    """Serve the tools over stdio until the client closes stdin."""
    tools = HypdTools(client, bind_tools(openapi_document()), poll_seconds=poll_seconds)
    server = build_server(tools)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
