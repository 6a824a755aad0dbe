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
from hypd.api.services import ApiServices
from hypd.aws.clients import client, lazy_client
from hypd.aws.dynamodb import Table
from hypd.capacity.state import AutoscalingStore
from hypd.clusters.store import ClusterStore
from hypd.config import Settings
from hypd.health.policy import PolicyStore
from hypd.health.records import HealthStore
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore

# GET routes publish no metric; Powertools' warning about that is noise (its documented remedy).
warnings.filterwarnings("ignore", "No application metrics to publish*")

SETTINGS = Settings.from_env()
_table = Table(client("dynamodb", SETTINGS.region), SETTINGS.table_name)

logger = Logger()
tracer = Tracer()
metrics = Metrics()
app = build_app(
    ApiServices(
        operations=OperationStore(_table),
        clusters=ClusterStore(_table),
        locks=LockStore(_table),
        sfn_client=lazy_client("stepfunctions", SETTINGS.region),
        ec2_client=lazy_client("ec2", SETTINGS.region),
        sagemaker_client=lazy_client("sagemaker", SETTINGS.region),
        state_machines=SETTINGS.state_machines,
        autoscaling=AutoscalingStore(_table),
        health=HealthStore(_table),
        policies=PolicyStore(_table),
    )
)


@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True
)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
