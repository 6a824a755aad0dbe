"""The teardown plan (pure): what will be deleted, in order, what is kept and why, and what
blocks the deletion now, from an `Inventory` of what exists (docs/teardown.md).

The plan is the contract of ``DELETE /clusters/{tag}``: the operation deletes exactly the
resources of its steps, in the steps' order (independent steps in parallel, `BRANCHES`), and
nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypd.operations.kinds import spec_of
from hypd.operations.models import OperationKind

T = TypeVar("T")

STAGES = spec_of(OperationKind.DELETE_CLUSTER).stages
"""The steps of a teardown, in the order the plan lists them: the operation's stages."""

BRANCHES = (("addons", "eks"), ("storage",))
"""Steps that run side by side once the HyperPod cluster is gone: the EKS side (add-ons, then
the EKS cluster) and the storage (FSx). The network waits for both."""

TERMINAL_JOB_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class Resource:
    """One resource: its type (an AWS or Kubernetes kind), its name and, where AWS gives one,
    its ARN; `detail` says what the plan shows of it (namespace, status, who installed it)."""

    type: str
    name: str
    arn: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def view(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, **({"arn": self.arn} if self.arn else {}),
                **self.detail}

    @property
    def key(self) -> tuple[str, str, str]:
        """What tells two resources apart (a Kubernetes object's namespace too)."""
        return self.type, str(self.detail.get("namespace") or ""), self.name

    @classmethod
    def from_view(cls, view: dict[str, Any]) -> Resource:
        detail = {k: v for k, v in view.items() if k not in ("type", "name", "arn")}
        return cls(str(view["type"]), str(view["name"]), view.get("arn"), detail)


def first_of_each(items: Iterable[T], key: Callable[[T], Hashable]) -> list[T]:
    """`items` without repeats (the first of each key), in order."""
    first: dict[Hashable, T] = {}
    for item in items:
        first.setdefault(key(item), item)
    return list(first.values())


def distinct(resources: Iterable[Resource]) -> list[Resource]:
    """`resources` without repeats (the first of each key), in order."""
    return first_of_each(resources, lambda r: r.key)


@dataclass(frozen=True)
class Workload:
    kind: str
    namespace: str
    name: str
    phase: str
    """A job's phase; an endpoint's state."""
    sagemaker_endpoint: Resource | None = None
    """The SageMaker endpoint an inference object registered: it goes with the object."""

    @property
    def running(self) -> bool:
        """A job that has not ended, or an endpoint (it serves until deleted)."""
        return self.kind != "HyperPodPyTorchJob" or self.phase not in TERMINAL_JOB_PHASES


@dataclass(frozen=True)
class Inventory:
    """What exists for a cluster tag, as AWS and Kubernetes say now."""

    tag: str
    created_by_hypd: bool
    protected: bool
    status: str | None
    workloads: tuple[Workload, ...] = ()
    quotas: tuple[Resource, ...] = ()
    scheduler_configs: tuple[Resource, ...] = ()
    hyperpod: Resource | None = None
    addons: tuple[Resource, ...] = ()
    """In deletion order: the features' add-ons first, the shared ones after."""
    associations: tuple[Resource, ...] = ()
    eks: Resource | None = None
    file_systems: tuple[Resource, ...] = ()
    subnets: tuple[Resource, ...] = ()
    """Compute subnets hypd created outside the network stack."""
    stack: Resource | None = None
    roles: tuple[Resource, ...] = ()
    oidc_providers: tuple[Resource, ...] = ()
    workspaces: tuple[Resource, ...] = ()
    tls_buckets: tuple[Resource, ...] = ()
    """The inference operator's TLS bucket hypd made (emptied, then deleted)."""
    kept: tuple[tuple[Resource, str], ...] = ()
    """What the inventory saw and will not delete, each with why."""
    kubernetes_error: str | None = None
    """Why the cluster's Kubernetes API could not be read (its workloads are unknown)."""
    running_operation: dict[str, Any] | None = None
    """The operation holding the cluster now, if any."""
    held: Blocker | None = None
    """The cluster's own teardown refusing another: it was deleted, or is being deleted."""


@dataclass(frozen=True)
class Blocker:
    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def view(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **(
            {"details": self.details} if self.details else {})}


