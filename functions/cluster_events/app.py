"""Cluster events function: HyperPod cluster state changes wake the pipelines waiting on them
(task tokens parked by hypd.create.waiters)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from hypd.aws.clients import client, lazy_client
from hypd.aws.dynamodb import Table
from hypd.config import Settings
from hypd.create.waiters import WaiterStore, on_cluster_state_change

SETTINGS = Settings.from_env()
_waiters = WaiterStore(Table(client("dynamodb", SETTINGS.region), SETTINGS.table_name))
_sfn = lazy_client("stepfunctions", SETTINGS.region)
logger = Logger()


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = on_cluster_state_change(event, _waiters, _sfn)
    logger.info("cluster state change", extra=result)
    return result
