"""hypd.operations.store.OperationStore on moto DynamoDB (table from template.yaml)."""

from __future__ import annotations

import base64
import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from hypd.aws.dynamodb import Table
from hypd.errors import ConcurrentUpdate, ConflictError, NotFoundError, ValidationError
from hypd.operations import lifecycle
from hypd.operations.models import Operation, OperationStatus
from hypd.operations.store import MAX_UPDATE_ATTEMPTS, OperationStore
from hypd.pagination import encode_token
from tests.unit.support import TABLE_NAME, FakeClock, SerializedClient, discover_operation
from tests.unit.support import operation_with_cluster as op_for

pytestmark = pytest.mark.usefixtures("fixed_clock")


@pytest.fixture
def store(table: Table) -> OperationStore:
    return OperationStore(table)


def add_attempt(stage: str) -> Any:
    def mutate(operation: Operation) -> Operation:
        operation.stage(stage).attempts += 1
        return operation

    return mutate


def all_pages(store: OperationStore, **filters: Any) -> Iterator[list[Operation]]:
    token: str | None = None
    while True:
        page = store.list(next_token=token, **filters)
        yield page.operations
        if page.next_token is None:
            return
        token = page.next_token


# ---------------------------------------------------------------------------- create / get
def test_create_then_get_round_trips(store: OperationStore) -> None:
    # Given a new operation
    operation = discover_operation(lock_scope="discover", clusterNames=["a"])
    # When it is created and read back
    store.create(operation)
    stored = store.get(operation.id)
    # Then every field survives, version 1
    assert stored == operation
    assert stored.version == 1
    assert stored.lock_scope == "discover"


def test_create_with_an_existing_id_is_a_conflict(store: OperationStore) -> None:
    # Given a recorded operation
    first = store.create(discover_operation())
    # When another operation with the same id is created
    second = first.model_copy(update={"input": {"clusterNames": ["b"]}})
    # Then ConflictError, and the first record is untouched
    with pytest.raises(ConflictError, match=f"operation {first.id} exists already"):
        store.create(second)
    assert store.get(first.id).input == {}


def test_get_of_unknown_operation_is_not_found(store: OperationStore) -> None:
    with pytest.raises(NotFoundError) as raised:
        store.get("op-" + "0" * 32)
    assert raised.value.details == {"operationId": "op-" + "0" * 32}
    assert store.find("op-" + "0" * 32) is None


# ---------------------------------------------------------------------------- update
def test_update_writes_the_change_with_next_version(
    store: OperationStore, fixed_clock: FakeClock
) -> None:
    # Given a recorded operation
    operation = store.create(discover_operation())
    fixed_clock.advance(7)
    # When it begins
    updated = store.update(operation.id, lambda op: lifecycle.begin(op, "arn:exec"))
    # Then the stored record is RUNNING, version 2, updatedAt now
    assert updated.version == 2
    assert updated.updated_at == "2026-01-15T10:00:07.000Z"
    stored = store.get(operation.id)
    assert stored == updated
    assert stored.status is OperationStatus.RUNNING
    assert stored.created_at == "2026-01-15T10:00:00.000Z"


def test_update_that_changes_nothing_writes_nothing(store: OperationStore) -> None:
    operation = store.create(discover_operation())
    result = store.update(operation.id, lambda op: None)
    assert result.version == 1
    assert store.get(operation.id).version == 1


def test_update_of_unknown_operation_is_not_found(store: OperationStore) -> None:
    with pytest.raises(NotFoundError):
        store.update("op-" + "1" * 32, add_attempt("record"))


def test_update_never_loses_a_concurrent_write(table: Table) -> None:
    # Given an operation and two store instances (two Lambda invocations)
    store = OperationStore(table)
    other = OperationStore(Table(table._client, TABLE_NAME))
    operation = store.create(discover_operation())
    calls = 0

    def mutate(op: Operation) -> Operation:
        nonlocal calls
        calls += 1
        if calls == 1:
            # After our read and before our write, another writer changes the record
            other.update(op.id, add_attempt("eks-clusters"))
        op.stage("hyperpod-clusters").attempts += 1
        return op

    # When our update runs
    result = store.update(operation.id, mutate)
    # Then it was re-applied to the newer record: both changes are present
    stored = store.get(operation.id)
    assert calls == 2
    assert stored.stage("eks-clusters").attempts == 1
    assert stored.stage("hyperpod-clusters").attempts == 1
    assert stored.version == 3
    assert result == stored


