"""DynamoDB: stream records reach their Lambda mappings asynchronously, as on AWS, and writes
are serialised so a transaction's snapshot is consistent.

- ``StreamShard.add``: the record is kept with its time on the virtual clock, and the running
  local cloud's stream delivery (`hypd_local.streams`) is told; moto's own synchronous hand-off
  (to mappings made in its Lambda backend, inside the write) is not used.
- ``transact_write_items``: moto snapshots every table it touches (a deep copy) to roll back a
  cancelled transaction. Taken while another thread writes, the copy fails ("dictionary
  changed size during iteration"); so every write of the backend holds one lock. The stream is
  not part of the snapshot: a transaction's records are added when it commits and dropped when
  it is cancelled, as DynamoDB streams show only committed writes.
"""

from __future__ import annotations

import threading
from typing import Any

from hypd_local.patches.engine import active, replace

_WRITES = threading.RLock()
"""Held by every write of the DynamoDB backend (a transaction's included)."""

_PENDING = threading.local()
"""The stream records of the transaction this thread is running (None outside one)."""

_WRITE_OPERATIONS = ("put_item", "update_item", "delete_item", "batch_write_item")


def patch_dynamodb() -> None:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models import table as table_models

    original_add: Any = table_models.StreamShard.add

    def add(self: Any, old: Any, new: Any) -> None:
        engine = active()
        if engine is None:
            original_add(self, old, new)
            return
        pending = getattr(_PENDING, "records", None)
        if pending is not None:
            pending.append((self, old, new))
            return
        _append(self, old, new, engine)

    def _append(shard: Any, old: Any, new: Any, engine: Any) -> None:
        view = shard.table.stream_specification["StreamViewType"]
        event_name = "INSERT" if old is None else "REMOVE" if new is None else "MODIFY"
        with _WRITES:
            sequence = len(shard.items) + shard.starting_sequence_number
            record = table_models.StreamRecord(shard.table, view, event_name, old, new,
                                               sequence)
            record.record["dynamodb"]["ApproximateCreationDateTime"] = engine.clock.now()
            shard.items.append(record)
        engine.stream_written(shard.table.name)

    original_transact: Any = DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        engine = active()
        if engine is None:
            original_transact(self, transact_items)
            return
        with _WRITES:
            _PENDING.records = []
            try:
                original_transact(self, transact_items)
                committed = list(_PENDING.records)
            finally:
                _PENDING.records = None
            for shard, old, new in committed:
                _append(shard, old, new, engine)

    def serialised(original: Any) -> Any:
        def write(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active() is None:
                return original(self, *args, **kwargs)
            with _WRITES:
                return original(self, *args, **kwargs)
        return write

    replace(table_models.StreamShard, "add", add)
    # The shard outlives a rolled-back snapshot of its table: it holds committed records only.
    replace(table_models.StreamShard, "__deepcopy__", lambda self, memo: self)
    replace(DynamoDBBackend, "transact_write_items", transact_write_items)
    for name in _WRITE_OPERATIONS:
        replace(DynamoDBBackend, name, serialised(getattr(DynamoDBBackend, name)))
