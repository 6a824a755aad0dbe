"""The `verify` stage: the cluster does what it was created for.

Verified when every HyperPod node of every group has joined Kubernetes, is Ready and
schedulable (not cordoned, and HyperPod's ``node-health-status`` label says Schedulable), and
the storage claim is Bound. Pure functions over the Kubernetes objects (as dicts), so the
rules are unit-tested without a cluster; `observe` reads them through the API.

The waiting rules here are shared with the capacity operations' verify stage
(`hypd.capacity.verify`): how long deep health checks hold a node back
(`DEEP_HEALTH_CHECKS`), how much longer a wait may last when a group runs them
(`verification_timeout`), and how often to look (`check_interval`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.errors import PermanentError

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
TYPE_LABEL = "node.kubernetes.io/instance-type"
SCHEDULABLE = "Schedulable"

VERIFY_TIMEOUT = timedelta(minutes=30)
"""How long the create's verify stage waits for nodes to join and become schedulable after
HyperPod says InService (node bootstrap, basic health checks) before it fails; a cluster with a
group that runs deep health checks gets `DEEP_HEALTH_CHECK_ALLOWANCE` more
(`verification_timeout`)."""

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


class VerificationTimedOut(PermanentError):
    code = "VerificationTimedOut"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)


class NodeView(_Model):
    name: str
    group: str | None = None
    instance_type: str | None = Field(default=None, alias="instanceType")
    ready: bool
    health: str | None = None
    schedulable: bool


class Verification(_Model):
    ready: bool
    nodes: list[NodeView]
    expected_nodes: dict[str, int] = Field(alias="expectedNodes")
    claim_phase: str | None = Field(default=None, alias="claimPhase")
    problems: list[str]


def node_view(node: Mapping[str, Any]) -> NodeView:
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


def evaluate(
    nodes: Sequence[Mapping[str, Any]],
    expected: Mapping[str, int],
    claim: Mapping[str, Any] | None,
    *,
    rollout: Sequence[str] = (),
) -> Verification:
    """Judge the cluster: `expected` maps each group to its node count; `rollout` lists the
    dependency chart's workloads that have not rolled out (`check_rollout`)."""
    views = [node_view(node) for node in nodes]
    hyperpod = [view for view in views if view.group in expected]
    problems: list[str] = []
    for group, count in sorted(expected.items()):
        members = [view for view in hyperpod if view.group == group]
        good = [view for view in members if view.schedulable]
        if len(members) < count:
            problems.append(f"group {group}: {len(members)} of {count} nodes joined")
        if len(good) < count:
            bad = [
                f"{v.name} (ready={v.ready}, health={v.health})"
                for v in members
                if not v.schedulable
            ]
            detail = f": {', '.join(bad)}" if bad else ""
            problems.append(f"group {group}: {len(good)} of {count} nodes schedulable{detail}")
    phase = ((claim or {}).get("status") or {}).get("phase")
    if claim is None:
        problems.append("the storage claim does not exist")
    elif phase != "Bound":
        problems.append(f"the storage claim is {phase or 'Pending'}, not Bound")
    problems.extend(f"dependency chart: {problem}" for problem in rollout)
    return Verification(
        ready=not problems,
        nodes=hyperpod,
        expected_nodes=dict(expected),
        claim_phase=phase,
        problems=problems,
    )


def observe(
    api_client: Any, claim_namespace: str, claim_name: str
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The nodes and the claim, as plain dicts, through the Kubernetes API."""
    from kubernetes.client import CoreV1Api
    from kubernetes.client.exceptions import ApiException

    core = CoreV1Api(api_client)
    nodes = [api_client.sanitize_for_serialization(n) for n in core.list_node().items]
    try:
        claim = api_client.sanitize_for_serialization(
            core.read_namespaced_persistent_volume_claim(claim_name, claim_namespace)
        )
    except ApiException as exc:
        if exc.status != 404:
            raise
        claim = None
    return nodes, claim
