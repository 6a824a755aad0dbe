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
- ``Table.__deepcopy__`` while a transaction takes that snapshot: the items the transaction
  names are deep-copied, every other item is shared with the snapshot (the transaction holds
  the write lock and writes only the items it names; a rollback puts the snapshot in the
  table's place). moto copied the whole table, every operation and cluster record of hypd's
  one table: 5% of the process with fifty creates at once. Any other copy is moto's.
- ``BaseJSONSerializer._serialize_type_structure`` for DynamoDB's ``AttributeValue``: an
  item moto holds is already in the wire's form (``{"M": {"a": {"S": "x"}}}``), which moto's
  generic serializer walks member by member through every attribute picker of the shape (ten
  members, each looked up under two names): a GetItem of an operation record spent a few
  milliseconds there, a tenth of the process with fifty creates at once. A value made only of
  S, N, SS, NS, BOOL, NULL, M and L is copied as it is, which is what the walk produced; one
  with a binary (B, BS) is still walked.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from hypd_local.patches.engine import active, replace

_WRITES = threading.RLock()
"""Held by every write of the DynamoDB backend (a transaction's included)."""

_PENDING = threading.local()
"""The stream records of the transaction this thread is running (None outside one)."""

_SNAPSHOT = threading.local()
"""While this thread's transaction runs: table name -> the keys its items are named by."""

_WRITE_OPERATIONS = ("put_item", "update_item", "delete_item", "batch_write_item")


_WIRE_FORM_SERVICES = ("dynamodb", "dynamodbstreams")
_SCALARS = {"S": str, "N": str, "BOOL": bool, "NULL": bool}
_SETS = ("SS", "NS")


def wire_copy(value: Any) -> Any:
    """A copy of an AttributeValue already in the wire's form, or None when it is not one
    (or holds a binary, which the serializer encodes)."""
    if not isinstance(value, dict) or not value:
        return None
    out: dict[str, Any] = {}
    for member, inner in value.items():
        kind = _SCALARS.get(member)
        if kind is not None:
            if type(inner) is not kind:
                return None
            out[member] = inner
        elif member in _SETS:
            if not isinstance(inner, list) or not all(type(v) is str for v in inner):
                return None
            out[member] = list(inner)
        elif member == "M":
            if not isinstance(inner, dict):
                return None
            entries = {}
            for name, element in inner.items():
                copied = wire_copy(element)
                if copied is None or not isinstance(name, str):
                    return None
                entries[name] = copied
            out[member] = entries
        elif member == "L":
            if not isinstance(inner, list):
                return None
            elements = [wire_copy(element) for element in inner]
            if any(element is None for element in elements):
                return None
            out[member] = elements
        else:
            return None
    return out


def _named_keys(backend: Any, transact_items: list[dict[str, Any]]
                ) -> dict[str, set[tuple[Any, Any]]] | None:
    """(hash, range) of every item the transaction names, by table (range None without a
    range key); None when a key cannot be read (then moto copies the whole table)."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    named: dict[str, set[tuple[Any, Any]]] = {}
    try:
        for entry in transact_items:
            kind, op = next(iter(entry.items()))
            table = backend.tables.get(op.get("TableName"))
            if table is None:
                continue
            key = op["Item"] if kind == "Put" else op["Key"]
            range_key = (DynamoType(key[table.range_key_attr]) if table.range_key_attr
                         else None)
            named.setdefault(table.name, set()).add(
                (DynamoType(key[table.hash_key_attr]), range_key))
    except (KeyError, TypeError, AttributeError, StopIteration):
        return None
    return named


def _snapshot(table: Any, keys: set[tuple[Any, Any]], memo: dict[int, Any]) -> Any:
    """The table with the named items deep-copied and the others shared."""
    snapshot = copy.copy(table)
    memo[id(table)] = snapshot
    snapshot.items = copy.copy(table.items)  # a defaultdict stays one
    if table.range_key_attr is None:
        for hash_key, _ in keys:
            if hash_key in table.items:
                snapshot.items[hash_key] = copy.deepcopy(table.items[hash_key], memo)
        return snapshot
    for hash_key in {hash_key for hash_key, _ in keys if hash_key in table.items}:
        partition = dict(table.items[hash_key])
        for range_key in {r for h, r in keys if h == hash_key and r in partition}:
            partition[range_key] = copy.deepcopy(partition[range_key], memo)
        snapshot.items[hash_key] = partition
    return snapshot


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
            _SNAPSHOT.keys = _named_keys(self, transact_items)
            try:
                original_transact(self, transact_items)
                committed = list(_PENDING.records)
            finally:
                _PENDING.records = None
                _SNAPSHOT.keys = None
            for shard, old, new in committed:
                _append(shard, old, new, engine)

    def serialised(original: Any) -> Any:
        def write(self: Any, *args: Any, **kwargs: Any) -> Any:
            if active() is None:
                return original(self, *args, **kwargs)
            with _WRITES:
                return original(self, *args, **kwargs)
        return write

    def table_deepcopy(self: Any, memo: dict[int, Any]) -> Any:
        named = getattr(_SNAPSHOT, "keys", None)
        if named is not None and self.name in named:
            return _snapshot(self, named[self.name], memo)
        # what copy.deepcopy does for a class without __deepcopy__
        return copy._reconstruct(self, memo, *self.__reduce_ex__(4))  # type: ignore[attr-defined]

    from moto.core.serialize import BaseJSONSerializer

    serialize_structure = BaseJSONSerializer._serialize_type_structure

    def serialize_attribute_value(self: Any, serialized: Any, value: Any, shape: Any,
                                  key: str) -> None:
        if shape.name == "AttributeValue" and key and active() is not None and (
                self.operation_model.service_model.service_name in _WIRE_FORM_SERVICES):
            copied = wire_copy(value)
            if copied is not None:
                self._default_serialize(serialized, copied, shape, key)
                return
        serialize_structure(self, serialized, value, shape, key)

    replace(BaseJSONSerializer, "_serialize_type_structure", serialize_attribute_value)
    replace(table_models.StreamShard, "add", add)
    replace(table_models.Table, "__deepcopy__", table_deepcopy)
    # The shard outlives a rolled-back snapshot of its table: it holds committed records only.
    replace(table_models.StreamShard, "__deepcopy__", lambda self, memo: self)
    replace(DynamoDBBackend, "transact_write_items", transact_write_items)
    for name in _WRITE_OPERATIONS:
        replace(DynamoDBBackend, name, serialised(getattr(DynamoDBBackend, name)))
