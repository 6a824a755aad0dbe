"""Powertools wiring shared by the functions: logs, metrics and traces.

Structured logs carry the operation id as the correlation id; every task emits one metric
(`TaskSucceeded` or `TaskFailed`, dimension `task`). `DeferredTracer` traces a handler with a
Tracer made on its first invocation (the API's, whose init imports only what routing needs).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.typing import LambdaContext

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
