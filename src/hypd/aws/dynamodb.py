"""The DynamoDB adapter: typed item encoding and the calls the stores need.

Records are stored as a JSON document (`body`) next to the attributes the keys and indexes need,
so nested models never pass through DynamoDB's number and set types.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from hypd.aws.errors import NETWORK_ERRORS, error_code, translate
from hypd.errors import ConcurrentUpdate, ValidationError
from hypd.table import PK, SK, IndexKey

T = TypeVar("T")


Write = tuple[dict[str, Any], str, dict[str, Any]]
"""One conditional put of a transaction: the item, its condition, the condition's values."""


class TransactionConflict(Exception):
    """A transaction's condition failed; `failed` lists the indexes of the items whose
    condition did not hold (others were cancelled with it)."""

    def __init__(self, failed: list[int]) -> None:
        super().__init__(f"conditions failed for items {failed}")
        self.failed = failed


BACKOFF_BASE_SECONDS = 0.005
BACKOFF_CAP_SECONDS = 0.1


def optimistic(attempt: Callable[[], T], *, attempts: int, what: str,
               sleep: Callable[[float], None] = time.sleep) -> T:
    """Run a read-modify-conditional-write `attempt` until its write wins.

    `attempt` raises ConditionFailed when someone wrote since it read: it is run again on a
    fresh read, at most `attempts` times. Between attempts it waits a random time up to a
    bound that doubles each time (full jitter, at most `BACKOFF_CAP_SECONDS`), so writers that
    collided do not collide again in lockstep: without it, one of 20 concurrent writers of an
    item can lose every round.

    Raises:
        ConcurrentUpdate: every attempt lost (a temporary error: retried by the caller's
            retry policy).
    """
    for number in range(attempts):
        try:
            return attempt()
        except ConditionFailed:
            if number + 1 < attempts:
                bound = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**number)
                sleep(random.uniform(0, bound))  # noqa: S311 - jitter, not cryptography
    raise ConcurrentUpdate(f"{what} changed {attempts} times while being updated")


def versioned(item: dict[str, Any] | None) -> int:
    """The version of a stored item (0: none stored)."""
    return int((item or {}).get("version", {}).get("N", 0))


VERSION_CONDITION = "attribute_not_exists(PK) OR version = :v"
"""Optimistic locking: nobody wrote the item since it was read at version :v (0: absent)."""


class ConditionFailed(Exception):
    """A conditional write's condition was false (the record changed or exists)."""


@dataclass(frozen=True)
class Page:
    bodies: list[dict[str, Any]]
    last_key: dict[str, Any] | None


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def encode_item(
    key: dict[str, str],
    body: dict[str, Any],
    *,
    version: int | None = None,
    index_keys: list[IndexKey] | None = None,
    attributes: dict[str, str] | None = None,
) -> dict[str, Any]:
    item: dict[str, Any] = {name: _s(value) for name, value in key.items()}
    item["body"] = _s(json.dumps(body, separators=(",", ":"), sort_keys=True))
    if version is not None:
        item["version"] = {"N": str(version)}
    for index_key in index_keys or []:
        item[f"{index_key.index}PK"] = _s(index_key.pk)
        item[f"{index_key.index}SK"] = _s(index_key.sk)
    for name, value in (attributes or {}).items():
        item[name] = _s(value)
    return item


