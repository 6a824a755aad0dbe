"""The REST API application: its routers, loaded on first use, and error mapping.

A route module (`hypd.api.clusters`, ...) imports its request and response models and the
domain code its routes call: together most of what the API function would import. So the app
knows only which module declares which route (`ROUTE_MODULES`), and imports a module, and
includes its router, on the first request for one of its routes; the services the routes use
are built on the first request too. A cold start thus imports what routing and validation need,
then what its first route needs (docs/performance.md). `include_all_routes` loads every module
at once (the OpenAPI document), `warm` everything a request could load (SnapStart's priming,
functions/api/app.py).
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from hypd.api.absent_clusters import refuse_absent_clusters
from hypd.api.context import Scope, serving
from hypd.api.errors import register_error_handlers
from hypd.api.idempotency import idempotency
from hypd.api.resolver import ApiResolver

if TYPE_CHECKING:
    from hypd.api.services import ApiServices

ROUTE_MODULES: Mapping[str, tuple[str, ...]] = {
    "clusters": (
        "POST /clusters/discover",
        "POST /clusters",
        "GET /clusters",
        "GET /clusters/<tag>",
    ),
    "operations": (
        "GET /operations",
        "GET /operations/<operationId>",
        "POST /operations/<operationId>/retry",
        "POST /operations/<operationId>/cancel",
    ),
    "catalog": (
        "GET /catalog/availability-zones",
        "GET /catalog/instance-types",
        "GET /catalog/training-plans",
        "GET /catalog/instance-group-fields",
    ),
    "capacity": (
        "GET /clusters/<tag>/instance-groups",
        "POST /clusters/<tag>/instance-groups",
        "PATCH /clusters/<tag>/instance-groups/<name>",
        "DELETE /clusters/<tag>/instance-groups/<name>",
        "GET /clusters/<tag>/nodes",
        "POST /clusters/<tag>/nodes/<nodeId>/reboot",
        "POST /clusters/<tag>/nodes/<nodeId>/replace",
        "DELETE /clusters/<tag>/nodes/<nodeId>",
        "GET /clusters/<tag>/autoscaling",
        "PUT /clusters/<tag>/autoscaling",
    ),
    "health": (
        "GET /clusters/<tag>/health",
        "GET /clusters/<tag>/nodes/<nodeId>/health",
        "GET /clusters/<tag>/health-policy",
        "PUT /clusters/<tag>/health-policy",
    ),
    "features": (
        "GET /clusters/<tag>/features",
        "PATCH /clusters/<tag>/features",
    ),
    "upgrades": (
        "GET /clusters/<tag>/upgrades",
        "POST /clusters/<tag>/upgrades",
    ),
    "teams": (
        "GET /clusters/<tag>/teams",
        "GET /clusters/<tag>/teams/<team>",
        "PUT /clusters/<tag>/teams/<team>",
        "DELETE /clusters/<tag>/teams/<team>",
    ),
    "workloads": (
        "POST /clusters/<tag>/training-jobs",
        "GET /clusters/<tag>/training-jobs",
        "GET /clusters/<tag>/training-jobs/<name>",
        "GET /clusters/<tag>/training-jobs/<name>/logs",
        "DELETE /clusters/<tag>/training-jobs/<name>",
        "POST /clusters/<tag>/inference-endpoints",
        "GET /clusters/<tag>/inference-endpoints",
        "GET /clusters/<tag>/inference-endpoints/<name>",
        "POST /clusters/<tag>/inference-endpoints/<name>/invoke",
        "DELETE /clusters/<tag>/inference-endpoints/<name>",
    ),
    "teardown": (
        "GET /clusters/<tag>/teardown-plan",
        "PUT /clusters/<tag>/protection",
        "DELETE /clusters/<tag>",
    ),
    "events": ("GET /events",),
}
"""Each route module of `hypd.api` and the routes (`METHOD rule`) its router declares, in the
order the app includes them all. tests/unit/test_api_routes.py checks it against the routers,
and that no two modules' routes can match one request (so the order the routers are included
in, request by request, never decides which route answers)."""


def declared_routes() -> Iterator[tuple[str, str, str]]:
    """(module, METHOD, rule) of every route in `ROUTE_MODULES`."""
    for module, routes in ROUTE_MODULES.items():
        for route in routes:
            method, rule = route.split(" ", 1)
            yield module, method, rule


class HypdApp(ApiResolver):
    """The resolver of one function instance: every request runs with its services.

    `services` makes them, on the first request. Route modules are included when a request
    first needs one (`ROUTE_MODULES`).
    """

    def __init__(self, services: Callable[[], ApiServices]) -> None:
        super().__init__()
        self._make_services = services
        self._logger = Logger(child=True)
        self._metrics = Metrics()
        self._scope: Scope | None = None
        self._included: set[str] = set()
        self._lock = threading.RLock()
        self._route_index = [
            (module, method, self._compile_regex(rule))
            for module, method, rule in declared_routes()
        ]

    def scope(self) -> Scope:
        """The services, logger and metrics of this app's requests (the services made now if
        no request made them yet)."""
        with self._lock:
            if self._scope is None:
                self._scope = Scope(self._make_services(), self._logger, self._metrics)
            return self._scope

    def include_routes(self, *modules: str) -> None:
        """Import these route modules (names of `ROUTE_MODULES`) and include their routers,
        each once, in `ROUTE_MODULES`' order."""
        with self._lock:
            for name in ROUTE_MODULES:
                if name in modules and name not in self._included:
                    module = importlib.import_module(f"hypd.api.{name}")
                    self.include_router(module.router)
                    self._included.add(name)

    def include_all_routes(self) -> None:
        self.include_routes(*ROUTE_MODULES)

    def warm(self) -> None:
        """Do now what first requests would: include every router, prepare each route's
        validation (Powertools reads a route's signature on its first request) and make the
        services (whose clients are made on first use, not here)."""
        self.include_all_routes()
        for route in (*self._static_routes, *self._dynamic_routes):
            route.dependant  # noqa: B018 - computed and kept on first access
            route.body_field  # noqa: B018
        self.scope()

    def route_modules(self, method: str, path: str) -> list[str]:
        """The route modules with a route for `method` and `path` (none: no route)."""
        method = method.upper()
        return [
            module
            for module, route_method, rule in self._route_index
            if route_method == method and rule.match(path)
        ]

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        method, path = event.get("httpMethod"), event.get("path")
        if isinstance(method, str) and isinstance(path, str):
            self.include_routes(*self.route_modules(method, path))
        with serving(self.scope()):
            return super().resolve(event, context)


def build_app(services: Callable[[], ApiServices]) -> HypdApp:
    app = HypdApp(services)
    register_error_handlers(app)
    # Every route's: a request with an Idempotency-Key answers as its first delivery did.
    app.use(middlewares=[idempotency])
    # Then, after its request validation: the routes of a cluster absent from AWS
    # answer from its record (hypd.api.absent_clusters).
    app.use(middlewares=[refuse_absent_clusters])
    return app
