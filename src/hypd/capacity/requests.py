"""The bodies of the capacity routes and their checks against the live cluster.

Pydantic checks what a body says by itself (400 with the field's location); the functions here
judge it against the cluster as AWS describes it now (`LiveCluster`): a name taken, a group or
node that does not exist, a create-time field a PATCH tries to change, the last group. Every
check runs before anything is recorded or started.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from hypd.catalog.instance_types import ZONE_NAME_PATTERN
from hypd.catalog.models import TrainingPlan, plan_available
from hypd.clusters.create_request import (
    INSTANCE_COUNT_MAX,
    INSTANCE_COUNT_MIN,
    LABELS_MAX,
    TAINTS_MAX,
    Capacity,
    DeepHealthCheck,
    InstanceGroupRequest,
    Taint,
    TrainingPlanCapacity,
    kubernetes_problems,
    raise_at,
)
from hypd.clusters.models import (
    Cluster,
    ClusterNotActive,
    ClusterSource,
    ClusterStatus,
    require_not_deleted,
)
from hypd.errors import ConflictError, ValidationError
from hypd.instance_groups.errors import ImmutableField
from hypd.instance_groups.fields import BY_NAME, create_time_only
from hypd.instance_groups.spec import kubernetes_config
from hypd.instance_groups.views import InstanceGroupView


class ClusterNotManaged(ConflictError):
    """Capacity operations act on clusters hypd created (its IAM scope is hypd-* resources)."""

    code = "ClusterNotManaged"


def check_managed(cluster: Cluster, *, active: bool = True) -> None:
    """A capacity operation needs a cluster hypd created that is ACTIVE (`active`; a read of
    its capacity only one hypd created).

    Raises:
        ClusterNotManaged: the cluster was discovered, not created by hypd.
        ClusterNotActive: its creation has not succeeded (CREATING or FAILED).
        ClusterDeleting, ClusterDeleted: it is being, or was, torn down.
    """
    if cluster.source is not ClusterSource.CREATED:
        raise ClusterNotManaged(
            f"cluster {cluster.tag} was discovered, not created by hypd: this deployment "
            "manages the capacity of the clusters it created (hypd-* resources) only",
            details={"tag": cluster.tag, "source": cluster.source.value},
        )
    if active:
        require_not_deleted(cluster)
    if active and cluster.status is not ClusterStatus.ACTIVE:
        status = cluster.status.value if cluster.status else "unknown"
        hint = (
            f"; resume its creation with POST /operations/{cluster.last_operation_id}/retry"
            if cluster.status is ClusterStatus.FAILED and cluster.last_operation_id
            else ""
        )
        raise ClusterNotActive(
            f"cluster {cluster.tag} is {status}; capacity can change once it is ACTIVE{hint}",
            details={"tag": cluster.tag, "status": status},
        )


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


# ---------------------------------------------------------------------------- add
class AddInstanceGroupRequest(InstanceGroupRequest):
    """The body of ``POST /clusters/{tag}/instance-groups``: an ``instanceGroups`` item of
    ``POST /clusters``, with an optional zone."""

    availability_zone: str | None = Field(
        default=None,
        alias="availabilityZone",
        pattern=ZONE_NAME_PATTERN,
        description=(
            "The zone of the group's nodes. Default: a training plan's zone for a plan group, "
            "else the cluster's zone. A plan group's zone must be the plan's."
            + create_time_only("availabilityZone")
        ),
    )


# ---------------------------------------------------------------------------- update (PATCH)
def _immutable(name: str) -> Any:
    field = BY_NAME[name]
    return Field(
        default=None,
        alias=name,
        description=f"{field.description}{create_time_only(name)} Restating the current value "
        "is allowed.",
    )


class UpdateInstanceGroupRequest(_Model):
    """The body of ``PATCH /clusters/{tag}/instance-groups/{name}``: only the fields sent are
    acted on. ``count``, ``minCount``, ``labels`` and ``taints`` are mutable; the create-time
    fields are accepted only to restate their current value (any other value is a 400
    ImmutableField that names the field and why)."""

    count: int | None = Field(
        default=None,
        ge=INSTANCE_COUNT_MIN,
        le=INSTANCE_COUNT_MAX,
        description="The group's new instance count (0-6758).",
    )
    min_count: int | None = Field(
        default=None,
        alias="minCount",
        ge=INSTANCE_COUNT_MIN,
        le=INSTANCE_COUNT_MAX,
        description=BY_NAME["minCount"].description,
    )
    labels: dict[str, str] | None = Field(
        default=None, max_length=LABELS_MAX, description=BY_NAME["labels"].description
    )
    taints: list[Taint] | None = Field(
        default=None, max_length=TAINTS_MAX, description=BY_NAME["taints"].description
    )
    name: str | None = _immutable("name")
    instance_type: str | None = _immutable("instanceType")
    capacity: Capacity | None = _immutable("capacity")
    deep_health_checks: list[DeepHealthCheck] | None = _immutable("deepHealthChecks")
    efa_only: StrictBool | None = _immutable("efaOnly")
    dedicated_subnet: StrictBool | None = _immutable("dedicatedSubnet")
    availability_zone: str | None = _immutable("availabilityZone")
    execution_role: str | None = _immutable("executionRole")
    threads_per_core: int | None = _immutable("threadsPerCore")

    @model_validator(mode="after")
    def _something_and_valid(self) -> Self:
        if not self.model_fields_set:
            raise ValueError("give at least one of count, minCount, labels, taints")
        raise_at(type(self).__name__, kubernetes_problems(self.labels or {}, self.taints or []))
        return self


def _restated(field: str, asked: Any, view: InstanceGroupView) -> bool:
    """Whether a create-time field's value is the group's current one (a null restates a
    value the group lacks: no deep health checks, no execution role; every group has a
    capacity, so a null capacity never restates it)."""
    if field == "capacity":
        current = view.capacity
        return bool(
            asked is not None
            and asked.type == current.type.value
            and (
                not isinstance(asked, TrainingPlanCapacity)
                or asked.training_plan_arn == current.training_plan_arn
            )
        )
    if field == "deepHealthChecks":
        return sorted(str(c) for c in asked or []) == sorted(view.deep_health_checks)
    current = getattr(view, _ATTRIBUTES[field])
    return bool(asked == current)


_ATTRIBUTES = {
    "name": "name",
    "instanceType": "instance_type",
    "efaOnly": "efa_only",
    "dedicatedSubnet": "dedicated_subnet",
    "availabilityZone": "availability_zone",
    "executionRole": "execution_role",
    "threadsPerCore": "threads_per_core",
}


def _current_value(field: str, view: InstanceGroupView) -> Any:
    if field == "capacity":
        return view.capacity.model_dump(mode="json", by_alias=True, exclude_none=True)
    if field == "deepHealthChecks":
        return view.deep_health_checks
    return getattr(view, _ATTRIBUTES[field])


class GroupUpdate(_Model):
    """What a PATCH changes: the spec members for the normaliser and the API fields asked."""

    changes: dict[str, Any]
    fields: dict[str, Any]


def plan_group_update(
    request: UpdateInstanceGroupRequest,
    view: InstanceGroupView,
    *,
    training_plan: TrainingPlan | None = None,
) -> GroupUpdate | None:
    """The change a PATCH asks of the group `view` describes; None when it matches the group.

    `training_plan`: the group's plan (for a count above the plan's free instances).

    Raises:
        ImmutableField: a create-time field with a value other than the group's.
        ValidationError: minCount above count; taints on a group with deep health checks; a
            count the training plan cannot give.
    """
    sent = request.model_dump(by_alias=True, exclude_unset=True)
    for name in sent:
        field = BY_NAME[name]
        if field.mutable:
            continue
        asked = getattr(request, _snake(name))
        if not _restated(name, asked, view):
            raise ImmutableField(
                f"{name} of instance group {view.name} cannot be changed: {field.reason} "
                f"(it is {_current_value(name, view)!r}); {field.instead}",
                details={
                    "field": name,
                    "instanceGroup": view.name,
                    "current": _current_value(name, view),
                },
            )
    changes: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    count = view.count if request.count is None else request.count
    if request.count is not None and request.count != view.count:
        changes["InstanceCount"] = request.count
        fields["count"] = request.count
    min_count = view.min_count if request.min_count is None else request.min_count
    if request.min_count is not None and request.min_count != view.min_count:
        changes["MinInstanceCount"] = request.min_count
        fields["minCount"] = request.min_count
    if min_count is not None and min_count > count:
        raise ValidationError(
            f"minCount ({min_count}) cannot exceed count ({count})",
            details={"field": "minCount" if request.min_count is not None else "count"},
        )
    labels = view.labels if request.labels is None else request.labels
    taints = view.taints if request.taints is None else request.taints
    if taints and view.deep_health_checks and request.taints is not None:
        raise ValidationError(
            f"taints are not allowed on instance group {view.name}: it has deep health checks "
            f"({', '.join(view.deep_health_checks)}), and HyperPod does not apply custom "
            "taints to such groups",
            details={"field": "taints", "instanceGroup": view.name},
        )
    if labels != view.labels or _taint_set(taints) != _taint_set(view.taints):
        changes["KubernetesConfig"] = kubernetes_config(labels, taints, keep_empty=True)
        if request.labels is not None and labels != view.labels:
            fields["labels"] = labels
        if request.taints is not None and _taint_set(taints) != _taint_set(view.taints):
            fields["taints"] = [t.model_dump(mode="json", exclude_none=True) for t in taints]
    if not changes:
        return None
    if training_plan is not None and "InstanceCount" in changes and count > view.count:
        _check_plan_room(training_plan, view, count)
    return GroupUpdate(changes=changes, fields=fields)


def _taint_set(taints: list[Taint]) -> set[tuple[str, str | None, str]]:
    return {(t.key, t.value, t.effect.value) for t in taints}


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _check_plan_room(plan: TrainingPlan, view: InstanceGroupView, count: int) -> None:
    available = plan_available(plan)
    if available is not None and count - view.count > available:
        raise ValidationError(
            f"count: training plan {plan.name} has {available} instances available; "
            f"instance group {view.name} has {view.count} and asks for {count}",
            details={"field": "count", "instanceGroup": view.name},
        )


# ---------------------------------------------------------------------------- autoscaling
DURATION_PATTERN = r"^(Never|([0-9]+(s|m|h))+)$"
"""A Karpenter duration (``30s``, ``5m``, ``1h30m``) or ``Never``."""

ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized"]
MAX_NODE_CLASS_GROUPS = 10
"""A HyperpodNodeClass lists at most 10 instance groups (HyperPod docs)."""


class AutoscalingRequest(_Model):
    """The body of ``PUT /clusters/{tag}/autoscaling``. Only the fields sent are acted on:
    omitted ones keep their current value (or the default on a first enable)."""

    enabled: StrictBool = Field(description="Managed Karpenter autoscaling on or off.")
    instance_groups: list[str] | None = Field(
        default=None,
        alias="instanceGroups",
        min_length=1,
        max_length=MAX_NODE_CLASS_GROUPS,
        description=(
            "The groups Karpenter scales (1-10; required to turn it on). Each must exist, use "
            "on-demand or spot capacity and have no deep health checks; Karpenter scales a "
            "group toward zero when it is idle."
        ),
    )
    consolidate_after: str | None = Field(
        default=None,
        alias="consolidateAfter",
        pattern=DURATION_PATTERN,
        description="How long a node stays idle before Karpenter removes it (default 5m).",
    )
    consolidation_policy: ConsolidationPolicy | None = Field(
        default=None,
        alias="consolidationPolicy",
        description="Which nodes Karpenter consolidates (default WhenEmptyOrUnderutilized).",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        problems: list[tuple[tuple[str | int, ...], str]] = []
        if not self.enabled:
            for name, value in (
                ("instanceGroups", self.instance_groups),
                ("consolidateAfter", self.consolidate_after),
                ("consolidationPolicy", self.consolidation_policy),
            ):
                if value is not None:
                    problems.append(((name,), "only with enabled: true"))
        seen: dict[str, int] = {}
        for index, name in enumerate(self.instance_groups or []):
            first = seen.setdefault(name, index)
            if first != index:
                problems.append((("instanceGroups", index), f"repeats instanceGroups[{first}]"))
        raise_at(type(self).__name__, problems)
        return self
