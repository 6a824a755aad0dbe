"""The cluster store: one record per cluster tag.

A store may be given a memo of the records it read (`Memo`, the API's: one request's, see
`hypd.api.context.request_clusters`): a record read again within its scope comes from it, with
no second GetItem. A write (or the transaction write `new` prepares) drops the record from the
memo, and the read of a read-modify-write is always a GetItem, never the memo's copy.

Every write sets a new `revision`, and a change of some fields (`_update`: status, protection,
the HyperPod summary a capacity operation refreshes) is written only while the revision is the
one it read, re-read and re-applied when another writer came first: an API request turning
protection on and an operation's last task recording its status never undo each other.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from hypd import clock
from hypd.aws.dynamodb import (
    ConditionFailed,
    Table,
    Write,
    decode_body,
    encode_item,
    optimistic,
)
from hypd.clusters.models import Cluster, ClusterStatus
from hypd.errors import ConflictError, NotFoundError
from hypd.pagination import decode_token, encode_token
from hypd.table import CLUSTERS_PARTITION, cluster_index_keys, cluster_key


class ClusterExists(ConflictError):
    """A cluster record with this tag exists (discovered or created)."""

    code = "ClusterExists"


@dataclass(frozen=True)
class ClusterPage:
    clusters: list[Cluster]
    next_token: str | None


REVISION = "revision"
"""The attribute counting a record's writes. Not `version`: the events derived from the table's
stream name a write by its item's `version` (`hypd.events.derive`), and a tag recorded again
starts counting anew, so its events would repeat an earlier record's ids; a cluster record's
events are named by the stream record's sequence number instead."""

UPDATE_ATTEMPTS = 8
"""Versioned writes of one record tried before ConcurrentUpdate (a temporary error)."""

Memo = MutableMapping[str, dict[str, Any] | None]
"""Tag -> the record's item as GetItem returned it (None: no record), for one scope's reads."""


def no_memo() -> Memo | None:
    """Every read a GetItem: the store of a function that keeps no scope of reads."""
    return None


