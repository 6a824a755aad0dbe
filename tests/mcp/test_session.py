"""``hypd mcp serve`` seen by a real MCP client session over stdio: the tools with their
schemas (only the read-only ones unless ``--allow-write``), the agent guide after the note on the
server's mode, and errors that never reach the API (no local cloud needed)."""

from __future__ import annotations

import socket

import mcp_types as types
import pytest

from hypd.clusters.create_request import CreateClusterRequest
from hypd_cli.main import main
from hypd_cli.mcp_binding import bind_tools, openapi_document
from hypd_cli.mcp_server import GUIDE_PROMPT, GUIDE_URI, agent_guide, mode_note
from tests.mcp.conftest import call_error, mcp_session
from tests.mcp.test_tools import CONFIRMED, ROOT, TOOLS


def unused_endpoint() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.anyio
async def test_without_allow_write_the_session_sees_no_write_tool() -> None:
    async with mcp_session(unused_endpoint()) as session:
        listed = await session.list_tools()
        instructions = session.instructions
        # A write tool called by name anyway is refused before any request (a request would
        # be ApiUnreachable: nothing listens at the endpoint).
        refused = await call_error(session, "cluster_create", tag="demo")

    read_only = {tool.name for tool in bind_tools(openapi_document()) if tool.read_only}
    assert {tool.name for tool in listed.tools} == read_only
    for tool in listed.tools:
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True, tool.name
    assert instructions is not None
    assert instructions.startswith(mode_note(allow_write=False))
    assert "read-only" in instructions.splitlines()[0]
    assert (refused["status"], refused["code"]) == (None, "ReadOnlyServer")
    assert "--allow-write" in refused["message"]


@pytest.mark.anyio
async def test_the_session_lists_one_tool_per_operation_with_typed_schemas() -> None:
    async with mcp_session(unused_endpoint(), allow_write=True) as session:
        listed = await session.list_tools()
        instructions = session.instructions

    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == set(TOOLS)
    assert tools["cluster_create"].input_schema == CreateClusterRequest.model_json_schema(
        by_alias=True
    )
    assert tools["cluster_create"].input_schema["required"] == [
        "tag", "instanceGroups", "storage"
    ]
    assert tools["cluster_get"].input_schema["required"] == ["tag"]
    wait = tools["operation_get_status"].input_schema["properties"]["wait_seconds"]
    assert (wait["type"], wait["maximum"]) == ("integer", 300)
    assert tools["instance_group_update"].input_schema["required"] == ["tag", "name"]
    assert tools["instance_group_delete"].annotations is not None
    assert tools["instance_group_delete"].annotations.destructive_hint is True
    for tool in tools.values():
        assert tool.description
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None
        assert tool.output_schema["type"] == "object"
    # Every destructive tool says so, and those that always destroy require confirm.
    for name in CONFIRMED:
        annotations = tools[name].annotations
        assert annotations is not None
        assert annotations.destructive_hint is True
        assert "confirm" in tools[name].input_schema["required"]
    assert "confirm" in tools["features_set"].input_schema["properties"]
    assert instructions is not None
    assert instructions.startswith(mode_note(allow_write=True))


@pytest.mark.anyio
async def test_the_agent_guide_is_served_as_instructions_resource_and_prompt() -> None:
    guide = agent_guide()
    for rule in ("Look before you create", "decision-grade", "terminal state",
                 "Resume, never recreate", "ClusterExists", "Never try to change a create-time "
                 "field", "ImmutableField", "Poll every returned operation", "changed: false",
                 "Read the features before changing them", "Send only what you were asked to "
                 "change", "explicit diff", "Teams need task governance",
                 "Show the plan, then ask", "confirm", "Never force on your own",
                 "forgotten, never deleted", "DeletionProtected", "resume, never delete again",
                 "Read-only by default", "--allow-write", "ReadOnlyServer",
                 "ConfirmationRequired", "explicit yes"):
        assert rule in guide
    for tool in TOOLS:  # the guide's table names every tool
        assert f"| `{tool}` |" in guide
    for tool in CONFIRMED:  # and says how to ask before each destructive one
        assert f"- `{tool}`" in guide
    # docs/agent-guide.md (a link) is the packaged guide, for readers of the repository.
    assert (ROOT / "docs" / "agent-guide.md").read_text() == guide

    async with mcp_session(unused_endpoint()) as session:
        instructions = session.instructions
        resources = await session.list_resources()
        read = await session.read_resource(GUIDE_URI)
        prompts = await session.list_prompts()
        prompt = await session.get_prompt(GUIDE_PROMPT)

    # Each after the note on the server's mode (read-only: started without --allow-write).
    served = mode_note(allow_write=False) + "\n\n" + guide
    assert instructions == served
    assert [str(r.uri) for r in resources.resources] == [GUIDE_URI]
    assert isinstance(read.contents[0], types.TextResourceContents)
    assert read.contents[0].text == served
    assert read.contents[0].mime_type == "text/markdown"
    assert [p.name for p in prompts.prompts] == [GUIDE_PROMPT]
    assert isinstance(prompt.messages[0].content, types.TextContent)
    assert prompt.messages[0].content.text == served


@pytest.mark.anyio
async def test_an_unreachable_api_is_a_tool_error() -> None:
    endpoint = unused_endpoint()
    async with mcp_session(endpoint) as session:
        error = await call_error(session, "cluster_list_all")

    assert error["code"] == "ApiUnreachable"
    assert endpoint in error["message"]
    assert error["status"] is None


@pytest.mark.anyio
async def test_an_unknown_tool_is_a_protocol_error() -> None:
    async with mcp_session(unused_endpoint()) as session:
        with pytest.raises(Exception, match="Unknown tool: cluster_explode"):
            await session.call_tool("cluster_explode", {})


def test_serve_without_an_endpoint_says_what_to_give(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("HYPD_ENDPOINT", raising=False)

    assert main(["mcp", "serve", "--region", "us-west-2"]) == 2

    assert "--endpoint" in capsys.readouterr().err
