"""Parked task tokens and the state-change events that complete them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from hypd.aws.dynamodb import Table
from hypd.errors import AwsAccessDenied
from hypd.operations.waiters import WaiterStore, on_cluster_state_change

EVENT = json.loads(
    (Path(__file__).resolve().parents[2] / "events"
     / "eventbridge-hyperpod-cluster-state-change.json").read_text()
)


class FakeStepFunctions:
    def __init__(self) -> None:
        self.successes: list[tuple[str, dict[str, Any]]] = []
        self.failures: list[tuple[str, str, str]] = []

    def send_task_success(self, taskToken: str, output: str) -> None:  # noqa: N803
        self.successes.append((taskToken, json.loads(output)))

    def send_task_failure(self, taskToken: str, error: str, cause: str) -> None:  # noqa: N803
        self.failures.append((taskToken, error, cause))


def event(status: str, name: str = "hypd-demo", **detail: Any) -> dict[str, Any]:
    return {**EVENT, "detail": {**EVENT["detail"], "ClusterName": name,
                                "ClusterStatus": status, **detail}}


def test_the_in_service_event_completes_the_parked_token_once(table: Table) -> None:
    waiters = WaiterStore(table)
    sfn = FakeStepFunctions()
    waiters.park("hypd-demo", "op-1", "InService", "token-1", failure_states=("Failed",))

    first = on_cluster_state_change(EVENT, waiters, lambda: sfn)
    again = on_cluster_state_change(EVENT, waiters, lambda: sfn)

    assert first["woken"] == ["op-1"]
    assert again["woken"] == []
    assert sfn.successes == [("token-1", {"ready": True, "status": "InService", "by": "event"})]
    assert waiters.waiting_for("hypd-demo") == []


def test_a_failed_cluster_fails_the_token_with_its_message(table: Table) -> None:
    waiters = WaiterStore(table)
    sfn = FakeStepFunctions()
    waiters.park("hypd-demo", "op-1", "InService", "token-1", failure_states=("Failed",))

    on_cluster_state_change(event("Failed", FailureMessage="no capacity"), waiters, lambda: sfn)

    ((token, error, cause),) = sfn.failures
    assert (token, error) == ("token-1", "HyperPodClusterFailed")
    assert "no capacity" in cause


def test_other_states_and_other_clusters_leave_the_waiter_parked(table: Table) -> None:
    waiters = WaiterStore(table)
    sfn = FakeStepFunctions()
    waiters.park("hypd-demo", "op-1", "InService", "token-1", failure_states=("Failed",))

    on_cluster_state_change(event("Creating"), waiters, lambda: sfn)
    on_cluster_state_change(event("InService", name="hypd-other"), waiters, lambda: sfn)
    ignored = on_cluster_state_change({"detail-type": "Something else"}, waiters, lambda: sfn)

    assert ignored["ignored"] is True
    assert sfn.successes == []
    assert sfn.failures == []
    assert [w.operation_id for w in waiters.waiting_for("hypd-demo")] == ["op-1"]


def test_a_new_wait_replaces_the_operations_old_token(table: Table) -> None:
    waiters = WaiterStore(table)
    sfn = FakeStepFunctions()
    waiters.park("hypd-demo", "op-1", "InService", "old")
    waiters.park("hypd-demo", "op-1", "InService", "new")

    on_cluster_state_change(EVENT, waiters, lambda: sfn)

    assert [token for token, _ in sfn.successes] == ["new"]


class RefusingStepFunctions(FakeStepFunctions):
    """Step Functions refusing the caller (IAM denied SendTaskSuccess, say)."""

    def send_task_success(self, taskToken: str, output: str) -> None:  # noqa: N803
        raise ClientError({"Error": {"Code": "AccessDeniedException",
                                     "Message": "not authorized to perform: "
                                                "states:SendTaskSuccess"}}, "SendTaskSuccess")


def test_a_token_that_could_not_be_completed_stays_parked_for_the_retry(table: Table) -> None:
    # Given a parked token and Step Functions refusing to complete it
    waiters = WaiterStore(table)
    waiters.park("hypd-demo", "op-1", "InService", "token-1", failure_states=("Failed",))

    # When the state-change event arrives, the handler fails (so Lambda retries the event)...
    with pytest.raises(AwsAccessDenied, match="states:SendTaskSuccess"):
        on_cluster_state_change(EVENT, waiters, lambda: RefusingStepFunctions())

    # ...and the token is still parked: the retry completes it, not the wait's slow poll
    (waiter,) = waiters.waiting_for("hypd-demo")
    assert waiter.task_token == "token-1"
    sfn = FakeStepFunctions()
    assert on_cluster_state_change(EVENT, waiters, lambda: sfn)["woken"] == ["op-1"]
    assert [token for token, _output in sfn.successes] == ["token-1"]


def test_a_token_parked_again_meanwhile_is_not_overwritten(table: Table) -> None:
    waiters = WaiterStore(table)
    old = waiters.park("hypd-demo", "op-1", "InService", "token-1")
    assert waiters.take(old)
    waiters.park("hypd-demo", "op-1", "InService", "token-2")  # the operation's next wait
    waiters.put_back(old)
    (waiter,) = waiters.waiting_for("hypd-demo")
    assert waiter.task_token == "token-2"
