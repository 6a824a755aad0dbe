"""hypd.clusters.store.ClusterStore on moto DynamoDB."""

from __future__ import annotations

from typing import Any

import pytest

from hypd.aws.dynamodb import Table
from hypd.clusters.store import ClusterStore, Memo
from hypd.errors import ConflictError, NotFoundError, ValidationError
from hypd.pagination import encode_token
from tests.unit.support import cluster_record, eks, eks_arn, hyperpod, hyperpod_arn


@pytest.fixture
def store(table: Table) -> ClusterStore:
    return ClusterStore(table)


def test_save_then_get_round_trips(store: ClusterStore) -> None:
    # Given a cluster record with both resources
    cluster = cluster_record("train", eks_arn("train-eks")).model_copy(
        update={"eks": eks("train-eks"), "hyperpod": hyperpod("train", eks_name="train-eks")}
    )
    # When it is saved and read
    store.save(cluster)
    # Then it is the same record
    assert store.get("train") == cluster


def test_get_unknown_cluster_is_not_found(store: ClusterStore) -> None:
    with pytest.raises(NotFoundError, match="cluster nope does not exist") as raised:
        store.get("nope")
    assert raised.value.details == {"tag": "nope"}


def test_save_again_for_the_same_resources_updates_the_record(store: ClusterStore) -> None:
    store.save(cluster_record("train", eks_arn("train-eks"), at="2026-01-01T00:00:00.000Z"))
    refreshed = cluster_record("train", eks_arn("train-eks"), at="2026-02-01T00:00:00.000Z")
    store.save(refreshed)
    assert store.get("train").updated_at == "2026-02-01T00:00:00.000Z"


def test_save_of_other_resources_under_an_existing_tag_is_a_conflict(store: ClusterStore) -> None:
    # Given "train" anchored on EKS cluster train-eks
    original = cluster_record("train", eks_arn("train-eks"))
    store.save(original)
    # When another anchor is saved under the same tag
    with pytest.raises(ConflictError, match="train is already used by other resources") as raised:
        store.save(cluster_record("train", hyperpod_arn("train")))
    # Then the first record is untouched
    assert raised.value.details == {"tag": "train"}
    assert store.get("train") == original


def test_list_is_by_tag_and_all_returns_every_cluster(store: ClusterStore) -> None:
    for tag in ["charlie", "alpha", "bravo"]:
        store.save(cluster_record(tag, eks_arn(tag)))
    page = store.list()
    assert [c.tag for c in page.clusters] == ["alpha", "bravo", "charlie"]
    assert page.next_token is None
    assert sorted(c.tag for c in store.all()) == ["alpha", "bravo", "charlie"]


def test_empty_list(store: ClusterStore) -> None:
    page = store.list()
    assert (page.clusters, page.next_token) == ([], None)
    assert store.all() == []


@pytest.mark.parametrize("limit", [1, 2, 3, 5, 6])
def test_pagination_yields_every_cluster_once(store: ClusterStore, limit: int) -> None:
    tags = [f"c{i}" for i in range(5)]
    for tag in reversed(tags):
        store.save(cluster_record(tag, eks_arn(tag)))
    seen: list[str] = []
    token: str | None = None
    for _ in range(10):
        page = store.list(limit=limit, next_token=token)
        assert len(page.clusters) <= limit
        seen += [c.tag for c in page.clusters]
        token = page.next_token
        if token is None:
            break
    assert seen == tags


def test_all_reads_past_one_query_page(store: ClusterStore) -> None:
    # query_all pages 100 at a time
    for i in range(105):
        store.save(cluster_record(f"c{i:03d}", eks_arn(f"c{i:03d}")))
    assert len(store.all()) == 105


def test_cluster_list_rejects_an_operations_token(store: ClusterStore) -> None:
    token = encode_token("GSI4", "OPS", {"PK": {"S": "OP#x"}})
    with pytest.raises(ValidationError, match="nextToken belongs to a listing with other filters"):
        store.list(next_token=token)


# -- a memo of reads (the API's: one request's) -------------------------------------------------


class CountingTable(Table):
    """The table, counting its GetItems."""

    def __init__(self, client: Any, name: str) -> None:
        super().__init__(client, name)
        self.gets = 0

    def get(self, key: dict[str, str]) -> dict[str, Any] | None:
        self.gets += 1
        return super().get(key)


