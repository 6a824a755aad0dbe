"""``hypd mcp serve`` under the MCP TypeScript SDK's client (the one Claude Desktop and Claude
Code use), against the local cloud: tests/mcp/typescript/client.mjs, a Node program on the SDK
pinned in tests/mcp/typescript/package-lock.json (``./dev setup`` installs it with ``npm ci``).

The SDK checks what the Python SDK does not: it validates a result's ``structuredContent``
against the tool's output schema also when the result is an error, and rejects the whole call
when it does not conform. So every read tool is called on a real cluster (each success checked
by the SDK against its schema), a change of each answer shape too (202 operation, 200
``changed: false``, the protection in force, a discovered cluster forgotten), and the API's
errors must arrive as tool errors with their code and message (a delete not confirmed, or
refused by protection, too). And what the SDK lists: without ``--allow-write`` no write tool,
with it every tool, each destructive one requiring ``confirm``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from hypd_cli.mcp_binding import bind_tools, openapi_document
from hypd_cli.mcp_server import ERROR_KEY, mode_note
from tests.e2e.capacity import created_cluster, discovered_cluster, run
from tests.e2e.test_workloads import in_phase, wait_job
from tests.mcp.conftest import python_path, serve_command
from tests.mcp.test_session import unused_endpoint
from tests.mcp.test_tools import CONFIRMED, TOOLS

CLIENT_DIR = Path(__file__).resolve().parent / "typescript"
TAG = "typed"
GROUP = "workers"
TEAM = "ml"
TEAM_BODY = {"resources": [{"instanceType": "ml.g6.4xlarge", "count": 1}],
             "fairShareWeight": 50, "sharing": {"strategy": "LendAndBorrow", "borrowLimit": 50}}
TLS_BUCKET = "hyperpod-tls-typed"
JOB = "llama"
JOB_BODY = {"name": JOB, "image": "repo/train:1", "instanceType": "ml.g6.4xlarge",
            "command": ["bash", "-c", "sleep 3600"]}
ENDPOINT = "falcon"
ENDPOINT_BODY = {"name": ENDPOINT, "instanceType": "ml.g6.4xlarge",
                 "jumpStart": {"modelId": "huggingface-llm-falcon-7b-bf16", "acceptEula": True}}
TIMEOUT = 300
"""Seconds the whole client run may take (it takes a few): a hung server fails the test."""


def run_client(server: list[str], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Run client.mjs with `server` (a command line) as its MCP server; its output."""
    node = shutil.which("node")
    assert node, "node is not on PATH: the TypeScript client needs Node.js"
    assert (CLIENT_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(), (
        "the TypeScript SDK is not installed: run ./dev setup (npm ci in tests/mcp/typescript)"
    )
    # The arguments are node, the project's own script and this interpreter's command line.
    finished = subprocess.run(  # noqa: S603
        [node, str(CLIENT_DIR / "client.mjs"), *server],
        input=json.dumps({"calls": calls}), capture_output=True, text=True, timeout=TIMEOUT,
        cwd=CLIENT_DIR, env={**os.environ, "PYTHONPATH": python_path()}, check=False,
    )
    assert finished.returncode == 0, finished.stderr
    output: dict[str, Any] = json.loads(finished.stdout)
    return output


def texts(result: dict[str, Any]) -> list[str]:
    return [c["text"] for c in result["content"] if c["type"] == "text"]


def tool_error(outcome: dict[str, Any]) -> dict[str, Any]:
    """The API's error in a tool error the SDK accepted: text only, the JSON block parsed."""
    assert "thrown" not in outcome, f"{outcome['name']}: the SDK rejected it: {outcome}"
    result = outcome["result"]
    assert result.get("isError") is True, f"{outcome['name']} succeeded: {result}"
    assert "structuredContent" not in result
    first, data = texts(result)
    error: dict[str, Any] = json.loads(data)[ERROR_KEY]
    assert error["code"] in first
    assert error["message"] in first
    return error


def success(outcome: dict[str, Any]) -> dict[str, Any]:
    """A result the SDK accepted, checked against the tool's output schema: its structure."""
    assert "thrown" not in outcome, f"{outcome['name']}: the SDK rejected it: {outcome}"
    result = outcome["result"]
    assert not result.get("isError"), f"{outcome['name']} failed: {texts(result)}"
    structured: dict[str, Any] = result["structuredContent"]
    assert json.loads(texts(result)[0]) == structured
    return structured


def read_calls(values: dict[str, str], per_tool: dict[str, dict[str, str]]
               ) -> list[dict[str, Any]]:
    """A call of every read-only tool (a GET), with its required arguments from `values`
    (those of `per_tool[tool]` first)."""
    calls = []
    for tool in bind_tools(openapi_document()):
        if not tool.read_only:
            continue
        given = {**values, **per_tool.get(tool.name, {})}
        required = tool.input_schema.get("required", [])
        missing = [name for name in required if name not in given]
        assert not missing, f"{tool.name}: no value for {missing}: add one to the test"
        calls.append({"name": tool.name, "arguments": {n: given[n] for n in required}})
    return calls


def test_the_typescript_sdk_lists_calls_and_reads_errors_of_every_tool(
    cloud: Any, api: ApiClient
) -> None:
    # Given a discovered cluster (hypd forgets it, never deletes it)
    _, discovered = discovered_cluster(api, cloud)
    # and a cluster hypd created (one group of 2 nodes), its create operation, task
    # governance on with a team, and a node HyperPod found faulty (so it has a health history)
    created = created_cluster(api, cloud, tag=TAG)
    cloud.client("s3").create_bucket(
        Bucket=TLS_BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region})
    governed = run(api, cloud, api.set_features(TAG, {
        "taskGovernance": {"enabled": True}, "trainingOperator": {"enabled": True},
        "inferenceOperator": {"enabled": True, "tlsCertificateBucket": TLS_BUCKET}}))
    assert governed["status"] == "SUCCEEDED", governed.get("error")
    # and a training job whose pods run, and an endpoint deployed (their reads succeed)
    submitted = run(api, cloud, api.submit_training_job(TAG, JOB_BODY))
    assert submitted["status"] == "SUCCEEDED", submitted.get("error")
    deployed = run(api, cloud, api.deploy_inference_endpoint(TAG, ENDPOINT_BODY))
    assert deployed["status"] == "SUCCEEDED", deployed.get("error")
    wait_job(api, cloud, JOB, in_phase("Running"), tag=TAG)
    team = run(api, cloud, api.set_team(TAG, TEAM, TEAM_BODY))
    assert team["status"] == "SUCCEEDED", team.get("error")
    # The faulty node is the one the job's pod does not run on, so the job stays Running
    # (which node it is depends on the instance ids the local cloud handed out).
    busy = {pod["instanceId"] for pod in api.get_training_job(TAG, JOB)["pods"]}
    nodes = [n["nodeId"] for n in api.list_nodes(TAG)["nodes"]]
    (first,) = [node for node in nodes if node in busy]
    (faulty,) = [node for node in nodes if node not in busy]
    cloud.emulation.hyperpod.make_node_unhealthy(
        f"hypd-{TAG}", faulty, reason="NvidiaErrorTerminate", action="Reboot", repair=False)
    cloud.emulation.tick()
    cloud.wait_for_executions(timeout=60)
    values = {"tag": TAG, "operationId": str(created["id"]), "nodeId": faulty,
              "name": GROUP, "team": TEAM}
    reads = read_calls(values, {
        **{tool: {"name": JOB} for tool in ("training_job_get", "training_job_logs")},
        "endpoint_get": {"name": ENDPOINT}})
    changes = [
        # 200 changed: false (the union output schema's other branch)
        {"name": "instance_group_update", "arguments": {"tag": TAG, "name": GROUP, "count": 2}},
        # 202: an operation started
        {"name": "node_reboot", "arguments": {"tag": TAG, "nodeId": first, "confirm": first}},
        {"name": "health_policy_set", "arguments": {"tag": TAG, "action": "notify"}},
        # a wait on an operation that has ended answers at once
        {"name": "operation_get_status",
         "arguments": {"operationId": values["operationId"], "wait_seconds": 5}},
        # 200 changed: false of the features' PATCH and of a team's PUT (while the reboot runs:
        # a request that matches starts nothing, so it needs no lock)
        {"name": "features_set", "arguments": {"tag": TAG, "taskGovernance": {"enabled": True}}},
        {"name": "team_set", "arguments": {"tag": TAG, "team": TEAM, **TEAM_BODY}},
        # 200: deletion protection, then a discovered cluster's record forgotten (the other
        # branch of cluster_delete's output schema)
        {"name": "cluster_protection_set", "arguments": {"tag": TAG, "enabled": True}},
        {"name": "cluster_delete",
         "arguments": {"tag": discovered, "forget": True, "confirm": discovered}},
    ]
    errors = [
        {"name": "cluster_get", "arguments": {"tag": "absent"}},  # 404 from the API
        {"name": "cluster_get", "arguments": {"tag": "-bad"}},  # 400 from the API
        {"name": "cluster_create",  # 400 naming the body's field
         "arguments": {"tag": "other", "instanceGroups": "many", "storage": {}}},
        {"name": "cluster_get", "arguments": {}},  # refused before any request
        # 400: a setting of a feature that is off, naming the field
        {"name": "features_set",
         "arguments": {"tag": TAG, "tieredCheckpointing": {"memoryPercent": 20}}},
        {"name": "team_get", "arguments": {"tag": TAG, "team": "absent"}},  # 404
        # a delete without confirm is refused before any request; with it, the API's 409
        # (protection on, the running job and endpoint: every blocker in the details)
        {"name": "cluster_delete", "arguments": {"tag": TAG}},
        {"name": "cluster_delete", "arguments": {"tag": TAG, "confirm": TAG}},
    ]
    unknown = [{"name": "cluster_explode", "arguments": {}}]

    # When the TypeScript SDK's client lists the tools and makes the calls
    out = run_client(serve_command(cloud.api_url, allow_write=True),
                     reads + changes + errors + unknown)

    # Then it sees the server, its guide and every tool, each with its schemas
    assert out["server"]["name"] == "hypd"
    assert out["instructions"]
    tools = {tool["name"]: tool for tool in out["tools"]}
    assert set(tools) == set(TOOLS)
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object"
        assert tool["outputSchema"]["type"] == "object"
    assert [r["uri"] for r in out["resources"]] == ["hypd://agent-guide"]
    assert [p["name"] for p in out["prompts"]] == ["hypd_agent_guide"]

    # And every success conforms to its tool's output schema (the SDK accepted it)
    outcomes = out["calls"]
    changed = outcomes[len(reads):][:len(changes)]
    failed = outcomes[len(reads) + len(changes):][:len(errors)]
    done = {o["name"]: success(o) for o in outcomes[: len(reads)]}
    assert done["cluster_get"]["tag"] == TAG
    assert {n["nodeId"] for n in done["node_list"]["nodes"]} == {first, faulty}
    assert done["node_health_get"]["nodeId"] == faulty
    assert done["operation_get_status"]["status"] == "SUCCEEDED"
    assert done["features_get"]["features"]["taskGovernance"]["status"] == "ACTIVE"
    assert done["features_get"]["features"]["taskGovernance"]["requiredBy"] == [f"team:{TEAM}"]
    assert [t["name"] for t in done["team_list"]["teams"]] == [TEAM]
    assert done["team_get"]["queue"] == f"hyperpod-ns-{TEAM}-localqueue"
    assert done["training_job_get"]["phase"] == "Running"
    assert done["training_job_logs"]["pod"] == f"{JOB}-pod-0"
    assert [j["name"] for j in done["training_job_list"]["jobs"]] == [JOB]
    assert done["endpoint_get"]["ready"] is True
    assert [e["name"] for e in done["endpoint_list"]["endpoints"]] == [ENDPOINT]
    plan = done["cluster_teardown_plan"]
    assert (plan["tag"], plan["deletable"]) == (TAG, False)
    assert "WorkloadsRunning" in [b["code"] for b in plan["blockers"]]
    (workloads,) = (s["resources"] for s in plan["steps"] if s["stage"] == "workloads")
    assert {JOB, ENDPOINT} <= {r["name"] for r in workloads}
    unchanged, accepted, policy, waited, features, team, protection, forgotten = (
        success(o) for o in changed)
    assert unchanged["changed"] is False
    assert accepted["operationId"].startswith("op-")
    assert (policy["policy"]["action"], policy["default"]) == ("notify", False)
    assert waited["status"] == "SUCCEEDED"
    assert (features["changed"], features["features"]["tag"]) == (False, TAG)
    assert (team["changed"], team["team"]["name"]) == (False, TEAM)
    assert protection == {"tag": TAG, "enabled": True}
    assert forgotten == {"tag": discovered, "forgotten": True}

    # And each API error is a tool error with the API's status, code and message
    absent, bad, body, argument, setting, no_team, unconfirmed, protected = (
        tool_error(o) for o in failed)
    assert (absent["status"], absent["code"]) == (404, "NotFound")
    assert "absent" in absent["message"]
    assert (bad["status"], bad["code"]) == (400, "ValidationError")
    assert "tag" in bad["message"]
    assert (body["status"], body["code"]) == (400, "ValidationError")
    assert "instanceGroups" in body["message"] + json.dumps(body["details"])
    assert (argument["status"], argument["code"]) == (None, "ValidationError")
    assert "tag: this argument is required" in argument["message"]
    assert setting["status"] == 400
    assert setting["details"]["field"] == "tieredCheckpointing.memoryPercent"
    assert [e["field"] for e in setting["details"]["errors"]] == [
        "tieredCheckpointing.memoryPercent"]
    assert (no_team["status"], no_team["code"]) == (404, "NotFound")
    assert (unconfirmed["status"], unconfirmed["code"]) == (None, "ConfirmationRequired")
    assert (protected["status"], protected["code"]) == (409, "DeletionProtected")
    blockers = [b["code"] for b in protected["details"]["blockers"]]
    assert blockers[:2] == ["DeletionProtected", "WorkloadsRunning"]

    # And a tool that does not exist is the protocol's invalid-params error
    (nonexistent,) = outcomes[-1:]
    assert nonexistent["thrown"]["code"] == -32602
    assert "cluster_explode" in nonexistent["thrown"]["message"]


