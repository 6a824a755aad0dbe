"""Routes: the teardown plan of a cluster and its deletion protection (docs/teardown.md).

The plan is read from AWS and Kubernetes now (`hypd.teardown.inventory`): what a DELETE would
delete, in order, what it keeps and why, and what refuses it.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hypd.api.context import services
from hypd.api.errors import ERROR_RESPONSES, accepted_response, json_response
from hypd.api.params import Tag
from hypd.api.responses import accepted, json_body, start
from hypd.api.teardown_models import (
    ClusterForgotten,
    ProtectionRequest,
    ProtectionView,
    TeardownPlan,
)
from hypd.clusters.models import ClusterSource, ClusterStatus, require_not_deleted
from hypd.errors import ConflictError, NotFoundError, ValidationError
from hypd.operations.models import OperationKind, OperationStatus
from hypd.teardown import inventory
from hypd.teardown.inputs import TeardownInput
from hypd.teardown.plan import Blocker, plan

router = APIGatewayRouter()
TAGS = ["teardown"]
Force = Annotated[bool, Query(description="Stop running jobs and endpoints too.")]


def running_operation(tag: str) -> dict[str, Any] | None:
    """An operation on the cluster that has not ended (the cluster's own lock, or a
    workload's), or None. PENDING is read first: an operation moves PENDING -> RUNNING, so one
    that moves between the two reads is still found (the other order could miss it)."""
    for status in (OperationStatus.PENDING, OperationStatus.RUNNING):
        page = services().operations.list(cluster_tag=tag, status=status, limit=1)
        for operation in page.operations:
            return {"operationId": operation.id, "kind": operation.kind.value,
                    "status": operation.status.value}
    return None


@router.get(
    "/clusters/<tag>/teardown-plan",
    operation_id="getTeardownPlan",
    summary="What deleting the cluster would delete, in order, what it keeps, and what blocks it",
    description=(
        "Read from AWS and Kubernetes now. steps lists, in order, every resource "
        "DELETE /clusters/{tag} deletes, each with its ARN or name; kept, what it leaves and "
        "why (the user's bucket, anything hypd did not create); blockers, what refuses the "
        "deletion now (deletion protection, running workloads unless force, a discovered "
        "cluster, an operation in progress, a cluster being deleted). A DELETED cluster has "
        "nothing left to plan: 409 ClusterDeleted, as on every /clusters/{tag}/... route."
    ),
    tags=TAGS,
    responses={200: json_response("TeardownPlan", "The plan."),
               **{s: ERROR_RESPONSES[s] for s in (400, 404, 503)}},
)
def get_teardown_plan(tag: Tag, force: Force = False) -> TeardownPlan:
    record = services().clusters.get(tag)
    found = inventory.read(services().feature_clients(), record, running_operation(tag))
    return TeardownPlan.model_validate(plan(found, force=force).view())


@router.put(
    "/clusters/<tag>/protection",
    operation_id="setProtection",
    summary="Turn the cluster's deletion protection on or off",
    tags=TAGS,
    responses={200: json_response("ProtectionView", "The protection in force."),
               **{s: ERROR_RESPONSES[s] for s in (400, 404, 409, 503)}},
)
def set_protection(tag: Tag, request: Annotated[ProtectionRequest, Body()]) -> ProtectionView:
    require_not_deleted(services().clusters.get(tag))
    changed = services().clusters.set_protection(tag, request.enabled)
    if changed is None:
        raise NotFoundError(f"cluster {tag} does not exist", details={"tag": tag})
    return ProtectionView(tag=tag, enabled=changed.protection)


class TeardownRefused(ConflictError):
    """A blocker of the plan: the first one's code and message, every blocker in details."""

    def __init__(self, blockers: list[Blocker]) -> None:
        first = blockers[0]
        super().__init__(first.message, details={
            **first.details, "blockers": [b.view() for b in blockers]})
        self.code = first.code


Forget = Annotated[bool, Query(description="Remove the record of a discovered cluster; "
                                           "nothing in AWS is touched.")]


@router.delete(
    "/clusters/<tag>",
    operation_id="deleteCluster",
    summary="Delete the cluster and everything hypd made for it (an operation), or forget a "
    "discovered one",
    description=(
        "Deletes in reverse order what GET /clusters/{tag}/teardown-plan lists: workloads, "
        "task governance, the HyperPod cluster, the add-ons and the EKS cluster beside the "
        "file systems, the network, the roles (and the TLS bucket hypd made, emptied first), "
        "then marks the record DELETED. Refused (409, "
        "nothing deleted) with deletion protection on, running workloads without force=true, "
        "a discovered cluster (forget=true removes its record instead), or another operation "
        "on the cluster."
    ),
    tags=TAGS,
    responses={
        200: json_response("ClusterForgotten", "forget=true: the record was removed."),
        202: accepted_response("The teardown started; poll GET /operations/{operationId}."),
        **{s: ERROR_RESPONSES[s] for s in (400, 404, 409, 503)},
    },
)
def delete_cluster(tag: Tag, force: Force = False, forget: Forget = False) -> Response[str]:
    record = services().clusters.get(tag)
    if forget:
        if record.source == ClusterSource.CREATED and record.status is not ClusterStatus.DELETED:
            raise ValidationError(
                f"forget: cluster {tag} was created by hypd; DELETE /clusters/{tag} deletes "
                "it (forget is for discovered clusters, whose resources hypd never deletes, "
                "and for the records of deleted ones)",
                details={"field": "forget"})
        if not services().clusters.forget(record):
            raise NotFoundError(f"cluster {tag} does not exist", details={"tag": tag})
        return json_body(200, ClusterForgotten(tag=tag, forgotten=True))
    if record.status is ClusterStatus.DELETED:
        require_not_deleted(record)  # before reading AWS: nothing of it is left
    found = inventory.read(services().feature_clients(), record, running_operation(tag))
    teardown = plan(found, force=force)
    if teardown.blockers:
        raise TeardownRefused(list(teardown.blockers))
    work = TeardownInput(tag=tag, eks_name=record.eks_name, hyperpod_name=record.hyperpod_name,
                         force=force, vpc_id=record.eks.vpc_id if record.eks else None,
                         planned=teardown.recorded(), kept=teardown.kept_views())
    operation = start(OperationKind.DELETE_CLUSTER, work, tag)
    services().clusters.set_status(tag, ClusterStatus.DELETING, operation.id)
    return accepted(operation)
