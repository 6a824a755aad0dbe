"""How every stage of the delete-cluster operation runs (docs/teardown.md): a polled pair
``teardown-<stage>`` / ``teardown-<stage>-check`` around one `Look`.

Each look reads what is left of the stage's part and starts the deletions that can start now;
the stage ends only once nothing of it is left, as AWS's or Kubernetes' Describe or List says,
so nothing is reported deleted that still exists. It then reports deleted what the plan listed
for it and whatever else of its kind it found on the way. A stage whose resources are gone
already ends at once, so a retry that reruns it changes nothing. A stage still waiting past its
budget (`WAITS`) fails with what is left and why (the operation FAILED; a retry resumes here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hypd.errors import PermanentError
from hypd.operations.models import Operation
from hypd.operations.steps import OperationInput, Steps, poll_result, polled, ready
from hypd.operations.waits import WaitPolicy
from hypd.tasks import TaskRouter
from hypd.teardown.inputs import TeardownInput
from hypd.teardown.plan import Resource, distinct

MINUTE = 60


def _wait(first: int, interval: int, late_after: int, late: int, give_up: int) -> WaitPolicy:
    return WaitPolicy(expected_seconds=first, first_look_seconds=first,
                      interval_seconds=interval, late_after_seconds=late_after,
                      late_interval_seconds=late, give_up_after_seconds=give_up)


WAITS = {
    # Workloads: the operators' finalizers and the job pods' grace take seconds.
    "workloads": _wait(15, 15, 10 * MINUTE, 60, 60 * MINUTE),
    # Quotas and scheduler configs: about 30 s each.
    "governance": _wait(30, 15, 10 * MINUTE, 30, 30 * MINUTE),
    # HyperPod documents no deletion time (about ten minutes with nodes, seen in the emulator's
    # durations); it is looked at every minute after five.
    "hyperpod": _wait(5 * MINUTE, MINUTE, 30 * MINUTE, 2 * MINUTE, 90 * MINUTE),
    # Add-ons: AddonDeleted waits 10 s x 60.
    "addons": _wait(30, 15, 10 * MINUTE, 30, 30 * MINUTE),
    # EKS: ClusterDeleted waits 30 s x 40 (20 minutes); most take a few.
    "eks": _wait(4 * MINUTE, 30, 20 * MINUTE, MINUTE, 45 * MINUTE),
    # FSx for Lustre: several minutes.
    "storage": _wait(5 * MINUTE, MINUTE, 30 * MINUTE, 2 * MINUTE, 60 * MINUTE),
    # The network: interfaces of the deleted clusters linger minutes, then the stack deletes.
    "network": _wait(MINUTE, 30, 15 * MINUTE, MINUTE, 60 * MINUTE),
    # Roles and OIDC providers go at once; an AMP workspace takes seconds.
    "roles": _wait(30, 15, 5 * MINUTE, 30, 30 * MINUTE),
}
"""When each stage looks again, and when it gives up (its attempt's budget)."""


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
    skipped: str | None = None
    """Why the stage had nothing to do because what it works in never existed (an EKS
    cluster that never became ACTIVE has no Kubernetes API): reported in its output."""

    @property
    def done(self) -> bool:
        return not self.left and not self.waiting


Looker = Callable[[Any, TeardownInput, Sequence[Resource], bool], Look]
"""A stage's look: (its function's services, the operation's input, every resource of the
stage known so far: the plan's and what earlier looks of this attempt saw, whether it is the
attempt's first look)."""


def _known(operation: Operation, where: TeardownInput, stage: str) -> list[Resource]:
    progress = operation.stage(stage).progress or {}
    return distinct([*(Resource.from_view(v) for v in where.planned.get(stage, [])),
                     *(Resource.from_view(v) for v in progress.get("seen", []))])


def _views(resources: Sequence[Resource]) -> list[dict[str, Any]]:
    return [r.view() for r in resources]


def stage_task(router: TaskRouter, stage: str, look: Looker) -> None:
    """Register `stage`'s two tasks on `router`."""

    def poll(task: OperationInput, services: StageServices, *, start: bool) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation = services.steps.operations.get(task.operation_id)
            where = TeardownInput.model_validate(operation.input)
            known = _known(operation, where, stage)
            seen = look(services, where, known, start)
            targets = distinct([*known, *seen.left, *seen.found])
            if seen.done:
                return {**poll_result(True), "deleted": _views(targets),
                        **({"skipped": seen.skipped} if seen.skipped else {})}
            elapsed, wait = Steps.elapsed(operation, stage), WAITS[stage]
            left = [*seen.left, *seen.waiting]
            what = ", ".join(f"{r.type} {r.name}" for r in left) + (
                f" ({seen.reason})" if seen.reason else "")
            if wait.overdue(elapsed):
                raise TeardownFailed(
                    f"stage {stage}: still there after {int(elapsed) // 60} min: {what}",
                    details={"stage": stage, "remaining": _views(left)})
            return {**poll_result(False, wait.next_check(elapsed), waiting=f"still there: {what}"),
                    "remaining": _views(left), "seen": _views(targets),
                    **({"reason": seen.reason} if seen.reason else {})}

        return services.steps.step(
            task, stage, work, start=start, complete=ready,
            summarize=lambda r: {k: r[k] for k in ("deleted", "skipped") if k in r},
            progress=lambda r: {k: r[k] for k in ("remaining", "seen", "reason") if k in r},
        )

    polled(router, f"teardown-{stage}", f"teardown-{stage}-check")(poll)
