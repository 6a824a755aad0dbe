"""hypd.operations.locks.LockStore: one running operation per scope."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from hypd.aws.dynamodb import Table
from hypd.errors import ConflictError
from hypd.operations.kinds import describe_scope
from hypd.operations.locks import LockStore
from tests.unit.support import TABLE_NAME, SerializedClient

pytestmark = pytest.mark.usefixtures("fixed_clock")

OP_A = "op-" + "a" * 32
OP_B = "op-" + "b" * 32
OP_C = "op-" + "c" * 32


def never_ended(operation_id: str) -> bool:
    return False


def always_ended(operation_id: str) -> bool:
    return True


@pytest.fixture
def locks(table: Table) -> LockStore:
    return LockStore(table)


def test_acquire_a_free_scope(locks: LockStore) -> None:
    # Given nobody holds "discover"
    assert locks.holder("discover") is None
    # When A acquires it
    locks.acquire("discover", OP_A, holder_ended=never_ended)
    # Then A holds it
    assert locks.holder("discover") == OP_A


def test_acquire_held_scope_is_a_conflict_naming_the_holder(locks: LockStore) -> None:
    # Given A holds the scope and has not ended
    locks.acquire("discover", OP_A, holder_ended=never_ended)
    asked: list[str] = []

    def ended(operation_id: str) -> bool:
        asked.append(operation_id)
        return False

    # When B tries to acquire it
    with pytest.raises(ConflictError) as raised:
        locks.acquire("discover", OP_B, holder_ended=ended)
    # Then the conflict names A, the lock is still A's, and A's state was asked about
    assert raised.value.details == {"operationId": OP_A, "scope": "discover"}
    assert OP_A in raised.value.message
    assert asked == [OP_A]
    assert locks.holder("discover") == OP_A


def test_scopes_are_independent(locks: LockStore) -> None:
    locks.acquire("cluster-a", OP_A, holder_ended=never_ended)
    locks.acquire("cluster-b", OP_B, holder_ended=never_ended)
    assert locks.holder("cluster-a") == OP_A
    assert locks.holder("cluster-b") == OP_B


def test_lock_of_an_ended_holder_is_taken_over(locks: LockStore) -> None:
    # Given A holds the scope but has ended (crashed without releasing)
    locks.acquire("discover", OP_A, holder_ended=never_ended)
    # When B acquires it
    locks.acquire("discover", OP_B, holder_ended=lambda op: op == OP_A)
    # Then B holds it
    assert locks.holder("discover") == OP_B


def test_takeover_loses_to_a_concurrent_takeover(table: Table) -> None:
    # Given A holds the scope and has ended
    locks = LockStore(table)
    other = LockStore(Table(table._client, TABLE_NAME))
    locks.acquire("discover", OP_A, holder_ended=never_ended)

    def ended_but_c_takes_over_meanwhile(operation_id: str) -> bool:
        # While B decides that A ended, C takes the lock over
        other.acquire("discover", OP_C, holder_ended=always_ended)
        return True

    # When B tries to take it over
    with pytest.raises(ConflictError, match="at the same moment"):
        locks.acquire("discover", OP_B, holder_ended=ended_but_c_takes_over_meanwhile)
    # Then C keeps the lock
    assert locks.holder("discover") == OP_C


def test_release_only_by_the_holder(locks: LockStore) -> None:
    # Given A holds the scope
    locks.acquire("discover", OP_A, holder_ended=never_ended)
    # When B releases it, nothing happens
    locks.release("discover", OP_B)
    assert locks.holder("discover") == OP_A
    # When A releases it, the scope is free (twice is harmless)
    locks.release("discover", OP_A)
    assert locks.holder("discover") is None
    locks.release("discover", OP_A)
    assert locks.holder("discover") is None


def test_release_by_a_former_holder_keeps_the_new_holders_lock(locks: LockStore) -> None:
    # Given B took over the lock A held
    locks.acquire("discover", OP_A, holder_ended=never_ended)
    locks.acquire("discover", OP_B, holder_ended=always_ended)
    # When A releases late
    locks.release("discover", OP_A)
    # Then B still holds it
    assert locks.holder("discover") == OP_B


def test_concurrent_acquires_have_exactly_one_winner(dynamodb_client: Any) -> None:
    # Given 8 requests that try to take the same free scope at once
    client = SerializedClient(dynamodb_client)
    contenders = [f"op-{i:032x}" for i in range(8)]
    barrier = threading.Barrier(len(contenders))
    winners: list[str] = []
    conflicts: list[str] = []
    unexpected: list[BaseException] = []

    def contend(operation_id: str) -> None:
        locks = LockStore(Table(client, TABLE_NAME))
        barrier.wait()
        try:
            locks.acquire("discover", operation_id, holder_ended=never_ended)
            winners.append(operation_id)
        except ConflictError as exc:
            conflicts.append(str(exc.details.get("operationId")))
        except BaseException as exc:  # pragma: no cover - reported below
            unexpected.append(exc)

    threads = [threading.Thread(target=contend, args=(op,)) for op in contenders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # Then exactly one won, it holds the lock, and every loser was told who holds it
    assert unexpected == []
    assert len(winners) == 1
    assert len(conflicts) == len(contenders) - 1
    assert set(conflicts) == set(winners)
    assert LockStore(Table(client, TABLE_NAME)).holder("discover") == winners[0]


@pytest.mark.parametrize(("scope", "words"), [
    ("cluster#demo", "cluster demo"),
    ("workload#demo#ml/llama", "workload ml/llama of cluster demo"),
    ("discover", "the account's discovery"),
])
def test_a_lock_scope_is_named_in_a_users_words(scope: str, words: str) -> None:
    assert describe_scope(scope) == words
