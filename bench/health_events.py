"""The events handler's cost per event, measured on the local cloud.

Creates one cluster (the demo request), then invokes ClusterEventsFunction directly with each
kind of event it handles, many times, and prints per kind:

* ms p50 / p95: the handler's real time per event on this machine (moto answering over HTTP on
  localhost: an upper bound of the handler's own work, far below a Lambda's network latency);
* aws / table: AWS calls per event besides the table, and the table's reads and writes;
* the calls themselves, per event.

Then puts a storm of node health events on the bus, as HyperPod would, and reports the rate at
which EventBridge delivery and the handler absorb it (real time, one execution environment).

    .venv/bin/python bench/health_events.py [--events N]

Counts do not depend on this machine; the times do.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from hypd_cli.api_client import ApiClient  # noqa: E402
from hypd_cli.demo import DEMO_BUCKET, create_demo_bucket, demo_request, follow  # noqa: E402
from hypd_cli.local import local_parameters  # noqa: E402
from hypd_local.calls import Call, watch_calls  # noqa: E402
from hypd_local.cloud import LocalCloud  # noqa: E402

TAG = "bench"
CLUSTER = f"hypd-{TAG}"
FUNCTION = "ClusterEventsFunction"
NODE_HEALTH = "SageMaker HyperPod Cluster Node Health Event"
TABLE_SERVICE = "dynamodb"


_SECONDS = itertools.count()
START = datetime(2026, 1, 15, 10, 0, 0, tzinfo=UTC)


def envelope(detail_type: str, detail: dict[str, Any], source: str = "aws.sagemaker",
             resources: list[str] | None = None) -> dict[str, Any]:
    """An event one second after the last one made (the handler orders a node's events by
    time, then id: events of one second would be ordered by their random ids)."""
    at = START + timedelta(seconds=next(_SECONDS))
    return {
        "version": "0", "id": str(uuid.uuid4()), "detail-type": detail_type,
        "source": source, "account": "123456789012",
        "time": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "region": "us-west-2",
        "resources": resources or [], "detail": detail,
    }


def node_health(node_id: str, reason: str = "NvidiaErrorTerminate",
                status: str = "Unhealthy") -> dict[str, Any]:
    return {
        "ClusterName": CLUSTER, "InstanceId": node_id, "Tags": {},
        "HealthSummary": {"HealthStatus": status, "HealthStatusReason": reason,
                          "RepairAction": "None",
                          "Recommendation": "Please Replace the Faulty Node."},
    }


class Meter:
    """AWS calls made on this thread while an invocation runs."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.calls: Counter[str] = Counter()

    def __call__(self, call: Call) -> None:
        if getattr(self.local, "on", False):
            self.calls[f"{call.service}:{call.operation}"] += 1

    def invoke(self, cloud: LocalCloud, event: dict[str, Any]) -> float:
        self.local.on = True
        try:
            invocation = cloud.invoke_raw(FUNCTION, event)
        finally:
            self.local.on = False
        assert not invocation.error, invocation.payload
        return invocation.duration_ms


Scenario = tuple[str, Callable[[int], dict[str, Any]]]


