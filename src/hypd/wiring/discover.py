"""The discover tasks function's services (see hypd.wiring)."""

from __future__ import annotations

from hypd.aws.clients import lazy_client
from hypd.clusters.store import ClusterStore
from hypd.config import DiscoverSettings
from hypd.discovery.tasks import DiscoverServices
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.wiring import table


def services(settings: DiscoverSettings) -> DiscoverServices:
    records = table(settings)
    return DiscoverServices(
        operations=OperationStore(records),
        clusters=ClusterStore(records),
        locks=LockStore(records),
        eks_client=lazy_client("eks", settings.region),
        sagemaker_client=lazy_client("sagemaker", settings.region),
        region=settings.region,
    )
