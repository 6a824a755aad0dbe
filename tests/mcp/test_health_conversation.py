"""A node-health conversation of an agent, as MCP tool calls only, against the local cloud: a
real MCP client session from the SDK over stdio with ``hypd mcp serve --allow-write``, on one
cluster created
first, whose nodes the emulated HyperPod makes unhealthy (each event reaches the events function
through EventBridge). The SDK checks every structured result against the tool's output schema.

The agent guide's story: the cluster's health, the node's history, a repair by hand polled to
its end; then automatic repair turned on, and the next unhealthy node repaired by hypd, its
operation followed from the node's health."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
import pytest

from hypd_cli.api_client import ApiClient
from tests.e2e.capacity import created_cluster
from tests.mcp.conftest import call, call_error, mcp_session
from tests.mcp.test_create_conversation import poll

pytestmark = pytest.mark.anyio

TAG = "healthy"
REASON = "NvidiaErrorTerminate"


async def make_unhealthy(cloud: Any, node_id: str) -> None:
    """HyperPod finds the node faulty and recommends replacing it, without doing it; returns
    once the events function handled the event (and any repair it started ended)."""

    def inject() -> None:
        cloud.emulation.hyperpod.make_node_unhealthy(f"hypd-{TAG}", node_id, reason=REASON,
                                                     action="Replace", repair=False)
        cloud.emulation.tick()
        cloud.wait_for_executions(timeout=60)

    await anyio.to_thread.run_sync(inject)


async def test_an_unhealthy_node_is_investigated_and_repaired_on_tools_alone(
    cloud: Any, api: ApiClient
) -> None:
    # Given a cluster hypd created: one group `workers` of 2 nodes
    created_cluster(api, cloud, tag=TAG)
    first, second = (n["nodeId"] for n in api.list_nodes(TAG)["nodes"])
    await make_unhealthy(cloud, first)

    async with mcp_session(cloud.api_url, allow_write=True) as session:
        # The cluster's health: the unhealthy node, why, what HyperPod recommends, what was done.
        health = await call(session, "cluster_health_get", tag=TAG)
        assert (health["nodes"], health["counts"]) == (2, {"Healthy": 1, "Unhealthy": 1})
        (node,) = health["unhealthy"]
        assert (node["nodeId"], node["status"]) == (first, "Unhealthy")
        latest = node["latest"]
        assert (latest["reason"], latest["recommended"]) == (REASON, "replace")
        assert latest["recommendation"] == "Please Replace the Faulty Node."
        assert latest["taken"]["by"] == "none"
        assert latest["taken"]["reason"] == "policy"  # the default policy only notifies
        assert (health["policy"]["action"], health["policyIsDefault"]) == ("notify", True)
        assert any(e["instanceId"] == first and e["level"] == "Error"
                   for e in health["recentEvents"])

        # Its history; a node no event was received of is a 404.
        history = await call(session, "node_health_get", tag=TAG, nodeId=first)
        assert [(e["status"], e["reason"]) for e in history["history"]] == [
            ("Unhealthy", REASON)]
        unknown = await call_error(session, "node_health_get", tag=TAG, nodeId=second)
        assert (unknown["status"], unknown["code"]) == (404, "NotFound")
        assert unknown["details"] == {"nodeId": second}

        # The user asks for the repair HyperPod recommends: by hand, confirmed for that node
        # (a confirm naming the other node is refused, and nothing starts), polled to its end.
        wrong = await call_error(session, "node_replace", tag=TAG, nodeId=first, confirm=second)
        assert (wrong["code"], wrong["details"]) == ("ConfirmationRequired", {"confirm": first})
        assert f"replaces node {first!r}" in wrong["message"]
        assert [o["kind"] for o in api.list_operations(cluster_tag=TAG)["operations"]] == [
            "create-cluster"]
        replacing = await call(session, "node_replace", tag=TAG, nodeId=first, confirm=first)
        replaced, _ = await poll(session, replacing["operationId"])
        assert replaced["status"] == "SUCCEEDED", replaced.get("error")

        # Then turns automatic repair on: the policy is read first, a bad bound is a 400.
        policy = await call(session, "health_policy_get", tag=TAG)
        assert policy == {"tag": TAG, "default": True, "policy": {
            "action": "notify", "maxActionsPerHour": 2, "nodeCooldownMinutes": 60}}
        invalid = await call_error(session, "health_policy_set", tag=TAG, action="replace",
                                   maxActionsPerHour=0)
        assert (invalid["status"], invalid["code"]) == (400, "ValidationError")
        assert [e["field"] for e in invalid["details"]["errors"]] == ["maxActionsPerHour"]
        set_ = await call(session, "health_policy_set", tag=TAG, action="replace",
                          maxActionsPerHour=1)
        assert set_ == {"tag": TAG, "default": False, "policy": {
            "action": "replace", "maxActionsPerHour": 1, "nodeCooldownMinutes": 60}}

        # The next unhealthy node: hypd replaces it itself; its operation is on its health.
        await make_unhealthy(cloud, second)
        history = await call(session, "node_health_get", tag=TAG, nodeId=second)
        taken = history["latest"]["taken"]
        assert (taken["by"], taken["action"]) == ("hypd", "replace")
        repair, _ = await poll(session, taken["operationId"])
        assert (repair["kind"], repair["status"]) == ("replace-node", "SUCCEEDED")
        assert repair["input"]["nodeId"] == second
        operations = await call(session, "operation_list", clusterTag=TAG)
        assert [o["kind"] for o in operations["operations"]][:2] == ["replace-node"] * 2

        # Both nodes replaced: the cluster is healthy, the old nodes are gone with their story.
        health = await call(session, "cluster_health_get", tag=TAG)
        assert (health["nodes"], health["counts"], health["unhealthy"]) == (
            2, {"Healthy": 2}, [])
        gone = {n["nodeId"]: n["latest"]["taken"] for n in health["gone"]}
        assert set(gone) == {first, second}
        assert gone[first]["reason"] == "policy"
        assert gone[second]["operationId"] == taken["operationId"]
        assert health["policy"]["action"] == "replace"
