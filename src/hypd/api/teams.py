"""Routes: /clusters/{tag}/teams (task governance's teams, one compute quota each).

Checked before anything starts: task governance is on (409 naming how to turn it on), each
instance type is one of the cluster's groups (400 naming ``resources[i].instanceType``), the
team exists for a delete (404). A PUT that matches the quota answers 200 ``changed: false``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from aws_lambda_powertools.event_handler.router import APIGatewayRouter
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel

from hypd.api.context import logger, metrics, services
from hypd.api.errors import ERROR_RESPONSES, accepted_response, json_response
from hypd.api.models import OperationAccepted, TeamList, TeamUnchanged, TeamView
from hypd.api.params import Tag
from hypd.aws import eks as eks_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.clusters.feature_request import TEAM_NAME_PATTERN, TeamRequest
from hypd.clusters.models import Cluster
from hypd.errors import ConflictError, NotFoundError, ValidationError
from hypd.features import teams
from hypd.features.catalog import TASK_GOVERNANCE
from hypd.operations.models import OperationKind
from hypd.operations.starter import new_operation

router = APIGatewayRouter()
TAGS = ["features"]
Team = Annotated[
    str, Path(pattern=TEAM_NAME_PATTERN, max_length=40, description="The team's name.")
]


def _json(status: int, model: BaseModel) -> Response[str]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(model.model_dump(mode="json", by_alias=True)),
    )


def _governed(record: Cluster) -> tuple[str, str, dict[str, Any]]:
    """(HyperPod ARN, name, DescribeCluster) of a cluster whose task governance is on.

    Raises:
        NotFoundError: the HyperPod cluster does not exist.
        ConflictError: task governance is off.
    """
    name = record.hyperpod_name
    described = sagemaker_api.find_cluster(services().sagemaker_client(), name)
    if described is None:
        raise NotFoundError(f"HyperPod cluster {name} of {record.tag} does not exist",
                            details={"tag": record.tag})
    eks = services().feature_clients().client("eks")
    eks_name = record.eks_name
    addon = eks_api.find_addon(eks, eks_name, str(TASK_GOVERNANCE.addon))
    if addon is None or addon.get("status") != "ACTIVE":
        raise ConflictError(
            f"task governance is {'off' if addon is None else addon.get('status')} on cluster "
            f"{record.tag}: turn it on first (PATCH /clusters/{record.tag}/features "
            '{"taskGovernance": {"enabled": true}})',
            details={"feature": "taskGovernance"},
        )
    return str(described["ClusterArn"]), name, described


def _check_types(request: TeamRequest, described: dict[str, Any]) -> None:
    types = sorted({str(g.get("InstanceType")) for g in described.get("InstanceGroups") or []})
    for index, resource in enumerate(request.resources):
        if resource.instance_type not in types:
            field = f"resources[{index}].instanceType"
            raise ValidationError(
                f"{field}: {resource.instance_type} is not the instance type of any of the "
                f"cluster's groups ({', '.join(types)})",
                details={"field": field},
            )


def _start(kind: OperationKind, work: teams.TeamInput) -> Response[str]:
    operation = new_operation(kind, work, cluster_tag=work.tag)
    logger().set_correlation_id(operation.id)
    operation = services().starter.launch(operation)
    metrics().add_metric(name="OperationStarted", unit=MetricUnit.Count, value=1)
    logger().info("operation started", kind=kind.value, cluster_tag=work.tag, team=work.team)
    return _json(202, OperationAccepted(
        operation_id=operation.id, status=operation.status, kind=operation.kind))


@router.get(
    "/clusters/<tag>/teams",
    operation_id="listTeams",
    summary="List the task governance teams of a cluster (their compute quotas)",
    tags=TAGS,
    responses={200: json_response("TeamList", "The teams."),
               **{s: ERROR_RESPONSES[s] for s in (400, 404, 503)}},
)
def list_teams(tag: Tag) -> TeamList:
    record = services().clusters.get(tag)
    name = record.hyperpod_name
    sagemaker = services().sagemaker_client()
    described = sagemaker_api.find_cluster(sagemaker, name)
    quotas = (
        sagemaker_api.list_compute_quotas(sagemaker, str(described["ClusterArn"]))
        if described else []
    )
    return TeamList(tag=tag, teams=[TeamView.model_validate(teams.team_view(q))
                                    for q in quotas])


@router.get(
    "/clusters/<tag>/teams/<team>",
    operation_id="getTeam",
    summary="Get one team's compute quota",
    tags=TAGS,
    responses={200: json_response("TeamView", "The team."),
               **{s: ERROR_RESPONSES[s] for s in (400, 404, 503)}},
)
def get_team(tag: Tag, team: Team) -> TeamView:
    record = services().clusters.get(tag)
    name = record.hyperpod_name
    sagemaker = services().sagemaker_client()
    described = sagemaker_api.find_cluster(sagemaker, name)
    quota = teams.find_quota(sagemaker, str(described["ClusterArn"]), team) if described else None
    if quota is None:
        raise NotFoundError(f"cluster {tag} has no team {team}", details={"team": team})
    return TeamView.model_validate(teams.team_view(quota))


@router.put(
    "/clusters/<tag>/teams/<team>",
    operation_id="setTeam",
    summary="Create or change a team's compute quota (an operation)",
    description=(
        "The team's share of the cluster: instance counts per type, fair-share weight, lending "
        "and borrowing, preemption. Task governance must be on. Jobs of the team are queued "
        "with the label kueue.x-k8s.io/queue-name: hyperpod-ns-<team>-localqueue."
    ),
    tags=TAGS,
    responses={
        200: json_response("TeamUnchanged", "The quota already says this."),
        202: accepted_response("The operation was started; poll GET /operations/{operationId}."),
        **{s: ERROR_RESPONSES[s] for s in (400, 404, 409, 503)},
    },
)
def set_team(tag: Tag, team: Team, request: Annotated[TeamRequest, Body()]) -> Response[str]:
    record = services().clusters.get(tag)
    cluster_arn, name, described = _governed(record)
    _check_types(request, described)
    quota = teams.find_quota(services().sagemaker_client(), cluster_arn, team)
    if quota is not None and str(quota.get("Status")) in teams.SETTLED and teams.matches(
        quota, team, request
    ):
        return _json(200, TeamUnchanged(
            changed=False, team=TeamView.model_validate(teams.team_view(quota))))
    return _start(OperationKind.SET_TEAM, teams.TeamInput(
        tag=tag, team=team, cluster_arn=cluster_arn, hyperpod_name=name, request=request))


@router.delete(
    "/clusters/<tag>/teams/<team>",
    operation_id="deleteTeam",
    summary="Delete a team's compute quota (an operation)",
    tags=TAGS,
    responses={
        202: accepted_response("The operation was started; poll GET /operations/{operationId}."),
        **{s: ERROR_RESPONSES[s] for s in (400, 404, 409, 503)},
    },
)
def delete_team(tag: Tag, team: Team) -> Response[str]:
    record = services().clusters.get(tag)
    cluster_arn, name, _described = _governed(record)
    if teams.find_quota(services().sagemaker_client(), cluster_arn, team) is None:
        raise NotFoundError(f"cluster {tag} has no team {team}", details={"team": team})
    return _start(OperationKind.DELETE_TEAM, teams.TeamInput(
        tag=tag, team=team, cluster_arn=cluster_arn, hyperpod_name=name))

