"""Operation locks: at most one running operation per scope (a cluster tag, or "discover").

A lock is one item naming its holder. Taking it is a conditional put, so two requests that
arrive at once cannot both win. A lock whose holder has ended (or was never recorded) is taken
over, conditionally on that same holder, so a crashed pipeline never blocks a scope for ever.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypd import clock
from hypd.aws.dynamodb import ConditionFailed, Table, Write, decode_body, encode_item
from hypd.errors import ConflictError
from hypd.operations.kinds import describe_scope
from hypd.table import lock_key


@dataclass(frozen=True)
class Lock:
    scope: str
    operation_id: str
    acquired_at: str


class LockStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def acquire(self, scope: str, operation_id: str, holder_ended: Callable[[str], bool]) -> None:
        """Take the lock of `scope` for `operation_id`.

        Raises:
            ConflictError: another operation that has not ended holds it
                (`details.operationId` names it).
        """
        try:
            self._table.put(*self.take(scope, operation_id))
            return
        except ConditionFailed:
            pass
        holder = self.holder(scope)
        if holder is not None and not holder_ended(holder):
            raise ConflictError(
                f"operation {holder} is already in progress for {describe_scope(scope)}",
                details={"operationId": holder, "scope": scope},
            )
        try:
            self._table.put(*self.take(scope, operation_id, over=holder or ""))
        except ConditionFailed as exc:
            raise ConflictError(
                f"another operation took the lock of {describe_scope(scope)} at the same "
                "moment",
                details={"scope": scope},
            ) from exc

    def take(self, scope: str, operation_id: str, *, over: str | None = None) -> Write:
        """The conditional put that takes the lock of `scope` for `operation_id`: when nobody
        holds it, or (`over`) when the holder is still the one seen ended."""
        item = encode_item(
            lock_key(scope),
            {"scope": scope, "operationId": operation_id, "acquiredAt": clock.now_iso()},
            attributes={"operationId": operation_id},
        )
        if over is None:
            # attribute_not_exists(PK): nobody holds this scope.
            return item, "attribute_not_exists(PK)", {}
        # operationId = :holder: take over only the lock we saw ended, not a newer one.
        return (
            item,
            "attribute_not_exists(PK) OR operationId = :holder",
            {":holder": {"S": over}},
        )

    def holder(self, scope: str) -> str | None:
        item = self._table.get(lock_key(scope))
        return str(decode_body(item)["operationId"]) if item else None

    def lock(self, scope: str) -> Lock | None:
        """The lock of `scope` with its holder and when it was taken, or None when free."""
        item = self._table.get(lock_key(scope))
        if item is None:
            return None
        body = decode_body(item)
        return Lock(scope, str(body["operationId"]), str(body["acquiredAt"]))

    def release(self, scope: str, operation_id: str) -> None:
        """Release the lock if `operation_id` still holds it (idempotent)."""
        try:
            # operationId = :op: never release a lock another operation has taken over.
            self._table.delete(
                lock_key(scope),
                condition="operationId = :op",
                values={":op": {"S": operation_id}},
            )
        except ConditionFailed:
            return