def scenarios(cloud: LocalCloud, api: ApiClient, nodes: list[str]) -> list[Scenario]:
    sick, other, flapping = nodes[0], nodes[1], nodes[2]
    repeated = envelope(NODE_HEALTH, node_health(sick))
    operation_id = str(api.call("listOperations")["operations"][0]["id"])
    machine = cloud.stack.state_machines["NodeActionStateMachine"].arn
    return [
        ("node health: flaps healthy/unhealthy", lambda n: envelope(
            NODE_HEALTH, node_health(flapping, status="Unhealthy" if n % 2 else "Healthy"))),
        ("node health: same state again", lambda n: envelope(NODE_HEALTH, node_health(sick))),
        ("node health: new reason, replace refused", lambda n: envelope(
            NODE_HEALTH, node_health(other, reason=f"fault {n}"))),
        ("node health: duplicate delivery", lambda n: repeated),
        ("node health: malformed (to the DLQ)", lambda n: envelope(
            NODE_HEALTH, {"ClusterName": CLUSTER, "InstanceId": sick})),
        ("cluster event: Error kept", lambda n: envelope(
            "SageMaker HyperPod Cluster Event", {"EventDetails": {
                "EventId": str(uuid.uuid4()), "ClusterName": CLUSTER, "EventTime": 1768478340412
                + n, "EventLevel": "Error", "ResourceType": "Instance", "InstanceId": sick,
                "Description": "Instance failed health checks."}})),
        ("cluster state change", lambda n: envelope(
            "SageMaker HyperPod Cluster State Change",
            {"ClusterName": CLUSTER, "ClusterStatus": "InService"})),
        ("EKS add-on health", lambda n: envelope(
            "EKS Addon Health Degraded", {"status": "DEGRADED" if n % 2 else "ACTIVE"},
            source="aws.eks",
            resources=[f"arn:aws:eks:us-west-2:123456789012:addon/{CLUSTER}/cert-manager/x"])),
        ("operation ended (nothing deferred)", lambda n: envelope(
            "Step Functions Execution Status Change",
            {"executionArn": f"{machine}:{operation_id}", "stateMachineArn": machine,
             "name": operation_id, "status": "SUCCEEDED"}, source="aws.states")),
    ]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200, help="events per kind (default 200)")
    parser.add_argument("--storm", type=int, default=500, help="events of the storm")
    args = parser.parse_args()
    started = time.monotonic()
    template = ROOT / "template.yaml"
    quiet = StringIO()
    rows: list[tuple[Any, ...]] = []
    with redirect_stdout(quiet), LocalCloud(
        template, parameters=local_parameters(template)
    ) as cloud:
        create_demo_bucket(cloud)
        api = ApiClient(cloud.api_url)
        request = demo_request(api, TAG, DEMO_BUCKET)
        request["instanceGroups"][0]["count"] = 4
        created = follow(api, cloud, api.post("/clusters", request)["operationId"], timeout=300)
        assert created["status"] == "SUCCEEDED", created.get("error")
        nodes = [str(n["nodeId"]) for n in api.call("listNodes", tag=TAG)["nodes"]]
        # replace: the budget is spent by one repair, so later events reach it and are refused
        api.call("setHealthPolicy", tag=TAG, body={"action": "replace",
                                                   "maxActionsPerHour": 1})
        meter = Meter()
        with watch_calls(meter):
            # the one repair the hour allows, and its operation to the end
            meter.invoke(cloud, envelope(NODE_HEALTH, node_health(nodes[3])))
            cloud.wait_for_executions(timeout=300)
            for label, make in scenarios(cloud, api, nodes):
                meter.calls.clear()
                times = [meter.invoke(cloud, make(n)) for n in range(args.events)]
                calls = dict(meter.calls)
                aws = sum(v for k, v in calls.items() if not k.startswith(TABLE_SERVICE))
                table = sum(v for k, v in calls.items() if k.startswith(TABLE_SERVICE))
                detail = " ".join(f"{k.split(':')[1]}={v / args.events:g}"
                                  for k, v in sorted(calls.items()))
                rows.append((label, statistics.median(times), percentile(times, 0.95),
                             aws / args.events, table / args.events, detail))
            cloud.wait_for_executions(timeout=300)

        # the storm, through EventBridge and Lambda's asynchronous invocation
        put = time.monotonic()
        for n in range(args.storm):
            cloud.emit_event("aws.sagemaker", NODE_HEALTH,
                             node_health(nodes[n % 3], reason=f"storm {n % 5}"))
        emitted = time.monotonic() - put
        cloud.wait_for_executions(timeout=900)
        absorbed = time.monotonic() - put
        failures = len(cloud.async_failures) + len(cloud.delivery_failures)
    print(f"{'event':<40}{'ms p50':>8}{'ms p95':>8}{'aws':>6}{'table':>7}  calls per event")
    for label, p50, p95, aws, table, detail in rows:
        print(f"{label:<40}{p50:>8.1f}{p95:>8.1f}{aws:>6.2f}{table:>7.2f}  {detail}")
    print(f"\nstorm: {args.storm} node health events put in {emitted:.1f} s, all handled "
          f"{absorbed:.1f} s after the first ({args.storm / absorbed:.0f} events/s), "
          f"{failures} failed")
    print(f"real time: {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