def test_without_allow_write_the_typescript_sdk_lists_no_write_tool() -> None:
    # Given a server started as an MCP client's config does, without --allow-write (nothing
    # listens at its endpoint: a request would be ApiUnreachable)
    server = serve_command(unused_endpoint())

    # When the TypeScript SDK's client lists the tools and calls two write tools by name
    out = run_client(server, [
        {"name": "cluster_create", "arguments": {"tag": "demo"}},
        {"name": "cluster_delete", "arguments": {"tag": "demo", "confirm": "demo"}},
    ])

    # Then it sees exactly the read-only tools, each annotated so, and the mode first
    read_only = {tool.name for tool in bind_tools(openapi_document()) if tool.read_only}
    assert {tool["name"] for tool in out["tools"]} == read_only
    assert all(tool["annotations"]["readOnlyHint"] is True for tool in out["tools"])
    assert out["instructions"].startswith(mode_note(allow_write=False))
    # And a write tool is refused before any request, saying how to allow writes
    for outcome in out["calls"]:
        error = tool_error(outcome)
        assert (error["status"], error["code"]) == (None, "ReadOnlyServer")
        assert "--allow-write" in error["message"]


def test_with_allow_write_the_typescript_sdk_lists_every_tool_and_destructive_ones_confirm(
) -> None:
    # Given a server started with --allow-write (nothing listens at its endpoint)
    server = serve_command(unused_endpoint(), allow_write=True)

    # When the TypeScript SDK's client lists the tools and deletes a group unconfirmed
    out = run_client(server, [
        {"name": "instance_group_delete", "arguments": {"tag": "demo", "name": "spot"}},
        {"name": "instance_group_delete",
         "arguments": {"tag": "demo", "name": "spot", "confirm": "demo"}},
    ])

    # Then it sees every tool, the write tools among them
    tools = {tool["name"]: tool for tool in out["tools"]}
    assert set(tools) == set(TOOLS)
    assert any(tool["annotations"]["readOnlyHint"] is False for tool in tools.values())
    assert out["instructions"].startswith(mode_note(allow_write=True))
    # And every destructive tool that always destroys requires confirm (features_set: to
    # turn a feature off, so it is offered but optional)
    destructive = {name for name, tool in tools.items()
                   if tool["annotations"].get("destructiveHint") is True}
    assert set(CONFIRMED) <= destructive
    for name in CONFIRMED:
        assert "confirm" in tools[name]["inputSchema"]["required"], name
    assert "confirm" in tools["features_set"]["inputSchema"]["properties"]
    # And a delete without the group's name as confirm is refused before any request
    for outcome in out["calls"]:
        error = tool_error(outcome)
        assert (error["status"], error["code"]) == (None, "ConfirmationRequired")
        assert error["details"] == {"confirm": "spot"}


