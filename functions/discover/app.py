"""Discover function: the tasks of the discover operation (see hypd.discovery.tasks)."""

from __future__ import annotations

from hypd.aws.clients import client, lazy_client
from hypd.aws.dynamodb import Table
from hypd.clusters.store import ClusterStore
from hypd.config import Settings
from hypd.discovery.tasks import DiscoverServices, router
from hypd.observability import task_handler
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore

SETTINGS = Settings.from_env()
_table = Table(client("dynamodb", SETTINGS.region), SETTINGS.table_name)

handler = task_handler(
    router,
    services=DiscoverServices(
        operations=OperationStore(_table),
        clusters=ClusterStore(_table),
        locks=LockStore(_table),
        eks_client=lazy_client("eks", SETTINGS.region),
        sagemaker_client=lazy_client("sagemaker", SETTINGS.region),
        region=SETTINGS.region,
    ),
)
