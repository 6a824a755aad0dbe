"""hypd.table agrees with template.yaml's HypdTable (the template is the source of truth)."""

from __future__ import annotations

from typing import Any

from hypd import table
from tests.unit.support import hypd_table_properties


def key_schema(schema: list[dict[str, str]]) -> dict[str, str]:
    return {key["KeyType"]: key["AttributeName"] for key in schema}


def test_primary_key_names(template: dict[str, Any]) -> None:
    properties = hypd_table_properties(template)
    assert key_schema(properties["KeySchema"]) == {"HASH": table.PK, "RANGE": table.SK}


def test_index_names_and_keys(template: dict[str, Any]) -> None:
    properties = hypd_table_properties(template)
    indexes = {index["IndexName"]: index for index in properties["GlobalSecondaryIndexes"]}
    assert set(indexes) == set(table.INDEXES)
    for name in table.INDEXES:
        assert key_schema(indexes[name]["KeySchema"]) == {"HASH": f"{name}PK", "RANGE": f"{name}SK"}
        # listings read the record body from the index
        assert indexes[name]["Projection"] == {"ProjectionType": "ALL"}


def test_every_key_attribute_is_a_string_attribute_definition(template: dict[str, Any]) -> None:
    properties = hypd_table_properties(template)
    defined = {d["AttributeName"]: d["AttributeType"] for d in properties["AttributeDefinitions"]}
    expected = {table.PK, table.SK} | {f"{i}{part}" for i in table.INDEXES for part in ("PK", "SK")}
    assert defined == dict.fromkeys(expected, "S")


def test_keys_hypd_writes_use_the_templates_indexes(template: dict[str, Any]) -> None:
    indexes = {i["IndexName"] for i in hypd_table_properties(template)["GlobalSecondaryIndexes"]}
    written = [
        *table.cluster_index_keys("train"),
        *table.operation_index_keys("op-1", "2026-01-15T10:00:00.000Z", "PENDING", "train"),
        *table.operation_index_keys("op-2", "2026-01-15T10:00:00.000Z", "RUNNING", None),
    ]
    assert {key.index for key in written} == indexes
    listed = [
        table.CLUSTERS_PARTITION[0],
        *(table.operations_partition(c, s)[0] for c in (None, "t") for s in (None, "PENDING")),
    ]
    assert set(listed) <= indexes
    assert set(table.cluster_key("t")) == set(table.operation_key("o")) == {table.PK, table.SK}
    assert set(table.lock_key("discover")) == {table.PK, table.SK}


def test_operations_without_cluster_have_no_cluster_index_keys() -> None:
    keys = table.operation_index_keys("op-2", "2026-01-15T10:00:00.000Z", "RUNNING", None)
    assert {(k.index, k.pk) for k in keys} == {("GSI2", "OPS#S#RUNNING"), ("GSI4", "OPS")}
    assert {k.sk for k in keys} == {"2026-01-15T10:00:00.000Z#op-2"}


def test_the_table_expires_items_by_the_ttl_attribute_hypd_writes(
    template: dict[str, Any],
) -> None:
    ttl = hypd_table_properties(template).get("TimeToLiveSpecification") or {}
    assert ttl == {"AttributeName": table.TTL_ATTRIBUTE, "Enabled": True}


def test_recorded_events_use_the_templates_indexes(template: dict[str, Any]) -> None:
    indexes = {i["IndexName"] for i in hypd_table_properties(template)["GlobalSecondaryIndexes"]}
    sort = table.event_sort_key("2026-01-15T10:00:00.000Z", 0, "OP#op-1|OP|v1")
    keys = table.event_index_keys(sort, "operation", "train")
    assert {key.index for key in keys} == indexes
    listed = {table.events_partition(c, k)[0] for c in (None, "t") for k in (None, "node")}
    assert listed == indexes
    assert {(k.index, k.pk) for k in table.event_index_keys(sort, "node", None)} == {
        ("GSI2", "EVENTS#T#node"), ("GSI4", "EVENTS")}
    assert set(table.event_key("OP#op-1|OP|v1")) == {table.PK, table.SK}
