"""hypd.operations.starter.Starter with a fake Step Functions client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from hypd.aws.dynamodb import Table
from hypd.clusters.store import ClusterStore
from hypd.errors import AwsAccessDenied, AwsThrottled, AwsUnavailable, ConflictError, HypdError
from hypd.operations import lifecycle
from hypd.operations.locks import LockStore
from hypd.operations.models import ErrorInfo, OperationStatus
from hypd.operations.starter import Starter
from hypd.operations.store import OperationStore
from tests.unit.support import ACCOUNT, REGION, discover_operation

pytestmark = pytest.mark.usefixtures("fixed_clock")

STATE_MACHINE_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:hypd-discover"


class FakeStepFunctions:
    """Records start_execution calls; answers like Step Functions or raises `error`."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.calls: list[dict[str, Any]] = []

    def start_execution(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        if self.error is not None:
            raise self.error
        name = kwargs["name"]
        return {
            "executionArn": f"arn:aws:states:{REGION}:{ACCOUNT}:execution:hypd-discover:{name}",
            "startDate": "2026-01-15T10:00:00Z",
        }


def client_error(code: str, message: str, status: int = 400) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        "StartExecution",
    )


@pytest.fixture
def operations(table: Table) -> OperationStore:
    return OperationStore(table)


@pytest.fixture
def locks(table: Table) -> LockStore:
    return LockStore(table)


def start(
    operations: OperationStore, locks: LockStore, sfn: FakeStepFunctions, **kwargs: Any
) -> Any:
    operation = kwargs.pop("operation", None) or discover_operation(lock_scope="discover")
    starter = Starter(
        operations=operations,
        locks=locks,
        clusters=ClusterStore(operations.table),
        sfn_client=lambda: sfn,
        state_machine_arn=lambda _kind: STATE_MACHINE_ARN,
    )
    return starter.launch(operation)


def test_start_records_the_operation_with_its_execution(
    operations: OperationStore, locks: LockStore
) -> None:
    # Given Step Functions accepts executions
    sfn = FakeStepFunctions()
    # When an operation starts
    started = start(operations, locks, sfn)
    # Then one execution named after the operation got the operation id and the input
    assert sfn.calls == [
        {
            "stateMachineArn": STATE_MACHINE_ARN,
            "name": started.id,
            "input": json.dumps({"operationId": started.id, "resumeFrom": "eks-clusters",
                                 "done": {s.name: False for s in started.stages}}),
        }
    ]
    # And the stored operation is PENDING with the execution's ARN, holding the lock
    stored = operations.get(started.id)
    assert stored.status is OperationStatus.PENDING
    assert stored.execution_arn == (
        f"arn:aws:states:{REGION}:{ACCOUNT}:execution:hypd-discover:{started.id}"
    )
    assert stored.version == 2
    assert stored == started
    assert locks.holder("discover") == started.id


@pytest.mark.parametrize(
    ("error", "raised_class", "code"),
    [
        (client_error("ThrottlingException", "Rate exceeded"), AwsThrottled, "ThrottlingException"),
        (
            client_error(
                "AccessDeniedException", "not authorized to perform states:StartExecution"
            ),
            AwsAccessDenied,
            "AccessDeniedException",
        ),
        (
            client_error("ServiceUnavailable", "try again", status=503),
            AwsUnavailable,
            "ServiceUnavailable",
        ),
        (
            EndpointConnectionError(endpoint_url="https://states.us-west-2.amazonaws.com/"),
            AwsUnavailable,
            "EndpointConnectionError",
        ),
    ],
)
def test_start_failure_keeps_the_operation_as_failed_and_releases_the_lock(
    operations: OperationStore,
    locks: LockStore,
    error: Exception,
    raised_class: type[HypdError],
    code: str,
) -> None:
    # Given Step Functions refuses to start the execution
    sfn = FakeStepFunctions(error)
    operation = discover_operation(lock_scope="discover")
    # When the operation starts
    # Then the translated error is raised
    with pytest.raises(raised_class) as raised:
        start(operations, locks, sfn, operation=operation)
    assert type(raised.value) is raised_class
    assert raised.value.details["awsErrorCode"] == code
    # And the operation is recorded as FAILED with AWS's error code, not lost
    stored = operations.get(operation.id)
    assert stored.status is OperationStatus.FAILED
    assert stored.error == ErrorInfo(code=code, message=raised.value.message)
    assert stored.execution_arn is None
    # And the lock is free for the next request
    assert locks.holder("discover") is None


def test_start_while_another_operation_runs_is_a_conflict(
    operations: OperationStore, locks: LockStore
) -> None:
    # Given a started operation that has not ended
    sfn = FakeStepFunctions()
    first = start(operations, locks, sfn)
    second = discover_operation(lock_scope="discover")
    # When a second one starts for the same scope
    with pytest.raises(ConflictError) as raised:
        start(operations, locks, sfn, operation=second)
    # Then it names the first, is never recorded, and starts no execution
    assert raised.value.details["operationId"] == first.id
    assert operations.find(second.id) is None
    assert len(sfn.calls) == 1


def test_start_after_the_previous_operation_ended_takes_the_lock_over(
    operations: OperationStore, locks: LockStore
) -> None:
    # Given a started operation that failed without releasing its lock
    sfn = FakeStepFunctions()
    first = start(operations, locks, sfn)
    operations.update(
        first.id, lambda op: lifecycle.fail(op, ErrorInfo(code="States.Timeout", message="t"))
    )
    assert locks.holder("discover") == first.id
    # When another operation starts
    second = start(operations, locks, sfn)
    # Then it runs and holds the lock
    assert locks.holder("discover") == second.id
    assert operations.get(second.id).execution_arn is not None


def test_a_failed_record_releases_the_lock(operations: OperationStore, locks: LockStore) -> None:
    # Given an operation id that is recorded already
    operation = discover_operation(lock_scope="discover")
    operations.create(operation.model_copy(update={"lock_scope": None}))
    sfn = FakeStepFunctions()
    # When it is started
    with pytest.raises(ConflictError, match="exists already"):
        start(operations, locks, sfn, operation=operation)
    # Then no execution started and the lock is free
    assert sfn.calls == []
    assert locks.holder("discover") is None


def test_operation_without_lock_scope_starts_without_lock(
    operations: OperationStore, locks: LockStore
) -> None:
    sfn = FakeStepFunctions()
    first = start(operations, locks, sfn, operation=discover_operation())
    second = start(operations, locks, sfn, operation=discover_operation())
    assert operations.get(first.id).execution_arn is not None
    assert operations.get(second.id).execution_arn is not None
    assert locks.holder("discover") is None
