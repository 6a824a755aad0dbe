"""The operation-state store: the one place operations are read and written.

Every write is conditional. Creating requires that the id is new; updating requires that the
stored version is the one the change was computed from (optimistic locking), so two writers can
never both win with a stale read: the loser re-reads and re-applies its change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from hypd import clock, observability
from hypd.aws.dynamodb import (
    ConditionFailed,
    Table,
    Write,
    decode_body,
    encode_item,
    optimistic,
)
from hypd.errors import ConflictError, NotFoundError
from hypd.operations.models import Operation, OperationStatus
from hypd.pagination import decode_token, encode_token
from hypd.table import operation_index_keys, operation_key, operations_partition

Mutation = Callable[[Operation], Operation | None]
"""Returns the changed operation (from `model_copy`), or None when nothing needs to change."""

MAX_UPDATE_ATTEMPTS = 8

_snapshot: ContextVar[Operation | None] = ContextVar("hypd_operation_snapshot", default=None)
"""The operation a task read, while it works (`OperationStore.reading`): per thread, so tasks
the local cloud runs side by side do not share it."""


@dataclass(frozen=True)
class OperationPage:
    operations: list[Operation]
    next_token: str | None


class OperationStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    # ------------------------------------------------------------------ writes
    def create(self, operation: Operation) -> Operation:
        """Record a new operation.

        Raises:
            ConflictError: an operation with this id exists already.
        """
        try:
            self._table.put(*self.new(operation))
        except ConditionFailed as exc:
            raise ConflictError(f"operation {operation.id} exists already") from exc
        return operation

    def new(self, operation: Operation) -> Write:
        """The conditional put that records a new operation (of a transaction)."""
        # attribute_not_exists(PK): the id is new; never overwrite another operation.
        return self._encode(operation), "attribute_not_exists(PK)", {}

    @property
    def table(self) -> Table:
        return self._table

    def update(self, operation_id: str, mutate: Mutation) -> Operation:
        """Apply `mutate` to the latest stored operation and write it back, retrying on races.

        Inside `reading`, the first try starts from the snapshot instead of a fresh read (the
        conditional write still refuses it if anyone wrote since); a retry reads again.

        Raises:
            NotFoundError: no such operation.
            ConcurrentUpdate: the record kept changing beyond the retry budget.
        """
        tries = 0

        written: list[tuple[Operation, Operation]] = []

        def attempt() -> Operation:
            nonlocal tries
            tries += 1
            snapshot = _snapshot.get()
            if tries == 1 and snapshot is not None and snapshot.id == operation_id:
                current = snapshot
            else:
                current = self._read(operation_id)
            changed = mutate(current.model_copy(deep=True))
            if changed is None:
                self._remember(current)
                return current
            changed = changed.model_copy(
                update={"version": current.version + 1, "updated_at": clock.now_iso()}
            )
            # version = :v: nobody wrote since we read; otherwise re-read and re-apply.
            self._table.put(
                self._encode(changed),
                condition="version = :v",
                values={":v": {"N": str(current.version)}},
            )
            written.append((current, changed))
            self._remember(changed)
            return changed

        result = optimistic(attempt, attempts=MAX_UPDATE_ATTEMPTS, what=f"operation {operation_id}")
        # The one write path of an operation's record: the change that was written, once, as
        # the operators' metrics (starts, ends, stage durations).
        for before, after in written:
            observability.operation_changed(before, after)
        return result

    @contextmanager
    def reading(self, operation: Operation) -> Iterator[None]:
        """Within: `get` of this operation answers with `operation` (or what this thread wrote
        of it since) instead of reading it again, and `update` starts from it. For one task,
        which reads its operation once and writes it once per look."""
        token = _snapshot.set(operation)
        try:
            yield
        finally:
            _snapshot.reset(token)

    @staticmethod
    def _remember(operation: Operation) -> None:
        snapshot = _snapshot.get()
        if snapshot is not None and snapshot.id == operation.id:
            _snapshot.set(operation)

    # ------------------------------------------------------------------ reads
    def get(self, operation_id: str) -> Operation:
        snapshot = _snapshot.get()
        if snapshot is not None and snapshot.id == operation_id:
            return snapshot.model_copy(deep=True)
        return self._read(operation_id)

    def _read(self, operation_id: str) -> Operation:
        item = self._table.get(operation_key(operation_id))
        if item is None:
            raise NotFoundError(
                f"operation {operation_id} does not exist", details={"operationId": operation_id}
            )
        return Operation.model_validate(decode_body(item))

    def find(self, operation_id: str) -> Operation | None:
        try:
            return self.get(operation_id)
        except NotFoundError:
            return None

    def list(
        self,
        *,
        cluster_tag: str | None = None,
        status: OperationStatus | None = None,
        limit: int = 20,
        next_token: str | None = None,
    ) -> OperationPage:
        """Operations newest first, filtered by cluster and/or status, one page at a time."""
        index, partition = operations_partition(cluster_tag, status.value if status else None)
        start = decode_token(next_token, index, partition)
        page = self._table.query_page(index, partition, limit=limit, start_key=start)
        return OperationPage(
            operations=[Operation.model_validate(body) for body in page.bodies],
            next_token=encode_token(index, partition, page.last_key),
        )

    # ------------------------------------------------------------------ encoding
    @staticmethod
    def _encode(operation: Operation) -> dict[str, object]:
        return encode_item(
            operation_key(operation.id),
            operation.model_dump(mode="json", by_alias=True),
            version=operation.version,
            index_keys=operation_index_keys(
                operation.id, operation.created_at, operation.status.value, operation.cluster_tag
            ),
            attributes={"kind": operation.kind.value, "status": operation.status.value},
        )
