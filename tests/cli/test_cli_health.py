"""The health commands (``hypd health get|node|policy|set-policy``): end to end against the local
cloud on one created cluster whose node the emulated HyperPod makes unhealthy (its event reaches
the events function through EventBridge), then every rendering branch against canned answers.
Each run is checked to call only its own REST operation (see conftest.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from hypd_cli.api_client import ApiClient
from hypd_cli.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from hypd_cli.demo import follow
from tests.cli.conftest import CannedApi, RunCli
from tests.cli.test_cli_local_cloud import header, row
from tests.e2e.capacity import created_cluster

TAG = "health"
REASON = "NvidiaErrorTerminate"


def make_unhealthy(cloud: Any, node_id: str, action: str) -> None:
    """The node turns unhealthy; HyperPod recommends `action` and does not take it. Returns
    once the events function handled the event (and any repair it started ended)."""
    cloud.emulation.hyperpod.make_node_unhealthy(f"hypd-{TAG}", node_id, reason=REASON,
                                                 action=action, repair=False)
    cloud.emulation.tick()
    cloud.wait_for_executions(timeout=60)


def test_health_commands_on_a_cluster_with_an_unhealthy_node(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    url = cloud.api_url
    created_cluster(api, cloud, tag=TAG)  # one group `workers` of 2 nodes
    sick, other = (n["nodeId"] for n in api.list_nodes(TAG)["nodes"])

    healthy = run_cli("health", "get", TAG, endpoint=url)
    assert healthy.code == 0, healthy.text
    assert healthy.out.splitlines()[:2] == [
        f"Cluster {TAG}: HyperPod InService; 2 nodes: 2 Healthy", "No unhealthy node."]

    # Unhealthy under the default policy (notify): listed with its reason, HyperPod's
    # recommendation, what was done (nothing, by policy) and how to repair it.
    make_unhealthy(cloud, sick, "Replace")
    shown = run_cli("health", "get", TAG, endpoint=url)
    assert shown.code == 0, shown.text
    assert shown.calls == ["getClusterHealth"]
    lines = shown.out.splitlines()
    assert lines[0] == f"Cluster {TAG}: HyperPod InService; 2 nodes: 1 Healthy, 1 Unhealthy"
    table = "\n".join(lines[1:])
    assert header(table) == ["NODE", "GROUP", "STATUS", "TIME", "REASON", "RECOMMENDED", "TAKEN"]
    cells = row(table, sick)
    assert cells[2] == "Unhealthy"
    assert cells[4:] == [REASON, "replace", "none (policy)"]
    assert "Recent Warn/Error events:" in shown.out
    assert re.search(rf"Error\s+Instance workers/{sick}\s+Instance failed health checks\.",
                     shown.out)
    assert ("Policy: notify (the default); at most 2 repairs an hour, 60 min between repairs "
            "of a node") in shown.out
    assert f"Repair by hand: hypd nodes replace {TAG} {sick} --wait --endpoint {url}" in shown.out
    assert (f"Let hypd repair such nodes from now on: hypd health set-policy {TAG} --action "
            f"replace --endpoint {url}") in shown.out

    # The node's history, newest first; a node no event was received of is the API's 404.
    history = run_cli("health", "node", TAG, sick, endpoint=url)
    assert history.code == 0, history.text
    assert history.out.splitlines()[0] == f"Node {sick} of cluster {TAG}: Unhealthy"
    assert header(history.out.split("\n", 1)[1]) == ["TIME", "STATUS", "REASON", "RECOMMENDED",
                                                      "TAKEN"]
    assert re.search(rf"^\S+ \S+\s+Unhealthy\s+{REASON}\s+replace\s+none \(policy\)$",
                     history.out, re.M)
    unknown = run_cli("health", "node", TAG, other, endpoint=url)
    assert unknown.code == EXIT_FAILED
    assert unknown.out == ""
    assert ("An error occurred (NotFound) when calling the getNodeHealth operation (HTTP 404): "
            f"no health event of node {other} of cluster {TAG} was received") in unknown.err

    # The policy: the default, then replace; an out-of-range value is the API's 400.
    default = run_cli("health", "policy", TAG, endpoint=url)
    assert default.code == 0, default.text
    assert re.search(r"^Action:\s+notify \(the default: no policy was set\)$", default.out, re.M)
    assert re.search(r"^Max actions per hour:\s+2$", default.out, re.M)
    invalid = run_cli("health", "set-policy", TAG, "--action", "replace",
                      "--max-actions-per-hour", "0", endpoint=url)
    assert invalid.code == EXIT_FAILED
    assert ("An error occurred (ValidationError) when calling the setHealthPolicy operation "
            "(HTTP 400): invalid request: maxActionsPerHour: must be 1 or more") in invalid.err
    assert run_cli("health", "set-policy", TAG, "--action", "repair", endpoint=url).code == (
        EXIT_USAGE)
    set_ = run_cli("health", "set-policy", TAG, "--action", "replace", "--cooldown-minutes", "30",
                   endpoint=url)
    assert set_.code == 0, set_.text
    assert set_.calls == ["setHealthPolicy"]
    assert set_.out.startswith(f"Health policy of cluster {TAG} set:\n")
    policy = run_cli("health", "policy", TAG, endpoint=url).out
    for key, value in (("Action", "replace"), ("Max actions per hour", "2"),
                       ("Node cool-down", "30 minutes")):
        assert re.search(rf"^{key}:\s+{value}$", policy, re.M), (key, policy)

    # Under replace, hypd repairs the next node HyperPod recommends repairing (a reboot here):
    # its operation is on the node's history.
    make_unhealthy(cloud, other, "Reboot")
    latest = api.get_node_health(TAG, other)["history"][-1]  # the Unhealthy entry (oldest)
    assert latest["taken"]["by"] == "hypd"
    operation_id = latest["taken"]["operationId"]
    assert follow(api, cloud, operation_id)["status"] == "SUCCEEDED"
    repaired = run_cli("health", "node", TAG, other, endpoint=url)
    assert re.search(rf"Unhealthy\s+{REASON}\s+reboot\s+hypd reboot {operation_id}$",
                     repaired.out, re.M), repaired.out
    after = run_cli("health", "get", TAG, endpoint=url).out
    assert after.splitlines()[0] == (
        f"Cluster {TAG}: HyperPod InService; 2 nodes: 1 Healthy, 1 Unhealthy")
    assert "Policy: replace; at most 2 repairs an hour, 30 min between repairs" in after
    assert "Let hypd repair" not in after  # the policy repairs: only the older node is left

    # --output json prints the API's response as it came.
    same_as_api = [
        (["health", "get", TAG], api.get_cluster_health(TAG)),
        (["health", "node", TAG, sick], api.get_node_health(TAG, sick)),
        (["health", "policy", TAG], api.get_health_policy(TAG)),
    ]
    for argv, answer in same_as_api:
        run = run_cli("-o", "json", *argv, endpoint=url)
        assert run.code == 0, run.text
        assert json.loads(run.out) == answer, argv
        assert run.err == ""
    as_json = run_cli("health", "set-policy", TAG, "--action", "notify", "-o", "json",
                      endpoint=url)
    assert json.loads(as_json.out) == {
        "tag": TAG, "default": False,
        "policy": {"action": "notify", "maxActionsPerHour": 2, "nodeCooldownMinutes": 60}}


# -- against canned answers -----------------------------------------------------------------------
NODE = "i-0123456789abcdef0"
OPERATION_ID = "op-" + "b" * 32


def entry(status: str, time: str, **extra: Any) -> dict[str, Any]:
    return {"eventId": f"e-{time}", "time": time, "status": status, **extra}


SUMMARY: dict[str, Any] = {
    "tag": "demo", "clusterStatus": "InService", "statusTime": "2026-12-01T08:00:00Z",
    "nodes": 3, "counts": {"Unhealthy": 2, "Healthy": 1},
    "unhealthy": [
        {"nodeId": NODE, "instanceGroup": "gpu", "status": "Unhealthy",
         "latest": entry("Unhealthy", "2026-12-01T09:00:00Z", reason="GPU fell off the bus",
                         repairAction="Replace", recommendation="Please Replace the Faulty "
                         "Node.", taken={"by": "hyperpod", "action": "Replace"})},
        {"nodeId": "i-1", "instanceGroup": "gpu", "status": "Unhealthy",
         "latest": entry("Unhealthy", "2026-12-01T09:01:00Z", reason="XID 79",
                         repairAction="None", recommendation="Please Reboot the Faulty Node.",
                         recommended="reboot", taken={"by": "none", "reason": "cooldown",
                                                      "action": "reboot"})},
    ],
    "gone": [
        {"nodeId": "i-2", "instanceGroup": "gpu", "status": "Unhealthy",
         "latest": entry("Unhealthy", "2026-12-01T07:00:00Z", reason="XID 48",
                         recommended="replace", taken={"by": "hypd", "action": "replace",
                                                       "operationId": OPERATION_ID})},
    ],
    "recentEvents": [
        {"eventId": f"c{i}", "time": f"2026-12-01T09:0{i}:00Z", "level": "Warn",
         "resourceType": "InstanceGroup", "instanceGroup": "gpu",
         "description": f"event {i}"} for i in range(7, 0, -1)
    ],
    "addons": {
        "coredns": {"status": "ACTIVE", "issues": [], "event": "EKS Addon Creation Succeeded",
                    "time": "2026-12-01T07:00:00Z"},
        "vpc-cni": {"status": "DEGRADED", "event": "EKS Addon Health Degraded",
                    "time": "2026-12-01T08:30:00Z",
                    "issues": [{"code": "InsufficientNumberOfReplicas",
                                "message": "1 of 2 replicas"}]},
    },
    "policy": {"action": "reboot", "maxActionsPerHour": 5, "nodeCooldownMinutes": 120},
    "policyIsDefault": False,
}


def test_get_shows_each_repair_gone_nodes_events_and_addon_issues(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    client = canned(SUMMARY)

    shown = run_cli("health", "get", "demo")

    assert shown.code == EXIT_OK, shown.text
    assert client.sent == [("GET", "/clusters/demo/health", {}, None)]
    out = shown.out
    assert out.splitlines()[0] == "Cluster demo: HyperPod InService; 3 nodes: 1 Healthy, " \
        "2 Unhealthy"
    assert row(out, NODE)[1:] == ["gpu", "Unhealthy", "2026-12-01 09:00:00",
                                  "GPU fell off the bus", "Please Replace the Faulty Node.",
                                  "hyperpod Replace"]
    assert row(out, "i-1")[4:] == ["XID 79", "reboot", "none (cooldown)"]
    gone = out.split("Gone (HyperPod no longer lists them: replaced or deleted):\n", 1)[1]
    assert header(gone) == ["NODE", "GROUP", "LAST STATUS", "TIME", "REASON", "TAKEN"]
    assert row(gone, "i-2")[4:] == ["XID 48", f"hypd replace {OPERATION_ID}"]
    events = out.split("Recent Warn/Error events:\n", 1)[1]
    assert row(events, "2026-12-01 09:07:00")[1:] == ["Warn", "InstanceGroup gpu", "event 7"]
    assert "event 2" not in events  # the five newest
    assert "... and 2 older (-o json lists them)." in events
    addons = out.split("Add-on issues:\n", 1)[1]
    assert row(addons, "vpc-cni")[1:] == [
        "DEGRADED", "InsufficientNumberOfReplicas: 1 of 2 replicas", "2026-12-01 08:30:00"]
    assert "coredns" not in addons
    assert ("Policy: reboot; at most 5 repairs an hour, 120 min between repairs of a node"
            in out)
    # Nobody repairs i-1 (its cool-down): the command that does; reboot is no notify.
    assert "Repair by hand: hypd nodes reboot demo i-1 --wait" in out
    assert NODE not in out.split("Repair by hand:", 1)[1]  # HyperPod repairs it
    assert "Let hypd repair" not in out


def test_node_and_policy_render_and_set_policy_sends_only_what_is_given(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    history = {
        "tag": "demo", "nodeId": NODE, "instanceGroup": "gpu",
        "latest": entry("Unhealthy", "2026-12-01T09:00:00Z", reason="XID 79",
                        recommended="reboot", taken={"by": "hypd", "action": "reboot",
                                                     "operationId": OPERATION_ID}),
        "history": [
            entry("Unhealthy", "2026-12-01T09:00:00Z", reason="XID 79", recommended="reboot",
                  taken={"by": "hypd", "action": "reboot", "operationId": OPERATION_ID}),
            entry("Healthy", "2026-12-01T08:00:00Z", reason="Healthy",
                  recommendation="No action needed.", taken={"by": "none",
                                                             "reason": "healthy"}),
        ],
    }
    view = {"tag": "demo", "default": False,
            "policy": {"action": "replace", "maxActionsPerHour": 2, "nodeCooldownMinutes": 60}}
    client = canned(history, view, view)

    node = run_cli("health", "node", "demo", NODE)
    set_ = run_cli("health", "set-policy", "demo", "--action", "replace")
    tuned = run_cli("health", "set-policy", "demo", "--action", "reboot",
                    "--max-actions-per-hour", "10", "--cooldown-minutes", "15", "-o", "json")

    assert [r.code for r in (node, set_, tuned)] == [EXIT_OK] * 3
    assert client.sent == [
        ("GET", f"/clusters/demo/nodes/{NODE}/health", {}, None),
        ("PUT", "/clusters/demo/health-policy", {}, {"action": "replace"}),
        ("PUT", "/clusters/demo/health-policy", {}, {
            "action": "reboot", "maxActionsPerHour": 10, "nodeCooldownMinutes": 15}),
    ]
    lines = node.out.splitlines()
    assert lines[0] == f"Node {NODE} of cluster demo (group gpu): Unhealthy"
    assert lines[3].split("  ")[0] == "2026-12-01 09:00:00"  # newest first
    assert row(node.out, "2026-12-01 08:00:00") == [
        "2026-12-01 08:00:00", "Healthy", "Healthy", "No action needed.", "none (healthy)"]
    assert lines[-1] == f"hypd's repair: hypd ops get {OPERATION_ID}"
    assert re.search(r"^hypd:\s+reboots or replaces a node as HyperPod recommends", set_.out,
                     re.M)
    assert json.loads(tuned.out) == view

    missing = run_cli("health", "set-policy", "demo")
    assert missing.code == EXIT_USAGE
    assert "--action" in missing.err
    assert run_cli("health", "set-policy", "demo", "--action", "replace",
                   "--cooldown-minutes", "soon").code == EXIT_USAGE
    assert len(client.sent) == 3
