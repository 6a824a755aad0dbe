"""Feature tasks function: the tasks of the set-features state machine (see hypd.features.tasks)."""

from __future__ import annotations

from hypd.config import FeatureTaskSettings
from hypd.features.tasks import router
from hypd.observability import task_handler
from hypd.wiring import features as wiring

SETTINGS = FeatureTaskSettings.from_env()

handler = task_handler(router.bind(wiring.services(SETTINGS)))
