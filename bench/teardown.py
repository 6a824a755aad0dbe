"""The delete-cluster operation measured on the local cloud: time, looks and deletions per stage.

Creates cluster `train` with FSx storage, the five managed features, team `ml`, the inference
endpoint `falcon` and the running training job `llama-fsdp` (the end-to-end test's cluster,
`tests/e2e/teardown.py`), then deletes it through the REST API (DELETE /clusters/train?force=true,
the real DeleteClusterStateMachine) and prints, per stage:

* start, recorded: when the stage started after the teardown's start, and how long it lasted,
  from the operation's record (the stage's startedAt / endedAt), in virtual time;
* own: the virtual seconds of the stage's own Wait states (the execution history). The clock is
  frozen: it moves only on Wait states and back-offs, never while a task runs, so a stage lasts
  exactly its own waits unless something else moved the clock meanwhile;
* skew: from the end of the stage it follows to its own end, the virtual time beyond its own
  waits (something else moving the clock: 0 when the Parallel's branches overlap as they
  should);
* looks: the stage's task invocations (its first look and every "look again"; "a/b" when a
  Lambda error was retried: b invocations for a task states); attempts: the stage's attempts
  in the record (a retry of the operation adds one);
* aws: the AWS calls of those invocations (not the operation table's DynamoDB calls, nor
  Kubernetes requests), and the Delete* calls among them;
* planned / deleted: the resources the plan listed for the stage (recorded in the operation's
  input by the DELETE) and those the stage reported deleted; they must be the same.

Then the teardown's total virtual time; the stages one after another (the sum of their own
times) against the critical path with the Parallel branches (addons -> eks beside storage),
and what the Parallel saves; what it saved on this local cloud (the branches of a Parallel
share one timeline there, as on AWS: `hypd_local.clock.Cohort`), and the recorded total against
the critical path; and a leftover check: every emulated service lists nothing of the cluster
(the users' buckets stay).

    .venv/bin/python bench/teardown.py

Exit status 1 when the operation does not succeed, anything is left, a stage deleted other
than what was planned, or the total exceeds the critical path by a minute or more. The
durations are the local cloud's assumptions (docs/teardown.md,
"Local cloud"), not measurements of AWS; the real time printed last is this machine's.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field
from datetime import datetime
from io import StringIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from bench.capacity import Invoke, watching  # noqa: E402
from hypd_cli.api_client import ApiClient  # noqa: E402
from hypd_cli.local import local_parameters  # noqa: E402
from hypd_local.calls import Call  # noqa: E402
from hypd_local.clock import VirtualClock  # noqa: E402
from hypd_local.cloud import LocalCloud  # noqa: E402
from statemachines import generate  # noqa: E402
from tests.e2e.capacity import TAG, run  # noqa: E402
from tests.e2e.teardown import (  # noqa: E402
    EVERY_FEATURE,
    TEARDOWN_STAGES,
    by_stage,
    deleted_by_stage,
    full_cluster,
    world,
)
from tests.e2e.test_workloads import TLS_BUCKET, in_phase, wait_job  # noqa: E402

_STATES = generate.States()
generate.delete_cluster_definition(_STATES)
STAGE_OF_STATE = dict(_STATES.stage_of)
"""Each state of DeleteClusterStateMachine with its stage."""
STAGE_TASK = re.compile(r"^teardown-(?P<stage>[a-z]+)(?:-check)?$")
TABLE_SERVICE = "dynamodb"
KEPT_BUCKETS = ("team-data", TLS_BUCKET)
CHAIN_SLACK_SECONDS = 60
"""How much longer than its critical path the teardown may take (its tasks take no virtual
time on the frozen clock: the slack is for the Lambda retries' back-offs)."""


@dataclass
class PerStage:
    """Lambda invocations and AWS calls of each stage's tasks (attributed on the invoking
    thread: a handler runs on its caller's)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    invocations: Counter[str] = field(default_factory=Counter)
    calls: dict[str, Counter[str]] = field(default_factory=dict)
    current: threading.local = field(default_factory=threading.local)


@contextmanager
def per_stage(cloud: LocalCloud, tally: PerStage) -> Iterator[None]:
    def on_call(call: Call) -> None:
        stage = getattr(tally.current, "stage", None)
        if stage is not None:
            with tally.lock:
                tally.calls.setdefault(stage, Counter())[f"{call.service}:{call.operation}"] += 1

    def invoke(original: Invoke, function: Any, event: Any) -> Any:
        payload = event.get("Payload", event) if isinstance(event, dict) else {}
        matched = STAGE_TASK.match(str(payload.get("task") if isinstance(payload, dict) else ""))
        stage = matched["stage"] if matched else None
        if stage is not None:
            with tally.lock:
                tally.invocations[stage] += 1
        outer, tally.current.stage = getattr(tally.current, "stage", None), stage
        try:
            return original(function, event)
        finally:
            tally.current.stage = outer

    with watching(cloud, invoke, on_call):
        yield


def history(cloud: LocalCloud, execution_arn: str) -> list[dict[str, Any]]:
    sfn = cloud.client("stepfunctions")
    return [event for page in sfn.get_paginator("get_execution_history").paginate(
        executionArn=execution_arn) for event in page["events"]]


def own_waits_and_looks(events: list[dict[str, Any]]) -> tuple[Counter[str], Counter[str]]:
    """Per stage: the seconds its Wait states waited, and its task states entered (looks)."""
    waited: Counter[str] = Counter()
    looks: Counter[str] = Counter()
    for event in events:
        details = event.get("stateEnteredEventDetails") or {}
        stage = STAGE_OF_STATE.get(str(details.get("name")))
        if stage is None:
            continue
        if event["type"] == "WaitStateEntered":
            waited[stage] += int(json.loads(details["input"])["step"]["waitSeconds"])
        elif event["type"] == "TaskStateEntered":
            looks[stage] += 1
    return waited, looks


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _span(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


@dataclass
class Figures:
    operation: dict[str, Any]
    plan: dict[str, Any]
    job_phase: str
    blockers: list[str]
    own: Counter[str]
    looks: Counter[str]
    tally: PerStage
    services: list[str]
    """What the leftover check asked (`tests.e2e.teardown.world`)."""
    left: dict[str, list[str]]
    buckets_kept: list[str]
    setup_seconds: float
    teardown_seconds: float


def measure() -> Figures:
    template = ROOT / "template.yaml"
    tally = PerStage()
    with redirect_stdout(StringIO()), LocalCloud(
        template, parameters=local_parameters(template), clock=VirtualClock(ticking=False)
    ) as cloud:
        started = time.monotonic()
        api = ApiClient(cloud.api_url)
        full_cluster(api, cloud, EVERY_FEATURE)
        job = wait_job(api, cloud, "llama-fsdp", in_phase("Running"))
        blockers = [b["code"] for b in api.call("getTeardownPlan", tag=TAG)["blockers"]]
        plan = api.call("getTeardownPlan", tag=TAG, force=True)
        between = time.monotonic()
        with per_stage(cloud, tally):
            operation = run(api, cloud, api.call("deleteCluster", tag=TAG, force=True))
            cloud.wait_for_executions(timeout=120)
        ended = time.monotonic()
        own, looks = own_waits_and_looks(history(cloud, operation["executionArn"]))
        s3 = cloud.client("s3")
        kept = [b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"] in KEPT_BUCKETS]
        after = world(cloud)
    left = {service: names for service, names in after.items() if names}
    return Figures(operation, plan, str(job["phase"]), blockers, own, looks, tally, list(after),
                   left, kept, between - started, ended - between)


def predecessors(branches: list[list[str]]) -> dict[str, list[str]]:
    """The stages each stage starts after (the first: none; a branch's first stage: the stage
    before the Parallel; the stage after the Parallel: every branch's last)."""
    branch_of = {stage: branch for branch in branches for stage in branch}
    before: dict[str, list[str]] = {}
    last: list[str] = []
    entry: list[str] | None = None
    for stage in TEARDOWN_STAGES:
        branch = branch_of.get(stage)
        if branch is None:
            before[stage], last = last, [stage]
            continue
        if entry is None:
            entry, last = last, [b[-1] for b in branches]
        index = branch.index(stage)
        before[stage] = [branch[index - 1]] if index else entry
    return before


def critical_path(own: Counter[str], branches: list[list[str]]
                  ) -> tuple[float, list[str], list[list[str]]]:
    """The longest chain of stages (the stages in order, the Parallel's longest branch), its
    length, and the other branches as long as that one."""
    in_branches = {stage for branch in branches for stage in branch}
    length = {tuple(b): sum(own[s] for s in b) for b in branches}
    longest = max(branches, key=lambda b: length[tuple(b)])
    path: list[str] = []
    for stage in TEARDOWN_STAGES:
        if stage not in in_branches:
            path.append(stage)
        elif stage == longest[0]:
            path.extend(longest)
    ties = [b for b in branches if b != longest and length[tuple(b)] == length[tuple(longest)]]
    return sum(own[s] for s in path), path, ties


def report(f: Figures) -> int:
    operation, failures = f.operation, []
    stages = {s["name"]: s for s in operation["stages"]}
    planned = by_stage([{"stage": stage, "resources": resources}
                        for stage, resources in operation["input"]["planned"].items()])
    deleted = deleted_by_stage(operation)
    branches: list[list[str]] = f.plan["parallel"]
    branch_of = {stage: " > ".join(b) for b in branches for stage in b}
    print(f"delete-cluster {operation['id']}: {operation['status']} (DELETE /clusters/{TAG}"
          f"?force=true; job llama-fsdp {f.job_phase}; without force: {', '.join(f.blockers)})")
    if operation["status"] != "SUCCEEDED" or not all(s["endedAt"] for s in stages.values()):
        for stage in operation["stages"]:
            print(f"  {stage['name']:<11}{stage['status']:<10} {stage.get('error') or ''}")
        print(f"FAILED: operation {operation['status']}: {operation.get('error')}")
        return 1
    origin = min(_at(s["startedAt"]) for s in stages.values())
    finish = max(_at(s["endedAt"]) for s in stages.values())

    print("virtual time, frozen clock: it moves only on Wait states and back-offs")
    header = (f"{'stage':<11}{'branch':<14}{'start':>7}{'recorded':>10}{'own':>8}{'skew':>7}"
              f"{'looks':>7}{'attempts':>9}{'aws':>6}{'planned':>9}{'deleted':>9}  delete calls")
    print(header)
    print("-" * len(header))
    after = predecessors(branches)
    for name in TEARDOWN_STAGES:
        stage = stages[name]
        recorded = (_at(stage["endedAt"]) - _at(stage["startedAt"])).total_seconds()
        ready = max([_at(stages[p]["endedAt"]) for p in after[name]],
                    default=_at(stage["startedAt"]))
        skew = (_at(stage["endedAt"]) - ready).total_seconds() - f.own[name]
        calls = f.tally.calls.get(name, Counter())
        aws = sum(n for key, n in calls.items() if not key.startswith(TABLE_SERVICE))
        deletes = " ".join(f"{key.split(':')[1]} {n}" for key, n in sorted(calls.items())
                           if key.split(":")[1].startswith("Delete")
                           and not key.startswith(TABLE_SERVICE))
        start = (_at(stage["startedAt"]) - origin).total_seconds()
        same = deleted.get(name, []) == planned.get(name, [])
        looks = str(f.looks[name]) if f.tally.invocations[name] == f.looks[name] else (
            f"{f.looks[name]}/{f.tally.invocations[name]}")  # Lambda retries: invocations
        print(f"{name:<11}{branch_of.get(name, '-'):<14}{_span(start):>7}{_span(recorded):>10}"
              f"{_span(f.own[name]):>8}{_span(skew):>7}{looks:>7}"
              f"{stage['attempts']:>9}{aws:>6}{len(planned.get(name, [])):>9}"
              f"{len(deleted.get(name, [])) if same else '!= plan':>9}  {deletes or '-'}")
        if stage["status"] != "SUCCEEDED":
            failures.append(f"stage {name} {stage['status']}")
        if not same:
            failures.append(f"stage {name} deleted {deleted.get(name)}, planned "
                            f"{planned.get(name)}")
    if by_stage(f.plan["steps"]) != planned:
        failures.append("the operation's planned resources differ from GET teardown-plan's")

    total = (finish - origin).total_seconds()
    one_by_one = sum(f.own[s] for s in TEARDOWN_STAGES)
    critical, path, ties = critical_path(f.own, branches)
    in_parallel = [s for b in branches for s in b]
    parallel_start = min(_at(stages[s]["startedAt"]) for s in in_parallel)
    parallel_end = max(_at(stages[s]["endedAt"]) for s in in_parallel)
    parallel_recorded = (parallel_end - parallel_start).total_seconds()
    lengths = ", ".join(f"{' > '.join(b)} {_span(sum(f.own[s] for s in b))}" for b in branches)
    print()
    print(f"teardown, recorded (first stage's start to last stage's end): {_span(total)}")
    print(f"stages one after another (sum of own):                       {_span(one_by_one)}")
    print(f"with the Parallel branches (critical path of own):            {_span(critical)}")
    print(f"the Parallel saves (sum - critical path):                     "
          f"{_span(one_by_one - critical)}  (branches: {lengths})")
    print(f"critical path: {' > '.join(path)}"
          + "".join(f" (branch {' > '.join(b)} as long)" for b in ties))
    saved_here = sum(f.own[s] for s in in_parallel) - parallel_recorded
    print(f"on this local cloud the Parallel lasted {_span(parallel_recorded)} (recorded) for "
          f"{_span(sum(f.own[s] for s in in_parallel))} of its stages' own waits: it saved "
          f"{_span(saved_here)}")
    print(f"recorded total - critical path: {_span(total - critical)} (goal: under "
          f"{_span(CHAIN_SLACK_SECONDS)}; the branches share one timeline, "
          "hypd_local.clock.Cohort)")
    if total - critical > CHAIN_SLACK_SECONDS:
        failures.append(f"the teardown took {_span(total)}, its critical path {_span(critical)}")
    print()
    if f.left:
        failures.append(f"left after the teardown: {f.left}")
        print(f"LEFT: {f.left}")
    else:
        print(f"left: nothing ({', '.join(f.services)} list none of cluster {TAG}); "
              f"kept: buckets {', '.join(f.buckets_kept)} (the user's)")
    if sorted(f.buckets_kept) != sorted(KEPT_BUCKETS):
        failures.append(f"the user's buckets were not kept: {f.buckets_kept}")
    print(f"real time on this machine (not AWS's): {f.setup_seconds:.0f} s to create the "
          f"cluster and its workloads, {f.teardown_seconds:.0f} s for the teardown")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


def main() -> int:
    started = time.monotonic()
    status = report(measure())
    print(f"real time of the whole run on this machine: {time.monotonic() - started:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
