"""The answers routes share: a model as JSON with a status, and the 202 of a started operation."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel

from hypd.api.context import logger, metrics, services
from hypd.api.models import OperationAccepted
from hypd.operations.models import Operation, OperationKind
from hypd.operations.starter import new_operation


def json_body(status: int, model: BaseModel) -> Response[str]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(model.model_dump(mode="json", by_alias=True)),
    )


def accepted(operation: Operation) -> Response[str]:
    """202 naming the operation."""
    return json_body(202, OperationAccepted(
        operation_id=operation.id, status=operation.status, kind=operation.kind))


def start(kind: OperationKind, work: BaseModel, tag: str, *, workload: str | None = None,
          **log: Any) -> Operation:
    """Record and start an operation of `kind` on cluster `tag` with input `work` (a workload's
    kinds lock `workload`); the operation as started."""
    operation = new_operation(kind, work, cluster_tag=tag, workload=workload)
    logger().set_correlation_id(operation.id)
    operation = services().starter.launch(operation)
    metrics().add_metric(name="OperationStarted", unit=MetricUnit.Count, value=1)
    logger().info("operation started", kind=kind.value, cluster_tag=tag, **log)
    return operation


def launch(kind: OperationKind, work: BaseModel, tag: str, *, workload: str | None = None,
           **log: Any) -> Response[str]:
    """`start`, answered 202."""
    return accepted(start(kind, work, tag, workload=workload, **log))
