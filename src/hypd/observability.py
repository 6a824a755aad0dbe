"""Powertools wiring shared by the state-machine functions: logs, metrics and traces; and the
operators' metrics of every function (docs/operations.md).

Structured logs carry the operation id as the correlation id; every task emits one metric
(`TaskSucceeded` or `TaskFailed`, dimension `task`). `DeferredTracer` traces a handler with a
Tracer made on its first invocation (the API's, whose init imports only what routing needs).

The operators' metrics (namespace `hypd`, no `service` dimension, so the API, the task
functions and the events function add to one series) are CloudWatch embedded metric format
documents written to standard output, one line each: Lambda sends the line to CloudWatch Logs,
which makes the metric (no PutMetricData call, no IAM permission). They are written here
rather than with Powertools' `single_metric`, which adds a `service` dimension whenever
POWERTOOLS_SERVICE_NAME is set. Each is emitted where its transition is recorded:

* `OperationsStarted`, `OperationsSucceeded`, `OperationsFailed`, `OperationsCancelled`
  (dimension `Kind`, and without dimensions for the total) and `StageDuration` (seconds,
  dimensions `Kind`, `Stage`): `operation_changed`, from the one write path of operation
  records (`hypd.operations.store.OperationStore.update`), once per change of the record;
* `Repairs` (dimension `Action`): `repair_started`, when hypd starts a reboot or replacement;
* `UnhealthyNodes` (dimension `Cluster`): `unhealthy_nodes`, when a node's health status
  changes and when an operation on the cluster ends (both in `hypd.health.handler`).

Emitting never fails the caller: an error is logged and the metric is lost.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, cast

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.typing import LambdaContext

from hypd import clock
from hypd.operations.models import Operation, OperationStatus, StageStatus

NAMESPACE = "hypd"
"""The namespace of the operators' metrics (the template's dashboard and alarms read it)."""

LOG = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]

# The operation id: a task input's `operationId`, or the execution name of a Step Functions
# status-change event (hypd names every execution after its operation).
OPERATION_ID_PATH = "operationId || detail.name"


class Count(Protocol):
    def __call__(self, name: str, /, **dimensions: str) -> None: ...


def counter(namespace: str, service: str) -> Count:
    """A metric counter: one EMF document per count, with its own dimensions.

    `single_metric` keeps no state between calls, unlike `Metrics`, whose dimensions are shared
    by every instance in the process.
    """

    def count(name: str, /, **dimensions: str) -> None:
        with single_metric(
            name=name,
            unit=MetricUnit.Count,
            value=1,
            namespace=namespace,
            default_dimensions={"service": service},
        ) as metric:
            for key, value in dimensions.items():
                metric.add_dimension(name=key, value=value)

    return count


class Dispatcher(Protocol):
    def dispatch(self, event: dict[str, Any]) -> dict[str, Any]: ...


def task_handler(
    router: Dispatcher,
    route: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Handler:
    """A Lambda handler that dispatches `{"task": ...}` events to `router` (a `TaskRouter`
    bound to the function's services).

    `route` may rewrite events that are not task inputs (an EventBridge event, say) into one.
    """
    logger = Logger()
    tracer = Tracer()
    # Read now, at import time: Lambda's environment does not change between invocations.
    namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "hypd")
    service = os.environ.get("POWERTOOLS_SERVICE_NAME", "hypd")

    count = counter(namespace, service)

    @logger.inject_lambda_context(correlation_id_path=OPERATION_ID_PATH, clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        task_event = route(event) if route else event
        task = str(task_event.get("task"))
        logger.append_keys(task=task)
        try:
            result = router.dispatch(task_event)
        except Exception as exc:
            count("TaskFailed", task=task)
            logger.warning("task failed", error_type=type(exc).__name__, error=str(exc))
            raise
        count("TaskSucceeded", task=task)
        return result

    return cast(Handler, handler)


# ---------------------------------------------------------------------------- operators' metrics
@dataclass(frozen=True)
class Metric:
    """One value of one metric, with its dimensions (name -> value) and, with `total`, also
    without them (EMF's empty dimension set: the sum over every value of the dimensions)."""

    name: str
    value: float
    unit: str = "Count"
    dimensions: Mapping[str, str] = field(default_factory=dict)
    total: bool = False
    properties: Mapping[str, Any] = field(default_factory=dict)
    """Logged beside the metric, searchable in CloudWatch Logs Insights; no dimensions."""

    def document(self, at: datetime) -> dict[str, Any]:
        """The embedded metric format document of this value at `at`."""
        dimension_sets = [list(self.dimensions)] + ([[]] if self.total else [])
        return {
            "_aws": {
                "Timestamp": int(at.timestamp() * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": NAMESPACE,
                        "Dimensions": dimension_sets,
                        "Metrics": [{"Name": self.name, "Unit": self.unit}],
                    }
                ],
            },
            **self.properties,
            **self.dimensions,
            self.name: self.value,
        }


def emit(*metrics: Metric) -> None:
    """Write each metric as one EMF line on standard output; never raises."""
    for metric in metrics:
        try:
            line = json.dumps(metric.document(clock.now()), separators=(",", ":"), default=str)
            # One write per line: functions sharing a process (the local cloud) do not split it.
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except Exception:  # a metric must never fail what it measures
            LOG.warning("metric %s not emitted", metric.name, exc_info=True)


_ENDED = {
    OperationStatus.SUCCEEDED: "OperationsSucceeded",
    OperationStatus.FAILED: "OperationsFailed",
    OperationStatus.CANCELLED: "OperationsCancelled",
}


def operation_metrics(before: Operation, after: Operation) -> list[Metric]:
    """What one change of an operation's record means, as metrics (pure).

    PENDING -> RUNNING is a start (the first execution or a retry's); a change to SUCCEEDED,
    FAILED or CANCELLED is an end (a start AWS refused ends FAILED without a start); a stage
    that becomes SUCCEEDED gives its duration. A change that repeats what the record says
    gives none, so each transition counts once however often its task runs.
    """
    kind = {"Kind": after.kind.value}
    found: list[Metric] = []
    properties = {"operationId": after.id}
    if before.status is OperationStatus.PENDING and after.status is OperationStatus.RUNNING:
        found.append(Metric("OperationsStarted", 1, dimensions=kind, total=True,
                            properties=properties))
    elif after.status.terminal and not before.status.terminal:
        found.append(Metric(_ENDED[after.status], 1, dimensions=kind, total=True,
                            properties=properties))
    earlier = {stage.name: stage for stage in before.stages}
    for stage in after.stages:
        was = earlier.get(stage.name)
        if stage.status is not StageStatus.SUCCEEDED or was is None or (
            was.status is StageStatus.SUCCEEDED
        ):
            continue
        seconds = stage_seconds(after, stage.name)
        if seconds is not None:
            found.append(Metric("StageDuration", seconds, unit="Seconds",
                                dimensions={**kind, "Stage": stage.name},
                                properties={**properties, "attempts": stage.attempts}))
    return found


def stage_seconds(operation: Operation, name: str) -> float | None:
    """How long the stage took to succeed in the current execution: from its first attempt
    (or from the retry that resumed the operation, when that is later) to its end."""
    stage = operation.stage(name)
    if stage.started_at is None or stage.ended_at is None:
        return None
    start = _time(stage.started_at)
    if operation.retries:
        start = max(start, _time(operation.retries[-1].requested_at))
    return max(0.0, (_time(stage.ended_at) - start).total_seconds())


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def operation_changed(before: Operation, after: Operation) -> None:
    """Emit what a recorded change of an operation means (`operation_metrics`); never raises."""
    try:
        found = operation_metrics(before, after)
    except Exception:  # a metric must never fail an operation
        LOG.warning("operation %s: metrics not computed", after.id, exc_info=True)
        return
    emit(*found)


def repair_started(action: str, tag: str, operation_id: str) -> None:
    """hypd started a reboot or a replacement of a node (`Repairs`, dimension `Action`)."""
    emit(Metric("Repairs", 1, dimensions={"Action": action},
                properties={"cluster": tag, "operationId": operation_id}))


def unhealthy_nodes(tag: str, count: int) -> None:
    """The cluster's unhealthy nodes now (`UnhealthyNodes`, dimension `Cluster`)."""
    emit(Metric("UnhealthyNodes", count, dimensions={"Cluster": tag}))


class DeferredTracer:
    """Powertools' Tracer for one handler, made on the first invocation instead of at import.

    With tracing on (on Lambda), making a Tracer imports the X-Ray SDK, whose recorder builds
    botocore clients for its sampler as it is imported: more than a bare `import boto3`. A
    function whose init must stay small traces through this; a SnapStart function calls
    `tracer()` before its snapshot (`hypd.snapstart`), so a restored environment has it made.

    `patch_modules`: what the X-Ray SDK patches (Powertools' default patches every module it
    supports that is installed, importing each: `requests` among them, which hypd never uses).
    """

    def __init__(self, *, patch_modules: Sequence[str]) -> None:
        self._patch_modules = tuple(patch_modules)
        self._tracer: Tracer | None = None
        self._lock = threading.Lock()

    def tracer(self) -> Tracer:
        """The Tracer (made on the first call)."""
        with self._lock:
            if self._tracer is None:
                self._tracer = Tracer(patch_modules=self._patch_modules)
            return self._tracer

    def capture_lambda_handler(self, handler: Handler) -> Handler:
        """`Tracer.capture_lambda_handler(capture_response=False)`, applied on the first
        invocation."""

        @functools.cache
        def traced() -> Handler:
            return cast(
                Handler,
                self.tracer().capture_lambda_handler(handler, capture_response=False),
            )

        @functools.wraps(handler)
        def invoke(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
            return traced()(event, context)

        return invoke
