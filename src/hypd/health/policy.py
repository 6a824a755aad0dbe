"""A cluster's health policy: what hypd does when HyperPod recommends a repair it does not take.

`notify` (the default) only tells; `reboot` and `replace` are ceilings: `replace` follows the
recommendation (a reboot for a reboot, a replacement for a replacement), `reboot` reboots when
a reboot is recommended and only tells when a replacement is. `maxActionsPerHour` and
`nodeCooldownMinutes` bound how often hypd acts (`hypd.health.budget`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hypd.aws.dynamodb import Table, decode_body, encode_item
from hypd.health.events import HealthSummary, RepairKind
from hypd.table import cluster_feature_key

FEATURE = "health-policy"
PolicyAction = Literal["notify", "reboot", "replace"]
_STRENGTH = {"notify": 0, "reboot": 1, "replace": 2}


class HealthPolicy(BaseModel):
    """The body of ``PUT /clusters/{tag}/health-policy`` (every field has its default)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    action: PolicyAction = Field(
        default="notify",
        description="notify: only tell. reboot: reboot when HyperPod recommends a reboot it "
        "does not take. replace: reboot or replace as HyperPod recommends.",
    )
    max_actions_per_hour: int = Field(
        default=2, ge=1, le=100, alias="maxActionsPerHour",
        description="At most this many repairs per cluster in any 60 minutes.",
    )
    node_cooldown_minutes: int = Field(
        default=60, ge=1, le=10080, alias="nodeCooldownMinutes",
        description="No second repair of one node within this many minutes.",
    )


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True)

    repair: RepairKind | None
    reason: str | None = None
    """Why no repair: healthy, hyperpod (it repairs the node itself), not-recommended, policy."""


def decide(policy: HealthPolicy, summary: HealthSummary) -> Decision:
    """What the policy says to do about one node health event."""
    if summary.healthy:
        return Decision(repair=None, reason="healthy")
    if summary.repaired_by_hyperpod:
        return Decision(repair=None, reason="hyperpod")
    recommended = summary.recommended
    if recommended is None:
        return Decision(repair=None, reason="not-recommended")
    if _STRENGTH[policy.action] < _STRENGTH[recommended]:
        return Decision(repair=None, reason="policy")
    return Decision(repair=recommended)


class PolicyStore:
    def __init__(self, table: Table) -> None:
        self._table = table

    def find(self, tag: str) -> HealthPolicy | None:
        item = self._table.get(cluster_feature_key(tag, FEATURE))
        return HealthPolicy.model_validate(decode_body(item)) if item else None

    def get(self, tag: str) -> HealthPolicy:
        """The cluster's policy (the default, notify, when none was set)."""
        return self.find(tag) or HealthPolicy()

    def put(self, tag: str, policy: HealthPolicy) -> None:
        # Unconditional: the last PUT wins, as a client expects of a PUT.
        self._table.put(
            encode_item(cluster_feature_key(tag, FEATURE),
                        policy.model_dump(mode="json", by_alias=True))
        )
