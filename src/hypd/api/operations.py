"""Routes: /operations."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit

from hypd.api.context import logger, metrics, services
from hypd.api.errors import ERROR_RESPONSES, json_response
from hypd.api.models import OperationList, OperationView
from hypd.clusters.models import CLUSTER_TAG_PATTERN
from hypd.operations.models import OPERATION_ID_PATTERN, OperationStatus

OperationId = Annotated[str, Path(alias="operationId", pattern=OPERATION_ID_PATTERN)]


def operation_response(description: str) -> OpenAPIResponse:
    """The OpenAPI 202 response of a route that answers with the operation."""
    return json_response("OperationView", description)


router = APIGatewayRouter()


@router.get(
    "/operations",
    summary="List operations, newest first",
    description="Filter by cluster tag and/or status; page with nextToken.",
    operation_id="listOperations",
    tags=["operations"],
    responses={
        200: json_response(
            "OperationList", "Operations, newest first, and the next page's token."
        ),
        400: ERROR_RESPONSES[400],
        503: ERROR_RESPONSES[503],
    },
)
def list_operations(
    cluster_tag: Annotated[
        str | None, Query(alias="clusterTag", pattern=CLUSTER_TAG_PATTERN)
    ] = None,
    status: Annotated[OperationStatus | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    next_token: Annotated[str | None, Query(alias="nextToken", max_length=4096)] = None,
) -> OperationList:
    page = services().operations.list(
        cluster_tag=cluster_tag, status=status, limit=limit, next_token=next_token
    )
    return OperationList(
        operations=[OperationView.model_validate(op.to_api()) for op in page.operations],
        next_token=page.next_token,
    )


@router.get(
    "/operations/<operationId>",
    summary="Get an operation with its stages",
    operation_id="getOperation",
    tags=["operations"],
    responses={
        200: json_response("OperationView", "The operation with its stages."),
        400: ERROR_RESPONSES[400],
        404: ERROR_RESPONSES[404],
        503: ERROR_RESPONSES[503],
    },
)
def get_operation(operation_id: OperationId) -> OperationView:
    logger().set_correlation_id(operation_id)
    return OperationView.model_validate(services().operations.get(operation_id).to_api())


@router.post(
    "/operations/<operationId>/retry",
    summary="Retry a failed or cancelled operation from the stage that did not succeed",
    description=(
        "Only a FAILED or CANCELLED operation can be retried (else 409 "
        "OperationNotRetryable with its status). Its lock is taken again (409 naming the "
        "operation that holds it), the operation goes back to PENDING and a new execution "
        "{operationId}-r{n} of its state machine resumes at the first stage that has not "
        "succeeded: succeeded stages are never repeated; the others go back to PENDING "
        "with their attempts kept and their errors cleared. The error that ended the "
        "previous attempt, its failed stage and execution are kept in `retries`. With "
        "maxRetries=N, an operation already retried N times is a 409 RetryLimitReached "
        "(the bound an automation, such as an EventBridge rule, retries within). Answers "
        "202 with the operation."
    ),
    operation_id="retryOperation",
    tags=["operations"],
    status_code=202,
    responses={
        202: operation_response("The retry's execution was started."),
        400: ERROR_RESPONSES[400],
        404: ERROR_RESPONSES[404],
        409: ERROR_RESPONSES[409],
        503: ERROR_RESPONSES[503],
    },
)
def retry_operation(
    operation_id: OperationId,
    max_retries: Annotated[int | None, Query(alias="maxRetries", ge=0, le=100)] = None,
) -> OperationView:
    logger().set_correlation_id(operation_id)
    operation = services().starter.restart(operation_id, max_retries)
    metrics().add_metric(name="OperationRetried", unit=MetricUnit.Count, value=1)
    logger().info(
        "operation retried",
        kind=operation.kind.value,
        resume_from=operation.retries[-1].resume_from,
    )
    return OperationView.model_validate(operation.to_api())


@router.post(
    "/operations/<operationId>/cancel",
    summary="Cancel a pending or running operation",
    description=(
        "Stops the operation's current execution and records cancelRequestedAt; when the "
        "execution has stopped the operation becomes CANCELLED and its lock is released "
        "(poll GET /operations/{operationId}). Stages that succeeded stay so; a cancelled "
        "operation can be retried. An operation that has ended is a 409 "
        "OperationNotCancellable; one whose execution is still being started is a 409 "
        "(try again). Answers 202 with the operation."
    ),
    operation_id="cancelOperation",
    tags=["operations"],
    status_code=202,
    responses={
        202: operation_response("The execution was asked to stop."),
        400: ERROR_RESPONSES[400],
        404: ERROR_RESPONSES[404],
        409: ERROR_RESPONSES[409],
        503: ERROR_RESPONSES[503],
    },
)
def cancel(operation_id: OperationId) -> OperationView:
    logger().set_correlation_id(operation_id)
    operation = services().starter.cancel(operation_id)
    metrics().add_metric(name="OperationCancelRequested", unit=MetricUnit.Count, value=1)
    logger().info("operation cancel requested", kind=operation.kind.value)
    return OperationView.model_validate(operation.to_api())
