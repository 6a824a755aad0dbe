"""What a route runs with: the services, logger and metrics of the app resolving the request.

Routes are module-level functions on a module-level `Router` (Powertools' `split_route`
pattern), included into each app that `hypd.api.app.build_app` makes. The app sets its scope for
the duration of each request (a context variable, so several apps in one process, such as the
local cloud's tests running a few clouds, never see each other's), and a route asks for it:
`services()`, `logger()`, `metrics()`.

Each request also has its memo of the cluster records it read (`request_clusters`): the
absent-clusters guard reads a tag-scoped route's record, and the route reads it again from the
memo, not the table. The memo is made when a request starts and dropped when it ends, so a warm
function never answers a request from what an earlier one read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger, Metrics

if TYPE_CHECKING:
    from hypd.api.services import ApiServices
    from hypd.clusters.store import Memo


@dataclass(frozen=True)
class Scope:
    services: ApiServices
    logger: Logger
    """A child of the function's logger, created with the app: Powertools binds a logger to
    the service of the function that builds it (several functions share one process locally)."""
    metrics: Metrics


_SCOPE: ContextVar[Scope] = ContextVar("hypd_api_scope")
_CLUSTERS: ContextVar[Memo | None] = ContextVar("hypd_api_request_clusters", default=None)


@contextmanager
def serving(scope: Scope) -> Iterator[None]:
    """Run one request with `scope`, and a memo of the cluster records it reads that is its
    own (empty at its start, gone at its end)."""
    token = _SCOPE.set(scope)
    clusters = _CLUSTERS.set({})
    try:
        yield
    finally:
        _CLUSTERS.reset(clusters)
        _SCOPE.reset(token)


def request_clusters() -> Memo | None:
    """The memo of the cluster records the current request read (`hypd.clusters.store`'s);
    None outside a request: read the table."""
    return _CLUSTERS.get()


def _scope() -> Scope:
    try:
        return _SCOPE.get()
    except LookupError:
        raise RuntimeError("no API request is being served: routes run under build_app") from None


def services() -> ApiServices:
    """The services of the app serving the current request."""
    return _scope().services


def logger() -> Logger:
    return _scope().logger


def metrics() -> Metrics:
    return _scope().metrics
