"""hypd REST API function: `app.resolve(event, context)` under Powertools' decorators.

Routes, validation and error mapping live in `hypd.api`; configuration is read once, here.
"""

from __future__ import annotations

import warnings
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hypd.api.app import build_app
from hypd.config import ApiSettings
from hypd.wiring import api as wiring

# GET routes publish no metric; Powertools' warning about that is noise (its documented remedy).
warnings.filterwarnings("ignore", "No application metrics to publish*")

SETTINGS = ApiSettings.from_env()

logger = Logger()
tracer = Tracer()
metrics = Metrics()
app = build_app(wiring.services(SETTINGS))


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
