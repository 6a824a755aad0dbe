"""Routes: /clusters."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit

from hypd import clock
from hypd.api.catalog import catalog_for_create
from hypd.api.errors import ERROR_RESPONSES, accepted_response, json_response
from hypd.api.models import ClusterList, ClusterView, DiscoverRequest, OperationAccepted
from hypd.api.services import ApiServices
from hypd.clusters.create_request import (
    CreateClusterRequest,
    ResolvedCreate,
    eks_cluster_name,
    validate_against_catalog,
)
from hypd.clusters.models import CLUSTER_TAG_PATTERN, Cluster, ClusterSource, ClusterStatus
from hypd.clusters.store import CreatedClusterRecord, cluster_exists
from hypd.operations import kinds, lifecycle
from hypd.operations.models import Operation, OperationKind
from hypd.operations.starter import start_operation
from hypd.operations.store import OperationStore


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
        state_machine_arn = services.state_machine_arn(OperationKind.DISCOVER)
        body = request or DiscoverRequest()
        operation = lifecycle.new_operation(
            OperationKind.DISCOVER,
            input=body.model_dump(mode="json", by_alias=True, exclude_none=True),
            lock_scope=kinds.lock_scope(OperationKind.DISCOVER),
        )
        logger.set_correlation_id(operation.id)
        operation = start_operation(
            operation,
            operations=services.operations,
            locks=services.locks,
            sfn_client=services.sfn_client,
            state_machine_arn=state_machine_arn,
            execution_input={},
        )
        metrics.add_metric(name="OperationStarted", unit=MetricUnit.Count, value=1)
        logger.info("operation started", kind=operation.kind.value)
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
        services.state_machine_arn(OperationKind.CREATE_CLUSTER)  # configured, before any read
        # A tag in use is refused before the catalogue is read (the conditional write at the
        # start is what guarantees it; this spares a doomed request the AWS calls).
        orphan = _orphaned_create_of(services, request.tag)
        catalog = catalog_for_create(services, request)
        resolved = validate_against_catalog(
            request,
            zones=catalog.zones,
            offerings=catalog.offerings,
            facts=catalog.facts,
            training_plans=catalog.training_plans,
        )
        operation = start_create_cluster(services, resolved, replaces_orphan_of=orphan)
        logger.set_correlation_id(operation.id)
        metrics.add_metric(name="OperationStarted", unit=MetricUnit.Count, value=1)
        logger.info("operation started", kind=operation.kind.value, cluster_tag=resolved.tag)
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
        return ClusterView.model_validate(services.clusters.get(tag).to_api())

    return router


def start_create_cluster(
    services: ApiServices, resolved: ResolvedCreate, *, replaces_orphan_of: str | None = None
) -> Operation:
    """Record the new cluster (CREATING) and start its create-cluster operation.

    The operation's input is the resolved request (camelCase). Order (see `start_operation`):
    the lock `cluster#{tag}`, then the cluster record conditional on the tag being new, then
    the operation, then the execution; so of two simultaneous creates of one tag exactly one
    starts and the other gets 409, and a failed start leaves no lock and no record behind (a
    refused StartExecution leaves the operation FAILED and the cluster FAILED).

    Raises:
        ClusterExists: the tag is a cluster already.
        ConflictError: another operation on the tag is in progress.
    """
    machine = services.state_machine_arn(OperationKind.CREATE_CLUSTER)
    tag = resolved.tag
    operation = lifecycle.new_operation(
        OperationKind.CREATE_CLUSTER,
        cluster_tag=tag,
        input=resolved.model_dump(mode="json", by_alias=True, exclude_none=True),
        lock_scope=kinds.lock_scope(OperationKind.CREATE_CLUSTER, tag),
    )
    region, anchor = created_cluster_arn(machine, tag)
    cluster = Cluster(
        tag=tag,
        source=ClusterSource.CREATED,
        region=region,
        anchor_arn=anchor,
        created_at=operation.created_at,
        updated_at=operation.created_at,
        last_operation_id=operation.id,
        status=ClusterStatus.CREATING,
    )
    return start_operation(
        operation,
        operations=services.operations,
        locks=services.locks,
        sfn_client=services.sfn_client,
        state_machine_arn=machine,
        execution_input={"resumeFrom": None},
        record=CreatedClusterRecord(
            services.clusters,
            tag,
            operation.id,
            new=cluster,
            replaces_orphan_of=replaces_orphan_of,
        ),
    )


def created_cluster_arn(state_machine_arn: str, tag: str) -> tuple[str, str]:
    """The Region and the EKS cluster ARN (the record's anchor) of the cluster `tag` creates.

    Partition, Region and account are the state machine's (the deployment's own).
    """
    _arn, partition, _service, region, account, *_rest = state_machine_arn.split(":")
    return region, f"arn:{partition}:eks:{region}:{account}:cluster/{eks_cluster_name(tag)}"


def _orphaned_create_of(services: ApiServices, tag: str) -> str | None:
    """None when the tag is free; the operation id of an orphaned record of it (see below).

    An orphan is a CREATING record whose create operation was never recorded (the function
    crashed between the two writes) for longer than any start takes: it may be replaced.

    Raises:
        ClusterExists: the tag is a cluster.
    """
    existing = services.clusters.find(tag)
    if existing is None:
        return None
    if _is_orphan(existing, services.operations):
        assert existing.last_operation_id is not None
        return existing.last_operation_id
    raise cluster_exists(tag, existing)


def _is_orphan(cluster: Cluster, operations: OperationStore) -> bool:
    if (
        cluster.source is not ClusterSource.CREATED
        or cluster.status is not ClusterStatus.CREATING
        or not cluster.last_operation_id
    ):
        return False
    age = clock.now() - lifecycle.parse_time(cluster.updated_at)
    return age >= lifecycle.START_GRACE and operations.find(cluster.last_operation_id) is None
