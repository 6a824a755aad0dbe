"""Routes: /clusters/{tag}/features (docs/features.md).

GET reads every feature as it is (AWS and the cluster's Kubernetes API). PATCH reads the same
first, resolves what the request names (explicit diff: nothing it does not name is acted on),
refuses what cannot be done (400 naming the field, 409), answers 200 ``changed: false`` when
the request matches reality, and otherwise starts a set-features operation (202) under the
cluster's lock.
"""

from __future__ import annotations

import json
from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel

from hypd.api.context import logger, metrics, services
from hypd.api.errors import ERROR_RESPONSES, accepted_response, json_response
from hypd.api.models import FeaturesUnchanged, FeaturesView, OperationAccepted
from hypd.api.params import Tag
from hypd.clusters.feature_request import FeaturesInput, FeaturesRequest
from hypd.clusters.models import Cluster
from hypd.errors import AwsResourceNotFound, ConflictError
from hypd.features import plan, state
from hypd.operations.models import OperationKind
from hypd.operations.starter import new_operation

router = APIGatewayRouter()
TAGS = ["features"]


def _json(status: int, model: BaseModel) -> Response[str]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(model.model_dump(mode="json", by_alias=True)),
    )


def _snapshot(record: Cluster) -> state.Snapshot:
    """The cluster's features as they are.

    Raises:
        ConflictError: its EKS cluster does not exist (yet, or any more).
    """
    try:
        return state.read(
            services().feature_clients(),
            record.tag,
            record.eks.name if record.eks else None,
            record.hyperpod.name if record.hyperpod else None,
        )
    except AwsResourceNotFound as exc:
        raise ConflictError(
            f"cluster {record.tag} ({record.status.value if record.status else 'no status'}) "
            f"has no EKS cluster to read features from: {exc.message}",
            details={"tag": record.tag, "awsErrorCode": exc.details.get("awsErrorCode")},
        ) from exc


@router.get(
    "/clusters/<tag>/features",
    operation_id="getFeatures",
    summary="Get each managed feature as it really is",
    description=(
        "Training operator, inference operator, tiered checkpointing, observability and task "
        "governance, read from EKS (add-ons, pod identity associations), IAM, SageMaker "
        "(TieredStorageConfig, the scheduler config), Amazon Managed Prometheus, S3 (the TLS "
        "bucket hypd makes for the inference operator) and the cluster's Kubernetes API (CRDs "
        "served, controllers available); never what hypd last wrote."
    ),
    tags=TAGS,
    responses={
        200: json_response("FeaturesView", "The features and the shared prerequisites."),
        **{s: ERROR_RESPONSES[s] for s in (400, 404, 409, 503)},
    },
)
def get_features(tag: Tag) -> FeaturesView:
    record = services().clusters.get(tag)
    return FeaturesView.model_validate(state.views(_snapshot(record)))


@router.patch(
    "/clusters/<tag>/features",
    operation_id="setFeatures",
    summary="Change the managed features a request names (explicit diff)",
    description=(
        "Send any subset, e.g. {\"trainingOperator\": {\"enabled\": true}}. Only the features "
        "and fields sent are acted on; the current state is read first; a request that matches "
        "it answers 200 with changed: false. Otherwise a set-features operation installs the "
        "prerequisites first, then the add-ons, verifies them, and removes what nothing needs "
        "any more (202)."
    ),
    tags=TAGS,
    responses={
        200: json_response("FeaturesUnchanged", "Nothing to change: the features as they are."),
        202: accepted_response("The operation was started; poll GET /operations/{operationId}."),
        **{s: ERROR_RESPONSES[s] for s in (400, 404, 409, 503)},
    },
)
def set_features(
    tag: Tag, request: Annotated[FeaturesRequest, Body()]
) -> Response[str]:
    record = services().clusters.get(tag)
    snapshot = _snapshot(record)
    plan.check(request, snapshot)
    targets = plan.target(request, snapshot)
    changed = plan.changes(targets, snapshot)
    if not changed:
        return _json(200, FeaturesUnchanged(
            changed=False, features=FeaturesView.model_validate(state.views(snapshot))))
    operation = new_operation(
        OperationKind.SET_FEATURES,
        FeaturesInput(
            tag=tag, request=request, eks_name=snapshot.eks_name,
            hyperpod_name=snapshot.hyperpod_name,
        ),
        cluster_tag=tag,
    )
    logger().set_correlation_id(operation.id)
    operation = services().starter.launch(operation)
    metrics().add_metric(name="OperationStarted", unit=MetricUnit.Count, value=1)
    logger().info("operation started", kind=operation.kind.value, cluster_tag=tag,
                  changes=changed)
    return _json(202, OperationAccepted(
        operation_id=operation.id, status=operation.status, kind=operation.kind))
