"""Capacity tasks function: the tasks of the instance-group, node-action and autoscaling state
machines (see hypd.capacity.tasks)."""

from __future__ import annotations

from hypd.capacity.tasks import router
from hypd.config import CapacityTaskSettings
from hypd.observability import task_handler
from hypd.wiring import capacity as wiring

SETTINGS = CapacityTaskSettings.from_env()

handler = task_handler(router.bind(wiring.services(SETTINGS)))
