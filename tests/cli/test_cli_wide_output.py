"""``-o wide``: a list's table with the columns the default table leaves out for width, as
kubectl has it; a command that prints no list shows what ``-o table`` shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hypd_cli.cli import EXIT_OK, EXIT_USAGE
from tests.cli.conftest import CannedApi, RunCli

OPERATION = {
    "id": "op-" + "b" * 32, "kind": "create-cluster", "clusterTag": "demo", "status": "FAILED",
    "stages": [{"name": "network", "status": "FAILED", "attempts": 2}],
    "input": {}, "error": {"code": "QuotaExceeded", "message": "no VPCs left"},
    "retries": [{"number": 1, "requestedAt": "2026-01-15T10:05:00Z"}],
    "createdAt": "2026-01-15T10:00:00Z", "updatedAt": "2026-01-15T10:12:30Z", "version": 3,
}
CLUSTER = {
    "tag": "demo", "source": "created", "status": "ACTIVE", "region": "us-west-2",
    "eks": {"name": "hypd-demo", "arn": "arn:aws:eks:us-west-2:1:cluster/hypd-demo",
            "status": "ACTIVE", "version": "1.31", "vpcId": "vpc-0abc"},
    "createdAt": "2026-01-14T09:00:00Z", "updatedAt": "2026-01-15T10:00:00Z",
    "lastSeenAt": "2026-01-15T11:00:00Z", "lastOperationId": OPERATION["id"],
}
GROUP = {
    "name": "gpu", "instanceType": "ml.g5.8xlarge", "count": 2, "currentCount": 2,
    "status": "InService", "capacity": {"type": "on-demand"}, "efaOnly": False,
    "availabilityZone": "us-west-2a", "subnetIds": ["subnet-1"], "dedicatedSubnet": False,
    "labels": {"team": "vision"}, "taints": [{"key": "nvidia.com/gpu", "value": "true",
                                               "effect": "NoSchedule"}],
    "executionRole": "arn:aws:iam::1:role/hypd-demo-nodes",
}
NODE = {
    "nodeId": "i-0123456789abcdef0", "instanceGroup": "gpu", "instanceType": "ml.g5.8xlarge",
    "status": "Running", "launchTime": "2026-01-15T10:00:00Z",
    "lastSoftwareUpdateTime": "2026-01-15T12:00:00Z",
    "privateDnsHostname": "ip-10-1-2-3.us-west-2.compute.internal",
}
JOB = {
    "name": "bert", "namespace": "default", "phase": "Running", "instanceType": "ml.g5.8xlarge",
    "nodeCount": 2, "image": "repo/bert:1", "restarts": 0, "managedByHypd": True,
    "priority": "high", "maxRetries": 3, "createdAt": "2026-01-15T10:00:00Z",
    "startTime": "2026-01-15T10:01:00Z",
}
ENDPOINT = {
    "name": "llama", "namespace": "default", "type": "jumpstart", "state": "DeploymentComplete",
    "ready": True, "instanceType": "ml.g5.8xlarge", "replicas": 2, "readyReplicas": 2,
    "availableReplicas": 1, "managedByHypd": True, "jumpStart": {"modelId": "meta-llama-3"},
    "conditions": [], "createdAt": "2026-01-15T10:00:00Z",
}
TEAM = {
    "name": "vision", "status": "Created", "resources": [], "sharing": {"strategy": "Lend"},
    "active": True, "namespace": "hyperpod-ns-vision", "queue": "hyperpod-ns-vision-localqueue",
    "quotaId": "q-123",
}

# command, its answer, the wide-only headers and a value only they show
CASES: list[tuple[list[str], dict[str, Any], list[str], str]] = [
    (["clusters", "list"], {"clusters": [CLUSTER]},
     ["REGION", "VPC", "CREATED", "LAST SEEN", "LAST OPERATION"], "vpc-0abc"),
    (["ops", "list"], {"operations": [OPERATION]}, ["ELAPSED", "RETRIES", "ERROR"],
     "QuotaExceeded"),
    (["groups", "list", "demo"],
     {"tag": "demo", "clusterStatus": "InService", "instanceGroups": [GROUP]},
     ["LABELS", "TAINTS", "EXECUTION ROLE"], "nvidia.com/gpu=true:NoSchedule"),
    (["nodes", "list", "demo"], {"tag": "demo", "nodes": [NODE]},
     ["PRIVATE DNS", "SOFTWARE UPDATED"], "ip-10-1-2-3.us-west-2.compute.internal"),
    (["jobs", "list", "demo"], {"tag": "demo", "jobs": [JOB]},
     ["PRIORITY", "MAX RETRIES", "STARTED", "COMPLETED", "BY HYPD", "IMAGE"], "repo/bert:1"),
    (["endpoints", "list", "demo"], {"tag": "demo", "endpoints": [ENDPOINT]},
     ["AVAILABLE", "MODEL", "BY HYPD", "MESSAGE"], "meta-llama-3"),
    (["teams", "list", "demo"], {"tag": "demo", "teams": [TEAM]},
     ["NAMESPACE", "QUOTA", "FAILURE"], "q-123"),
]


def headers(out: str) -> list[str]:
    """The header row of the table in `out`: the line above the dashes, split on its gaps."""
    lines = out.splitlines()
    dashes = next(i for i, line in enumerate(lines) if line.startswith("---"))
    return [word.strip() for word in lines[dashes - 1].split("  ") if word.strip()]


@pytest.mark.parametrize(("argv", "answer", "extra", "value"), CASES,
                         ids=[" ".join(case[0][:2]) for case in CASES])
def test_wide_adds_the_columns_the_table_leaves_out(
        run_cli: RunCli, canned: Callable[..., CannedApi], argv: list[str],
        answer: dict[str, Any], extra: list[str], value: str) -> None:
    canned(answer, answer)

    table = run_cli(*argv)
    wide = run_cli(*argv, "-o", "wide")

    assert table.code == wide.code == EXIT_OK, table.text + wide.text
    assert not set(extra) & set(headers(table.out))
    assert value not in table.out
    assert headers(wide.out) == headers(table.out) + extra
    assert value in wide.out


def test_wide_cells_read_the_response(run_cli: RunCli,
                                      canned: Callable[..., CannedApi]) -> None:
    canned({"operations": [OPERATION]}, {"clusters": [CLUSTER]})

    ops = run_cli("ops", "list", "-o", "wide").out.splitlines()[2]
    clusters = run_cli("clusters", "list", "-o", "wide").out.splitlines()[2]

    assert ops.split()[-3:] == ["12m30s", "1", "QuotaExceeded"]
    assert "us-west-2  vpc-0abc  2026-01-14 09:00:00  2026-01-15 11:00:00" in clusters


def test_wide_is_taken_in_any_case_and_refuses_a_query(
        run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    canned({"clusters": [CLUSTER]})

    upper = run_cli("clusters", "list", "-o", "WIDE")
    query = run_cli("clusters", "list", "-o", "wide", "--query", "clusters")

    assert upper.code == EXIT_OK, upper.text
    assert "LAST OPERATION" in upper.out
    assert query.code == EXIT_USAGE
    assert "--query needs -o json, -o yaml or -o text" in query.err


def test_wide_on_a_command_without_a_list_shows_the_table(
        run_cli: RunCli, canned: Callable[..., CannedApi]) -> None:
    canned(CLUSTER, CLUSTER)

    table = run_cli("clusters", "get", "demo")
    wide = run_cli("clusters", "get", "demo", "-o", "wide")

    assert wide.code == EXIT_OK, wide.text
    assert wide.out == table.out
    assert "Region:" in wide.out


def test_an_empty_wide_list_says_so(run_cli: RunCli,
                                    canned: Callable[..., CannedApi]) -> None:
    canned({"tag": "demo", "jobs": []})

    run = run_cli("jobs", "list", "demo", "-o", "wide")

    assert run.code == EXIT_OK, run.text
    assert run.out.strip() == "Cluster demo has no training job."
