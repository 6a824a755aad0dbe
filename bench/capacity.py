"""Capacity operations measured on the local cloud: how long each takes, what it costs.

Creates one cluster (the demo request), then runs every kind of capacity operation through the
REST API, one after the other, and prints for each:

* virtual: virtual seconds from start to end, and per stage;
* expected: the emulator's own time for the change (HyperPod's update, node boot, reboot,
  termination, autoscaling), the time a perfect observer would need;
* lag: virtual - expected, the time hypd added by waiting;
* states / lambdas / aws: Step Functions state transitions, Lambda invocations (tasks and the
  state-change handler) and AWS calls of the functions (the table's reads and writes apart);
* api ms: the real time of the REST call that started it (validation against the live cluster
  and the catalogue, recording, StartExecution) on this machine.

    .venv/bin/python bench/capacity.py

Virtual times and counts do not depend on this machine; the real times do.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from datetime import datetime, timedelta
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
TABLE_SERVICE = "dynamodb"


class Tally:
    """AWS calls and Lambda invocations of this process while a block runs."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.aws: Counter[str] = Counter()
        self.lambdas = 0

    def reset(self) -> None:
        with self.lock:
            self.aws.clear()
            self.lambdas = 0

    @property
    def calls(self) -> int:
        return sum(n for key, n in self.aws.items() if not key.startswith(TABLE_SERVICE))

    @property
    def table_calls(self) -> int:
        return sum(n for key, n in self.aws.items() if key.startswith(TABLE_SERVICE))


@contextmanager
def tallying(cloud: LocalCloud, tally: Tally) -> Iterator[None]:
    inside = threading.local()

    def on_call(call: Call) -> None:
        if getattr(inside, "depth", 0):
            with tally.lock:
                tally.aws[f"{call.service}:{call.operation}"] += 1

    def invoke(original: Invoke, function: Any, event: Any) -> Any:
        with tally.lock:
            tally.lambdas += 1
        inside.depth = getattr(inside, "depth", 0) + 1
        try:
            return original(function, event)
        finally:
            inside.depth -= 1

    with watching(cloud, invoke, on_call):
        yield


Invoke = Callable[[Any, Any], Any]
"""The local cloud's Lambda invoke: (function, event) -> its invocation."""


@contextmanager
def watching(cloud: LocalCloud, invoke: Callable[[Invoke, Any, Any], Any],
             on_call: Callable[[Call], None]) -> Iterator[None]:
    """While the block runs, every Lambda invocation of `cloud` goes through
    `invoke(original, function, event)` and `on_call` sees every AWS call of this process (on
    the calling thread: a handler runs on its invoker's)."""
    runtime = cloud.lambdas
    original = runtime.invoke

    def through(function: Any, event: Any) -> Any:
        return invoke(original, function, event)

    runtime.invoke = through  # type: ignore[method-assign]
    try:
        with watch_calls(on_call):
            yield
    finally:
        runtime.invoke = original  # type: ignore[method-assign]


def _seconds(start: str | None, end: str | None) -> float:
    if not start or not end:
        return 0.0
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def transitions(cloud: LocalCloud, execution_arn: str) -> int:
    sfn = cloud.client("stepfunctions")
    history = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    return sum(1 for e in history if e["type"].endswith("StateEntered"))


Step = tuple[str, Callable[[ApiClient], dict[str, Any]], timedelta]


def steps(cloud: LocalCloud, first_node: Callable[[], str]) -> list[Step]:
    """(label, the request, the emulator's time for the change)."""
    assert cloud.emulation is not None
    d = cloud.emulation.hyperpod.durations
    update = d.cluster_update

    def call(operation: str, **kwargs: Any) -> Callable[[ApiClient], dict[str, Any]]:
        return lambda api: api.call(operation, tag=TAG, **kwargs)

    def node(operation: str) -> Callable[[ApiClient], dict[str, Any]]:
        return lambda api: api.call(operation, tag=TAG, nodeId=first_node())

    return [
        ("add group (2 spot nodes)", call("addInstanceGroup", body={
            "name": "burst", "instanceType": "ml.g6.4xlarge", "count": 2,
            "capacity": {"type": "spot"}}), max(update, d.node_boot)),
        ("scale up 2 -> 4", call("updateInstanceGroup", name="burst", body={"count": 4}),
         max(update, d.node_boot)),
        ("relabel", call("updateInstanceGroup", name="burst",
                         body={"labels": {"team": "bench"}}), update),
        ("scale down 4 -> 1", call("updateInstanceGroup", name="burst", body={"count": 1}),
         max(update, d.node_terminate)),
        ("reboot node", node("rebootNode"), d.node_reboot),
        ("replace node", node("replaceNode"), d.node_boot),
        ("delete node", node("deleteNode"), d.node_terminate),
        ("autoscaling on", call("setAutoscaling", body={
            "enabled": True, "instanceGroups": ["burst"]}), d.autoscaling_enable),
        ("autoscaling off", call("setAutoscaling", body={"enabled": False}),
         d.autoscaling_disable),
        ("delete group", call("deleteInstanceGroup", name="burst"), d.group_delete),
    ]


def main() -> int:
    started = time.monotonic()
    rows: list[tuple[Any, ...]] = []
    quiet = StringIO()
    template = ROOT / "template.yaml"
    with redirect_stdout(quiet), LocalCloud(
        template, parameters=local_parameters(template)
    ) as cloud:
        create_demo_bucket(cloud)
        api = ApiClient(cloud.api_url)
        created = follow(api, cloud, api.post("/clusters", demo_request(api, TAG, DEMO_BUCKET))
                         ["operationId"], timeout=300)
        assert created["status"] == "SUCCEEDED", created.get("error")

        def first_node() -> str:
            nodes = api.call("listNodes", tag=TAG, instanceGroup="burst")["nodes"]
            return str(nodes[0]["nodeId"])

        tally = Tally()
        with tallying(cloud, tally):
            for label, request, expected in steps(cloud, first_node):
                tally.reset()
                before = time.monotonic()
                accepted = request(api)
                api_ms = (time.monotonic() - before) * 1000
                done = follow(api, cloud, str(accepted["operationId"]), timeout=300)
                assert done["status"] == "SUCCEEDED", (label, done.get("error"))
                total = sum(_seconds(s["startedAt"], s["endedAt"]) for s in done["stages"])
                per_stage = " ".join(
                    f"{s['name']}={_seconds(s['startedAt'], s['endedAt']):.0f}"
                    for s in done["stages"]
                )
                rows.append((
                    label, total, expected.total_seconds(), total - expected.total_seconds(),
                    transitions(cloud, done["executionArn"]), tally.lambdas, tally.calls,
                    tally.table_calls, api_ms, per_stage,
                ))
    header = ("operation", "virtual", "expected", "lag", "states", "lambdas", "aws",
              "table", "api ms", "stages (virtual s)")
    print(f"{header[0]:<26}{header[1]:>8}{header[2]:>9}{header[3]:>7}{header[4]:>8}"
          f"{header[5]:>8}{header[6]:>6}{header[7]:>7}{header[8]:>8}  {header[9]}")
    for row in rows:
        print(f"{row[0]:<26}{row[1]:>8.0f}{row[2]:>9.0f}{row[3]:>7.1f}{row[4]:>8}{row[5]:>8}"
              f"{row[6]:>6}{row[7]:>7}{row[8]:>8.0f}  {row[9]}")
    print(f"\nreal time: {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
