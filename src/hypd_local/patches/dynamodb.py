"""DynamoDB streams: records reach their Lambda mappings asynchronously, as on AWS.

``StreamShard.add``: the record is kept with its time on the virtual clock, and the running
local cloud's stream delivery (`hypd_local.streams`) is told; moto's own synchronous hand-off
(to mappings made in its Lambda backend, inside the write) is not used.
"""

from __future__ import annotations

import threading
from typing import Any

from hypd_local.patches.engine import active, replace

_SEQUENCE_LOCK = threading.Lock()
"""Concurrent writes to one table take their stream sequence numbers one at a time."""


def patch_dynamodb() -> None:
    from moto.dynamodb.models import table as table_models

    original_add: Any = table_models.StreamShard.add

    def add(self: Any, old: Any, new: Any) -> None:
        engine = active()
        if engine is None:
            original_add(self, old, new)
            return
        view = self.table.stream_specification["StreamViewType"]
        event_name = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
        with _SEQUENCE_LOCK:
            sequence = len(self.items) + self.starting_sequence_number
            record = table_models.StreamRecord(self.table, view, event_name, old, new, sequence)
            record.record["dynamodb"]["ApproximateCreationDateTime"] = engine.clock.now()
            self.items.append(record)
        engine.stream_written(self.table.name)

    replace(table_models.StreamShard, "add", add)
