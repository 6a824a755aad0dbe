"""Cluster events function: HyperPod's and EKS's events (hypd.health.handler).

State changes wake the pipelines waiting on them; node health events are recorded, notified and,
under a cluster's policy, repaired; cluster events and add-on events feed the cluster's health.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from hypd.config import EventSettings
from hypd.health.handler import handle
from hypd.wiring import events as wiring

SETTINGS = EventSettings.from_env()
SERVICES = wiring.services(SETTINGS)

logger = Logger()


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, SERVICES, logger)
