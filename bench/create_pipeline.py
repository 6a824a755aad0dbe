"""The create pipeline's waiting, measured on the local cloud: lag, transitions, calls.

Runs one create (the README's demo request: one ml.g6.4xlarge on-demand group, S3 storage)
on a fresh local cloud and prints, per stage and in total:

* ready:    virtual seconds from the stage's start until its resource was ready (the
            emulators' own timeline: EKS creation time, last add-on ACTIVE, HyperPod
            InService, ...), the time a perfect observer would notice;
* noticed:  virtual seconds from the stage's start until the pipeline moved on;
* lag:      noticed - ready, the time the pipeline added by waiting;
* states:   Step Functions state transitions (StateEntered events of the execution);
* lambdas:  Lambda invocations (state-machine tasks, and the state-change event handler);
* aws:      AWS API calls the functions made (boto3, excluding the operation store's
            DynamoDB reads and writes, counted separately in the total line);

next to what fixed 30 s and 60 s polling would cost on the same timeline: the lag of a loop
that looks every P seconds from the stage's start, and its state transitions (Wait + Check +
Choice per look), Lambda invocations and AWS calls (one Describe per look).

    .venv/bin/python bench/create_pipeline.py
    .venv/bin/python bench/create_pipeline.py --runs 3     # the median of three runs
    .venv/bin/python bench/create_pipeline.py --fsx        # FSx for Lustre instead of S3

Then the create's longest dependency chain (network, then the longer of eks > dependencies >
hyperpod and storage, which run side by side, then verify and features) against its recorded
total (first stage's start to last stage's end); the run fails (exit 1) when the total exceeds
the chain by a minute or more.

Figures are virtual time and counts, so they do not depend on this machine's speed; the real
time a run took is printed last.
"""

from __future__ import annotations

import argparse
import math
import statistics
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

from hypd_cli.api_client import ApiClient  # noqa: E402
from hypd_cli.demo import DEMO_BUCKET, create_demo_bucket, demo_request, follow  # noqa: E402
from hypd_cli.local import local_parameters  # noqa: E402
from hypd_local.calls import Call, watch_calls  # noqa: E402
from hypd_local.cloud import LocalCloud  # noqa: E402
from hypd_local.patches.fsx import FSX_CREATE_SECONDS  # noqa: E402
from statemachines import generate  # noqa: E402

STAGES = ("network", "eks", "dependencies", "hyperpod", "storage", "verify", "features")
SIDE_BY_SIDE = (("eks", "dependencies", "hyperpod"), ("storage",))
"""statemachines.generate.CREATE_BRANCHES: the branches of the create's Parallel."""
CHAIN_SLACK_SECONDS = 60
"""How much longer than its longest chain a create may take (the issue's goal)."""


_STATES = generate.described_states()
"""The state machine's states, with the stage of each and which of them only wait."""
STAGE_OF_STATE: dict[str, str] = dict(_STATES.stage_of)
WAIT_STATES: set[str] = set(_STATES.waiting)


def _task_name(state: dict[str, Any]) -> str | None:
    parameters = state.get("Parameters") or {}
    name = parameters.get("task") or (parameters.get("Payload") or {}).get("task")
    return str(name) if name else None


