"""What hypd costs on AWS at list prices: one create, one scale, one teardown, an idle month.

On a fresh local cloud whose virtual clock is frozen (it moves only on Wait states and
back-offs), runs through the REST API:

* create: the demo request (`hypd_cli.demo.demo_request`: one ml.g6.4xlarge on-demand group,
  S3 storage), its catalogue reads included;
* scale: PATCH /clusters/{tag}/instance-groups/gpu {"count": 2} (as bench/capacity.py does);
* teardown: DELETE /clusters/{tag} (as bench/teardown.py does);

and counts for each, from the request that starts it until every execution, event delivery and
asynchronous invocation it caused has ended:

* Step Functions state transitions: the StateEntered events of the operation's execution
  history (Standard workflows bill per transition);
* Lambda invocations per function, with the function's memory from template.yaml, and GB-seconds
  two ways: the handler's real time on this machine (an upper-bound proxy: this machine is
  not Lambda and is busy) and a floor of 1 ms per invocation (Lambda's billing granularity);
* DynamoDB requests by operation, made by hypd's functions: GetItem and Query are reads (hypd
  reads with ConsistentRead=True: 1 RRU per 4 KB), PutItem, UpdateItem and DeleteItem are
  writes (1 WRU per 1 KB), TransactWriteItems 2 WRU per item; each request is priced at one
  unit (or two) per item, a floor: larger items cost more units;
* API Gateway requests: every REST request the client made (the start, the catalogue reads and
  the GET /operations polls; the polls depend on how often a client looks);
* EventBridge: the events the rules delivered to hypd (AWS service events, free to deliver);
* CloudWatch Logs: what the handlers wrote (their log lines and embedded metrics), captured;
* every other AWS call hypd's functions made (free in general), listed.

Then an idle deployment's month, derived from template.yaml (schedules, KMS keys, alarms,
dashboards, secrets, SnapStart, the table), beside one always-on management instance.

    .venv/bin/python bench/cost.py

Exit status 1 when an operation does not succeed. Counts do not depend on this machine; the
real times (and so the upper-bound GB-seconds) do. Prices: us-east-1 list prices, below.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from bench.capacity import Invoke, watching  # noqa: E402
from bench.teardown import history  # noqa: E402
from hypd_cli.api_client import ApiClient  # noqa: E402
from hypd_cli.demo import DEMO_BUCKET, create_demo_bucket, demo_request, follow  # noqa: E402
from hypd_cli.local import local_parameters  # noqa: E402
from hypd_local.calls import Call  # noqa: E402
from hypd_local.clock import VirtualClock  # noqa: E402
from hypd_local.cloud import LocalCloud  # noqa: E402
from hypd_local.template import describe_functions, read_template, resources_of_type  # noqa: E402

TAG = "cost"
TEMPLATE = ROOT / "template.yaml"
HOURS_PER_MONTH = 730
"""AWS's pricing pages' month."""

# us-east-1 list prices, USD, read 2026-12-03 (x86_64, no free tier applied).
# https://aws.amazon.com/step-functions/pricing/ : Standard workflows, per state transition
# (4,000 free per month).
SFN_PER_TRANSITION = 0.025 / 1000
# https://aws.amazon.com/lambda/pricing/ : x86 duration per GB-second (first tier) and requests
# (1M requests and 400,000 GB-s free per month).
LAMBDA_PER_GB_SECOND = 0.0000166667
LAMBDA_PER_REQUEST = 0.20 / 1_000_000
# https://aws.amazon.com/dynamodb/pricing/on-demand/ : on-demand after the 1 November 2024
# reduction (halved from $1.25 / $0.25). AWS's pricing pages render their rates client-side, so
# they could not be read here: corroborated by secondary sources (airbyte.com, "DynamoDB
# pricing", 2025-07-21, US East), so printed as such.
DYNAMODB_PER_WRU = 0.625 / 1_000_000
DYNAMODB_PER_RRU = 0.125 / 1_000_000
DYNAMODB_PRICE_NOTE = "from secondary sources: AWS's page renders its rates client-side"
DYNAMODB_STORAGE_PER_GB_MONTH = 0.25
DYNAMODB_PITR_PER_GB_MONTH = 0.20
# https://aws.amazon.com/api-gateway/pricing/ : REST APIs, first 333 million requests a month.
APIGW_REST_PER_REQUEST = 3.50 / 1_000_000
# https://aws.amazon.com/cloudwatch/pricing/ : logs ingestion (standard class); a standard
# resolution alarm per metric; a dashboard per month (the first 3 of an account are free).
LOGS_PER_GB = 0.50
ALARM_PER_MONTH = 0.10
DASHBOARD_PER_MONTH = 3.00
# https://aws.amazon.com/kms/pricing/ : a customer managed key per month (requests extra).
KMS_KEY_PER_MONTH = 1.00
# https://aws.amazon.com/secrets-manager/pricing/ : a secret per month.
SECRET_PER_MONTH = 0.40
# https://aws.amazon.com/lambda/pricing/ (SnapStart, Python and .NET): the snapshot's cache per
# GB-second while the version is active (memory size), and each restore per GB. The same two
# rates are quoted by secondary sources (awsnegotiations.com, "Lambda SnapStart cost impact",
# 2026-05); AWS's page renders its rates client-side and could not be read here.
SNAPSTART_CACHE_PER_GB_SECOND = 0.0000015046
SNAPSTART_RESTORE_PER_GB = 0.0001397998
# The seed's shape: one always-on EC2 instance running the management container.
# https://aws.amazon.com/ec2/pricing/on-demand/ t3.medium Linux; https://aws.amazon.com/ebs/pricing/
# gp3 per GB-month; https://aws.amazon.com/vpc/pricing/ public IPv4 address per hour (Feb 2024).
INSTANCE_TYPE, INSTANCE_PER_HOUR = "t3.medium", 0.0416
VOLUME_GB, GP3_PER_GB_MONTH = 30, 0.08
PUBLIC_IPV4_PER_HOUR = 0.005

READS = {"GetItem": 1, "Query": 1, "BatchGetItem": 1, "Scan": 1}
WRITES = {"PutItem": 1, "UpdateItem": 1, "DeleteItem": 1, "BatchWriteItem": 1}
TRANSACTIONS = {"TransactWriteItems": 2, "TransactGetItems": 2}
"""Request units per request (per item for transactions: counted per request here, a floor)."""


@dataclass
class Tally:
    """What one operation caused, attributed on the invoking thread (a handler runs on its
    invoker's, and so do its AWS calls)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    invocations: Counter[str] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)
    """Real seconds of each function's handler on this machine."""
    calls: Counter[str] = field(default_factory=Counter)
    """service:Operation of the calls hypd's functions made."""
    requests: Counter[str] = field(default_factory=Counter)
    """The REST requests, 'METHOD resource'."""
    events: Counter[str] = field(default_factory=Counter)
    """EventBridge events delivered to hypd's functions, by detail-type."""
    current: threading.local = field(default_factory=threading.local)

    def reset(self) -> None:
        with self.lock:
            for counter in (self.invocations, self.seconds, self.calls, self.requests,
                            self.events):
                counter.clear()


@contextmanager
def tallying(cloud: LocalCloud, tally: Tally) -> Iterator[None]:
    def on_call(call: Call) -> None:
        if getattr(tally.current, "depth", 0):
            with tally.lock:
                tally.calls[f"{call.service}:{call.operation}"] += 1

    def invoke(original: Invoke, function: Any, event: Any) -> Any:
        spec = function if hasattr(function, "logical_id") else cloud.lambdas.find(function)
        name = str(spec.logical_id)
        with tally.lock:
            tally.invocations[name] += 1
            if isinstance(event, dict) and "httpMethod" in event:
                tally.requests[f"{event['httpMethod']} {event.get('resource')}"] += 1
            elif isinstance(event, dict) and "detail-type" in event:
                tally.events[str(event["detail-type"])] += 1
        tally.current.depth = getattr(tally.current, "depth", 0) + 1
        outer_nested = getattr(tally.current, "nested", 0.0)
        tally.current.nested = 0.0
        started = time.monotonic()
        try:
            return original(function, event)
        finally:
            elapsed = time.monotonic() - started
            own = elapsed - tally.current.nested  # an invocation inside it is its own
            tally.current.nested = outer_nested + elapsed
            tally.current.depth -= 1
            with tally.lock:
                tally.seconds[name] += own

    with watching(cloud, invoke, on_call):
        yield


@dataclass
class Measured:
    label: str
    request: str
    status: str
    transitions: int
    invocations: Counter[str]
    seconds: Counter[str]
    calls: Counter[str]
    requests: Counter[str]
    events: Counter[str]
    real_seconds: float
    executions: int
    log_bytes: int


def executions(cloud: LocalCloud) -> set[str]:
    """Every execution of every state machine of the stack."""
    sfn = cloud.client("stepfunctions")
    machines = [m["stateMachineArn"] for page in sfn.get_paginator("list_state_machines")
                .paginate() for m in page["stateMachines"]]
    return {e["executionArn"] for arn in machines for page in sfn.get_paginator(
        "list_executions").paginate(stateMachineArn=arn) for e in page["executions"]}


def measure_all() -> tuple[list[Measured], int, int]:
    """The three operations, and the table's items and bytes (JSON, an estimate) at the end."""
    tally = Tally()
    measured: list[Measured] = []
    quiet = StringIO()
    with redirect_stdout(quiet), LocalCloud(
        TEMPLATE, parameters=local_parameters(TEMPLATE), clock=VirtualClock(ticking=False)
    ) as cloud:
        create_demo_bucket(cloud)
        api = ApiClient(cloud.api_url)
        operations: list[tuple[str, str, Callable[[], dict[str, Any]]]] = [
            ("create", "POST /clusters (the demo request)",
             lambda: api.post("/clusters", demo_request(api, TAG, DEMO_BUCKET))),
            ("scale", "PATCH /clusters/cost/instance-groups/gpu {count: 1 -> 2}",
             lambda: api.call("updateInstanceGroup", tag=TAG, name="gpu",
                              body={"count": 2})),
            ("teardown", "DELETE /clusters/cost",
             lambda: api.call("deleteCluster", tag=TAG)),
        ]
        with tallying(cloud, tally):
            for label, described, start in operations:
                tally.reset()
                before, logged = executions(cloud), len(quiet.getvalue().encode())
                began = time.monotonic()
                accepted = start()
                done = follow(api, cloud, str(accepted["operationId"]), timeout=600)
                cloud.wait_for_executions(timeout=120)
                real = time.monotonic() - began
                with tally.lock:
                    counts = (Counter(tally.invocations), Counter(tally.seconds),
                              Counter(tally.calls), Counter(tally.requests),
                              Counter(tally.events))
                started = executions(cloud) - before
                entered = sum(1 for arn in started for e in history(cloud, arn)
                              if e["type"].endswith("StateEntered"))
                measured.append(Measured(label, described, str(done["status"]), entered,
                                         *counts, real, len(started),
                                         len(quiet.getvalue().encode()) - logged))
                if done["status"] != "SUCCEEDED":
                    break
        items = [item for page in cloud.client("dynamodb").get_paginator("scan").paginate(
            TableName=table_name(cloud)) for item in page["Items"]]
    return measured, len(items), sum(len(json.dumps(item)) for item in items)


def table_name(cloud: LocalCloud) -> str:
    names = cloud.client("dynamodb").list_tables()["TableNames"]
    return str(names[0])


def memory_mb() -> dict[str, int]:
    return {spec.logical_id: spec.memory_size for spec in describe_functions(TEMPLATE)}


def usd(value: float) -> str:
    return f"${value:.6f}" if value < 0.01 else f"${value:,.4f}"


@dataclass
class Priced:
    rows: list[tuple[str, str, float]]
    """(what, quantity, USD)."""

    @property
    def total(self) -> float:
        return sum(row[2] for row in self.rows)


def n_units(table: Counter[str], prefix: str) -> int:
    return sum(n * TRANSACTIONS[op] for op, n in table.items() if op.startswith(prefix))


def price(m: Measured, memory: dict[str, int]) -> tuple[Priced, Priced, dict[str, int]]:
    """The operation's cost with Lambda at its real time (upper) and at 1 ms (floor)."""
    invocations = sum(m.invocations.values())
    gb_upper = sum(m.seconds[f] * memory[f] / 1024 for f in m.invocations)
    gb_floor = sum(n * 0.001 * memory[f] / 1024 for f, n in m.invocations.items())
    table = Counter({key.split(":", 1)[1]: n for key, n in m.calls.items()
                     if key.startswith("dynamodb:")})
    units = {"rru": sum(n * READS.get(op, 0) for op, n in table.items())
             + n_units(table, "TransactGet"),
             "wru": sum(n * WRITES.get(op, 0) for op, n in table.items())
             + n_units(table, "TransactWrite")}
    rest = sum(m.requests.values())
    common = [
        (f"Step Functions state transitions ({m.executions} exec.)", f"{m.transitions}",
         m.transitions * SFN_PER_TRANSITION),
        ("Lambda requests", f"{invocations}", invocations * LAMBDA_PER_REQUEST),
        ("DynamoDB read request units (strong)", f"{units['rru']}",
         units["rru"] * DYNAMODB_PER_RRU),
        ("DynamoDB write request units", f"{units['wru']}", units["wru"] * DYNAMODB_PER_WRU),
        ("API Gateway REST requests", f"{rest}", rest * APIGW_REST_PER_REQUEST),
        ("EventBridge events (AWS service events)", f"{sum(m.events.values())}", 0.0),
        ("CloudWatch Logs: handlers' output (KB)", f"{m.log_bytes / 1024:.1f}",
         m.log_bytes / 1024**3 * LOGS_PER_GB),
    ]
    upper = Priced([*common[:2], ("Lambda GB-seconds (real time here)", f"{gb_upper:.3f}",
                                  gb_upper * LAMBDA_PER_GB_SECOND), *common[2:]])
    floor = Priced([*common[:2], ("Lambda GB-seconds (1 ms floor)", f"{gb_floor:.4f}",
                                  gb_floor * LAMBDA_PER_GB_SECOND), *common[2:]])
    return upper, floor, units


def report_operations(measured: list[Measured], memory: dict[str, int]) -> list[str]:
    failures = []
    totals: list[tuple[str, float, float]] = []
    for m in measured:
        upper, floor, _ = price(m, memory)
        print(f"== {m.label}: {m.request}: {m.status} (real time here {m.real_seconds:.0f} s)")
        if m.status != "SUCCEEDED":
            failures.append(f"{m.label} {m.status}")
        print(f"   {'what':<42}{'quantity':>12}{'USD':>14}")
        for (what, quantity, cost), (_, floor_quantity, floor_cost) in zip(
                upper.rows, floor.rows, strict=True):
            print(f"   {what:<42}{quantity:>12}{usd(cost):>14}")
            if floor_cost != cost:
                print(f"   {'  floor: ' + floor.rows[2][0]:<42}{floor_quantity:>12}"
                      f"{usd(floor_cost):>14}")
        print(f"   {'total (Lambda at real time here)':<42}{'':>12}{usd(upper.total):>14}")
        print(f"   {'total (Lambda at the 1 ms floor)':<42}{'':>12}{usd(floor.total):>14}")
        lambdas = ", ".join(f"{f} {n} x {memory[f]} MB ({m.seconds[f] / n * 1000:.0f} ms each)"
                            for f, n in sorted(m.invocations.items()))
        print(f"   Lambda: {lambdas}")
        table = {k.split(":", 1)[1]: n for k, n in sorted(m.calls.items())
                 if k.startswith("dynamodb:")}
        print("   DynamoDB: " + ", ".join(f"{op} {n}" for op, n in table.items()))
        print("   REST: " + ", ".join(f"{r} {n}" for r, n in sorted(m.requests.items())))
        if m.events:
            print("   EventBridge: " + ", ".join(f"{t} {n}" for t, n in sorted(m.events.items())))
        other = sorted((k, n) for k, n in m.calls.items() if not k.startswith("dynamodb:"))
        print(f"   AWS calls by hypd (free; {sum(n for _, n in other)}): "
              + ", ".join(f"{k} {n}" for k, n in other))
        print()
        totals.append((m.label, upper.total, floor.total))
    print(f"{'operation':<12}{'USD (Lambda at real time here)':>34}{'USD (1 ms floor)':>20}")
    for label, high, low in totals:
        print(f"{label:<12}{usd(high):>34}{usd(low):>20}")
    return failures


def schedules(template: dict[str, Any]) -> list[str]:
    """The template's scheduled triggers: what runs with no operation."""
    found = []
    for kind in ("AWS::Serverless::Function", "AWS::Serverless::StateMachine"):
        for logical_id, resource in resources_of_type(template, kind).items():
            for name, event in ((resource.get("Properties") or {}).get("Events") or {}).items():
                if event.get("Type") in ("Schedule", "ScheduleV2"):
                    found.append(f"{logical_id}.{name}")
    for kind in ("AWS::Events::Rule", "AWS::Scheduler::Schedule"):
        for logical_id, resource in resources_of_type(template, kind).items():
            if (resource.get("Properties") or {}).get("ScheduleExpression"):
                found.append(logical_id)
    return found


def snapstart_functions(template: dict[str, Any]) -> list[str]:
    globals_ = ((template.get("Globals") or {}).get("Function") or {}).get("SnapStart") or {}
    return [logical_id for logical_id, resource in
            resources_of_type(template, "AWS::Serverless::Function").items()
            if ((resource.get("Properties") or {}).get("SnapStart") or globals_).get("ApplyOn")
            == "PublishedVersions"]


def report_idle(items: int, table_bytes: int, memory: dict[str, int]) -> None:
    template = read_template(TEMPLATE)

    def count(kind: str) -> int:
        return len(resources_of_type(template, kind))

    keys, alarms = count("AWS::KMS::Key"), count("AWS::CloudWatch::Alarm")
    dashboards, secrets = count("AWS::CloudWatch::Dashboard"), count(
        "AWS::SecretsManager::Secret")
    tables = count("AWS::DynamoDB::Table")
    scheduled = schedules(template)
    snap = snapstart_functions(template)
    seconds = HOURS_PER_MONTH * 3600
    gb = max(table_bytes / 1e9, 0.0)
    rows: list[tuple[str, str, float]] = [
        ("scheduled rules (none: nothing runs idle)" if not scheduled else
         f"scheduled rules: {', '.join(scheduled)} (not priced)", f"{len(scheduled)}", 0.0),
        ("KMS customer managed keys", f"{keys}", keys * KMS_KEY_PER_MONTH),
        ("CloudWatch alarms (standard resolution)", f"{alarms}", alarms * ALARM_PER_MONTH),
        ("CloudWatch dashboards (3 free per account)", f"{dashboards}",
         dashboards * DASHBOARD_PER_MONTH),
        ("Secrets Manager secrets", f"{secrets}", secrets * SECRET_PER_MONTH),
        (f"DynamoDB storage ({tables} table, {items} items, ~{table_bytes / 1024:.0f} KB)",
         f"{gb:.6f} GB", gb * DYNAMODB_STORAGE_PER_GB_MONTH),
        ("DynamoDB point-in-time recovery", f"{gb:.6f} GB", gb * DYNAMODB_PITR_PER_GB_MONTH),
    ]
    for logical_id in snap:
        gib = memory[logical_id] / 1024
        rows.append((f"SnapStart cache: {logical_id} ({memory[logical_id]} MB, secondary sources)",
                     f"{gib * seconds:,.0f} GB-s", gib * seconds * SNAPSTART_CACHE_PER_GB_SECOND))
    rows.append(("SQS, SNS, log groups, API, state machines, functions, rules idle",
                 "-", 0.0))
    idle = sum(row[2] for row in rows)
    print(f"\n== an idle deployment's month ({HOURS_PER_MONTH} h; derived from template.yaml)")
    print(f"   {'what':<62}{'quantity':>16}{'USD':>11}")
    for what, quantity, cost in rows:
        print(f"   {what:<62}{quantity:>16}{usd(cost):>11}")
    print(f"   {'total':<62}{'':>16}{usd(idle):>11}")
    free = "total if the dashboard is one of the account's 3 free"
    print(f"   {free:<62}{'':>16}"
          f"{usd(idle - dashboards * DASHBOARD_PER_MONTH):>11}")

    instance = INSTANCE_PER_HOUR * HOURS_PER_MONTH
    volume = VOLUME_GB * GP3_PER_GB_MONTH
    ipv4 = PUBLIC_IPV4_PER_HOUR * HOURS_PER_MONTH
    print(f"\n== beside it: one always-on management instance (the seed's shape; assumed: "
          f"{INSTANCE_TYPE} on-demand Linux, {VOLUME_GB} GB gp3, one public IPv4)")
    for what, cost in ((f"{INSTANCE_TYPE} x {HOURS_PER_MONTH} h at ${INSTANCE_PER_HOUR}/h",
                        instance),
                       (f"gp3 {VOLUME_GB} GB at ${GP3_PER_GB_MONTH}/GB-month", volume),
                       (f"public IPv4 x {HOURS_PER_MONTH} h at ${PUBLIC_IPV4_PER_HOUR}/h", ipv4)):
        print(f"   {what:<62}{'':>16}{usd(cost):>11}")
    print(f"   {'total':<62}{'':>16}{usd(instance + volume + ipv4):>11}"
          f"   (without the IPv4: {usd(instance + volume)})")


def main() -> int:
    started = time.monotonic()
    memory = memory_mb()
    measured, items, table_bytes = measure_all()
    print("us-east-1 list prices (x86_64, no free tier): Step Functions Standard $0.025 per "
          "1,000 transitions; Lambda $0.0000166667 per GB-s, $0.20 per 1M requests; "
          f"DynamoDB on-demand $0.625 per 1M WRU, $0.125 per 1M RRU ({DYNAMODB_PRICE_NOTE}); "
          "API Gateway REST $3.50 per 1M")
    print("local real time is not Lambda time: GB-seconds are shown at this machine's handler "
          "time (an upper-bound proxy) and at the 1 ms floor per invocation; DynamoDB at one "
          "unit per request (items <= 1 KB written, <= 4 KB read: a floor), reads strongly "
          "consistent as hypd makes them\n")
    failures = report_operations(measured, memory)
    if len(measured) < 3:
        failures.append("an operation failed: the later ones did not run")
    report_idle(items, table_bytes, memory)
    print(f"\nnot counted: Lambda's own log lines (START/END/REPORT) and the state machines' "
          f"ERROR-level logs (${LOGS_PER_GB}/GB: 1 MB more per operation would be "
          f"${LOGS_PER_GB / 1024:.5f}), SnapStart restores (${SNAPSTART_RESTORE_PER_GB} per GB, "
          "secondary sources, once per new execution environment), X-Ray traces, KMS requests, "
          "SNS/SQS (negligible), data transfer; and the cluster's own costs, the same whatever "
          "the control plane: HyperPod instances, the EKS control plane ($0.10/h), FSx, NAT "
          "gateways")
    print(f"real time of the whole run on this machine: {time.monotonic() - started:.0f} s")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
