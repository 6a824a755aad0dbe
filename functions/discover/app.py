"""Discover function: the tasks of the discover operation (see hypd.clusters.discovery_tasks)."""

from __future__ import annotations

from hypd.clusters.discovery_tasks import build_router
from hypd.config import DiscoverSettings
from hypd.observability import task_handler
from hypd.wiring import discover as wiring

SETTINGS = DiscoverSettings.from_env()

handler = task_handler(build_router(wiring.services(SETTINGS)))