def _every_state(states: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The states of a States map, those of its Parallel states' branches included."""
    for name, state in states.items():
        yield name, state
        for branch in state.get("Branches") or []:
            yield from _every_state(branch["States"])


TASK_STAGE = {
    task: STAGE_OF_STATE[name]
    for name, state in _every_state(_STATES)
    if name in STAGE_OF_STATE and (task := _task_name(state))
}
WAIT_TASKS = {
    task for name, state in _every_state(_STATES)
    if name in WAIT_STATES and (task := _task_name(state))
}
"""Tasks that exist only because something is being waited for."""

STORE_SERVICES = {"dynamodb"}


@dataclass
class Counters:
    lock: threading.Lock = field(default_factory=threading.Lock)
    aws: Counter[str] = field(default_factory=Counter)
    lambdas: Counter[str] = field(default_factory=Counter)
    aws_by_stage: Counter[str] = field(default_factory=Counter)
    lambdas_by_stage: Counter[str] = field(default_factory=Counter)
    wait_lambdas: Counter[str] = field(default_factory=Counter)
    """Per stage: invocations that only wait (checks, the token wait and its event handler)."""
    wait_aws: Counter[str] = field(default_factory=Counter)
    current: threading.local = field(default_factory=threading.local)
    """The stage of the invocation running on this thread (handlers run on their caller's)."""


@contextmanager
def counting(cloud: LocalCloud, counters: Counters) -> Iterator[None]:
    """Count boto3 calls (every client of this process) and Lambda invocations."""

    def on_call(call: Call) -> None:
        service = call.service
        with counters.lock:
            counters.aws[f"{service}:{call.operation}"] += 1
            if service not in STORE_SERVICES:
                stage = getattr(counters.current, "stage", "-")
                counters.aws_by_stage[stage] += 1
                if getattr(counters.current, "waiting", False):
                    counters.wait_aws[stage] += 1

    runtime = cloud.lambdas
    original = runtime.invoke

    def invoke(function: Any, event: Any) -> Any:
        name = function if isinstance(function, str) else function.logical_id
        task = event.get("task") if isinstance(event, dict) else None
        payload = event.get("Payload") if isinstance(event, dict) else None
        if task is None and isinstance(payload, dict):
            task = payload.get("task")
        stage = _stage_of_task(task) or EVENT_HANDLERS.get(str(name), "-")
        waiting = str(task) in WAIT_TASKS or str(name) in EVENT_HANDLERS
        with counters.lock:
            counters.lambdas[str(name)] += 1
            counters.lambdas_by_stage[stage] += 1
            if waiting:
                counters.wait_lambdas[stage] += 1
        outer = (getattr(counters.current, "stage", None),
                 getattr(counters.current, "waiting", False))
        counters.current.stage, counters.current.waiting = stage, waiting
        try:
            return original(function, event)
        finally:
            counters.current.stage, counters.current.waiting = outer

    runtime.invoke = invoke  # type: ignore[method-assign]
    try:
        with watch_calls(on_call):
            yield
    finally:
        runtime.invoke = original  # type: ignore[method-assign]




EVENT_HANDLERS = {"ClusterEventsFunction": "hyperpod"}
"""Functions EventBridge invokes, by the stage whose wait they end."""


def _stage_of_task(task: Any) -> str | None:
    return TASK_STAGE.get(str(task)) if task else None


@dataclass
class StageFigures:
    name: str
    started: datetime
    ended: datetime
    ready: float  # seconds after start
    states: int = 0
    lambdas: int = 0
    aws: int = 0
    wait_states: int = 0
    wait_lambdas: int = 0
    wait_aws: int = 0

    @property
    def noticed(self) -> float:
        return (self.ended - self.started).total_seconds()


def _ts(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def ready_times(cloud: LocalCloud, operation: dict[str, Any]) -> dict[str, float]:
    """Seconds after each stage's start at which its resource was ready (the emulators'
    timeline). Stages whose work is immediate on the local cloud (CloudFormation in moto, the
    Kubernetes objects) count as ready at once."""
    stages = {s["name"]: s for s in operation["stages"]}
    tag = operation["input"]["tag"]
    name = f"hypd-{tag}"
    eks_client = cloud.client("eks")
    emulation = cloud.emulation
    assert emulation is not None
    ready: dict[str, float] = dict.fromkeys(STAGES, 0.0)

    eks_start = _ts(stages["eks"]["startedAt"])
    created = eks_client.describe_cluster(name=name)["cluster"]["createdAt"]
    eks_ready = _ts(created).timestamp() + emulation.eks.durations.cluster_create(name)
    ready["eks"] = eks_ready - eks_start.timestamp()

    dep_start = _ts(stages["dependencies"]["startedAt"]).timestamp()
    last = dep_start
    for addon in eks_client.list_addons(clusterName=name)["addons"]:
        described = eks_client.describe_addon(clusterName=name, addonName=addon)["addon"]
        active_at = _ts(described["createdAt"]).timestamp() + (
            emulation.eks.durations.addon_create)
        last = max(last, active_at)
    ready["dependencies"] = last - dep_start

    hp_start = _ts(stages["hyperpod"]["startedAt"]).timestamp()
    cluster = cloud.client("sagemaker").describe_cluster(ClusterName=name)
    in_service = _ts(cluster["CreationTime"]).timestamp() + (
        emulation.hyperpod.durations.cluster_create.total_seconds())
    ready["hyperpod"] = in_service - hp_start
    if operation["input"]["storage"].get("fsx"):
        storage_start = _ts(stages["storage"]["startedAt"]).timestamp()
        (system,) = cloud.client("fsx").describe_file_systems()["FileSystems"]
        available = _ts(system["CreationTime"]).timestamp() + FSX_CREATE_SECONDS
        ready["storage"] = available - storage_start
    return ready




def state_transitions(
    cloud: LocalCloud, execution_arn: str
) -> tuple[Counter[str], Counter[str]]:
    """StateEntered events per stage, and those of them that belong to waiting."""
    sfn = cloud.client("stepfunctions")
    entered: Counter[str] = Counter()
    waiting: Counter[str] = Counter()
    choices_seen: set[str] = set()
    for page in sfn.get_paginator("get_execution_history").paginate(executionArn=execution_arn):
        for event in page["events"]:
            details = event.get("stateEnteredEventDetails")
            if not details:
                continue
            name = details["name"]
            stage = STAGE_OF_STATE.get(name, "-")
            entered[stage] += 1
            if name in WAIT_STATES:
                if name.endswith("?") and name not in choices_seen:
                    choices_seen.add(name)  # the first look happens without any waiting
                    continue
                waiting[stage] += 1
    return entered, waiting


def one_run(template: Path, fsx: bool
            ) -> tuple[list[StageFigures], Counters, float, Counter[str]]:
    started = time.monotonic()
    counters = Counters()
    with redirect_stdout(StringIO()), LocalCloud(
        template, parameters=local_parameters(template)
    ) as cloud:
        create_demo_bucket(cloud)
        api = ApiClient(cloud.api_url)
        body = demo_request(api, "bench", DEMO_BUCKET)
        if fsx:
            body["storage"] = {"fsx": {"storageCapacityGiB": 1200}}
        with counting(cloud, counters):
            operation_id = api.post("/clusters", body)["operationId"]
            cloud.wait_for_executions(timeout=300)
        operation = follow(api, cloud, operation_id, timeout=300)
        if operation["status"] != "SUCCEEDED":
            raise SystemExit(f"the pipeline did not succeed: {operation.get('error')}")
        ready = ready_times(cloud, operation)
        transitions, waits = state_transitions(cloud, operation["executionArn"])
    figures = [
        StageFigures(
            name=s["name"],
            started=_ts(s["startedAt"]),
            ended=_ts(s["endedAt"]),
            ready=ready[s["name"]],
            states=transitions[s["name"]],
            lambdas=counters.lambdas_by_stage[s["name"]],
            aws=counters.aws_by_stage[s["name"]],
            wait_states=waits[s["name"]],
            wait_lambdas=counters.wait_lambdas[s["name"]],
            wait_aws=counters.wait_aws[s["name"]],
        )
        for s in operation["stages"]
    ]
    return figures, counters, time.monotonic() - started, transitions


def fixed_polling(stage: StageFigures, period: float) -> tuple[float, float, float, float]:
    """The stage with its waiting replaced by a loop that looks every `period` s from the
    stage's start (Wait + Check task + Choice per look, each look costing the AWS calls of one
    of the stage's own looks): (lag, transitions, lambdas, aws calls). A resource ready at once
    is seen by the first task, as in the pipeline."""
    looks = math.ceil(stage.ready / period) if stage.ready > 0 else 0
    own_looks = max(1, stage.wait_lambdas)
    calls_per_look = max(1.0, stage.wait_aws / own_looks) if looks else 0.0
    lag = looks * period - stage.ready
    return (
        lag,
        stage.states - stage.wait_states + 3 * looks,
        stage.lambdas - stage.wait_lambdas + looks,
        stage.aws - stage.wait_aws + looks * calls_per_look,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    parser.add_argument("--fsx", action="store_true",
                        help="FSx for Lustre storage (1200 GiB) instead of the S3 bucket")
    args = parser.parse_args(argv)

    runs = [one_run(args.template.resolve(), args.fsx) for _ in range(args.runs)]

    def median(values: list[float]) -> float:
        return statistics.median(values)

    print(f"create pipeline on the local cloud, {args.runs} run(s); virtual seconds; "
          "lag = noticed - ready")
    header = (f"{'stage':<13}{'ready':>8}{'noticed':>9}{'lag':>7}{'states':>8}{'lambdas':>9}"
              f"{'aws':>6}  |{'30s lag':>9}{'states':>7}{'lambdas':>8}{'aws':>5}  |{'60s lag':>9}"
              f"{'states':>7}{'lambdas':>8}{'aws':>5}")
    print(header)
    print("-" * len(header))
    totals = Counter[str]()
    for index, name in enumerate(STAGES):
        stage_runs = [run[0][index] for run in runs]
        ready = median([s.ready for s in stage_runs])
        noticed = median([s.noticed for s in stage_runs])
        lag = median([s.noticed - s.ready for s in stage_runs])
        states = median([s.states for s in stage_runs])
        lambdas = median([s.lambdas for s in stage_runs])
        aws = median([s.aws for s in stage_runs])
        polled = [(fixed_polling(s, 30), fixed_polling(s, 60)) for s in stage_runs]
        lag30, st30, la30, aw30 = (median([p[0][i] for p in polled]) for i in range(4))
        lag60, st60, la60, aw60 = (median([p[1][i] for p in polled]) for i in range(4))
        for key, value in (("ready", ready), ("noticed", noticed), ("lag", lag),
                           ("states", states), ("lambdas", lambdas), ("aws", aws),
                           ("lag30", lag30), ("st30", st30), ("la30", la30), ("aw30", aw30),
                           ("lag60", lag60), ("st60", st60), ("la60", la60), ("aw60", aw60)):
            totals[key] += value  # type: ignore[assignment]
        print(f"{name:<13}{ready:>8.0f}{noticed:>9.0f}{lag:>7.1f}{states:>8.0f}{lambdas:>9.0f}"
              f"{aws:>6.0f}  |{lag30:>9.1f}{st30:>7.0f}{la30:>8.0f}{aw30:>5.0f}  |{lag60:>9.1f}"
              f"{st60:>7.0f}{la60:>8.0f}{aw60:>5.0f}")
    print("-" * len(header))
    print(f"{'total':<13}{totals['ready']:>8.0f}{totals['noticed']:>9.0f}{totals['lag']:>7.1f}"
          f"{totals['states']:>8.0f}{totals['lambdas']:>9.0f}{totals['aws']:>6.0f}  |"
          f"{totals['lag30']:>9.1f}{totals['st30']:>7.0f}{totals['la30']:>8.0f}"
          f"{totals['aw30']:>5.0f}  |{totals['lag60']:>9.1f}{totals['st60']:>7.0f}"
          f"{totals['la60']:>8.0f}{totals['aw60']:>5.0f}")
    _, counters, _real, transitions = runs[-1]
    print()
    print(f"whole execution (last run): {sum(transitions.values())} state transitions, "
          f"{sum(counters.lambdas.values())} Lambda invocations "
          f"({', '.join(f'{k} {v}' for k, v in sorted(counters.lambdas.items()))}), "
          f"{sum(v for k, v in counters.aws.items() if k.split(':')[0] not in STORE_SERVICES)} "
          f"AWS calls + {sum(v for k, v in counters.aws.items() if k.startswith('dynamodb:'))} "
          "operation-store calls")
    print()
    chains = [critical_chain(run[0]) for run in runs]
    chain, total, path = (median([c[0] for c in chains]), median([c[1] for c in chains]),
                          chains[-1][2])
    print(f"longest chain ({' > '.join(path)}): {chain:.0f} s; recorded total: {total:.0f} s; "
          f"total - chain: {total - chain:.0f} s (goal: under {CHAIN_SLACK_SECONDS} s)")
    print(f"real time per run: {median([run[2] for run in runs]):.1f} s")
    return 0 if total - chain < CHAIN_SLACK_SECONDS else 1


def critical_chain(figures: list[StageFigures]) -> tuple[float, float, list[str]]:
    """The longest dependency chain of the stages as recorded (seconds, the stages on it), and
    the recorded total: the first stage's start to the last stage's end."""
    took = {f.name: f.noticed for f in figures}
    branches = [(sum(took[s] for s in branch), list(branch)) for branch in SIDE_BY_SIDE]
    longest, on_path = max(branches)
    after = [f.name for f in figures if f.name not in {s for b in SIDE_BY_SIDE for s in b}]
    before = after[:1]  # network
    rest = after[1:]    # verify, features
    chain = sum(took[s] for s in before + rest) + longest
    total = (max(f.ended for f in figures) - min(f.started for f in figures)).total_seconds()
    return chain, total, [*before, *on_path, *rest]


if __name__ == "__main__":
    sys.exit(main())
