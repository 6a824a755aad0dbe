"""HyperPod's nodes as Kubernetes sees them, and how long to wait for them.

What every verify stage shares (the create's, `hypd.create.verify`, and the capacity
operations', `hypd.capacity.verify`): how a Kubernetes Node of a HyperPod instance group reads
(`node_view`: its group, readiness and HyperPod's ``node-health-status`` label), how long deep
health checks hold a node back (`DEEP_HEALTH_CHECKS`), how much longer a wait may last when a
group runs them (`verification_timeout`), and how often to look (`check_interval`). Pure: the
nodes are plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
TYPE_LABEL = "node.kubernetes.io/instance-type"
SCHEDULABLE = "Schedulable"

DEEP_HEALTH_CHECKS = timedelta(minutes=60)
"""How long HyperPod's deep health checks (``OnStartDeepHealthChecks``) keep a new node
Unschedulable at the least: AWS gives about 60-90 minutes (shared/docs/AWS-FACTS.md), so a
first look is not due before."""
DEEP_HEALTH_CHECK_ALLOWANCE = timedelta(hours=2)
"""What a verify wait adds when a group runs deep health checks: their 60-90 minutes with room
to spare."""

CHECK_SECONDS = 30
SLOW_CHECK_SECONDS = 60
SLOW_AFTER = timedelta(minutes=15)
"""A change that is late by this much is looked at once a minute (it is waiting on capacity
or a long health check, not on a boot)."""


def verification_timeout(base: timedelta, *, deep_health_checks: bool) -> timedelta:
    """How long a verify stage waits: `base`, plus `DEEP_HEALTH_CHECK_ALLOWANCE` when any group
    it waits for runs deep health checks (the one rule the create and the capacity operations
    share)."""
    return base + (DEEP_HEALTH_CHECK_ALLOWANCE if deep_health_checks else timedelta(0))


def check_interval(waited: float) -> int:
    """Seconds to the next look after `waited` seconds of the stage's attempt."""
    return CHECK_SECONDS if waited < SLOW_AFTER.total_seconds() else SLOW_CHECK_SECONDS


class NodeView(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)

    name: str
    group: str | None = None
    instance_type: str | None = Field(default=None, alias="instanceType")
    ready: bool
    health: str | None = None
    schedulable: bool


def node_view(node: Mapping[str, Any]) -> NodeView:
    """A Kubernetes Node (a dict): schedulable when Ready, not cordoned, and HyperPod's health
    label says Schedulable."""
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    health = labels.get(HEALTH_LABEL)
    cordoned = bool((node.get("spec") or {}).get("unschedulable"))
    return NodeView(
        name=str(metadata.get("name", "")),
        group=labels.get(GROUP_LABEL),
        instance_type=labels.get(TYPE_LABEL),
        ready=ready,
        health=health,
        schedulable=ready and not cordoned and health == SCHEDULABLE,
    )
