"""Managed features measured on the local cloud: what a read and each toggle cost.

Creates one cluster (the demo request), then through the REST API reads the features and turns
each feature on and off, one after the other, and prints for each:

* virtual: virtual seconds from start to end, and per stage (the add-ons' and HyperPod's own
  times on the emulator's clock);
* states / lambdas / aws / table: Step Functions state transitions, Lambda invocations and the
  AWS calls of the functions (the table's reads and writes apart);
* api ms: the real time of the REST call on this machine (a GET reads every feature from AWS
  and Kubernetes; a PATCH reads them too, then records and starts the operation).

    .venv/bin/python bench/features.py

Virtual times and counts do not depend on this machine; the real times do.
"""

from __future__ import annotations

import sys
import time
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from bench.capacity import Tally, _seconds, tallying, transitions  # noqa: E402
from hypd_cli.api_client import ApiClient  # noqa: E402
from hypd_cli.demo import DEMO_BUCKET, create_demo_bucket, demo_request, follow  # noqa: E402
from hypd_cli.local import local_parameters  # noqa: E402
from hypd_local.cloud import LocalCloud  # noqa: E402

TAG = "bench"
TOGGLES: list[tuple[str, dict[str, Any]]] = [
    ("training operator on", {"trainingOperator": {"enabled": True}}),
    ("training operator off", {"trainingOperator": {"enabled": False}}),
    # With the TLS bucket hypd makes (none named), as the CLI's hints turn it on.
    ("inference operator on", {"inferenceOperator": {"enabled": True}}),
    ("inference operator off", {"inferenceOperator": {"enabled": False}}),
    ("tiered checkpointing on", {"tieredCheckpointing": {"enabled": True, "memoryPercent": 20}}),
    ("tiered checkpointing off", {"tieredCheckpointing": {"enabled": False}}),
    ("observability on", {"observability": {"enabled": True}}),
    ("observability off", {"observability": {"enabled": False}}),
    ("task governance on", {"taskGovernance": {"enabled": True, "fairShare": True}}),
    ("task governance off", {"taskGovernance": {"enabled": False}}),
    ("all five on", {
        "trainingOperator": {"enabled": True},
        "inferenceOperator": {"enabled": True},
        "tieredCheckpointing": {"enabled": True}, "observability": {"enabled": True},
        "taskGovernance": {"enabled": True}}),
]


def main() -> int:
    started = time.monotonic()
    rows: list[tuple[Any, ...]] = []
    template = ROOT / "template.yaml"
    with redirect_stdout(StringIO()), LocalCloud(
        template, parameters=local_parameters(template)
    ) as cloud:
        create_demo_bucket(cloud)
        api = ApiClient(cloud.api_url)
        created = follow(api, cloud, api.post("/clusters", demo_request(api, TAG, DEMO_BUCKET))
                         ["operationId"], timeout=300)
        assert created["status"] == "SUCCEEDED", created.get("error")
        tally = Tally()
        with tallying(cloud, tally):
            before = time.monotonic()
            api.call("getFeatures", tag=TAG)
            rows.append(("GET features", 0.0, 0, tally.lambdas, tally.calls, tally.table_calls,
                         (time.monotonic() - before) * 1000, ""))
            for label, body in TOGGLES:
                tally.reset()
                before = time.monotonic()
                accepted = api.call("setFeatures", tag=TAG, body=body)
                api_ms = (time.monotonic() - before) * 1000
                done = follow(api, cloud, str(accepted["operationId"]), timeout=600)
                assert done["status"] == "SUCCEEDED", (label, done.get("error"))
                total = sum(_seconds(s["startedAt"], s["endedAt"]) for s in done["stages"])
                per_stage = " ".join(
                    f"{s['name']}={_seconds(s['startedAt'], s['endedAt']):.0f}"
                    for s in done["stages"]
                )
                rows.append((label, total, transitions(cloud, done["executionArn"]),
                             tally.lambdas, tally.calls, tally.table_calls, api_ms, per_stage))
    print(f"{'operation':<26}{'virtual':>8}{'states':>8}{'lambdas':>8}{'aws':>6}{'table':>7}"
          f"{'api ms':>8}  stages (virtual s)")
    for row in rows:
        print(f"{row[0]:<26}{row[1]:>8.0f}{row[2]:>8}{row[3]:>8}{row[4]:>6}{row[5]:>7}"
              f"{row[6]:>8.0f}  {row[7]}")
    print(f"\nreal time: {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
