"""``hypd mcp serve`` is read-only by default, against the local cloud: a real MCP client
session from the SDK over stdio with a server started without ``--allow-write``, on one cluster
created first. The agent sees only the tools that read, and those answer; a write tool called by
name anyway is refused, saying how to allow writes, and the API shows that nothing was done."""

from __future__ import annotations

from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from hypd_cli.mcp_binding import bind_tools, openapi_document
from tests.e2e.capacity import created_cluster
from tests.mcp.conftest import call, call_error, mcp_session
from tests.support import create_body, group_body

pytestmark = pytest.mark.anyio

TAG = "guarded"
GROUP = "workers"


async def test_without_allow_write_an_agent_sees_no_write_tool_and_changes_nothing(
    cloud: Any, api: ApiClient
) -> None:
    # Given a cluster hypd created (one group `workers` of 2 nodes) and its operations
    created_cluster(api, cloud, tag=TAG)
    operations = api.list_operations()["operations"]
    node = api.list_nodes(TAG)["nodes"][0]["nodeId"]

    # When an agent lists the tools, reads the cluster, and calls write tools by name anyway
    # (the destructive ones even confirmed)
    async with mcp_session(cloud.api_url) as session:
        listed = await session.list_tools()
        cluster = await call(session, "cluster_get", tag=TAG)
        groups = await call(session, "instance_group_list", tag=TAG)
        writes = {
            "cluster_create": create_body(tag="another"),
            "instance_group_add": {"tag": TAG, **group_body(name="more", count=1)},
            "instance_group_update": {"tag": TAG, "name": GROUP, "count": 1},
            "instance_group_delete": {"tag": TAG, "name": GROUP, "confirm": GROUP},
            "node_replace": {"tag": TAG, "nodeId": node, "confirm": node},
            "features_set": {"tag": TAG, "trainingOperator": {"enabled": True}},
            "cluster_protection_set": {"tag": TAG, "enabled": True},
            "cluster_delete": {"tag": TAG, "confirm": TAG},
        }
        refused = {name: await call_error(session, name, **arguments)
                   for name, arguments in writes.items()}

    # Then it saw exactly the read-only tools, none annotated as one that writes
    tools = bind_tools(openapi_document())
    assert {tool.name for tool in listed.tools} == {tool.name for tool in tools if tool.read_only}
    assert [tool.name for tool in listed.tools
            if tool.annotations is None or tool.annotations.read_only_hint is not True] == []
    assert set(writes) <= {tool.name for tool in tools if not tool.read_only}
    # and the reads answered
    assert cluster["status"] == "ACTIVE"
    assert [g["name"] for g in groups["instanceGroups"]] == [GROUP]
    # And each write was refused, saying the server is read-only and how to allow writes
    for name, error in refused.items():
        assert (error["status"], error["code"]) == (None, "ReadOnlyServer"), name
        assert "started read-only" in error["message"]
        assert "--allow-write" in error["message"]
    # And nothing was done: no operation started, the cluster and its group as they were
    assert api.list_operations()["operations"] == operations
    assert [c["tag"] for c in api.list_clusters()["clusters"]] == [TAG]
    assert api.get_cluster(TAG)["status"] == "ACTIVE"
    (group,) = api.list_instance_groups(TAG)["instanceGroups"]
    assert (group["name"], group["count"]) == (GROUP, 2)
    assert api.get_features(TAG)["features"]["trainingOperator"]["enabled"] is False
    assert api.get_teardown_plan(TAG)["blockers"] == []  # protection still off