@dataclass(frozen=True)
class Plan:
    tag: str
    steps: tuple[tuple[str, tuple[Resource, ...]], ...]
    kept: tuple[tuple[Resource, str], ...]
    blockers: tuple[Blocker, ...]
    forced: bool

    def resources(self, stage: str) -> tuple[Resource, ...]:
        return dict(self.steps).get(stage, ())

    def recorded(self) -> dict[str, list[dict[str, Any]]]:
        """The steps as the operation's input records them (each stage reports these deleted,
        with whatever else of its kind it found and deleted)."""
        return {stage: [r.view() for r in resources] for stage, resources in self.steps}

    def kept_views(self) -> list[dict[str, Any]]:
        """What is kept, each resource's view with why."""
        return [{**r.view(), "reason": why} for r, why in self.kept]

    def view(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "deletable": not self.blockers,
            "force": self.forced,
            "steps": [{"stage": stage, "resources": [r.view() for r in resources]}
                      for stage, resources in self.steps],
            "parallel": [list(branch) for branch in BRANCHES],
            "kept": self.kept_views(),
            "blockers": [b.view() for b in self.blockers],
        }


def _workload_resource(w: Workload) -> Resource:
    return Resource(w.kind, w.name, detail={"namespace": w.namespace, "phase": w.phase})


def blockers(inventory: Inventory, *, force: bool) -> list[Blocker]:
    """What refuses the deletion now, in the order a user clears them."""
    tag = inventory.tag
    found: list[Blocker] = []
    if inventory.held and not inventory.running_operation:
        # A running teardown is named by OperationRunning below; a failed one is resumed.
        found.append(inventory.held)
    if not inventory.created_by_hypd:
        found.append(Blocker(
            "NotCreatedByHypd",
            f"cluster {tag} was discovered, not created by hypd: hypd deletes only what it "
            f"created; DELETE /clusters/{tag}?forget=true removes hypd's record and leaves "
            "every resource as it is"))
    if inventory.protected:
        found.append(Blocker(
            "DeletionProtected",
            f"cluster {tag} has deletion protection on: PUT /clusters/{tag}/protection "
            '{"enabled": false} first'))
    running = [w for w in inventory.workloads if w.running]
    if running and not force:
        names = [f"{w.kind}/{w.namespace}/{w.name}" for w in running]
        found.append(Blocker(
            "WorkloadsRunning",
            f"cluster {tag} runs {len(running)} workload(s) ({', '.join(names)}): delete them "
            f"first, or DELETE /clusters/{tag}?force=true stops them",
            {"workloads": names}))
    if inventory.kubernetes_error and not force:
        found.append(Blocker(
            "WorkloadsUnknown",
            f"cluster {tag}'s Kubernetes API could not be read ({inventory.kubernetes_error}), "
            f"so its running workloads are unknown: DELETE /clusters/{tag}?force=true deletes "
            "it anyway"))
    if inventory.running_operation:
        op = inventory.running_operation
        found.append(Blocker(
            "OperationRunning",
            f"operation {op.get('operationId')} ({op.get('kind')}) is {op.get('status')} on "
            f"cluster {tag}: wait for it to end or cancel it",
            {k: op[k] for k in ("operationId", "kind", "status") if k in op}))
    return found


def plan(inventory: Inventory, *, force: bool = False) -> Plan:
    """The teardown of `inventory`'s cluster."""
    record = Resource("ClusterRecord", inventory.tag,
                      detail={"becomes": "DELETED", "keeps": "the operation history"})
    steps: dict[str, tuple[Resource, ...]] = {
        "workloads": (*(_workload_resource(w) for w in inventory.workloads),
                      *(w.sagemaker_endpoint for w in inventory.workloads
                        if w.sagemaker_endpoint)),
        "governance": (*inventory.quotas, *inventory.scheduler_configs),
        "hyperpod": (inventory.hyperpod,) if inventory.hyperpod else (),
        "addons": (*inventory.addons, *inventory.associations),
        "eks": (inventory.eks,) if inventory.eks else (),
        "storage": inventory.file_systems,
        "network": (*inventory.subnets, *((inventory.stack,) if inventory.stack else ())),
        "roles": (*inventory.roles, *inventory.oidc_providers, *inventory.workspaces,
                  *inventory.tls_buckets),
        "record": (record,),
    }
    return Plan(
        tag=inventory.tag,
        steps=tuple((stage, steps[stage]) for stage in STAGES),
        kept=inventory.kept,
        blockers=tuple(blockers(inventory, force=force)),
        forced=force,
    )
