"""Cluster tasks function: the tasks of the create-cluster pipeline (see hypd.create.tasks)."""

from __future__ import annotations

from hypd.config import CreateTaskSettings
from hypd.create.tasks import router
from hypd.observability import task_handler
from hypd.wiring import create as wiring

SETTINGS = CreateTaskSettings.from_env()

handler = task_handler(router.bind(wiring.services(SETTINGS)))
