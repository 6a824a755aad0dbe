"""Many creates at once on the local cloud: do they all succeed, how long do they take, and
what do they cost in DynamoDB calls?

1. ``--creates`` (default 50) clients each POST /clusters with a tag of its own, all at
   once, then every execution runs to its end. Printed: the real wall time from the first
   POST to the last execution's end (goal: 60 s), how many creates SUCCEEDED, each create's
   recorded (virtual) duration beside a lone create's, and the DynamoDB calls per create by
   action, with the Step Functions and Lambda counts beside them.
2. ``--duplicates`` (default 10) clients POST the same new tag at once: exactly one gets 202
   and one operation exists for the tag; the others get 409.

    .venv/bin/python bench/scale.py [--creates N] [--duplicates M]

Exit status 1 when a create fails or the duplicates give other than one operation. The wall
time depends on this machine (the local cloud runs every service and function in this one
Python process); the virtual durations and the counts do not.

The executions share one timeline (`hypd_local.clock.Cohort`): the clock moves only when
every running execution waits, so fifty creates take the virtual time of one, as on AWS.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections import Counter
from contextlib import redirect_stdout
from datetime import datetime
from io import StringIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from bench.create_pipeline import Counters, counting  # noqa: E402
from hypd_cli.api_client import ApiClient, ApiError  # noqa: E402
from hypd_cli.demo import DEMO_BUCKET, create_demo_bucket, demo_request  # noqa: E402
from hypd_cli.local import local_parameters, quiet_known_gaps  # noqa: E402
from hypd_local.clock import VirtualClock  # noqa: E402
from hypd_local.cloud import LocalCloud  # noqa: E402

GOAL_SECONDS = 60.0
TIMEOUT_SECONDS = 1800.0


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _duration(operation: dict[str, Any]) -> float:
    """The operation's recorded length: its first stage's start to its last stage's end."""
    started = [_at(s["startedAt"]) for s in operation["stages"] if s.get("startedAt")]
    ended = [_at(s["endedAt"]) for s in operation["stages"] if s.get("endedAt")]
    return (max(ended) - min(started)).total_seconds() if started and ended else 0.0


def _all_at_once(count: int, work: Any) -> list[Any]:
    """Run ``work(i)`` for i in range(count) on threads released together; their results."""
    results: list[Any] = [None] * count
    gate = threading.Barrier(count)

    def run(index: int) -> None:
        gate.wait()
        try:
            results[index] = work(index)
        except Exception as exc:  # reported as the result
            results[index] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _lone_create(api: ApiClient, cloud: LocalCloud, body: dict[str, Any]) -> dict[str, Any]:
    operation_id = api.post("/clusters", dict(body, tag="lone"))["operationId"]
    cloud.wait_for_executions(timeout=TIMEOUT_SECONDS)
    return api.get(f"/operations/{operation_id}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=50)
    parser.add_argument("--duplicates", type=int, default=10)
    args = parser.parse_args(argv)
    quiet_known_gaps()
    template = ROOT / "template.yaml"
    counters = Counters()
    with redirect_stdout(StringIO()), LocalCloud(
        template, parameters=local_parameters(template), clock=VirtualClock(ticking=False)
    ) as cloud:
        create_demo_bucket(cloud)
        api = ApiClient(cloud.api_url)
        body = demo_request(api, "lone", DEMO_BUCKET)
        lone_started = time.monotonic()
        lone = _lone_create(api, cloud, body)
        lone_wall = time.monotonic() - lone_started

        tags = [f"s{i:03d}" for i in range(args.creates)]
        started = time.monotonic()
        cpu_started = time.process_time()
        with counting(cloud, counters):
            answers = _all_at_once(
                args.creates, lambda i: api.post("/clusters", dict(body, tag=tags[i])))
            posted = time.monotonic() - started
            cloud.wait_for_executions(timeout=TIMEOUT_SECONDS)
        wall = time.monotonic() - started
        cpu = time.process_time() - cpu_started
        refused = [a for a in answers if isinstance(a, Exception)]
        operations = [api.get(f"/operations/{a['operationId']}")
                      for a in answers if not isinstance(a, Exception)]

        duplicate = _all_at_once(
            args.duplicates, lambda _i: api.post("/clusters", dict(body, tag="twin")))
        cloud.wait_for_executions(timeout=TIMEOUT_SECONDS)
        twins = api.get("/operations", clusterTag="twin", limit=100)["operations"]

    succeeded = [o for o in operations if o["status"] == "SUCCEEDED"]
    durations = [_duration(o) for o in operations]
    store = Counter({k.split(":", 1)[1]: v for k, v in counters.aws.items()
                     if k.startswith("dynamodb:")})
    stepfunctions = sum(v for k, v in counters.aws.items()
                        if k.startswith(("states:", "stepfunctions:")))
    n = max(1, args.creates)

    print(f"{args.creates} creates at once (the demo request, a tag each)")
    print(f"  wall time: {wall:.1f} s from the first POST to the last execution's end "
          f"(the {args.creates} POSTs answered within {posted:.1f} s); goal {GOAL_SECONDS:.0f} s: "
          f"{'met' if wall <= GOAL_SECONDS else 'NOT met'}")
    print(f"  CPU time of this process meanwhile: {cpu:.1f} s; a lone create took "
          f"{lone_wall:.1f} s wall")
    print(f"  SUCCEEDED: {len(succeeded)} of {args.creates}"
          + (f"; refused at POST: {len(refused)} ({refused[0]})" if refused else ""))
    for operation in operations:
        if operation["status"] != "SUCCEEDED":
            print(f"    {operation['clusterTag']}: {operation['status']} {operation.get('error')}")
    if durations:
        print(f"  recorded duration: min {min(durations):.0f} s, median "
              f"{statistics.median(durations):.0f} s, max {max(durations):.0f} s "
              f"(a lone create: {_duration(lone):.0f} s)")
    print(f"  per create: {sum(counters.aws.values()) / n:.1f} AWS calls, "
          f"{sum(store.values()) / n:.1f} DynamoDB calls, "
          f"{sum(counters.lambdas.values()) / n:.1f} Lambda invocations, "
          f"{stepfunctions / n:.1f} Step Functions API calls")
    for action, calls in sorted(store.items(), key=lambda kv: -kv[1]):
        print(f"    dynamodb {action:<20} {calls / n:6.1f}")

    accepted = [a for a in duplicate if not isinstance(a, Exception)]
    conflicts = [a for a in duplicate if isinstance(a, ApiError) and a.status == 409]
    print(f"{args.duplicates} creates of one tag at once: {len(accepted)} accepted, "
          f"{len(conflicts)} refused with 409, {len(twins)} operation(s) for the tag")

    failed = (len(succeeded) != args.creates or refused
              or len(accepted) != 1 or len(twins) != 1
              or len(conflicts) != args.duplicates - 1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
