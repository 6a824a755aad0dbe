"""The cluster store: one record per cluster tag."""

from __future__ import annotations

from dataclasses import dataclass

from hypd.aws.dynamodb import ConditionFailed, Table, decode_body, encode_item
from hypd.clusters.models import Cluster
from hypd.errors import ConflictError, NotFoundError
from hypd.pagination import decode_token, encode_token
from hypd.table import CLUSTERS_PARTITION, cluster_index_keys, cluster_key


@dataclass(frozen=True)
class ClusterPage:
    clusters: list[Cluster]
    next_token: str | None


class ClusterStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def get(self, tag: str) -> Cluster:
        item = self._table.get(cluster_key(tag))
        if item is None:
            raise NotFoundError(f"cluster {tag} does not exist", details={"tag": tag})
        return Cluster.model_validate(decode_body(item))

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
        item = encode_item(
            cluster_key(cluster.tag),
            cluster.model_dump(mode="json", by_alias=True),
            index_keys=cluster_index_keys(cluster.tag),
            attributes={"anchorArn": cluster.anchor_arn},
        )
        try:
            # A tag is bound to one anchor for life: create it, or update the same resources.
            self._table.put(
                item,
                condition="attribute_not_exists(PK) OR anchorArn = :anchor",
                values={":anchor": {"S": cluster.anchor_arn}},
            )
        except ConditionFailed as exc:
            raise ConflictError(
                f"cluster tag {cluster.tag} is already used by other resources",
                details={"tag": cluster.tag},
            ) from exc