class ClusterStore:
    def __init__(self, table: Table, memo: Callable[[], Memo | None] = no_memo) -> None:
        """`memo`: the memo of the current scope's reads (None: no scope, read the table)."""
        self._table = table
        self._memo = memo

    def get(self, tag: str) -> Cluster:
        cluster = self.find(tag)
        if cluster is None:
            raise NotFoundError(f"cluster {tag} does not exist", details={"tag": tag})
        return cluster

    def find(self, tag: str) -> Cluster | None:
        item = self._read(tag)
        return Cluster.model_validate(decode_body(item)) if item else None

    def _read(self, tag: str) -> dict[str, Any] | None:
        """The record's item: the memo's when this scope read it already, else GetItem's (kept
        in the memo)."""
        memo = self._memo()
        if memo is not None and tag in memo:
            return memo[tag]
        item = self._table.get(cluster_key(tag))
        if memo is not None:
            memo[tag] = item
        return item

    def _fresh(self, tag: str) -> Cluster | None:
        """The record as the table holds it now (a GetItem), to change it: never the memo's."""
        self._written(tag)
        return self.find(tag)

    def _written(self, tag: str) -> None:
        """Drop the record from the memo: it is (being) written."""
        memo = self._memo()
        if memo is not None:
            memo.pop(tag, None)

    def all(self) -> list[Cluster]:
        index, partition = CLUSTERS_PARTITION
        return [Cluster.model_validate(body) for body in self._table.query_all(index, partition)]

    def list(self, *, limit: int = 50, next_token: str | None = None) -> ClusterPage:
        index, partition = CLUSTERS_PARTITION
        start = decode_token(next_token, index, partition)
        page = self._table.query_page(
            index, partition, limit=limit, start_key=start, newest_first=False
        )
        return ClusterPage(
            clusters=[Cluster.model_validate(body) for body in page.bodies],
            next_token=encode_token(index, partition, page.last_key),
        )

    def save(self, cluster: Cluster) -> None:
        """Create the record, or update it if it describes the same resources.

        Raises:
            ConflictError: the tag belongs to a record of other resources.
        """
        self._written(cluster.tag)

        def attempt() -> None:
            stored = self._table.get(cluster_key(cluster.tag))
            if stored is not None and stored.get("anchorArn", {}).get("S") != cluster.anchor_arn:
                # A tag is bound to one anchor for life: create it, or update the same resources.
                raise ConflictError(
                    f"cluster tag {cluster.tag} is already used by other resources",
                    details={"tag": cluster.tag},
                )
            self._put_versioned(_item(cluster, _revision(stored) + 1), stored)

        optimistic(attempt, attempts=UPDATE_ATTEMPTS, what=f"the record of cluster {cluster.tag}")

    def create(self, cluster: Cluster, *, replacing_orphan_of: str | None = None) -> None:
        """Record a cluster hypd is about to create; only a new tag is accepted.

        `replacing_orphan_of`: an operation id whose record of this tag is an orphan (its
        create operation was never recorded); that record, and only while it still names that
        operation, is replaced.

        Raises:
            ClusterExists: a record with this tag exists.
        """
        try:
            self._table.put(*self.new(cluster, replacing_orphan_of=replacing_orphan_of))
        except ConditionFailed as exc:
            raise cluster_exists(cluster.tag, self._fresh(cluster.tag)) from exc

    def new(self, cluster: Cluster, *, replacing_orphan_of: str | None = None) -> Write:
        """The conditional put of `create` (of a transaction)."""
        self._written(cluster.tag)
        item = _item(cluster)
        if replacing_orphan_of:
            return (
                item,
                "attribute_not_exists(PK) OR lastOperationId = :orphan",
                {":orphan": {"S": replacing_orphan_of}},
            )
        # attribute_not_exists(PK): the tag is new; never overwrite another cluster.
        return item, "attribute_not_exists(PK)", {}

    def set_status(self, tag: str, status: ClusterStatus, operation_id: str) -> Cluster | None:
        """Set a created cluster's status as `operation_id` moves it; None if there is no record.

        The write is conditional on the record still describing the same resources (anchor).
        """
        if status is ClusterStatus.DELETED:
            current = self._fresh(tag)
            if current is None:
                return None
            return self._update(tag, **current.torn_down(), last_operation_id=operation_id)
        return self._update(tag, status=status, last_operation_id=operation_id)

    def set_protection(self, tag: str, enabled: bool) -> Cluster | None:
        """Turn the cluster's deletion protection on or off; None if there is no record."""
        return self._update(tag, protection=enabled)

    def forget(self, cluster: Cluster) -> bool:
        """Remove the record of `cluster` (nothing in AWS is touched) while it still describes
        the same resources (anchor); False when it is gone or changed."""
        self._written(cluster.tag)
        try:
            self._table.delete(cluster_key(cluster.tag), condition="anchorArn = :anchor",
                               values={":anchor": {"S": cluster.anchor_arn}})
        except ConditionFailed:
            return False
        return True

    def _update(self, tag: str, **changes: Any) -> Cluster | None:
        """The record with `changes` (and a new updatedAt), written only while it still
        describes the same resources (anchor); None when there is no record or it changed."""
        self._written(tag)
        first_anchor: list[str] = []

        def attempt() -> Cluster | None:
            stored = self._table.get(cluster_key(tag))
            if stored is None:
                return None
            current = Cluster.model_validate(decode_body(stored))
            first_anchor[:] = first_anchor or [current.anchor_arn]
            if current.anchor_arn != first_anchor[0]:
                return None  # the tag names other resources now
            changed = current.model_copy(update={**changes, "updated_at": clock.now_iso()})
            self._put_versioned(_item(changed, _revision(stored) + 1), stored)
            return changed

        return optimistic(attempt, attempts=UPDATE_ATTEMPTS, what=f"the record of cluster {tag}")

    def update(self, tag: str, **changes: Any) -> Cluster | None:
        """Set some fields of the record (the others as the table holds them at the write);
        None when there is no record or its tag names other resources now."""
        return self._update(tag, **changes)

    def _put_versioned(self, item: dict[str, Any], stored: dict[str, Any] | None) -> None:
        """Write `item` while the record is as `stored` was read: the same revision of the same
        resources (a tag forgotten and recorded again starts at revision 1 anew, so the anchor
        is compared too); ConditionFailed otherwise. A record written before records had
        revisions matches by its absent revision."""
        if stored is None:
            self._table.put(item, condition="attribute_not_exists(PK)")
            return
        anchor = {":anchor": item["anchorArn"]}
        if REVISION not in stored:
            self._table.put(item, values=anchor, condition=(
                f"anchorArn = :anchor AND attribute_not_exists({REVISION})"))
        else:
            self._table.put(item, condition=f"anchorArn = :anchor AND {REVISION} = :r",
                            values={**anchor, ":r": {"N": str(_revision(stored))}})


def _revision(stored: dict[str, Any] | None) -> int:
    """The revision of a stored record (0: none, or one written before revisions)."""
    return int((stored or {}).get(REVISION, {}).get("N", 0))


def _item(cluster: Cluster, revision: int = 1) -> dict[str, Any]:
    """The table item of a record: its body, its index keys, and the attributes conditional
    writes test (the anchor ARN, the operation that last wrote it, the revision)."""
    attributes = {"anchorArn": cluster.anchor_arn}
    if cluster.last_operation_id:
        attributes["lastOperationId"] = cluster.last_operation_id
    item = encode_item(
        cluster_key(cluster.tag),
        cluster.model_dump(mode="json", by_alias=True),
        index_keys=cluster_index_keys(cluster.tag),
        attributes=attributes,
    )
    item[REVISION] = {"N": str(revision)}
    return item


def cluster_exists(tag: str, existing: Cluster | None) -> ClusterExists:
    details: dict[str, object] = {"tag": tag}
    how = ""
    if existing is not None:
        details["source"] = existing.source.value
        how = f" ({existing.source.value}"
        if existing.status is not None:
            details["status"] = existing.status.value
            how += f", {existing.status.value}"
        how += ")"
        if existing.last_operation_id:
            details["lastOperationId"] = existing.last_operation_id
    hint = ""
    if existing is not None and existing.status is ClusterStatus.FAILED and (
        existing.last_operation_id
    ):
        hint = (
            f"; its creation failed: resume it with POST /operations/"
            f"{existing.last_operation_id}/retry"
        )
    return ClusterExists(f"cluster {tag} exists already{how}{hint}", details=details)
