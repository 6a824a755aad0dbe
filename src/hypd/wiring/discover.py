"""The discover tasks function's services (see hypd.wiring)."""

from __future__ import annotations

from hypd.aws.clients import lazy_client
from hypd.clusters.discovery_tasks import DiscoverServices
from hypd.clusters.store import ClusterStore
from hypd.config import DiscoverSettings
from hypd.operations.store import OperationStore
from hypd.wiring import table


def services(settings: DiscoverSettings) -> DiscoverServices:
    records = table(settings)
    return DiscoverServices(
        operations=OperationStore(records),
        clusters=ClusterStore(records),
        eks_client=lazy_client("eks", settings.region),
        sagemaker_client=lazy_client("sagemaker", settings.region),
        region=settings.region,
    )
