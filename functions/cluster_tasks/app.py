"""Cluster tasks function: the tasks of the create-cluster pipeline (see hypd.create.tasks)."""

from __future__ import annotations

import os

from hypd.aws.clients import client, regional_clients
from hypd.aws.dynamodb import Table
from hypd.clusters.store import ClusterStore
from hypd.config import Settings
from hypd.create.tasks import CreateServices, CreateSettings, build_router
from hypd.observability import task_handler
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore

SETTINGS = Settings.from_env()
_table = Table(client("dynamodb", SETTINGS.region), SETTINGS.table_name)

_client = regional_clients(SETTINGS.region)


handler = task_handler(
    build_router(
        CreateServices(
            operations=OperationStore(_table),
            clusters=ClusterStore(_table),
            locks=LockStore(_table),
            waiters=WaiterStore(_table),
            client=_client,
            settings=CreateSettings(
                region=SETTINGS.region,
                eks_cluster_role_arn=os.environ["EKS_CLUSTER_ROLE_ARN"],
                hyperpod_execution_role_arn=os.environ["HYPERPOD_EXECUTION_ROLE_ARN"],
                s3_csi_driver_role_arn=os.environ.get("S3_CSI_DRIVER_ROLE_ARN") or None,
                fsx_csi_driver_role_arn=os.environ.get("FSX_CSI_DRIVER_ROLE_ARN") or None,
                network_stack_role_arn=os.environ.get("NETWORK_STACK_ROLE_ARN") or None,
                dependency_chart=os.environ["DEPENDENCY_CHART"],
                kubernetes_access_roles=tuple(
                    arn for arn in os.environ.get("KUBERNETES_ACCESS_ROLE_ARNS", "").split(",")
                    if arn),
            ),
        )
    )
)
