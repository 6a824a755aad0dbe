"""Cluster events function: HyperPod's and EKS's events (hypd.health.handler).

State changes wake the pipelines waiting on them; node health events are recorded, notified and,
under a cluster's policy, repaired; cluster events and add-on events feed the cluster's health.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from hypd.aws.clients import client, regional_clients
from hypd.aws.dynamodb import Table
from hypd.clusters.store import ClusterStore
from hypd.config import Settings
from hypd.health.budget import RepairBudget
from hypd.health.handler import EventServices, EventSettings, handle
from hypd.health.policy import PolicyStore
from hypd.health.records import HealthStore
from hypd.observability import counter
from hypd.operations.locks import LockStore
from hypd.operations.models import OperationKind
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore

SETTINGS = Settings.from_env()
_table = Table(client("dynamodb", SETTINGS.region), SETTINGS.table_name)

_client = regional_clients(SETTINGS.region)


logger = Logger()
SERVICES = EventServices(
    waiters=WaiterStore(_table),
    health=HealthStore(_table),
    policies=PolicyStore(_table),
    budget=RepairBudget(_table),
    clusters=ClusterStore(_table),
    operations=OperationStore(_table),
    locks=LockStore(_table),
    client=_client,
    settings=EventSettings(
        region=SETTINGS.region,
        notifications_topic_arn=os.environ.get("HEALTH_NOTIFICATIONS_TOPIC_ARN") or None,
        dead_letter_queue_url=os.environ.get("EVENTS_DEAD_LETTER_QUEUE_URL") or None,
        node_action_state_machine_arn=SETTINGS.state_machines.get(OperationKind.REBOOT_NODE),
    ),
    count=counter(
        os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "hypd"),
        os.environ.get("POWERTOOLS_SERVICE_NAME", "hypd-cluster-events"),
    ),
)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(event, SERVICES, logger)
