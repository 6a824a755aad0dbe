"""Parked task tokens: a pipeline waiting for a resource to reach a condition.

The waiting state stores its Step Functions task token here, keyed by the resource (e.g. the
HyperPod cluster's name) and the operation. Whoever learns that the condition holds (the
EventBridge handler of the resource's state-change events, or the waiting task itself when the
resource is already there) takes the waiter with a conditional delete and completes the token,
so each token is completed once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd import clock
from hypd.aws import stepfunctions
from hypd.aws.dynamodb import ConditionFailed, Table, decode_body, encode_item
from hypd.errors import HypdError
from hypd.table import waiter_key, waiters_partition

TOKEN_WAIT_SECONDS = 1800
"""The TimeoutSeconds of the states that park a token on a HyperPod cluster (create and
capacity; statemachines/generate.py `HYPERPOD_WAIT_SECONDS`, a build test holds them equal):
without an event, the operation looks again after it."""


class Waiter(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)

    resource: str
    operation_id: str = Field(alias="operationId")
    condition: str
    """What the waiter waits for, e.g. the HyperPod ClusterStatus ``InService``."""
    failure_states: tuple[str, ...] = Field(default=(), alias="failureStates")
    """States in which the condition can no longer be met: the token fails."""
    task_token: str = Field(alias="taskToken")
    parked_at: str = Field(alias="parkedAt")


class WaiterStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def park(
        self,
        resource: str,
        operation_id: str,
        condition: str,
        task_token: str,
        failure_states: tuple[str, ...] = (),
    ) -> Waiter:
        """Store (or replace: a new wait of the same operation) the operation's token."""
        waiter = Waiter(
            resource=resource,
            operation_id=operation_id,
            condition=condition,
            failure_states=failure_states,
            task_token=task_token,
            parked_at=clock.now_iso(),
        )
        body = waiter.model_dump(mode="json", by_alias=True)
        self._table.put(encode_item(waiter_key(resource, operation_id), body))
        return waiter

    def waiting_for(self, resource: str) -> list[Waiter]:
        return [
            Waiter.model_validate(decode_body(item))
            for item in self._table.query_partition(waiters_partition(resource))
        ]

    def put_back(self, waiter: Waiter) -> None:
        """Park ``waiter`` again after its completion failed, unless the operation parked a
        new token meanwhile (a later wait of the same operation wins)."""
        body = waiter.model_dump(mode="json", by_alias=True)
        try:
            # no item, or still this token's: nothing newer is overwritten
            self._table.put(encode_item(waiter_key(waiter.resource, waiter.operation_id), body),
                            condition="attribute_not_exists(PK)")
        except ConditionFailed:
            return

    def take(self, waiter: Waiter) -> bool:
        """Remove `waiter` if it is still the one parked (same token); True if this call did."""
        try:
            self._table.delete(
                waiter_key(waiter.resource, waiter.operation_id),
                condition="contains(body, :token)",
                values={":token": {"S": waiter.task_token}},
            )
        except ConditionFailed:
            return False
        return True


def settle(
    waiters: WaiterStore,
    sfn: Callable[[], Any],
    resource: str,
    state: str,
    output: dict[str, Any],
    *,
    failure_error: str,
    message: str = "",
) -> list[str]:
    """Complete every token parked on `resource` whose condition `state` meets (or can no
    longer meet); returns the ids of the operations woken."""
    woken: list[str] = []
    for waiter in waiters.waiting_for(resource):
        succeeded = state == waiter.condition
        if not (succeeded or state in waiter.failure_states) or not waiters.take(waiter):
            continue
        try:
            if succeeded:
                stepfunctions.send_task_success(sfn(), waiter.task_token, output)
            else:
                stepfunctions.send_task_failure(
                    sfn(),
                    waiter.task_token,
                    error=failure_error,
                    cause=message or f"{resource} is {state}",
                )
        except HypdError:
            # Not completed (throttled, refused...): parked again, so that the event's retry
            # completes it rather than the wait's slow fallback poll. A permanent refusal (IAM
            # denies SendTaskSuccess) is parked again too: each retry then fails the same way and
            # the event reaches the dead-letter queue, where the refusal is seen; taken for
            # good, the retry would succeed with nothing to do and hide it. The wait's fallback
            # poll moves the pipeline on either way.
            waiters.put_back(waiter)
            raise
        woken.append(waiter.operation_id)
    return woken


IN_SERVICE = "InService"


def park_and_look(
    waiters: WaiterStore,
    sfn: Callable[[], Any],
    resource: str,
    operation_id: str,
    task_token: str,
    look: Callable[[], tuple[str, str]],
    *,
    condition: str = IN_SERVICE,
    failure_states: tuple[str, ...],
    failure_error: str,
) -> dict[str, Any]:
    """Park the operation's token on `resource` (a HyperPod cluster's name), then look once: a
    change that happened before the token was parked is not missed. `look()` answers (status,
    failure message). The answer says what the operation now waits for, unless the look
    completed the token itself.
    """
    waiters.park(resource, operation_id, condition, task_token, failure_states=failure_states)
    status, failure = look()
    woken = settle(
        waiters,
        sfn,
        resource,
        status,
        {"ready": status == condition, "status": status, "by": "await"},
        failure_error=failure_error,
        message=failure,
    )
    if woken:
        return {"status": status, "settled": True}
    return {
        "status": status,
        "settled": False,
        "ready": False,
        "waiting": f"HyperPod cluster {resource} is {status} (its state-change event ends the "
        "wait)",
        "waitSeconds": TOKEN_WAIT_SECONDS,
    }


STATE_CHANGE = "SageMaker HyperPod Cluster State Change"
HYPERPOD_WAKE_ERROR = "HyperPodClusterFailed"


def on_cluster_state_change(
    event: dict[str, Any], waiters: WaiterStore, sfn: Callable[[], Any]
) -> dict[str, Any]:
    """An EventBridge `SageMaker HyperPod Cluster State Change` event: wake its waiters.

    The detail mirrors DescribeCluster (ClusterName, ClusterStatus, FailureMessage, ...).
    """
    detail = event.get("detail") or {}
    name = detail.get("ClusterName")
    status = detail.get("ClusterStatus")
    if event.get("detail-type") != STATE_CHANGE or not name or not status:
        return {"woken": [], "ignored": True}
    woken = settle(
        waiters,
        sfn,
        str(name),
        str(status),
        {"ready": status == "InService", "status": status, "by": "event"},
        failure_error=HYPERPOD_WAKE_ERROR,
        message=f"HyperPod cluster {name} is {status}: "
        f"{detail.get('FailureMessage') or 'no failure message'}",
    )
    return {"cluster": name, "status": status, "woken": woken}
