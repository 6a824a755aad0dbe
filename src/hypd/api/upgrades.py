"""Routes: /clusters/{tag}/upgrades (docs/upgrades.md).

GET reads the versions now (EKS, its add-ons, the chart's record, the HyperPod groups'
software), what is available and what blocks. POST plans the request's target; with
``dryRun=true`` it answers the plan, otherwise it refuses what blocks (400 naming the field,
409 for the cluster's state) or starts an upgrade-cluster operation (202) under the cluster's
lock with the plan it was started with.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hypd import clock
from hypd.api.context import services
from hypd.api.errors import ERROR_RESPONSES, accepted_response, json_response
from hypd.api.params import Tag
from hypd.api.responses import json_body, launch
from hypd.api.upgrade_models import UpgradePlan, UpgradesView
from hypd.clusters.models import Cluster, ClusterSource
from hypd.create.chart import chart_release
from hypd.errors import ConflictError, PermanentError, ValidationError
from hypd.operations.kinds import cluster_lock
from hypd.operations.models import OperationKind
from hypd.upgrades import facts as upgrade_facts
from hypd.upgrades.inputs import UpgradeInput, UpgradeRequest
from hypd.upgrades.model import Plan, UpgradeFacts
from hypd.upgrades.plan import plan
from hypd.upgrades.views import upgrades_view

router = APIGatewayRouter()
TAGS = ["upgrades"]

DryRun = Annotated[bool, Query(alias="dryRun", description="Answer the plan; change nothing.")]


def _running(tag: str) -> tuple[str, str] | None:
    holder = services().locks.holder(cluster_lock(tag))
    if holder is None:
        return None
    operation = services().operations.find(holder)
    if operation is None or operation.status.terminal:
        return None
    return operation.id, operation.kind.value


def _facts(record: Cluster) -> UpgradeFacts:
    api = services()
    try:
        bundled = chart_release(api.dependency_chart) if api.dependency_chart else None
    except PermanentError:
        bundled = None
    clients = api.feature_clients()
    return upgrade_facts.read(
        upgrade_facts.Sources(client=clients.client, kubernetes=clients.kubernetes,
                              running_operation=lambda: _running(record.tag),
                              bundled_chart=bundled),
        record.tag, record.eks.name if record.eks else None,
        record.hyperpod.name if record.hyperpod else None, clock.now(),
        created_by_hypd=record.source is ClusterSource.CREATED)


def _plan_view(tag: str, found: Plan) -> UpgradePlan:
    return UpgradePlan.model_validate({**found.to_json(), "tag": tag,
                                       "startable": not found.blockers})


def _refuse(found: Plan) -> None:
    """400 when a blocker is about a field of the request, else 409, listing every blocker."""
    blockers = [b.to_json() for b in found.blockers]
    fields = [b for b in found.blockers if b.field]
    if fields:
        raise ValidationError(
            "; ".join(f"{b.field}: {b.message} ({b.action})" for b in fields),
            details={"errors": [{"field": b.field, "in": "body", "message": b.message}
                                for b in fields], "blockers": blockers})
    raise ConflictError("; ".join(f"{b.message} ({b.action})" for b in found.blockers),
                        details={"blockers": blockers})


@router.get(
    "/clusters/<tag>/upgrades",
    operation_id="getUpgrades",
    summary="Get the cluster's versions, what it can move to and what blocks",
    description=(
        "Kubernetes (with EKS's support calendar), each add-on with the versions compatible "
        "with the next Kubernetes version, the HyperPod dependencies chart, each instance "
        "group's HyperPod software; EKS's upgrade insights; and what blocks an upgrade to the "
        "next version (insight errors, a running operation, a PodDisruptionBudget that allows "
        "no disruption...), each with what to do."
    ),
    tags=TAGS,
    responses={
        200: json_response("UpgradesView", "The versions and what is available."),
        **{s: ERROR_RESPONSES[s] for s in (400, 404, 409, 503)},
    },
)
def get_upgrades(tag: Tag) -> UpgradesView:
    record = services().clusters.get(tag)
    return UpgradesView.model_validate(upgrades_view(_facts(record)))


@router.post(
    "/clusters/<tag>/upgrades",
    operation_id="upgradeCluster",
    summary="Plan or start an upgrade (Kubernetes, add-ons, chart, nodes)",
    description=(
        "The target names what moves; what it does not name stays. Stages run in the "
        "documented order: the control plane one minor version per step, the add-ons, the "
        "chart, then the nodes in rolling batches. dryRun=true answers the plan (every step "
        "with its estimated time) and changes nothing; otherwise a blocker answers 400 (a "
        "field of the request) or 409 (the cluster's state), and an upgrade-cluster "
        "operation starts (202)."
    ),
    tags=TAGS,
    responses={
        200: json_response("UpgradePlan", "The plan (dryRun, or nothing to change)."),
        202: accepted_response("The operation was started; poll GET /operations/{operationId}."),
        **{s: ERROR_RESPONSES[s] for s in (400, 404, 409, 503)},
    },
)
def upgrade_cluster(tag: Tag, request: Annotated[UpgradeRequest, Body()],
                    dry_run: DryRun = False) -> Response[str]:
    record = services().clusters.get(tag)
    facts = _facts(record)
    found = plan(facts, request)
    if dry_run or (not found.steps and not found.blockers):
        return json_body(200, _plan_view(tag, found))
    if found.blockers:
        _refuse(found)
    return launch(
        OperationKind.UPGRADE_CLUSTER,
        UpgradeInput(tag=tag, eks_name=facts.eks_name, hyperpod_name=facts.hyperpod_name,
                     request=request, plan=found.to_json()),
        tag, steps=len(found.steps))
