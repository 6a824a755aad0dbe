"""The guards of automatic repair: a rate limit per cluster and a cool-down per node.

`reserve` takes, in one DynamoDB transaction, a slot in the cluster's last hour (fewer than
`maxActionsPerHour` repairs started in the last 60 minutes: a sliding window, the times kept in
one versioned item) and the node's cool-down (no repair of it in the last
`nodeCooldownMinutes`: a conditional put on the node's repair item). Both hold or neither is
written, so under any number of concurrent invocations the limits hold exactly: a flapping
node or an event storm cannot churn the cluster. `release` gives a reservation back when the
repair could not be started.
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from hypd import clock
from hypd.aws.dynamodb import (
    VERSION_CONDITION,
    ConditionFailed,
    Table,
    TransactionConflict,
    decode_body,
    encode_item,
    optimistic,
    versioned,
)
from hypd.health.policy import HealthPolicy
from hypd.table import node_repair_key, repair_budget_key

WINDOW = timedelta(hours=1)
ATTEMPTS = 25
"""Transaction attempts per reservation under contention (each re-reads the window)."""


class Refusal(StrEnum):
    COOLDOWN = "cooldown"
    RATE_LIMIT = "rate-limit"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class Repair(_Model):
    at: str
    node_id: str = Field(alias="nodeId")
    action: str
    operation_id: str = Field(alias="operationId")


class Window(_Model):
    repairs: list[Repair] = Field(default_factory=list)


class RepairBudget:
    def __init__(self, table: Table) -> None:
        self._table = table

    def reserve(
        self, tag: str, repair: Repair, policy: HealthPolicy, now: datetime | None = None
    ) -> Refusal | None:
        """Reserve `repair` (its node's cool-down and a slot of the cluster's hour); None when
        reserved, else why not.

        Raises:
            ConcurrentUpdate: the window kept changing under us (temporary).
        """
        at = now or clock.now()
        since = clock.isoformat(at - WINDOW)
        cooled = clock.isoformat(at - timedelta(minutes=policy.node_cooldown_minutes))
        node_key = node_repair_key(tag, repair.node_id)

        def attempt() -> Refusal | None:
            last = self._table.get(node_key)
            if last is not None and last.get("repairedAt", {}).get("S", "") >= cooled:
                return Refusal.COOLDOWN
            item = self._table.get(repair_budget_key(tag))
            window = Window.model_validate(decode_body(item)) if item else Window()
            recent = [r for r in window.repairs if r.at > since]
            if len(recent) >= policy.max_actions_per_hour:
                return Refusal.RATE_LIMIT
            read = versioned(item)
            try:
                self._table.transact_put([
                    (
                        encode_item(node_key, repair.model_dump(mode="json", by_alias=True),
                                    attributes={"repairedAt": repair.at}),
                        # the node's cool-down: no repair since `cooled`
                        "attribute_not_exists(PK) OR repairedAt < :cooled",
                        {":cooled": {"S": cooled}},
                    ),
                    (
                        encode_item(
                            repair_budget_key(tag),
                            Window(repairs=[*recent, repair]).model_dump(mode="json",
                                                                          by_alias=True),
                            version=read + 1,
                        ),
                        VERSION_CONDITION,
                        {":v": {"N": str(read)}},
                    ),
                ])
            except TransactionConflict as exc:
                if 0 in exc.failed:
                    return Refusal.COOLDOWN
                raise ConditionFailed("the cluster's repair window changed") from exc
            return None

        return optimistic(attempt, attempts=ATTEMPTS, what=f"the repair window of {tag}")

    def release(self, tag: str, repair: Repair) -> None:
        """Give back a reservation whose repair could not be started."""

        def attempt() -> None:
            item = self._table.get(repair_budget_key(tag))
            if item is not None:
                window = Window.model_validate(decode_body(item))
                kept = [r for r in window.repairs if r.operation_id != repair.operation_id]
                if kept != window.repairs:
                    read = versioned(item)
                    self._table.put_versioned(
                        encode_item(repair_budget_key(tag),
                                    Window(repairs=kept).model_dump(mode="json", by_alias=True),
                                    version=read + 1),
                        read,
                    )
            # contains(body, :op): only our reservation; another repair of the node keeps its own.
            with contextlib.suppress(ConditionFailed):
                self._table.delete(
                    node_repair_key(tag, repair.node_id),
                    condition="contains(body, :op)",
                    values={":op": {"S": repair.operation_id}},
                )

        optimistic(attempt, attempts=ATTEMPTS, what=f"the repair window of {tag}")