@pytest.mark.parametrize("structured", [True, False])
def test_an_error_result_with_structured_content_would_be_rejected_by_the_sdk(
    structured: bool, tmp_path: Path
) -> None:
    """Why errors carry no structuredContent: the SDK rejects one that does not conform to the
    tool's output schema even on an error (so this test fails if the SDK ever stops checking,
    and the reason for the design is shown, not only told)."""
    server = tmp_path / "server.py"
    server.write_text(_ONE_TOOL_SERVER.format(structured=structured))
    out = run_client([sys.executable, str(server)], [{"name": "get", "arguments": {}}])
    (outcome,) = out["calls"]
    if structured:
        assert outcome["thrown"]["code"] == -32602
        assert "output schema" in outcome["thrown"]["message"]
    else:
        assert outcome["result"]["isError"] is True


# A minimal server on the Python SDK with one tool whose output schema needs `name`, failing
# with or without structured content.
_ONE_TOOL_SERVER = '''
import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(
        name="get", input_schema={{"type": "object"}},
        output_schema={{"type": "object", "required": ["name"],
                       "properties": {{"name": {{"type": "string"}}}}}})])

async def call_tool(ctx, params):
    return types.CallToolResult(
        content=[types.TextContent(text="HTTP 404 NotFound: no such thing")],
        structured_content={{"code": "NotFound"}} if {structured} else None, is_error=True)

server = Server("one", on_list_tools=list_tools, on_call_tool=call_tool)

async def run():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(run)
'''
