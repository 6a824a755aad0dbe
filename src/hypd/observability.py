"""Powertools wiring shared by the state-machine functions: logs, metrics and traces.

Structured logs carry the operation id as the correlation id; every task emits one metric
(`TaskSucceeded` or `TaskFailed`, dimension `task`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol, cast

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.typing import LambdaContext

from hypd.tasks import TaskRouter

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


def task_handler(
    router: TaskRouter,
    route: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    *,
    services: object | None = None,
) -> Handler:
    """A Lambda handler that dispatches `{"task": ...}` events to `router`.

    `route` may rewrite events that are not task inputs (an EventBridge event, say) into one.
    `services`: what a module-level router's tasks are given besides their input (the function's
    stores and clients, built once per execution environment).
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
            result = router.dispatch(task_event, services)
        except Exception as exc:
            count("TaskFailed", task=task)
            logger.warning("task failed", error_type=type(exc).__name__, error=str(exc))
            raise
        count("TaskSucceeded", task=task)
        return result

    return cast(Handler, handler)
