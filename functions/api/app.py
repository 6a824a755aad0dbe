"""hypd REST API function: `app.resolve(event, context)` under Powertools' decorators.

Routes, validation and error mapping live in `hypd.api`; configuration is read once, here.
Init imports what routing and validation need; the route modules, the services (stores, boto3)
and the X-Ray SDK load on the first request that needs them (docs/performance.md), or, with
SnapStart, before the snapshot (`prime`), so that a restored environment has them loaded.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hypd import snapstart
from hypd.api.app import build_app
from hypd.config import ApiSettings
from hypd.observability import DeferredTracer

if TYPE_CHECKING:
    from hypd.api.services import ApiServices

# GET routes publish no metric; Powertools' warning about that is noise (its documented remedy).
warnings.filterwarnings("ignore", "No application metrics to publish*")

SETTINGS = ApiSettings.from_env()


def services() -> ApiServices:
    """The stores and clients (clients made on first use), built by the first request."""
    from hypd.wiring import api as wiring

    return wiring.services(SETTINGS)


logger = Logger()
# AWS calls (botocore) and the Kubernetes API's (urllib3 over http.client) are traced.
tracer = DeferredTracer(patch_modules=("botocore", "httplib"))
metrics = Metrics()
app = build_app(services)


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


def prime() -> None:
    """Before SnapStart's snapshot: load what requests would (every route module, the
    services, the X-Ray SDK), making no AWS client and signing nothing."""
    app.warm()
    tracer.tracer()


snapstart.register(prime)
