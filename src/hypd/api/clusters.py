"""Routes: /clusters."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit

from hypd.api.context import logger, metrics, services
from hypd.api.errors import ERROR_RESPONSES, accepted_response, json_response
from hypd.api.models import ClusterList, ClusterView, DiscoverRequest, OperationAccepted
from hypd.clusters.create_request import CreateClusterRequest
from hypd.clusters.models import CLUSTER_TAG_PATTERN
from hypd.create.catalog import resolve_create
from hypd.create.start import orphaned_create_of, start_create
from hypd.features import plan
from hypd.operations.models import OperationKind
from hypd.operations.starter import new_operation

router = APIGatewayRouter()


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
    operation = new_operation(OperationKind.DISCOVER, request or DiscoverRequest())
    logger().set_correlation_id(operation.id)
    operation = services().starter.launch(operation)
    metrics().add_metric(name="OperationStarted", unit=MetricUnit.Count, value=1)
    logger().info("operation started", kind=operation.kind.value)
    return OperationAccepted(
        operation_id=operation.id, status=operation.status, kind=operation.kind
    )


@router.post(
    "/clusters",
    summary="Create a cluster: network, EKS, dependencies, HyperPod, storage, verify",
    description=(
        "Validates the request against this account's catalogue (zones, the zones offering "
        "each instance type, instance-type facts, training plans): every problem is a 400 "
        "naming its field. Then records the cluster (status CREATING) and starts a "
        "create-cluster operation; answers 202 with the operation id. Poll "
        "GET /operations/{operationId}; GET /clusters/{tag} shows the cluster at once. "
        "A tag that is already a cluster (discovered or created) is a 409 ClusterExists; "
        "a tag with an operation in progress is a 409 naming it. When availabilityZone is "
        "omitted, the zone of the groups' training plan is taken."
    ),
    operation_id="createCluster",
    tags=["clusters"],
    status_code=202,
    responses={
        202: accepted_response("The create-cluster operation was started."),
        400: ERROR_RESPONSES[400],
        409: ERROR_RESPONSES[409],
        503: ERROR_RESPONSES[503],
    },
)
def create_cluster(request: Annotated[CreateClusterRequest, Body()]) -> OperationAccepted:
    services().state_machine_arn(OperationKind.CREATE_CLUSTER)  # configured, before any read
    # A tag in use is refused before the catalogue is read (the conditional write at the
    # start is what guarantees it; this spares a doomed request the AWS calls).
    if request.features is not None:
        plan.check(request.features, None)
    orphan = orphaned_create_of(services().clusters, services().operations, request.tag)
    resolved = resolve_create(services(), request)
    operation = start_create(services().starter, resolved, replaces_orphan_of=orphan)
    logger().set_correlation_id(operation.id)
    metrics().add_metric(name="OperationStarted", unit=MetricUnit.Count, value=1)
    logger().info("operation started", kind=operation.kind.value, cluster_tag=resolved.tag)
    return OperationAccepted(
        operation_id=operation.id, status=operation.status, kind=operation.kind
    )


@router.get(
    "/clusters",
    summary="List clusters",
    operation_id="listClusters",
    tags=["clusters"],
    responses={
        200: json_response("ClusterList", "The recorded clusters, and the next page's token."),
        400: ERROR_RESPONSES[400],
        503: ERROR_RESPONSES[503],
    },
)
def list_clusters(
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    next_token: Annotated[str | None, Query(alias="nextToken", max_length=4096)] = None,
) -> ClusterList:
    page = services().clusters.list(limit=limit, next_token=next_token)
    return ClusterList(
        clusters=[ClusterView.model_validate(c.to_api()) for c in page.clusters],
        next_token=page.next_token,
    )


@router.get(
    "/clusters/<tag>",
    summary="Get a cluster",
    operation_id="getCluster",
    tags=["clusters"],
    responses={
        200: json_response("ClusterView", "The cluster's record."),
        400: ERROR_RESPONSES[400],
        404: ERROR_RESPONSES[404],
        503: ERROR_RESPONSES[503],
    },
)
def get_cluster(
    tag: Annotated[str, Path(pattern=CLUSTER_TAG_PATTERN)],
) -> ClusterView:
    return ClusterView.model_validate(services().clusters.get(tag).to_api())
