"""Capacity tasks function: the tasks of the instance-group, node-action and autoscaling state
machines (see hypd.capacity.tasks)."""

from __future__ import annotations

import os

from hypd.aws.clients import client, regional_clients
from hypd.aws.dynamodb import Table
from hypd.capacity.state import AutoscalingStore
from hypd.capacity.tasks import CapacityServices, CapacitySettings, build_router
from hypd.clusters.store import ClusterStore
from hypd.config import Settings
from hypd.observability import task_handler
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore

SETTINGS = Settings.from_env()
_table = Table(client("dynamodb", SETTINGS.region), SETTINGS.table_name)

_client = regional_clients(SETTINGS.region)


handler = task_handler(
    build_router(
        CapacityServices(
            operations=OperationStore(_table),
            clusters=ClusterStore(_table),
            locks=LockStore(_table),
            waiters=WaiterStore(_table),
            autoscaling=AutoscalingStore(_table),
            client=_client,
            settings=CapacitySettings(
                region=SETTINGS.region,
                hyperpod_execution_role_arn=os.environ["HYPERPOD_EXECUTION_ROLE_ARN"],
                autoscaling_role_boundary_arn=(
                    os.environ.get("AUTOSCALING_ROLE_BOUNDARY_ARN") or None
                ),
            ),
        )
    )
)
