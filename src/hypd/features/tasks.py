"""FeatureTasksFunction's tasks: each phase of a set-features operation, polled (docs/features.md).

``features-{phase}`` opens the stage's attempt and ``features-{phase}-check`` looks again after a
Wait; both run one `Reconciler.advance` step. ``finish-features`` records the features as they
are; ``fail-features`` the error the state machine caught.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypd.clusters.create_request import ResolvedCreate
from hypd.clusters.feature_request import FeaturesInput, FeaturesRequest
from hypd.config import FeatureTaskSettings
from hypd.create import control_plane
from hypd.features import state, teams
from hypd.features.reconcile import PHASES, Reconciler
from hypd.kubernetes import TokenCache
from hypd.kubernetes.client import ClusterAccess
from hypd.operations.locks import LockStore
from hypd.operations.models import Operation, OperationKind
from hypd.operations.steps import (
    FailInput,
    OperationInput,
    Steps,
    polled,
    ready,
    summary,
)
from hypd.operations.store import OperationStore
from hypd.tasks import TaskRouter

router = TaskRouter()


@dataclass
class FeatureServices:
    operations: OperationStore
    locks: LockStore
    client: Callable[[str], Any]
    settings: FeatureTaskSettings
    tokens: TokenCache | None = None

    def __post_init__(self) -> None:
        self._access = ClusterAccess(
            lambda: self.client("eks"), lambda: self.settings.region, self.tokens
        )

    @property
    def steps(self) -> Steps:
        return Steps(self.operations, self.locks)

    @property
    def clients(self) -> state.FeatureClients:
        return state.FeatureClients(self.client, self._access.api)

    def grant_access(self, eks_name: str) -> None:
        """This function's cluster-admin access entry and the API's read-only one on
        `eks_name` (idempotent: what exists is kept)."""
        eks = self.client("eks")
        control_plane.ensure_admin_access(eks, eks_name,
                                          control_plane.principal_of(self.client("sts")))
        for role in self.settings.kubernetes_read_roles:
            control_plane.ensure_admin_access(eks, eks_name, role,
                                              policy=control_plane.ADMIN_VIEW_POLICY)

    def reconciler(self, operation: Operation) -> Reconciler:
        if operation.kind is OperationKind.CREATE_CLUSTER:
            return self._create_reconciler(operation)
        features = FeaturesInput.model_validate(operation.input)
        return Reconciler(
            clients=self.clients,
            tag=features.tag,
            request=features.request,
            token=operation.id,
            boundary_arn=self.settings.feature_role_boundary_arn,
            csi_roles=self.settings.csi_roles(),
            eks_name=features.eks_name,
            hyperpod_name=features.hyperpod_name,
            grant_access=self.grant_access,
        )


    def _create_reconciler(self, operation: Operation) -> Reconciler:
        """The create's features stage: the request's ``features`` (none: nothing to do)."""
        resolved = ResolvedCreate.model_validate(operation.input)
        return Reconciler(
            clients=self.clients,
            tag=resolved.tag,
            request=resolved.features or FeaturesRequest(),
            token=operation.id,
            boundary_arn=self.settings.feature_role_boundary_arn,
            csi_roles=self.settings.csi_roles(),
            eks_name=resolved.eks_cluster_name,
            hyperpod_name=resolved.hyperpod_cluster_name,
        )


@polled(router, "create-features", "create-features-check")
def create_features(task: OperationInput, services: FeatureServices, *, start: bool
                    ) -> dict[str, Any]:
    """The create's last stage: every phase in order, in one stage."""

    def work() -> dict[str, Any]:
        operation = services.operations.get(task.operation_id)
        phase, progress = services.reconciler(operation).advance_all(
            Steps.elapsed(operation, "features")
        )
        return {**progress.result(about=phase), "phase": phase}

    return services.steps.step(
        task, "features", work, start=start, complete=ready, summarize=summary,
        progress=lambda r: {"phase": r["phase"], "actions": r.get("actions", [])}
        if not r["ready"] else None,
    )


def _phase_task(phase: str) -> None:
    @polled(router, f"features-{phase}", f"features-{phase}-check")
    def advance(task: OperationInput, services: FeatureServices, *, start: bool
                ) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            operation = services.operations.get(task.operation_id)
            progress = services.reconciler(operation).advance(
                phase, Steps.elapsed(operation, phase)
            )
            return progress.result()

        return services.steps.step(
            task, phase, work, start=start, complete=ready, summarize=summary,
            progress=lambda r: {"actions": r.get("actions", [])} if not r["ready"] else None,
        )


for _phase in PHASES:
    _phase_task(_phase)


@polled(router, "team-quota", "team-quota-check")
def team_quota(task: OperationInput, services: FeatureServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        operation = services.operations.get(task.operation_id)
        return teams.advance_team(
            services.client("sagemaker"), teams.TeamInput.model_validate(operation.input)
        ).result()

    return services.steps.step(task, "quota", work, start=start, complete=ready,
                               summarize=summary)


@router.task("finish-team", OperationInput)
def finish_team(task: OperationInput, services: FeatureServices) -> dict[str, Any]:
    def output(operation: Operation) -> dict[str, Any]:
        work = teams.TeamInput.model_validate(operation.input)
        quota = teams.find_quota(services.client("sagemaker"), work.cluster_arn, work.team)
        return {"tag": work.tag, "team": teams.team_view(quota) if quota else None}

    return services.steps.finish(task, output)


@router.task("fail-team", FailInput)
def fail_team(task: FailInput, services: FeatureServices) -> dict[str, Any]:
    return fail_features(task, services)


@router.task("finish-features", OperationInput)
def finish_features(task: OperationInput, services: FeatureServices) -> dict[str, Any]:
    def output(operation: Operation) -> dict[str, Any]:
        features = FeaturesInput.model_validate(operation.input)
        snapshot = state.read(
            services.clients, features.tag, features.eks_name, features.hyperpod_name
        )
        return dict(state.views(snapshot))

    return services.steps.finish(task, output)


@router.task("fail-features", FailInput)
def fail_features(task: FailInput, services: FeatureServices) -> dict[str, Any]:
    return services.steps.fail_answer(task)
