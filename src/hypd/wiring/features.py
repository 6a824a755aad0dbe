"""The feature tasks function's services (see hypd.wiring)."""

from __future__ import annotations

from hypd.aws.clients import regional_clients
from hypd.config import FeatureTaskSettings
from hypd.features.tasks import FeatureServices
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore
from hypd.wiring import table


def services(settings: FeatureTaskSettings) -> FeatureServices:
    records = table(settings)
    return FeatureServices(
        operations=OperationStore(records),
        locks=LockStore(records),
        client=regional_clients(settings.region),
        settings=settings,
    )
