"""One guard for every `/clusters/{tag}/...` route: a DELETED cluster is answered from its record.

A teardown leaves the cluster's record (status DELETED, kept with its operations) and nothing
in AWS. A route that went on to AWS would meet resources that no longer exist: the grants
conditioned on the `hypd:tag` resource tag (ListClusterNodes, DescribeClusterNode) cannot match
a resource that is gone, so AWS answers AccessDenied and the route a 500; the other routes
answered a 409 or a 404 of their own, each after calls that could not help. So
`refuse_deleted_clusters`, a middleware of every route, reads the record first and answers a
DELETED cluster with 409 `ClusterDeleted` (`hypd.clusters.models.cluster_deleted`: the status
in the message and in `details`, and what the tag still allows), before the route runs and
without any call to AWS.

409, not 404: the tag names a record that exists (GET /clusters/{tag} returns it), and its
state forbids the request, as for a change of a DELETED cluster (which answered
`ClusterDeleted` before); a 404 would tell a client the tag is unknown. An unknown tag is
left to the route, which answers 404 as before.

Not guarded:

- `GET /clusters/{tag}` and `DELETE /clusters/{tag}` (not under `/clusters/{tag}/`): the
  record, and `?forget=true` removing it (a DELETE without it answers `ClusterDeleted` itself);
- `RECORD_READS`: routes that read only hypd's own records, which a teardown keeps (the
  health policy, a node's health history): they answer as for any cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypd.api.context import services

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import Response
    from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
    from aws_lambda_powertools.event_handler.types import EventHandlerInstance

TAG_SCOPED = "/clusters/<tag>/"
"""The rules of the routes the guard covers start with this."""

RECORD_READS = frozenset(
    {
        ("GET", "/clusters/<tag>/health-policy"),
        ("GET", "/clusters/<tag>/nodes/<nodeId>/health"),
    }
)
"""Routes under `TAG_SCOPED` that read only hypd's own records (METHOD, rule)."""


def guarded(method: str, rule: str) -> bool:
    """Whether the route `method` `rule` (Powertools' `<param>` form) answers 409
    ClusterDeleted for a DELETED cluster."""
    return rule.startswith(TAG_SCOPED) and (method.upper(), rule) not in RECORD_READS


def refuse_deleted_clusters(
    app: EventHandlerInstance, next_middleware: NextMiddleware
) -> Response[str]:
    """The route's answer, unless it is `guarded` and its cluster's record is DELETED.

    Runs after the request validation (the tag matched its pattern).

    Raises:
        ClusterDeleted: the record of the route's tag is DELETED.
    """
    route = app.context["_route"]
    if guarded(route.method, route.path):
        # Imported here, not at the function's init: every route module imports it already
        # (a request for one of them imports that module first), the init need not.
        from hypd.clusters.models import ClusterStatus, cluster_deleted

        record = services().clusters.find(app.context["_route_args"]["tag"])
        if record is not None and record.status is ClusterStatus.DELETED:
            raise cluster_deleted(record)
    return next_middleware(app)
