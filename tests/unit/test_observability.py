"""The operators' metrics (hypd.observability): the EMF documents an operation's recorded
changes print, through the one write path of operation records (OperationStore.update)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from hypd import observability
from hypd.aws.dynamodb import Table
from hypd.operations import lifecycle
from hypd.operations.models import ErrorInfo, Operation, OperationKind, OperationStatus
from hypd.operations.store import OperationStore
from tests.support import emf_documents
from tests.unit.support import START, FakeClock

TAG = "demo"
BOOM = ErrorInfo(code="Boom", message="it broke")


@pytest.fixture
def store(table: Table, fixed_clock: FakeClock) -> OperationStore:
    return OperationStore(table)


@pytest.fixture
def printed(capsys: pytest.CaptureFixture[str]) -> Any:
    """The EMF documents printed since the last call, each checked for the shape CloudWatch
    needs: one directive in namespace hypd whose dimension keys and metric are members."""

    def read() -> list[dict[str, Any]]:
        documents = emf_documents(capsys.readouterr().out)
        for document in documents:
            (directive,) = document["_aws"]["CloudWatchMetrics"]
            assert directive["Namespace"] == "hypd"
            assert isinstance(document["_aws"]["Timestamp"], int)
            (definition,) = directive["Metrics"]
            assert definition["Name"] in document
            for dimension_set in directive["Dimensions"]:
                assert all(isinstance(document[key], str) for key in dimension_set)
        return documents

    return read


def metrics(documents: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(name, value, unit, dimension sets, dimension values) of each document."""
    found = []
    for d in documents:
        directive = d["_aws"]["CloudWatchMetrics"][0]
        (definition,) = directive["Metrics"]
        keys = sorted({k for dimension_set in directive["Dimensions"] for k in dimension_set})
        found.append((definition["Name"], d[definition["Name"]], definition["Unit"],
                      directive["Dimensions"], {k: d[k] for k in keys}))
    return found


def created(store: OperationStore) -> Operation:
    return store.create(lifecycle.new_operation(OperationKind.CREATE_CLUSTER, cluster_tag=TAG))


KIND = {"Kind": "create-cluster"}


def test_a_metric_is_an_emf_document_of_namespace_hypd(fixed_clock: FakeClock) -> None:
    metric = observability.Metric("OperationsStarted", 1, dimensions=KIND, total=True,
                                  properties={"operationId": "op-1"})
    assert metric.document(START) == {
        "_aws": {
            "Timestamp": int(START.timestamp() * 1000),
            "CloudWatchMetrics": [{
                "Namespace": "hypd",
                # per kind, and without dimensions: the total over every kind
                "Dimensions": [["Kind"], []],
                "Metrics": [{"Name": "OperationsStarted", "Unit": "Count"}],
            }],
        },
        "operationId": "op-1",
        "Kind": "create-cluster",
        "OperationsStarted": 1,
    }


def test_each_transition_of_an_operation_is_emitted_once(
    store: OperationStore, fixed_clock: FakeClock, printed: Any
) -> None:
    operation = created(store)
    assert printed() == []  # recorded PENDING: not started yet

    # the execution begins: started, once however often the task runs
    store.update(operation.id, lifecycle.begin)
    store.update(operation.id, lifecycle.begin)
    documents = printed()
    assert metrics(documents) == [
        ("OperationsStarted", 1, "Count", [["Kind"], []], KIND)]
    assert documents[0]["operationId"] == operation.id

    # a stage that succeeds gives its duration, in seconds, by kind and stage
    store.update(operation.id, lambda op: lifecycle.start_stage(op, "network"))
    fixed_clock.advance(30)
    store.update(operation.id, lambda op: lifecycle.record_look(op, "network", progress={"a": 1}))
    store.update(operation.id, lambda op: lifecycle.complete_stage(op, "network"))
    store.update(operation.id, lambda op: lifecycle.complete_stage(op, "network"))
    assert metrics(printed()) == [
        ("StageDuration", 30.0, "Seconds", [["Kind", "Stage"]], {**KIND, "Stage": "network"})]

    # a stage that fails gives no duration; the operation's end is counted
    store.update(operation.id, lambda op: lifecycle.start_stage(op, "eks"))
    fixed_clock.advance(600)
    store.update(operation.id, lambda op: lifecycle.record_stage_error(op, "eks", BOOM))
    store.update(operation.id, lambda op: lifecycle.fail(op, BOOM))
    store.update(operation.id, lambda op: lifecycle.fail(op, BOOM))
    assert metrics(printed()) == [("OperationsFailed", 1, "Count", [["Kind"], []], KIND)]

    # a retry starts again; its stage's time counts from the retry, not from the first attempt
    fixed_clock.advance(100)
    store.update(operation.id, lifecycle.retry)
    assert printed() == []
    store.update(operation.id, lifecycle.begin)
    store.update(operation.id, lambda op: lifecycle.start_stage(op, "eks"))
    fixed_clock.advance(700)
    store.update(operation.id, lambda op: lifecycle.complete_stage(op, "eks"))
    stored = store.update(operation.id, lambda op: lifecycle.succeed(op, {}))
    assert stored.status is OperationStatus.SUCCEEDED
    assert metrics(printed()) == [
        ("OperationsStarted", 1, "Count", [["Kind"], []], KIND),
        ("StageDuration", 700.0, "Seconds", [["Kind", "Stage"]], {**KIND, "Stage": "eks"}),
        ("OperationsSucceeded", 1, "Count", [["Kind"], []], KIND),
    ]


def test_a_cancelled_operation_and_a_refused_start_are_counted(
    store: OperationStore, printed: Any
) -> None:
    running = created(store)
    store.update(running.id, lifecycle.begin)
    store.update(running.id, lambda op: lifecycle.start_stage(op, "network"))
    store.update(running.id, lambda op: lifecycle.execution_ended(op, "ABORTED", None, None))
    # a start Step Functions refused: failed without having started
    refused = created(store)
    store.update(refused.id, lambda op: lifecycle.fail(op, BOOM))
    assert [(m[0], m[4]) for m in metrics(printed())] == [
        ("OperationsStarted", KIND), ("OperationsCancelled", KIND), ("OperationsFailed", KIND)]


def test_emitting_never_fails_the_operation(
    store: OperationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    operation = created(store)

    class Broken(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError("stdout is gone")

    monkeypatch.setattr("sys.stdout", Broken())
    assert store.update(operation.id, lifecycle.begin).status is OperationStatus.RUNNING

    def unreadable(before: Operation, after: Operation) -> list[observability.Metric]:
        raise ValueError("a record the metrics cannot read")

    monkeypatch.setattr(observability, "operation_metrics", unreadable)
    failed = store.update(operation.id, lambda op: lifecycle.fail(op, BOOM))
    assert failed.status is OperationStatus.FAILED
    assert store.get(operation.id).status is OperationStatus.FAILED


def test_repairs_and_unhealthy_nodes(printed: Any, fixed_clock: FakeClock) -> None:
    observability.repair_started("reboot", TAG, "op-1")
    observability.unhealthy_nodes(TAG, 3)
    documents = printed()
    assert metrics(documents) == [
        ("Repairs", 1, "Count", [["Action"]], {"Action": "reboot"}),
        ("UnhealthyNodes", 3, "Count", [["Cluster"]], {"Cluster": TAG}),
    ]
    assert (documents[0]["cluster"], documents[0]["operationId"]) == (TAG, "op-1")
