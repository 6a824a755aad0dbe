"""Routes: /operations."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hypd.api.errors import ERROR_RESPONSES
from hypd.api.models import OperationList, OperationView
from hypd.api.services import ApiServices
from hypd.clusters.models import CLUSTER_TAG_PATTERN
from hypd.operations.models import OPERATION_ID_PATTERN, OperationStatus


def build_router(services: ApiServices) -> APIGatewayRouter:
    router = APIGatewayRouter()
    # Created here, not at import: Powertools binds a logger to the service of the
    # function that builds it (several functions share one process on the local cloud).
    logger = Logger(child=True)

    @router.get(
        "/operations",
        summary="List operations, newest first",
        description="Filter by cluster tag and/or status; page with nextToken.",
        operation_id="listOperations",
        tags=["operations"],
        responses={400: ERROR_RESPONSES[400]},
    )
    def list_operations(
        cluster_tag: Annotated[
            str | None, Query(alias="clusterTag", pattern=CLUSTER_TAG_PATTERN)
        ] = None,
        status: Annotated[OperationStatus | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
        next_token: Annotated[str | None, Query(alias="nextToken", max_length=4096)] = None,
    ) -> OperationList:
        page = services.operations.list(
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
        responses={400: ERROR_RESPONSES[400], 404: ERROR_RESPONSES[404]},
    )
    def get_operation(
        operation_id: Annotated[str, Path(alias="operationId", pattern=OPERATION_ID_PATTERN)],
    ) -> OperationView:
        logger.set_correlation_id(operation_id)
        return OperationView.model_validate(services.operations.get(operation_id).to_api())

    return router
