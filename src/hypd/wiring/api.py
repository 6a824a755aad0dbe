"""The api function's services (see hypd.wiring)."""

from __future__ import annotations

from hypd.api.context import request_clusters
from hypd.api.services import ApiServices
from hypd.aws.clients import lazy_client, regional_clients
from hypd.capacity.state import AutoscalingStore
from hypd.clusters.store import ClusterStore
from hypd.config import ApiSettings
from hypd.events.store import EventStore
from hypd.health.policy import PolicyStore
from hypd.health.records import HealthStore
from hypd.idempotency.store import IdempotencyStore
from hypd.kubernetes.client import ClusterAccess
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.wiring import table


def services(settings: ApiSettings) -> ApiServices:
    records = table(settings)
    lazy = regional_clients(settings.region)
    return ApiServices(
        operations=OperationStore(records),
        # One read of a record per request: the guard's, reused by the route.
        clusters=ClusterStore(records, memo=request_clusters),
        locks=LockStore(records),
        sfn_client=lazy_client("stepfunctions", settings.region),
        ec2_client=lazy_client("ec2", settings.region),
        sagemaker_client=lazy_client("sagemaker", settings.region),
        state_machines=settings.state_machines,
        autoscaling=AutoscalingStore(records),
        health=HealthStore(records),
        policies=PolicyStore(records),
        events=EventStore(records),
        idempotency=IdempotencyStore(records),
        client=lazy,
        kubernetes=ClusterAccess(
            lambda: lazy("eks"), lambda: settings.region
        ).api,
        dependency_chart=settings.dependency_chart,
    )
