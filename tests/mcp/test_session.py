"""``hypd mcp serve`` seen by a real MCP client session over stdio: the tools with their
schemas, the agent guide, and errors that never reach the API (no local cloud needed)."""

from __future__ import annotations

import socket

import mcp_types as types
import pytest

from hypd.clusters.create_request import CreateClusterRequest
from hypd_cli.main import main
from hypd_cli.mcp_server import GUIDE_PROMPT, GUIDE_URI, agent_guide
from tests.mcp.conftest import call_error, mcp_session
from tests.mcp.test_tools import ROOT, TOOLS


def unused_endpoint() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.anyio
async def test_the_session_lists_one_tool_per_operation_with_typed_schemas() -> None:
    async with mcp_session(unused_endpoint()) as session:
        listed = await session.list_tools()

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


@pytest.mark.anyio
async def test_the_agent_guide_is_served_as_instructions_resource_and_prompt() -> None:
    guide = agent_guide()
    for rule in ("Look before you create", "decision-grade", "terminal state",
                 "Resume, never recreate", "ClusterExists", "Never try to change a create-time "
                 "field", "ImmutableField", "Poll every returned operation", "changed: false",
                 "Read the features before changing them", "Send only what you were asked to "
                 "change", "explicit diff", "Teams need task governance",
                 "Show the plan, then ask", "confirm", "Never force on your own",
                 "forgotten, never deleted", "DeletionProtected", "resume, never delete again"):
        assert rule in guide
    for tool in TOOLS:  # the guide's table names every tool
        assert f"| `{tool}` |" in guide
    # docs/agent-guide.md (a link) is the packaged guide, for readers of the repository.
    assert (ROOT / "docs" / "agent-guide.md").read_text() == guide

    async with mcp_session(unused_endpoint()) as session:
        instructions = session.instructions
        resources = await session.list_resources()
        read = await session.read_resource(GUIDE_URI)
        prompts = await session.list_prompts()
        prompt = await session.get_prompt(GUIDE_PROMPT)

    assert instructions == guide
    assert [str(r.uri) for r in resources.resources] == [GUIDE_URI]
    assert isinstance(read.contents[0], types.TextResourceContents)
    assert read.contents[0].text == guide
    assert read.contents[0].mime_type == "text/markdown"
    assert [p.name for p in prompts.prompts] == [GUIDE_PROMPT]
    assert isinstance(prompt.messages[0].content, types.TextContent)
    assert prompt.messages[0].content.text == guide


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