def test_update_gives_up_with_concurrent_update_after_the_retry_budget(table: Table) -> None:
    # Given a record that another writer changes between every read and write of ours
    store = OperationStore(table)
    other = OperationStore(Table(table._client, TABLE_NAME))
    operation = store.create(discover_operation())
    calls = 0

    def mutate(op: Operation) -> Operation:
        nonlocal calls
        calls += 1
        other.update(op.id, add_attempt("eks-clusters"))
        op.stage("record").attempts += 1
        return op

    # When we update
    # Then ConcurrentUpdate after MAX_UPDATE_ATTEMPTS tries, and only the other writes landed
    with pytest.raises(ConcurrentUpdate, match=f"changed {MAX_UPDATE_ATTEMPTS} times"):
        store.update(operation.id, mutate)
    stored = store.get(operation.id)
    assert calls == MAX_UPDATE_ATTEMPTS
    assert stored.stage("eks-clusters").attempts == MAX_UPDATE_ATTEMPTS
    assert stored.stage("record").attempts == 0
    assert stored.version == 1 + MAX_UPDATE_ATTEMPTS


def test_concurrent_threads_never_lose_an_increment(dynamodb_client: Any) -> None:
    # Given one operation and 8 writers sharing the table (each request atomic, as on AWS)
    client = SerializedClient(dynamodb_client)
    operation = OperationStore(Table(client, TABLE_NAME)).create(discover_operation())
    threads_count, increments = 8, 5
    barrier = threading.Barrier(threads_count)
    failures: list[BaseException] = []

    def writer() -> None:
        store = OperationStore(Table(client, TABLE_NAME))
        barrier.wait()
        try:
            for _ in range(increments):
                while True:
                    try:
                        store.update(operation.id, add_attempt("record"))
                        break
                    except ConcurrentUpdate:
                        continue  # the state machine retries this error; so do we
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    previous_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # switch threads often, to interleave reads and writes
    try:
        threads = [threading.Thread(target=writer) for _ in range(threads_count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        sys.setswitchinterval(previous_interval)

    # When every writer is done
    # Then every increment landed exactly once
    assert failures == []
    stored = OperationStore(Table(client, TABLE_NAME)).get(operation.id)
    assert stored.stage("record").attempts == threads_count * increments
    assert stored.version == 1 + threads_count * increments


# ---------------------------------------------------------------------------- list
@pytest.fixture
def listed(store: OperationStore, fixed_clock: FakeClock) -> dict[str, Operation]:
    """Six operations, one second apart: a1..a3 on cluster a, b1 on b, d1..d2 without cluster.

    a2 and d2 are RUNNING, the others PENDING.
    """
    operations: dict[str, Operation] = {}
    for name, tag in [
        ("a1", "a"),
        ("d1", None),
        ("a2", "a"),
        ("b1", "b"),
        ("a3", "a"),
        ("d2", None),
    ]:
        operations[name] = store.create(op_for(tag))
        fixed_clock.advance(1)
    for name in ("a2", "d2"):
        operations[name] = store.update(operations[name].id, lambda op: lifecycle.begin(op))
    return operations


def ids(operations: list[Operation]) -> list[str]:
    return [op.id for op in operations]


def names_of(listed: dict[str, Operation], operations: list[Operation]) -> list[str]:
    by_id = {op.id: name for name, op in listed.items()}
    return [by_id[op.id] for op in operations]


def test_list_without_filter_is_every_operation_newest_first(
    store: OperationStore, listed: dict[str, Operation]
) -> None:
    page = store.list()
    assert names_of(listed, page.operations) == ["d2", "a3", "b1", "a2", "d1", "a1"]
    assert page.next_token is None


def test_list_by_cluster(store: OperationStore, listed: dict[str, Operation]) -> None:
    assert names_of(listed, store.list(cluster_tag="a").operations) == ["a3", "a2", "a1"]
    assert names_of(listed, store.list(cluster_tag="b").operations) == ["b1"]
    assert store.list(cluster_tag="zzz").operations == []


def test_list_by_status(store: OperationStore, listed: dict[str, Operation]) -> None:
    running = store.list(status=OperationStatus.RUNNING).operations
    assert names_of(listed, running) == ["d2", "a2"]
    assert {op.status for op in running} == {OperationStatus.RUNNING}
    pending = store.list(status=OperationStatus.PENDING).operations
    assert names_of(listed, pending) == ["a3", "b1", "d1", "a1"]


def test_list_by_cluster_and_status(store: OperationStore, listed: dict[str, Operation]) -> None:
    pending_a = store.list(cluster_tag="a", status=OperationStatus.PENDING).operations
    assert names_of(listed, pending_a) == ["a3", "a1"]
    running_a = store.list(cluster_tag="a", status=OperationStatus.RUNNING).operations
    assert names_of(listed, running_a) == ["a2"]
    assert store.list(cluster_tag="b", status=OperationStatus.RUNNING).operations == []


def test_status_index_follows_status_changes(
    store: OperationStore, listed: dict[str, Operation]
) -> None:
    # Given a3 listed under PENDING
    a3 = listed["a3"].id
    assert a3 in ids(store.list(status=OperationStatus.PENDING).operations)
    # When it moves to RUNNING
    store.update(a3, lambda op: lifecycle.begin(op))
    # Then it is listed under RUNNING only, in both status indexes
    assert a3 not in ids(store.list(status=OperationStatus.PENDING).operations)
    assert a3 in ids(store.list(status=OperationStatus.RUNNING).operations)
    assert a3 not in ids(store.list(cluster_tag="a", status=OperationStatus.PENDING).operations)
    assert a3 in ids(store.list(cluster_tag="a", status=OperationStatus.RUNNING).operations)
    # And it is still listed once under its cluster and overall
    assert ids(store.list(cluster_tag="a").operations).count(a3) == 1
    assert ids(store.list().operations).count(a3) == 1


@pytest.mark.parametrize("limit", [1, 2, 4, 5, 6, 7])
def test_pagination_yields_every_operation_exactly_once_newest_first(
    store: OperationStore, listed: dict[str, Operation], limit: int
) -> None:
    pages = list(all_pages(store, limit=limit))
    assert all(len(page) <= limit for page in pages)
    flat = [op for page in pages for op in page]
    assert names_of(listed, flat) == ["d2", "a3", "b1", "a2", "d1", "a1"]


def test_pagination_of_a_filtered_listing(
    store: OperationStore, listed: dict[str, Operation]
) -> None:
    pages = list(all_pages(store, cluster_tag="a", limit=2))
    assert [names_of(listed, page) for page in pages][:2] == [["a3", "a2"], ["a1"]]
    pending = [
        op for page in all_pages(store, status=OperationStatus.PENDING, limit=1) for op in page
    ]
    assert names_of(listed, pending) == ["a3", "b1", "d1", "a1"]


@pytest.mark.parametrize(
    ("issued_by", "used_by"),
    [
        ({}, {"cluster_tag": "a"}),
        ({"cluster_tag": "a"}, {"cluster_tag": "b"}),
        ({"cluster_tag": "a"}, {}),
        ({"status": OperationStatus.PENDING}, {"status": OperationStatus.RUNNING}),
        (
            {"status": OperationStatus.PENDING},
            {"cluster_tag": "a", "status": OperationStatus.PENDING},
        ),
    ],
)
def test_a_token_from_one_filter_is_rejected_by_another(
    store: OperationStore,
    listed: dict[str, Operation],
    issued_by: dict[str, Any],
    used_by: dict[str, Any],
) -> None:
    # Given a nextToken from one listing
    token = store.list(limit=1, **issued_by).next_token
    assert token is not None
    # When it is used with other filters
    # Then ValidationError names nextToken
    with pytest.raises(ValidationError, match="nextToken") as raised:
        store.list(limit=1, next_token=token, **used_by)
    assert raised.value.details == {"field": "nextToken"}


@pytest.mark.parametrize(
    "token",
    [
        "garbage",
        "!!!!",
        "e30",  # {}
        base64.urlsafe_b64encode(b"[1,2]").decode(),
        base64.urlsafe_b64encode(b'{"i":"GSI4","p":"OPS","k":"x"}').decode(),
        base64.urlsafe_b64encode(b"\xff\xfe\x00garbage").decode(),
    ],
)
def test_garbage_tokens_are_rejected(
    store: OperationStore, listed: dict[str, Operation], token: str
) -> None:
    with pytest.raises(ValidationError, match="nextToken") as raised:
        store.list(next_token=token)
    assert raised.value.details == {"field": "nextToken"}


def test_a_forged_token_for_the_right_listing_is_rejected(
    store: OperationStore, listed: dict[str, Operation]
) -> None:
    # Given a token that names the unfiltered listing but carries a malformed key
    token = encode_token("GSI4", "OPS", {"PK": "OP#x", "SK": "OP"})
    # When it is used
    # Then it is rejected as a bad nextToken, like every other token the API did not issue
    with pytest.raises(ValidationError, match="nextToken"):
        store.list(next_token=token)


def test_the_token_is_opaque_urlsafe_text(
    store: OperationStore, listed: dict[str, Operation]
) -> None:
    token = store.list(limit=2).next_token
    assert token is not None
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert (decoded["i"], decoded["p"]) == ("GSI4", "OPS")