def decode_body(item: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(item["body"]["S"])
    return body


class Table:
    """The calls hypd makes on its table, with ClientError codes translated."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self.name = table_name

    def get(self, key: dict[str, str]) -> dict[str, Any] | None:
        try:
            response = self._client.get_item(
                TableName=self.name,
                Key={name: _s(value) for name, value in key.items()},
                ConsistentRead=True,
            )
        except (ClientError, *NETWORK_ERRORS) as exc:
            raise translate(exc, f"reading {key} from table {self.name}") from exc
        item: dict[str, Any] | None = response.get("Item")
        return item

    def put(
        self,
        item: dict[str, Any],
        condition: str | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        """Write `item`; raise ConditionFailed when `condition` is false."""
        self._conditional_write("put_item", "writing to", {"Item": item}, condition, values)

    def delete(
        self,
        key: dict[str, str],
        condition: str | None = None,
        values: dict[str, Any] | None = None,
    ) -> None:
        """Delete the item at `key`; raise ConditionFailed when `condition` is false."""
        encoded = {name: _s(value) for name, value in key.items()}
        self._conditional_write("delete_item", "deleting from", {"Key": encoded}, condition, values)

    def _conditional_write(
        self,
        call: str,
        action: str,
        arguments: dict[str, Any],
        condition: str | None,
        values: dict[str, Any] | None,
    ) -> None:
        kwargs: dict[str, Any] = {"TableName": self.name, **arguments}
        if condition:
            kwargs["ConditionExpression"] = condition
        if values:
            kwargs["ExpressionAttributeValues"] = values
        try:
            getattr(self._client, call)(**kwargs)
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                raise ConditionFailed(str(exc)) from exc
            raise translate(exc, f"{action} table {self.name}") from exc
        except NETWORK_ERRORS as exc:
            raise translate(exc, f"{action} table {self.name}") from exc

    def query_page(
        self,
        index: str,
        partition: str,
        *,
        limit: int,
        start_key: dict[str, Any] | None = None,
        newest_first: bool = True,
    ) -> Page:
        """One page of an index partition (Query, never Scan)."""
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "IndexName": index,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": f"{index}PK"},
            "ExpressionAttributeValues": {":pk": _s(partition)},
            "ScanIndexForward": not newest_first,
            "Limit": limit,
        }
        if start_key:
            kwargs["ExclusiveStartKey"] = start_key
        try:
            response = self._client.query(**kwargs)
        except ClientError as exc:
            if error_code(exc) == "ValidationException" and start_key:
                raise ValidationError(
                    "nextToken does not fit this listing", details={"field": "nextToken"}
                ) from exc
            raise translate(exc, f"querying {index} of table {self.name}") from exc
        except NETWORK_ERRORS as exc:
            raise translate(exc, f"querying {index} of table {self.name}") from exc
        return Page(
            bodies=[decode_body(item) for item in response.get("Items", [])],
            last_key=response.get("LastEvaluatedKey"),
        )

    def query_between(
        self,
        index: str,
        partition: str,
        lower: str,
        upper: str,
        *,
        limit: int,
        newest_first: bool,
    ) -> list[dict[str, Any]]:
        """Up to `limit` items of an index partition whose sort key is between `lower` and
        `upper` (both included), from the highest sort key down when `newest_first`, else
        from the lowest up. Reads on past DynamoDB's 1 MB pages until `limit` items came."""
        sort = f"{index}SK"
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "IndexName": index,
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :lower AND :upper",
            "ExpressionAttributeNames": {"#pk": f"{index}PK", "#sk": sort},
            "ExpressionAttributeValues": {
                ":pk": _s(partition), ":lower": _s(lower), ":upper": _s(upper)},
            "ScanIndexForward": not newest_first,
        }
        items: list[dict[str, Any]] = []
        try:
            while len(items) < limit:
                response = self._client.query(**kwargs, Limit=limit - len(items))
                items.extend(response.get("Items", []))
                if not response.get("LastEvaluatedKey"):
                    break
                kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        except (ClientError, *NETWORK_ERRORS) as exc:
            raise translate(exc, f"querying {index} of table {self.name}") from exc
        return items

    def query_all(
        self, index: str, partition: str, page_size: int = 100
    ) -> Iterator[dict[str, Any]]:
        start: dict[str, Any] | None = None
        while True:
            page = self.query_page(index, partition, limit=page_size, start_key=start)
            yield from page.bodies
            if not page.last_key:
                return
            start = page.last_key

    def query_partition(self, partition: str, limit: int = 100) -> list[dict[str, Any]]:
        """The items of one partition of the base table (consistent read, at most `limit`)."""
        try:
            response = self._client.query(
                TableName=self.name,
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeNames={"#pk": PK},
                ExpressionAttributeValues={":pk": _s(partition)},
                ConsistentRead=True,
                Limit=limit,
            )
        except (ClientError, *NETWORK_ERRORS) as exc:
            raise translate(exc, f"querying {partition} of table {self.name}") from exc
        items: list[dict[str, Any]] = response.get("Items", [])
        return items

    def put_versioned(self, item: dict[str, Any], read_version: int) -> None:
        """Write `item` if the stored version is still `read_version` (0: it must be absent).

        Raises ConditionFailed otherwise (re-read and re-apply: `optimistic`).
        """
        self.put(item, condition=VERSION_CONDITION, values={":v": {"N": str(read_version)}})

    def query_prefix(self, partition: str, prefix: str) -> list[dict[str, Any]]:
        """Every item of a base-table partition whose sort key starts with `prefix`."""
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": PK, "#sk": SK},
            "ExpressionAttributeValues": {":pk": _s(partition), ":prefix": _s(prefix)},
            "ConsistentRead": True,
        }
        items: list[dict[str, Any]] = []
        try:
            while True:
                response = self._client.query(**kwargs)
                items.extend(response.get("Items", []))
                if not response.get("LastEvaluatedKey"):
                    return items
                kwargs["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        except (ClientError, *NETWORK_ERRORS) as exc:
            raise translate(exc, f"querying {partition} of table {self.name}") from exc

    def transact_put(self, writes: Sequence[Write]) -> None:
        """Put every `(item, condition, values)` together, or none of them.

        Raises:
            TransactionConflict: a condition failed (its index is named).
            ConditionFailed: another transaction was writing one of the items.
        """
        items = [
            {
                "Put": {
                    "TableName": self.name,
                    "Item": item,
                    "ConditionExpression": condition,
                    **({"ExpressionAttributeValues": values} if values else {}),
                }
            }
            for item, condition, values in writes
        ]
        try:
            self._client.transact_write_items(TransactItems=items)
        except ClientError as exc:
            if error_code(exc) == "TransactionCanceledException":
                reasons = exc.response.get("CancellationReasons") or []
                failed = [
                    i for i, r in enumerate(reasons) if r.get("Code") == "ConditionalCheckFailed"
                ]
                if failed:
                    raise TransactionConflict(failed) from exc
                if any(r.get("Code") == "TransactionConflict" for r in reasons):
                    # Another transaction held one of the items: run again on a fresh read.
                    raise ConditionFailed("a concurrent transaction held an item") from exc
            raise translate(exc, f"writing a transaction to table {self.name}") from exc
        except NETWORK_ERRORS as exc:
            raise translate(exc, f"writing a transaction to table {self.name}") from exc
