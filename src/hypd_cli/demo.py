"""`hypd local demo`: the main job on the local cloud, end to end.

Starts the local cloud on template.yaml, seeds it with EKS and HyperPod clusters (an import
scenario: a team that already has clusters), discovers them through the REST API, follows the
operation to its end and prints what a user wants to see: the stages and the clusters.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from hypd_cli.api_client import ApiClient, ApiError
from hypd_cli.tables import render_table

TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the main job on the local cloud: seed clusters, discover them via the API",
        description=__doc__,
    )
    parser.add_argument("--template", type=Path, default=None, help="template.yaml to run")
    parser.add_argument("--region", default="us-west-2")
    parser.add_argument(
        "--verbose", action="store_true", help="show the functions' logs and metrics too"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from hypd_local.template import find_template

    template = args.template or find_template()
    if args.verbose:
        return _demo(template, args.region, sys.stdout)
    # The functions write their logs and EMF metrics to stdout, as on Lambda: send those to a
    # log file and keep the terminal for what the demo itself reports.
    out = sys.stdout
    with tempfile.NamedTemporaryFile(
        "w", prefix="hypd-demo-", suffix=".log", delete=False
    ) as log, contextlib.redirect_stdout(log):
        code = _demo(template, args.region, out)
    print(f"Function logs and metrics: {log.name}", file=out)
    return code


def _demo(template: Path, region: str, out: TextIO) -> int:
    from hypd_local.cloud import LocalCloud
    from hypd_local.seed import seed_clusters

    def say(*parts: object) -> None:
        print(*parts, file=out, flush=True)

    say(f"Starting the local cloud on {template} ...")
    with LocalCloud(template, region=region) as cloud:
        seeded = seed_clusters(cloud)
        say(f"Seeded {_describe_seed(seeded)}")
        api = ApiClient(cloud.api_url)
        try:
            accepted = api.post("/clusters/discover")
        except ApiError as exc:
            say(f"discover was refused: {exc}")
            return 1
        operation_id = accepted["operationId"]
        say(f"POST /clusters/discover -> 202 {operation_id}")
        operation = follow(api, cloud, operation_id)
        say()
        say(f"Operation {operation_id} ({operation['kind']}): {operation['status']}")
        say(stage_table(operation))
        if operation["status"] != "SUCCEEDED":
            error = operation.get("error") or {}
            say(f"\nFailed: {error.get('code')}: {error.get('message')}")
            return 1
        clusters = api.get("/clusters")["clusters"]
        say()
        say(f"Clusters ({len(clusters)}), from GET /clusters:")
        say(cluster_table(clusters))
        output = operation.get("output") or {}
        if output.get("conflicts"):
            say(f"\nConflicts: {output['conflicts']}")
        say(
            f"\nDone: {len(output.get('recorded', []))} clusters recorded from "
            f"{output.get('eksClusters', 0)} EKS and {output.get('hyperPodClusters', 0)} HyperPod "
            f"clusters; REST API was {cloud.api_url}"
        )
    return 0


def follow(api: ApiClient, cloud: Any, operation_id: str) -> dict[str, Any]:
    """Poll the operation as any client would, until it ends."""
    deadline = time.monotonic() + 120
    while True:
        operation = api.get(f"/operations/{operation_id}")
        if operation["status"] in TERMINAL:
            return operation
        if time.monotonic() > deadline:
            raise TimeoutError(f"operation {operation_id} did not end within 120 s")
        cloud.wait_for_executions(timeout=30)


def _seconds(start: str | None, end: str | None) -> str:
    if not start or not end:
        return ""
    delta = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    return f"{delta.total_seconds():.1f}s"


def stage_table(operation: dict[str, Any]) -> str:
    rows = [
        (
            stage["name"],
            stage["status"],
            stage["attempts"],
            _seconds(stage.get("startedAt"), stage.get("endedAt")),
            _stage_note(stage),
        )
        for stage in operation["stages"]
    ]
    return render_table(("STAGE", "STATUS", "ATTEMPTS", "TOOK", "RESULT"), rows)


def _stage_note(stage: dict[str, Any]) -> str:
    if stage.get("error"):
        return f"{stage['error']['code']}: {stage['error']['message']}"
    output = stage.get("output") or {}
    if "found" in output:
        return f"found {output['found']}: {', '.join(output.get('names', []))}"
    if "recorded" in output:
        return f"recorded {', '.join(output['recorded']) or 'none'}"
    return ""


def cluster_table(clusters: list[dict[str, Any]]) -> str:
    rows = []
    for cluster in clusters:
        eks = cluster.get("eks") or {}
        hyperpod = cluster.get("hyperpod") or {}
        groups = ", ".join(
            f"{g['name']}={g.get('instanceType')} x{g.get('currentCount')}/{g.get('targetCount')}"
            for g in hyperpod.get("instanceGroups", [])
        )
        rows.append(
            (
                cluster["tag"],
                eks.get("name", "-"),
                eks.get("status", "-"),
                eks.get("version", "-"),
                hyperpod.get("name", "-"),
                hyperpod.get("status", "-"),
                groups or "-",
            )
        )
    headers = ("TAG", "EKS", "EKS STATUS", "K8S", "HYPERPOD", "HYPERPOD STATUS", "INSTANCE GROUPS")
    return render_table(headers, rows)


def _describe_seed(seeded: list[Any]) -> str:
    parts = [
        f"{s.eks_name} (EKS) + {s.name} (HyperPod)" if s.hyperpod_arn else f"{s.eks_name} (EKS)"
        for s in seeded
    ]
    return "the account with " + "; ".join(parts)
