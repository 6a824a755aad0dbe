"""How every stage of the delete-cluster operation runs (docs/teardown.md): a polled pair
``teardown-<stage>`` / ``teardown-<stage>-check`` around one `Look`.

Each look reads what is left of the stage's part and starts the deletions that can start now;
the stage ends only once nothing of it is left, as AWS's or Kubernetes' Describe or List says,
so nothing is reported deleted that still exists. It then reports deleted what the plan listed
for it and whatever else of its kind it found on the way. A stage whose resources are gone
already ends at once, so a retry that reruns it changes nothing. A stage still waiting past its
budget (`BUDGET`) fails with what is left and why (the operation FAILED; a retry resumes here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hypd.errors import PermanentError
from hypd.operations.models import Operation, StageStatus
from hypd.operations.steps import OperationInput, Steps, poll_result, polled, ready
from hypd.tasks import TaskRouter
from hypd.teardown.inputs import TeardownInput
from hypd.teardown.plan import Resource, distinct

INTERVAL = {"workloads": 15, "governance": 15, "hyperpod": 60, "addons": 20, "eks": 60,
            "storage": 60, "network": 30, "roles": 15}
"""Seconds between looks, per stage (HyperPod and EKS take about ten minutes to delete, FSx
several, add-ons, quotas and workloads under one)."""

BUDGET = {"workloads": 3600, "governance": 1800, "hyperpod": 5400, "addons": 1800,
          "eks": 2700, "storage": 3600, "network": 3600, "roles": 1800}
"""Seconds a stage's attempt may wait for its resources to go before it fails, several times
what each deletion takes (botocore's EKS ClusterDeleted waiter gives up after 20 minutes,
AddonDeleted after 10; HyperPod documents no time, and its network interfaces linger after it)."""


class TeardownFailed(PermanentError):
    """A stage could not delete its part: what is left, and AWS's reason."""

    code = "TeardownFailed"


class StageServices(Protocol):
    """What a stage needs of its function's services."""

    @property
    def steps(self) -> Steps: ...

    def client(self, service: str, /) -> Any: ...


@dataclass(frozen=True)
class Look:
    """What a stage saw: its resources still there, and anything else it waits for (a job's
    pods, never reported deleted); `reason`, why they are still there when AWS said why."""

    left: Sequence[Resource] = ()
    waiting: Sequence[Resource] = ()
    reason: str | None = None
    found: Sequence[Resource] = field(default_factory=tuple)
    """Resources of the stage the look found that may be gone already (IAM roles it deleted
    at once, an endpoint registered since the plan): reported deleted with the rest once the
    stage ends."""

    @property
    def done(self) -> bool:
        return not self.left and not self.waiting


Looker = Callable[[Any, TeardownInput, Sequence[Resource]], Look]
"""A stage's look: (its function's services, the operation's input, every resource of the
stage known so far: the plan's and what earlier looks of this attempt saw)."""


def _known(operation: Operation, where: TeardownInput, stage: str) -> list[Resource]:
    progress = operation.stage(stage).progress or {}
    return distinct([*(Resource.from_view(v) for v in where.planned.get(stage, [])),
                     *(Resource.from_view(v) for v in progress.get("seen", []))])


def _views(resources: Sequence[Resource]) -> list[dict[str, Any]]:
    return [r.view() for r in resources]


def stage_task(router: TaskRouter, stage: str, look: Looker) -> None:
    """Register `stage`'s two tasks on `router`."""

    def poll(task: OperationInput, services: StageServices, *, start: bool) -> dict[str, Any]:
        # A retry that resumes inside the Parallel reruns a branch: a stage of it that has
        # succeeded already is passed (its resources are gone), not attempted again.
        operation = services.steps.operations.get(task.operation_id)
        if any(s.name == stage and s.status is StageStatus.SUCCEEDED for s in operation.stages):
            return poll_result(True)

        def work() -> dict[str, Any]:
            operation = services.steps.operations.get(task.operation_id)
            where = TeardownInput.model_validate(operation.input)
            known = _known(operation, where, stage)
            seen = look(services, where, known)
            targets = distinct([*known, *seen.left, *seen.found])
            if seen.done:
                return {**poll_result(True), "deleted": _views(targets)}
            elapsed = Steps.elapsed(operation, stage)
            if elapsed > BUDGET[stage]:
                left = [*seen.left, *seen.waiting]
                raise TeardownFailed(
                    f"stage {stage}: still there after {int(elapsed) // 60} min: "
                    + ", ".join(f"{r.type} {r.name}" for r in left)
                    + (f" ({seen.reason})" if seen.reason else ""),
                    details={"stage": stage, "remaining": _views(left)})
            return {**poll_result(False, INTERVAL[stage]),
                    "remaining": _views([*seen.left, *seen.waiting]), "seen": _views(targets),
                    **({"reason": seen.reason} if seen.reason else {})}

        return services.steps.step(
            task, stage, work, start=start, complete=ready,
            summarize=lambda r: {"deleted": r["deleted"]},
            progress=lambda r: {k: r[k] for k in ("remaining", "seen", "reason") if k in r},
        )

    polled(router, f"teardown-{stage}", f"teardown-{stage}-check")(poll)
