"""The single-table layout: every key hypd writes is built here (see docs/architecture.md).

The attribute and index names match template.yaml's HypdTable; a test checks they agree.
"""

from __future__ import annotations

from dataclasses import dataclass

PK = "PK"
SK = "SK"
INDEXES = ("GSI1", "GSI2", "GSI3", "GSI4")


@dataclass(frozen=True)
class IndexKey:
    index: str
    pk: str
    sk: str


def cluster_key(tag: str) -> dict[str, str]:
    return {PK: f"CLUSTER#{tag}", SK: "CLUSTER"}


def cluster_index_keys(tag: str) -> list[IndexKey]:
    return [IndexKey("GSI1", "CLUSTERS", tag)]


CLUSTERS_PARTITION = ("GSI1", "CLUSTERS")


def node_health_key(tag: str, node_id: str) -> dict[str, str]:
    """A node's health (latest and bounded history), beside its cluster's record."""
    return {PK: f"CLUSTER#{tag}", SK: f"NODE#{node_id}"}


def node_health_prefix(tag: str) -> tuple[str, str]:
    """(partition, sort-key prefix) of every node health item of a cluster."""
    return f"CLUSTER#{tag}", "NODE#"


def cluster_health_key(tag: str) -> dict[str, str]:
    """The cluster's health: last state change, recent cluster events, add-ons."""
    return {PK: f"CLUSTER#{tag}", SK: "HEALTH"}


def repair_budget_key(tag: str) -> dict[str, str]:
    """The times of the repairs hypd started on the cluster in the last hour."""
    return {PK: f"CLUSTER#{tag}", SK: "REPAIRS"}


def node_repair_key(tag: str, node_id: str) -> dict[str, str]:
    """The last repair hypd started on a node (its cool-down)."""
    return {PK: f"CLUSTER#{tag}", SK: f"REPAIR#{node_id}"}


def cluster_feature_key(tag: str, feature: str) -> dict[str, str]:
    """The state of one managed feature of a cluster (e.g. autoscaling), beside its record."""
    return {PK: f"CLUSTER#{tag}", SK: f"FEATURE#{feature}"}


def operation_key(operation_id: str) -> dict[str, str]:
    return {PK: f"OP#{operation_id}", SK: "OP"}


def _operation_sort_key(created_at: str, operation_id: str) -> str:
    return f"{created_at}#{operation_id}"


def _listing_keys(prefix: str, facet: str, value: str, cluster_tag: str | None,
                  sort: str) -> list[IndexKey]:
    """The four listings of an item (operations, recorded events): all (GSI4), by a facet
    (GSI2: an operation's status, an event's kind), a cluster's (GSI1), a cluster's by the
    facet (GSI3)."""
    keys = [IndexKey("GSI2", f"{prefix}#{facet}#{value}", sort), IndexKey("GSI4", prefix, sort)]
    if cluster_tag is not None:
        keys.append(IndexKey("GSI1", f"{prefix}#C#{cluster_tag}", sort))
        keys.append(IndexKey("GSI3", f"{prefix}#C#{cluster_tag}#{facet}#{value}", sort))
    return keys


def _listing(prefix: str, facet: str, cluster_tag: str | None,
             value: str | None) -> tuple[str, str]:
    """The (index, partition key) of the listing for this filter (`_listing_keys`)."""
    if cluster_tag is not None and value is not None:
        return "GSI3", f"{prefix}#C#{cluster_tag}#{facet}#{value}"
    if cluster_tag is not None:
        return "GSI1", f"{prefix}#C#{cluster_tag}"
    if value is not None:
        return "GSI2", f"{prefix}#{facet}#{value}"
    return "GSI4", prefix


def operation_index_keys(
    operation_id: str, created_at: str, status: str, cluster_tag: str | None
) -> list[IndexKey]:
    return _listing_keys("OPS", "S", status, cluster_tag,
                         _operation_sort_key(created_at, operation_id))


def operations_partition(cluster_tag: str | None, status: str | None) -> tuple[str, str]:
    """The (index, partition key) that lists operations for this filter, newest first."""
    return _listing("OPS", "S", cluster_tag, status)


def lock_key(scope: str) -> dict[str, str]:
    return {PK: f"LOCK#{scope}", SK: "LOCK"}


def waiter_key(resource: str, operation_id: str) -> dict[str, str]:
    """A parked task token: an operation waiting for `resource` (e.g. a HyperPod cluster) to
    reach a condition. One per (resource, operation); the event handler queries the partition."""
    return {PK: f"WAIT#{resource}", SK: f"OP#{operation_id}"}


def waiters_partition(resource: str) -> str:
    return f"WAIT#{resource}"


def event_key(event_id: str) -> dict[str, str]:
    """A published event, recorded once (docs/automation.md, "Clients"): keyed by its
    ``eventId``, so a redelivered event finds its record already written."""
    return {PK: f"EVENT#{event_id}", SK: "EVENT"}


def event_sort_key(recorded_at: str, position: int, event_id: str) -> str:
    """Where a recorded event sorts in its listings: when hypd recorded it, then its place
    among the events its publisher recorded in that millisecond (stream order)."""
    return f"{recorded_at}#{position:04d}#{event_id}"


def event_index_keys(sort_key: str, kind: str, cluster_tag: str | None) -> list[IndexKey]:
    """The listings of a recorded event (`kind`: operation, cluster or node), as
    `operation_index_keys` lists operations."""
    return _listing_keys("EVENTS", "T", kind, cluster_tag, sort_key)


def events_partition(cluster_tag: str | None, kind: str | None) -> tuple[str, str]:
    """The (index, partition key) that lists recorded events for this filter."""
    return _listing("EVENTS", "T", cluster_tag, kind)


def idempotency_key(scope: str) -> dict[str, str]:
    """The record of one `Idempotency-Key` (hypd.api.idempotency): `scope` is a digest of the
    caller, the route and the key, so keys of any text make keys of one shape."""
    return {PK: f"IDEMPOTENCY#{scope}", SK: "IDEMPOTENCY"}


TTL_ATTRIBUTE = "expiresAt"
"""The table's time-to-live attribute (epoch seconds): DynamoDB deletes an item some time
after it. Recorded events and idempotency records carry it. template.yaml's HypdTable must
name it in its TimeToLiveSpecification (tests/unit/test_table_layout.py)."""
