"""Teardown tasks function: the AWS deletions of the delete-cluster state machine (the HyperPod
and EKS clusters, FSx, the network, the record; see hypd.teardown.tasks). Its role may delete
and read, never create."""

from __future__ import annotations

from hypd.config import TeardownTaskSettings
from hypd.observability import task_handler
from hypd.wiring import teardown as wiring

SETTINGS = TeardownTaskSettings.from_env()

handler = task_handler(wiring.router.bind(wiring.services(SETTINGS)))
