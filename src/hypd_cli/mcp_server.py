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

Safe by default. A server started without ``--allow-write`` (`serve`'s ``allow_write``) lists
only the read-only tools (`BoundTool.read_only`: a GET), and refuses a call of any other by
name with the tool error ``ReadOnlyServer``, before any request. A destructive tool takes a
``confirm`` argument that must repeat the name of its target (`hypd_cli.mcp_tools.Confirm`):
a call without it, or with another value, is the tool error ``ConfirmationRequired`` naming the
value expected, before any request.

The agent guide (agent-guide.md, package data), after a paragraph saying which of the two modes
the server runs in (`mode_note`), is served three ways: as the server's instructions, as the
resource `GUIDE_URI` and as the prompt `GUIDE_PROMPT`.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from hypd import __version__
from hypd_cli.api_client import ApiClientError, ApiError
from hypd_cli.mcp_binding import BoundTool, bind_tools, openapi_document
from hypd_cli.mcp_tools import WAIT_SECONDS_MAX, Confirm

logger = logging.getLogger(__name__)

SERVER_NAME = "hypd"
GUIDE_URI = "hypd://agent-guide"
ERROR_KEY = "error"
"""The key of a tool error's JSON text block: ``{"error": {status, code, message, details}}``."""
GUIDE_PROMPT = "hypd_agent_guide"
GUIDE_FILE = "agent-guide.md"

READ_ONLY = "ReadOnlyServer"
"""The code of the tool error of a write tool called on a server started read-only."""
CONFIRMATION_REQUIRED = "ConfirmationRequired"
"""The code of the tool error of a destructive call without the right ``confirm``."""
ALLOW_WRITE = "--allow-write"

POLL_SECONDS = 2.0
"""How often a waiting ``operation_get_status`` reads the operation."""
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


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
    allow_write: bool = False
    """Serve the tools that write too; without it, only the read-only ones."""
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
        return [t.to_mcp() for t in self.tools if self.allow_write or t.read_only]

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
        if not (self.allow_write or tool.read_only):
            raise ToolError(
                READ_ONLY,
                f"this hypd MCP server was started read-only: {tool.name} changes things, so it "
                f"is not served and nothing was done. To allow it, the user restarts the server "
                f"with {ALLOW_WRITE} (hypd mcp serve {ALLOW_WRITE} ..., in the MCP client's "
                "configuration).",
            )
        if tool.spec.confirm is not None:
            _confirmed(tool.name, tool.spec.confirm, arguments)
        wait = 0.0
        if tool.spec.waits:
            wait = _wait_seconds(arguments.pop("wait_seconds", 0), self.wait_seconds_max)
        if tool.spec.body is not None:
            # The path and query parameters go to the URL; the rest is the body, sent as
            # given: the API validates it (400 naming the field).
            named = {name: arguments.pop(name) for name in (*tool.path_params,
                                                            *tool.query_params)
                     if name in arguments}
            params = _parameters(tool, named)
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


def _confirmed(name: str, confirm: Confirm, arguments: dict[str, Any]) -> None:
    """Take ``confirm`` out of `arguments`; ToolError unless it is what the call needs."""
    given = arguments.pop("confirm", None)
    expected = confirm.expected(arguments)
    if expected is None or given == expected:
        return
    said = "without confirm" if given is None else f"with confirm {given!r}"
    raise ToolError(
        CONFIRMATION_REQUIRED,
        f"{name} {confirm.action} {expected!r}, called {said}: nothing was done. "
        "Show the user what it removes or interrupts (see the tool's description), ask, and "
        f"only once they have said yes call again with confirm set to {expected!r}.",
        details={"confirm": expected},
    )


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
    """The operation's status and its current stage; for a running stage, what its attempt
    waits for and when it looks next (the ``timeline``'s last entry of the stage)."""
    status = str(operation.get("status"))
    stages = operation.get("stages", [])
    current = next(
        (s for s in stages if s.get("status") in ("RUNNING", "FAILED")),
        None,
    )
    if current is None:
        return status
    where = f"{status}, stage {current.get('name')} {current.get('status')}"
    attempt = next((entry for entry in reversed(operation.get("timeline") or [])
                    if entry.get("stage") == current.get("name")), None)
    if current.get("status") != "RUNNING" or attempt is None:
        return where
    waits = [f"attempt {attempt.get('attempt')}, {attempt.get('looks', 0)} look(s)"]
    if attempt.get("waitingFor"):
        waits.append(f"waiting for: {attempt['waitingFor']}")
    if attempt.get("nextLookAt"):
        waits.append(f"next look at {attempt['nextLookAt']}")
    return f"{where} ({'; '.join(waits)})"


def _result(result: dict[str, Any], note: str | None = None) -> types.CallToolResult:
    content = [types.TextContent(text=json.dumps(result, sort_keys=True))]
    if note:
        content.append(types.TextContent(text=note))
    return types.CallToolResult(content=content, structured_content=result)


# ---------------------------------------------------------------------------- the server
def agent_guide() -> str:
    """The agent guide shipped with the package (agent-guide.md)."""
    return resources.files("hypd_cli").joinpath(GUIDE_FILE).read_text(encoding="utf-8")


def mode_note(allow_write: bool) -> str:
    """The paragraph before the guide that says which tools this server serves, so the agent
    can tell the user (and, read-only, how to allow changes)."""
    if allow_write:
        return (
            f"**This hypd server allows changes** (started with `{ALLOW_WRITE}`): every tool "
            "is listed. The destructive ones need `confirm` naming their target, and only "
            "after the user's explicit yes (see \"Read-only by default; confirm what "
            "destroys\")."
        )
    return (
        f"**This hypd server is read-only** (started without `{ALLOW_WRITE}`): it lists only "
        "the tools that read, and refuses any other (`ReadOnlyServer`). When the user asks "
        "to create, change or delete something, tell them it needs the server restarted "
        f"with `{ALLOW_WRITE}` (`hypd mcp serve {ALLOW_WRITE} ...` in the MCP client's "
        "configuration); never look for another way."
    )


def build_server(tools: HypdTools) -> Server[Any]:
    """The MCP server: the tools, and the agent guide, after the note on the server's mode,
    as instructions, resource and prompt."""
    guide = mode_note(tools.allow_write) + "\n\n" + agent_guide()

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


def serve(
    client: RestClient, *, allow_write: bool = False, poll_seconds: float = POLL_SECONDS
) -> None:
    """Serve the tools over stdio until the client closes stdin: only the read-only ones
    unless `allow_write`."""
    tools = HypdTools(client, bind_tools(openapi_document()), allow_write=allow_write,
                      poll_seconds=poll_seconds)
    logger.info("serving %s", "every tool" if allow_write else "the read-only tools only")
    server = build_server(tools)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
