"""The cluster events function's services (see hypd.wiring)."""

from __future__ import annotations

from hypd.aws.clients import regional_clients
from hypd.clusters.store import ClusterStore
from hypd.config import EventSettings
from hypd.health.budget import RepairBudget
from hypd.health.handler import EventServices
from hypd.health.policy import PolicyStore
from hypd.health.records import HealthStore
from hypd.observability import counter
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.operations.waiters import WaiterStore
from hypd.wiring import table


def services(settings: EventSettings) -> EventServices:
    records = table(settings)
    return EventServices(
        waiters=WaiterStore(records),
        health=HealthStore(records),
        policies=PolicyStore(records),
        budget=RepairBudget(records),
        clusters=ClusterStore(records),
        operations=OperationStore(records),
        locks=LockStore(records),
        client=regional_clients(settings.region),
        settings=settings,
        count=counter(settings.metrics_namespace, settings.service_name),
    )
