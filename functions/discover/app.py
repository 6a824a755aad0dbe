"""Discover function: the tasks of the discover operation (see hypd.discovery.tasks)."""

from __future__ import annotations

from hypd.config import DiscoverSettings
from hypd.discovery.tasks import router
from hypd.observability import task_handler
from hypd.wiring import discover as wiring

SETTINGS = DiscoverSettings.from_env()

handler = task_handler(router.bind(wiring.services(SETTINGS)))