def test_a_memo_keeps_each_record_read_for_the_next_read(
        table: Table, dynamodb_client: Any) -> None:
    ClusterStore(table).save(cluster_record("train", eks_arn("train-eks")))
    counting = CountingTable(dynamodb_client, table.name)
    memo: Memo = {}
    store = ClusterStore(counting, memo=lambda: memo)

    assert store.get("train") == store.find("train")
    assert store.find("nope") is None
    assert store.find("nope") is None

    assert counting.gets == 2  # one per tag, an unknown one included
    without = ClusterStore(counting)
    without.find("train")
    without.find("train")
    assert counting.gets == 4  # no memo: every read is the table's


def test_a_write_drops_the_record_from_the_memo_and_changes_the_table_as_it_is(
        table: Table) -> None:
    # Given a record read through a memo, then changed in the table by another writer
    other = ClusterStore(table)
    other.save(cluster_record("train", eks_arn("train-eks")))
    memo: Memo = {}
    store = ClusterStore(table, memo=lambda: memo)
    assert store.get("train").last_seen_at == "2026-01-01T00:00:00.000Z"
    other.save(cluster_record("train", eks_arn("train-eks"), at="2026-02-01T00:00:00.000Z"))

    # When the memo's store changes the record
    store.set_protection("train", True)

    # Then it changed the record as the table held it (not the memo's copy), and reads it anew
    assert "train" not in memo
    assert store.get("train").protection is True
    assert store.get("train").last_seen_at == "2026-02-01T00:00:00.000Z"


class InterleavingTable(Table):
    """A table where another writer's change lands between a store's read and its first
    write (`before_first_put`), as an API request and an operation's task race on AWS."""

    def __init__(self, client: Any, name: str, before_first_put: Any) -> None:
        super().__init__(client, name)
        self.before_first_put = before_first_put
        self.puts = 0

    def put(self, item: dict[str, Any], condition: str | None = None,
            values: dict[str, Any] | None = None) -> None:
        self.puts += 1
        if self.puts == 1:
            self.before_first_put()
        super().put(item, condition, values)


def test_a_change_made_between_a_read_and_its_write_is_kept(
        table: Table, dynamodb_client: Any) -> None:
    # Given a record, and an API request turning protection on while an operation's task
    # records its end (between the task's read and its write)
    ClusterStore(table).save(cluster_record("train", eks_arn("train-eks")))
    api = ClusterStore(table)
    racing = InterleavingTable(dynamodb_client, table.name,
                               lambda: api.set_protection("train", True))

    # When the task sets its fields
    updated = ClusterStore(racing).update("train", last_operation_id="op-reboot")

    # Then both changes are in the record: the task re-read it and applied its own again
    assert racing.puts == 2
    assert updated is not None
    assert updated.protection is True
    record = ClusterStore(table).get("train")
    assert (record.protection, record.last_operation_id) == (True, "op-reboot")


def test_a_save_between_a_read_and_its_write_is_not_undone(
        table: Table, dynamodb_client: Any) -> None:
    ClusterStore(table).save(cluster_record("train", eks_arn("train-eks")))
    later = cluster_record("train", eks_arn("train-eks"), at="2026-02-01T00:00:00.000Z")
    racing = InterleavingTable(dynamodb_client, table.name,
                               lambda: ClusterStore(table).save(later))

    ClusterStore(racing).set_protection("train", True)

    record = ClusterStore(table).get("train")
    assert (record.protection, record.last_seen_at) == (True, "2026-02-01T00:00:00.000Z")


def test_a_record_written_before_revisions_is_updated(table: Table, dynamodb_client: Any) -> None:
    # Given a record as an older hypd wrote it: no revision attribute
    ClusterStore(table).save(cluster_record("train", eks_arn("train-eks")))
    key = {"PK": {"S": "CLUSTER#train"}, "SK": {"S": "CLUSTER"}}
    dynamodb_client.update_item(TableName=table.name, Key=key, UpdateExpression="REMOVE revision")

    assert ClusterStore(table).set_protection("train", True) is not None
    assert ClusterStore(table).get("train").protection is True
    stored = dynamodb_client.get_item(TableName=table.name, Key=key)["Item"]
    assert stored["revision"] == {"N": "1"}


def test_an_update_of_a_tag_that_now_names_other_resources_changes_nothing(
        table: Table, dynamodb_client: Any) -> None:
    ClusterStore(table).save(cluster_record("train", eks_arn("train-eks")))
    other = cluster_record("train", hyperpod_arn("train"))

    def replace() -> None:
        store = ClusterStore(table)
        store.forget(store.get("train"))
        store.save(other)

    racing = InterleavingTable(dynamodb_client, table.name, replace)

    assert ClusterStore(racing).set_protection("train", True) is None
    assert ClusterStore(table).get("train") == other
