"""One guard for every `/clusters/{tag}/...` route: a cluster absent from AWS is answered from
its record, never with a call to AWS.

A record can name a cluster of which nothing, or nothing that a route reads, exists in AWS:

- DELETED: a teardown removed everything; the record stays with its operations;
- CREATING or FAILED before its creation's `hyperpod` stage succeeded: the HyperPod cluster
  is not made yet, or never was (a creation that failed at its network, EKS or HyperPod stage).

A route that went on to AWS would meet resources that do not exist. The grants conditioned on
the `hypd:tag` resource tag (ListClusterNodes, DescribeClusterNode) cannot match a resource
that is not there, so AWS answers AccessDenied and GET /clusters/{tag}/nodes and /health
answered 500; the other routes answered a 409 or 404 of their own, after calls that could not
help. So `refuse_absent_clusters`, a middleware of every route, reads the record (and, for a
CREATING or FAILED one, its creation's operation) first and answers, before the route runs (a
route that runs reads the record again from the request's memo, `hypd.api.context`, not the
table):

- a DELETED cluster: 409 `ClusterDeleted` (`hypd.clusters.models.cluster_deleted`);
- a cluster whose HyperPod cluster was not made: 409 `ClusterNotActive`
  (`hypd.clusters.models.cluster_not_created`), what the capacity routes answered already.

Each names the cluster's status in its message and `details.status`, and says what the tag
still allows (read the record, follow or resume the creation, create again, forget).

409, not 404 or 410: the tag names a record that exists (GET /clusters/{tag} returns it) and
its state forbids the request, as a change of a DELETED or not yet ACTIVE cluster answered
already; a 404 would tell a client the tag is unknown, a 410 that it is gone for good (POST
/clusters creates a DELETED tag again). An unknown tag is left to the route: 404, as before.

The exceptions, the one list of them (`EXCEPTIONS`); outside `TAG_SCOPED`, `GET
/clusters/{tag}` (the record) and `DELETE /clusters/{tag}` (a teardown of what a failed
creation made; `?forget=true` removing a DELETED record, which without it answers
`ClusterDeleted` itself) are never guarded, nor are `/operations/...` (a cluster's
operations and its teardown's report, all records).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypd.api.context import services

if TYPE_CHECKING:
    from collections.abc import Callable

    from aws_lambda_powertools.event_handler import Response
    from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
    from aws_lambda_powertools.event_handler.types import EventHandlerInstance

    from hypd.clusters.models import Cluster
    from hypd.errors import ConflictError
    from hypd.operations.models import Operation

TAG_SCOPED = "/clusters/<tag>/"
"""The rules of the routes the guard covers start with this."""

RECORD_READS = frozenset({
    ("GET", "/clusters/<tag>/health-policy"),
    ("GET", "/clusters/<tag>/nodes/<nodeId>/health"),
})
"""Routes under `TAG_SCOPED` that read only hypd's own records, which a teardown keeps: answered
for any record."""

BEFORE_CREATION = RECORD_READS | {
    ("GET", "/clusters/<tag>/teardown-plan"),
    ("PUT", "/clusters/<tag>/health-policy"),
    ("PUT", "/clusters/<tag>/protection"),
}
"""Routes also answered for a cluster whose HyperPod cluster was not made: the plan of the
DELETE that removes what its creation made (it reads what exists), and the settings a record
keeps (set before the cluster is up, they hold once it is)."""

EXCEPTIONS = {"DELETED": RECORD_READS, "CREATING, FAILED": BEFORE_CREATION}
"""Record status -> the routes under `TAG_SCOPED` the guard lets through (METHOD, rule)."""


def guarded(method: str, rule: str, *, deleted: bool = True) -> bool:
    """Whether the route `method` `rule` (Powertools' `<param>` form) is refused for a DELETED
    cluster (`deleted`), or for one whose HyperPod cluster was not made (not `deleted`)."""
    exceptions = RECORD_READS if deleted else BEFORE_CREATION
    return rule.startswith(TAG_SCOPED) and (method.upper(), rule) not in exceptions


def refusal(
    method: str,
    rule: str,
    cluster: Cluster | None,
    operation: Callable[[str], Operation | None],
) -> ConflictError | None:
    """Why the route `method` `rule` refuses `cluster` (its record) without a call to AWS, or
    None: let the route answer. `operation` finds an operation by id (the creation's, read only
    for a CREATING or FAILED record)."""
    # Imported here, not at the function's init: every route module imports these already (a
    # request imports its route's module first), the init need not.
    from hypd.clusters.models import ClusterStatus, cluster_deleted, cluster_not_created

    if cluster is None or not rule.startswith(TAG_SCOPED):
        return None
    if cluster.status is ClusterStatus.DELETED:
        return cluster_deleted(cluster) if guarded(method, rule) else None
    if cluster.status in (ClusterStatus.CREATING, ClusterStatus.FAILED) and guarded(
        method, rule, deleted=False
    ):
        creation = operation(cluster.last_operation_id) if cluster.last_operation_id else None
        return None if _hyperpod_made(creation) else cluster_not_created(cluster)
    return None


def _hyperpod_made(creation: Operation | None) -> bool:
    """Whether the creation made the HyperPod cluster (its `hyperpod` stage succeeded); true
    when the record's last operation is not a creation (it cannot say: the route decides)."""
    from hypd.operations.models import OperationKind, StageStatus

    if creation is None:
        return False
    if creation.kind is not OperationKind.CREATE_CLUSTER:
        return True
    return creation.stage("hyperpod").status is StageStatus.SUCCEEDED


def refuse_absent_clusters(
    app: EventHandlerInstance, next_middleware: NextMiddleware
) -> Response[str]:
    """The route's answer, unless its cluster's record says there is nothing in AWS for it.

    Runs after the request validation (the tag matched its pattern).

    Raises:
        ClusterDeleted: the record of the route's tag is DELETED.
        ClusterNotActive: it is CREATING or FAILED and its HyperPod cluster was not made.
    """
    route = app.context["_route"]
    if route.path.startswith(TAG_SCOPED):
        api = services()
        record = api.clusters.find(app.context["_route_args"]["tag"])
        refused = refusal(route.method, route.path, record, api.operations.find)
        if refused is not None:
            raise refused
    return next_middleware(app)
