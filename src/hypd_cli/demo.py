"""`hypd local demo`: the main job on the local cloud, end to end.

Starts the local cloud on template.yaml, inspects the catalogue like a client would (zones and
the instance types each zone offers), creates a cluster through the REST API (tag, zone, one
ml.g6.4xlarge on-demand group, an S3 bucket mounted through the Mountpoint CSI driver), follows
the operation to its end and prints what a user wants to see: the EKS and HyperPod clusters,
the nodes and their status, the storage claim, and the virtual time each stage took.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from hypd_cli.api_client import ApiClient, ApiError
from hypd_cli.local_output import function_output, new_log_file
from hypd_cli.output import stage_table
from hypd_cli.tables import render_table

TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
DEMO_TAG = "demo"
DEMO_INSTANCE_TYPE = "ml.g6.4xlarge"
DEMO_BUCKET = "hypd-demo-data"


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the main job on the local cloud: create a HyperPod cluster end to end",
        description=__doc__,
    )
    parser.add_argument("--template", type=Path, default=None, help="template.yaml to run")
    parser.add_argument("--region", default="us-west-2")
    parser.add_argument("--tag", default=DEMO_TAG, help="the cluster's tag")
    parser.add_argument(
        "--verbose", action="store_true", help="show the functions' logs and metrics too"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from hypd_cli.local import local_extra_missing

    if local_extra_missing("local demo"):
        return 2
    from hypd_cli.helm import ensure_helm
    from hypd_local import TemplateError
    from hypd_local.template import find_template

    try:
        template = args.template or find_template()
    except TemplateError as exc:
        print(f"hypd local demo: {exc}", file=sys.stderr)
        return 1
    no_helm = ensure_helm()
    if no_helm:  # the dependencies stage installs the chart with helm
        print(f"hypd local demo: {no_helm}", file=sys.stderr)
        return 1
    # The functions write their logs and EMF metrics to stdout, as on Lambda: they go to a
    # log file (with --verbose, to the terminal), and the terminal keeps what the demo reports.
    out = sys.stdout
    log_path = None if args.verbose else new_log_file("hypd-demo-")
    with function_output(log_path, "WARNING"):
        code = _demo(template, args.region, args.tag, out)
    if log_path is not None:
        print(f"Function logs and metrics: {log_path}", file=out)
    return code


def demo_request(api: ApiClient, tag: str, bucket: str) -> dict[str, Any]:
    """The create request a client builds after inspecting the catalogue: the first zone that
    offers the demo's instance type."""
    zones = [z["name"] for z in api.get("/catalog/availability-zones")["availabilityZones"]]
    for zone in zones:
        offered = api.get("/catalog/instance-types", availabilityZone=zone)
        if any(t["instanceType"] == DEMO_INSTANCE_TYPE for t in offered["instanceTypes"]):
            break
    else:
        raise RuntimeError(f"no zone of this Region offers {DEMO_INSTANCE_TYPE}")
    return {
        "tag": tag,
        "availabilityZone": zone,
        "instanceGroups": [
            {
                "name": "gpu",
                "instanceType": DEMO_INSTANCE_TYPE,
                "count": 1,
                "capacity": {"type": "on-demand"},
            }
        ],
        "storage": {"s3": {"bucket": bucket}},
    }


def create_bucket(cloud: Any, name: str) -> None:
    """An S3 bucket of the local account in the cloud's Region (one a create may mount)."""
    cloud.client("s3").create_bucket(
        Bucket=name, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )


def create_demo_bucket(cloud: Any) -> None:
    """The S3 bucket the demo request mounts."""
    create_bucket(cloud, DEMO_BUCKET)


