"""Routes: /clusters."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit

from hypd.api.errors import ERROR_RESPONSES, accepted_response
from hypd.api.models import ClusterList, ClusterView, DiscoverRequest, OperationAccepted
from hypd.api.services import ApiServices
from hypd.clusters.models import CLUSTER_TAG_PATTERN
from hypd.errors import PermanentError
from hypd.operations import lifecycle
from hypd.operations.models import OperationKind
from hypd.operations.starter import start_operation

DISCOVER_LOCK = "discover"


def build_router(services: ApiServices) -> APIGatewayRouter:
    router = APIGatewayRouter()
    # Created here, not at import: Powertools binds a logger to the service of the
    # function that builds it (several functions share one process on the local cloud).
    logger = Logger(child=True)
    metrics = Metrics()

    @router.post(
        "/clusters/discover",
        summary="Import the EKS and HyperPod clusters already in this account and Region",
        description=(
            "Starts a discover operation that lists the EKS and HyperPod clusters, links each "
            "HyperPod cluster to its EKS cluster and records them as hypd clusters. Answers "
            "202 with the operation id; poll GET /operations/{operationId}. One discover runs "
            "at a time: a second request while one is in progress gets 409 naming it."
        ),
        operation_id="discoverClusters",
        tags=["clusters"],
        status_code=202,
        responses={
            202: accepted_response("The discover operation was started."),
            400: ERROR_RESPONSES[400],
            409: ERROR_RESPONSES[409],
            503: ERROR_RESPONSES[503],
        },
    )
    def discover_clusters(
        request: Annotated[DiscoverRequest | None, Body()] = None,
    ) -> OperationAccepted:
        if not services.discover_state_machine_arn:
            raise PermanentError("DISCOVER_STATE_MACHINE_ARN is not configured for this function")
        body = request or DiscoverRequest()
        operation = lifecycle.new_operation(
            OperationKind.DISCOVER,
            input=body.model_dump(mode="json", by_alias=True, exclude_none=True),
            lock_scope=DISCOVER_LOCK,
        )
        logger.set_correlation_id(operation.id)
        operation = start_operation(
            operation,
            operations=services.operations,
            locks=services.locks,
            sfn_client=services.sfn_client,
            state_machine_arn=services.discover_state_machine_arn,
            execution_input={"clusterNames": body.cluster_names},
        )
        metrics.add_metric(name="OperationStarted", unit=MetricUnit.Count, value=1)
        logger.info("operation started", kind=operation.kind.value)
        return OperationAccepted(
            operation_id=operation.id, status=operation.status, kind=operation.kind
        )

    @router.get(
        "/clusters",
        summary="List clusters",
        operation_id="listClusters",
        tags=["clusters"],
        responses={400: ERROR_RESPONSES[400]},
    )
    def list_clusters(
        limit: Annotated[int, Query(ge=1, le=100)] = 50,
        next_token: Annotated[str | None, Query(alias="nextToken", max_length=4096)] = None,
    ) -> ClusterList:
        page = services.clusters.list(limit=limit, next_token=next_token)
        return ClusterList(
            clusters=[ClusterView.model_validate(c.to_api()) for c in page.clusters],
            next_token=page.next_token,
        )

    @router.get(
        "/clusters/<tag>",
        summary="Get a cluster",
        operation_id="getCluster",
        tags=["clusters"],
        responses={400: ERROR_RESPONSES[400], 404: ERROR_RESPONSES[404]},
    )
    def get_cluster(
        tag: Annotated[str, Path(pattern=CLUSTER_TAG_PATTERN)],
    ) -> ClusterView:
        return ClusterView.model_validate(services.clusters.get(tag).to_api())

    return router
