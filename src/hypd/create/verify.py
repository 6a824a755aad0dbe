"""The `verify` stage: the cluster does what it was created for.

Verified when every HyperPod node of every group has joined Kubernetes, is Ready and
schedulable (not cordoned, and HyperPod's ``node-health-status`` label says Schedulable), and
the storage claim is Bound. Pure functions over the Kubernetes objects (as dicts), so the
rules are unit-tested without a cluster; `observe` reads them through the API.

How a node reads and the waiting rules (deep health checks, the timeout's allowance for them,
the look interval) are shared with the capacity operations' verify stage: they are in
`hypd.instance_groups.nodes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hypd.errors import PermanentError
from hypd.instance_groups.nodes import NodeView, node_view

VERIFY_TIMEOUT = timedelta(minutes=30)
"""How long the create's verify stage waits for nodes to join and become schedulable after
HyperPod says InService (node bootstrap, basic health checks) before it fails; a cluster with a
group that runs deep health checks gets `DEEP_HEALTH_CHECK_ALLOWANCE` more
(`verification_timeout`)."""


class VerificationTimedOut(PermanentError):
    code = "VerificationTimedOut"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, frozen=True)


class Verification(_Model):
    ready: bool
    nodes: list[NodeView]
    expected_nodes: dict[str, int] = Field(alias="expectedNodes")
    claim_phase: str | None = Field(default=None, alias="claimPhase")
    problems: list[str]


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