def _demo(template: Path, region: str, tag: str, out: TextIO) -> int:
    from hypd_cli.local import local_parameters, quiet_known_gaps
    from hypd_local.cloud import LocalCloud

    quiet_known_gaps()

    def say(*parts: object) -> None:
        print(*parts, file=out, flush=True)

    say(f"Starting the local cloud on {template} ...")
    started = time.monotonic()
    with LocalCloud(template, region=region, parameters=local_parameters(template)) as cloud:
        create_demo_bucket(cloud)
        api = ApiClient(cloud.api_url)
        body = demo_request(api, tag, DEMO_BUCKET)
        say(f"Catalogue: {DEMO_INSTANCE_TYPE} is offered in {body['availabilityZone']}")
        identities = IdentityTally()
        with cloud.watch_authorizations(identities):
            try:
                accepted = api.post("/clusters", body)
            except ApiError as exc:
                say(f"create was refused: {exc}")
                return 1
            operation_id = accepted["operationId"]
            say(f"POST /clusters -> 202 {operation_id}")
            operation = follow(api, cloud, operation_id, timeout=600)
            say()
            say(f"Operation {operation_id} ({operation['kind']}): {operation['status']}")
            say(stage_table(operation))
            if operation["status"] != "SUCCEEDED":
                error = operation.get("error") or {}
                say(f"\nFailed: {error.get('code')}: {error.get('message')}")
                say(f"\n{identities.summary()}")
                say(f"Resume it with POST /operations/{operation_id}/retry")
                return 1
            output = operation.get("output") or {}
            say()
            say(summary_table(output))
            say(f"\n{identities.summary()}")
            cloud.wait_for_executions(timeout=60)
            say(events_summary(cloud.event_log.events(source="hypd")))
            total = sum((s.get("seconds") or 0) for s in output.get("stages") or [])
            say(
                f"\nDone: cluster {tag} created in {_duration(total)} of virtual time "
                f"({time.monotonic() - started:.1f} s real); REST API was {cloud.api_url}"
            )
    return 0


class IdentityTally:
    """The local cloud's authorisations while the create ran: per role, and what IAM denied."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.denied: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, authorization: Any) -> None:
        role = authorization.principal.arn.rsplit("/", 1)[-1]
        with self._lock:
            self.calls[role] += 1
            if authorization.denial is not None:
                self.denied.append(authorization.denial.message)

    def summary(self) -> str:
        """Two lines: the count and what was denied, then the calls per role."""
        denied = f"{len(self.denied)} denied: " + "; ".join(self.denied) if self.denied else (
            "none denied")
        roles = ", ".join(f"{role} {count}" for role, count in self.calls.most_common())
        return (
            f"IAM: {sum(self.calls.values())} AWS calls, each authorised as the role of the "
            f"function or state machine that made it; {denied}\n  {roles}"
        )


def events_summary(events: list[dict[str, Any]]) -> str:
    """One line per detail type: what hypd published on the bus, in order."""
    by_type: dict[str, list[str]] = {}
    for event in events:
        detail = event.get("detail") or {}
        by_type.setdefault(str(event.get("detail-type")), []).append(
            str(detail.get("status") or detail.get("health")))
    lines = [f"Events: {len(events)} published on the bus (docs/automation.md)"]
    lines += [f"  {kind}: {' -> '.join(statuses)}" for kind, statuses in by_type.items()]
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def summary_table(output: dict[str, Any]) -> str:
    """What was made: EKS and HyperPod clusters, nodes, the storage claim, time per stage."""
    eks = output.get("eksCluster") or {}
    hyperpod = output.get("hyperPodCluster") or {}
    storage = output.get("storage") or {}
    rows: list[tuple[str, str, str]] = [
        (
            "EKS cluster",
            eks.get("name", "-"),
            f"{eks.get('status', '-')}, Kubernetes {eks.get('version') or '-'}",
        ),
        ("HyperPod cluster", hyperpod.get("name", "-"), hyperpod.get("status", "-")),
    ]
    for group in hyperpod.get("instanceGroups", []):
        rows.append(
            (
                "  instance group",
                group["name"],
                f"{group.get('instanceType')} {group.get('currentCount')}/"
                f"{group.get('targetCount')} {group.get('status') or ''}".rstrip(),
            )
        )
    for node in output.get("nodes", []):
        state = "Ready" if node.get("ready") else "NotReady"
        rows.append(("  node", node["name"], f"{state}, {node.get('health') or '-'}"))
    rows.append(
        (
            "Storage claim",
            storage.get("claim", "-"),
            f"{storage.get('claimPhase') or '-'} ({storage.get('kind', '-')}, "
            f"volume {storage.get('volume', '-')})",
        )
    )
    for stage in output.get("stages") or []:
        took = stage.get("seconds")
        rows.append(
            (
                f"Stage {stage['name']}",
                stage.get("status", "-"),
                _duration(took) if took is not None else "-",
            )
        )
    return render_table(("WHAT", "NAME", "STATUS"), rows)


def follow(api: ApiClient, cloud: Any, operation_id: str, timeout: float = 120) -> dict[str, Any]:
    """Poll the operation as any client would, until it ends."""
    deadline = time.monotonic() + timeout
    while True:
        operation = api.get(f"/operations/{operation_id}")
        if operation["status"] in TERMINAL:
            return operation
        if time.monotonic() > deadline:
            raise TimeoutError(f"operation {operation_id} did not end within {timeout} s")
        try:
            cloud.wait_for_executions(timeout=min(30.0, max(1.0, deadline - time.monotonic())))
        except TimeoutError:
            continue  # still running (a long operation on a busy machine): look again
