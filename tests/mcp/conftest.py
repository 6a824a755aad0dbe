"""Fixtures of the MCP server's tests: a real MCP client session from the SDK, over stdio, with
`hypd mcp serve` as its subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from hypd_cli.mcp_server import ERROR_KEY

POLL_SECONDS = 0.5
"""How often the server under test reads a waited-on operation (the default is 2 s)."""

SOURCE = Path(__file__).resolve().parents[2] / "src"
"""The code under test: this checkout's, which the server subprocess must import."""


def python_path() -> str:
    """``PYTHONPATH`` of a ``hypd mcp serve`` subprocess: this checkout's ``src`` first, then
    what the tests were given (made absolute: the subprocess may start elsewhere). So the server
    runs the code under test also from a git worktree whose venv has another checkout installed
    editable."""
    given = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys([str(SOURCE), *given]))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def serve_command(endpoint: str, *, allow_write: bool = False) -> list[str]:
    """``python -m hypd_cli.main mcp serve --endpoint URL [--allow-write]``, as an MCP client's
    config says: read-only unless `allow_write`."""
    return [
        sys.executable, "-m", "hypd_cli.main", "mcp", "serve", "--endpoint", endpoint,
        "--poll-seconds", str(POLL_SECONDS), *(["--allow-write"] if allow_write else []),
    ]


def server_parameters(endpoint: str, *, allow_write: bool = False) -> StdioServerParameters:
    """`serve_command` as the Python SDK's client starts it."""
    command, *args = serve_command(endpoint, allow_write=allow_write)
    return StdioServerParameters(
        command=command,
        args=args,
        # Merged over the SDK's default environment, which passes no PYTHONPATH.
        env={"PYTHONPATH": python_path()},
    )


@contextlib.asynccontextmanager
async def mcp_session(
    endpoint: str, *, allow_write: bool = False
) -> AsyncIterator[ClientSession]:
    """An initialized client session with a fresh ``hypd mcp serve`` subprocess (started with
    ``--allow-write`` when `allow_write`)."""
    async with (
        stdio_client(server_parameters(endpoint, allow_write=allow_write)) as (
            read_stream, write_stream),
        ClientSession(read_stream, write_stream) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def call(session: ClientSession, name: str, /, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result (the API's response). The tool's
    arguments may include one called ``name`` (an instance group's)."""
    result = await session.call_tool(name, arguments)
    assert isinstance(result, types.CallToolResult)
    assert not result.is_error, f"{name} failed: {text_of(result)}"
    structured: dict[str, Any] = result.structured_content
    # The text content is the same JSON, for clients that read only text.
    assert json.loads(result.content[0].text) == structured  # type: ignore[union-attr]
    return structured


async def call_error(session: ClientSession, name: str, /, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must fail; its error (status, code, message, details)."""
    result = await session.call_tool(name, arguments)
    assert isinstance(result, types.CallToolResult)
    assert result.is_error, f"{name} succeeded: {text_of(result)}"
    return error_of(result)


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    """A tool error's status, code, message and details: from its JSON text block. An error has
    no structured content (it would not conform to the tool's output schema), and its first
    block says the same for a reader."""
    assert result.is_error
    assert result.structured_content is None
    first, data = (c.text for c in result.content if isinstance(c, types.TextContent))
    error: dict[str, Any] = json.loads(data)[ERROR_KEY]
    assert set(error) == {"status", "code", "message", "details"}
    assert error["code"] in first
    assert error["message"] in first
    return error
