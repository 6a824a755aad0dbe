"""The notifications a user subscribes to: one concise message per unhealthy node event and
per repair hypd starts (SNS subject <= 100 characters; attributes for subscription filters)."""

from __future__ import annotations

from dataclasses import dataclass

from hypd.health.records import HealthEntry, TakenAction


@dataclass(frozen=True)
class Notification:
    subject: str
    message: str
    attributes: dict[str, str]


def _taken(taken: TakenAction | None) -> str:
    if taken is None:
        return "hypd took no action"
    if taken.by == "hyperpod":
        return f"HyperPod is repairing it ({taken.action})"
    if taken.by == "hypd":
        return f"hypd started {taken.action}-node operation {taken.operation_id}"
    return f"hypd took no action ({taken.reason})"


def unhealthy(tag: str, node_id: str, group: str | None, entry: HealthEntry) -> Notification:
    """A node turned (or is still) unhealthy, with what is being done about it."""
    where = f"node {node_id}" + (f" (group {group})" if group else "")
    lines = [
        f"Cluster {tag}: {where} is {entry.status} since {entry.time}.",
        f"Reason: {entry.reason or 'not given'}",
        f"HyperPod's repair: {entry.repair_action or 'None'}; "
        f"recommendation: {entry.recommendation or 'none'}",
        f"Action: {_taken(entry.taken)}",
        f"History: GET /clusters/{tag}/nodes/{node_id}/health",
    ]
    return Notification(
        subject=f"hypd {tag}: node {node_id} {entry.status}",
        message="\n".join(lines),
        attributes={
            "cluster": tag,
            "node": node_id,
            "healthStatus": entry.status,
            "action": (entry.taken.action or entry.taken.reason or "none")
            if entry.taken else "none",
        },
    )
