"""The body of ``POST /clusters`` and its validation against the catalogue (issue 4, item 2).

Two layers, both pure (no boto3 calls):

* The pydantic models check everything a request can be judged on by itself: name patterns and
  lengths taken from botocore's SageMaker and EKS models, Kubernetes label and taint syntax, count
  ranges, unique group names, exactly one storage kind, no taints with deep health checks. Their
  errors carry the exact location (``instanceGroups[1].name``) like any pydantic error.
* :func:`validate_against_catalog` checks the request against what the account and Region offer
  (zones, per-zone instance-type offerings, instance-type facts, training plans), collects every
  problem and raises one :class:`hypd.errors.ValidationError` naming each field; on success it
  returns a :class:`ResolvedCreate` whose zone is always set (taken from a training plan when the
  request gave none) and whose groups carry their resolved capacity.

The instance-group model is shared with the capacity routes of issue 6 (a group body there has the
shape of an ``instanceGroups`` item here).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from hypd.catalog.instance_types import ZONE_NAME_PATTERN, hyperpod_instance_types
from hypd.catalog.models import InstanceTypeFacts, TrainingPlan
from hypd.errors import ValidationError
from hypd.instance_groups.fields import CREATE_TIME_ONLY, create_time_only

# ---------------------------------------------------------------------------- limits (botocore)
NAME_PREFIX = "hypd-"
"""Both the EKS cluster and the HyperPod cluster of a tag are named ``hypd-{tag}``."""

HYPERPOD_CLUSTER_NAME_MAX = 63
"""sagemaker ``ClusterName``: 1-63, ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``."""
EKS_CLUSTER_NAME_MAX = 100
"""eks ``CreateClusterRequest.name``: 1-100, ``^[0-9A-Za-z][A-Za-z0-9\\-_]*``."""

TAG_MAX_LENGTH = min(HYPERPOD_CLUSTER_NAME_MAX, EKS_CLUSTER_NAME_MAX) - len(NAME_PREFIX)  # 58
# ``hypd-`` + tag must match SageMaker's ClusterName (letters, digits, hyphens; no leading or
# trailing hyphen; no underscore) and EKS's cluster name (a superset of it).
TAG_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$"

GROUP_NAME_MAX_LENGTH = 63
"""sagemaker ``ClusterInstanceGroupName`` (1-63) and a Kubernetes label value (<= 63)."""
# sagemaker ClusterInstanceGroupName ``[a-zA-Z0-9](-*[a-zA-Z0-9])*``; every such name is also a
# valid Kubernetes label value (``(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?``), which matters
# because HyperPod labels each node with its group's name.
GROUP_NAME_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$"

INSTANCE_COUNT_MIN = 0
INSTANCE_COUNT_MAX = 6758
"""sagemaker ``ClusterInstanceCount``: 0-6758."""
INSTANCE_GROUPS_MAX = 100
"""sagemaker ``ClusterInstanceGroupSpecifications``: 1-100."""
LABELS_MAX = 50
"""sagemaker ``ClusterKubernetesLabels``: at most 50."""
TAINTS_MAX = 50
"""sagemaker ``ClusterKubernetesTaints``: at most 50."""
KUBERNETES_VALUE_MAX = 63
"""sagemaker ``ClusterKubernetesLabelValue`` / ``ClusterKubernetesTaintValue``: 1-63."""
KUBERNETES_VALUE_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
TRAINING_PLAN_ARN_PATTERN = r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.+$"
"""sagemaker ``TrainingPlanArn``: 50-2048 characters."""
KUBERNETES_VERSION_PATTERN = r"^[0-9]+\.[0-9]+$"

HYPERPOD_KUBERNETES_VERSIONS: tuple[str, ...] = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33")
"""The EKS Kubernetes versions SageMaker HyperPod supports, oldest first: AWS's "Getting started
with Amazon EKS support in SageMaker HyperPod" (sagemaker-hyperpod-eks-prerequisites.html,
"Kubernetes version support"), English page as read on 2026-12-01 ("1.28, 1.29, 1.30, 1.31,
1.32, and 1.33"; a machine-translated copy already lists 1.34: re-check the English page and
extend this list when it does). The one place hypd keeps this list."""
DEFAULT_KUBERNETES_VERSION = HYPERPOD_KUBERNETES_VERSIONS[-1]
"""What a create without ``kubernetesVersion`` gets: the newest version HyperPod supports, not
EKS's own default, which can move past HyperPod's list."""

USABLE_TRAINING_PLAN_STATUSES = frozenset({"Active", "Scheduled"})

# Kubernetes qualified names (label and taint keys): an optional DNS-1123 subdomain prefix
# (<= 253) and "/", then a name of <= 63 characters.
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_KEY_PREFIX = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
_KEY_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_KUBERNETES_VALUE = re.compile(KUBERNETES_VALUE_PATTERN)
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IP_ADDRESS = re.compile(r"^\d+\.\d+\.\d+\.\d+$")


def eks_cluster_name(tag: str) -> str:
    """The EKS cluster a created cluster gets: ``hypd-{tag}``."""
    return f"{NAME_PREFIX}{tag}"


def hyperpod_cluster_name(tag: str) -> str:
    """The HyperPod cluster a created cluster gets: ``hypd-{tag}``."""
    return f"{NAME_PREFIX}{tag}"


# ---------------------------------------------------------------------------- helpers
def raise_at(title: str, problems: Sequence[tuple[tuple[str | int, ...], str]]) -> None:
    """Raise a pydantic error for each ``(location, message)``, relative to the model validated.

    Raised from a model validator, pydantic prefixes each location with the model's own, so a
    cross-field problem points at the exact field (``instanceGroups[1].name``), not the model.
    """
    if problems:
        raise PydanticValidationError.from_exception_data(
            title,
            [
                InitErrorDetails(
                    type=PydanticCustomError("invalid_request", message),
                    loc=loc,
                    input=None,
                )
                for loc, message in problems
            ],
        )


def _key_problem(key: str) -> str | None:
    """Why ``key`` is not a Kubernetes qualified name (label or taint key), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return f"{key!r}: the prefix before '/' is empty"
    if prefix and (len(prefix) > 253 or not _KEY_PREFIX.match(prefix)):
        return (
            f"{key!r}: the prefix {prefix!r} must be a DNS subdomain (lowercase letters, digits, "
            "'-' and '.', at most 253 characters)"
        )
    if not name or len(name) > 63 or not _KEY_NAME.match(name):
        return (
            f"{key!r}: the name part must be 1-63 letters, digits, '-', '_' or '.', starting "
            "and ending with a letter or digit"
        )
    return None


def _check_key(key: str) -> str:
    problem = _key_problem(key)
    if problem:
        raise ValueError(f"not a valid Kubernetes key: {problem}")
    return key


def _value_problem(value: str) -> str | None:
    if not value or len(value) > KUBERNETES_VALUE_MAX or not _KUBERNETES_VALUE.match(value):
        return (
            f"{value!r} is not a valid Kubernetes label value (1-63 letters, digits, '-', '_' "
            "or '.', starting and ending with a letter or digit)"
        )
    return None


def _check_instance_type(value: str) -> str:
    if value not in hyperpod_instance_types():
        raise ValueError(
            f"{value!r} is not a HyperPod instance type (see GET /catalog/instance-types)"
        )
    return value


def _check_bucket(value: str) -> str:
    if (
        not _BUCKET.match(value)
        or ".." in value
        or _IP_ADDRESS.match(value)
        or value.startswith(("xn--", "sthree-"))
        or value.endswith(("-s3alias", "--ol-s3"))
    ):
        raise ValueError(
            f"{value!r} is not a valid S3 bucket name (3-63 lowercase letters, digits, '.' "
            "and '-', starting and ending with a letter or digit)"
        )
    return value


def _unique(values: list[DeepHealthCheck]) -> list[DeepHealthCheck]:
    seen: set[DeepHealthCheck] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{value} is listed twice")
        seen.add(value)
    return values


# ---------------------------------------------------------------------------- request models
class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class DeepHealthCheck(StrEnum):
    """sagemaker ``DeepHealthCheckType`` (OnStartDeepHealthChecks)."""

    INSTANCE_STRESS = "InstanceStress"
    INSTANCE_CONNECTIVITY = "InstanceConnectivity"
    MULTI_NODE_TRAINING_VALIDATION = "MultiNodeTrainingValidation"


class TaintEffect(StrEnum):
    """sagemaker ``ClusterKubernetesTaintEffect``."""

    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class CapacityType(StrEnum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"
    TRAINING_PLAN = "training-plan"


class OnDemandCapacity(_Model):
    type: Literal["on-demand"] = Field(description="On-Demand instances.")


class SpotCapacity(_Model):
    type: Literal["spot"] = Field(description="Spot instances (may be interrupted).")


class TrainingPlanCapacity(_Model):
    type: Literal["training-plan"] = Field(
        description="Reserved capacity of a SageMaker training plan; the plan pins the zone."
    )
    training_plan_arn: str = Field(
        alias="trainingPlanArn",
        min_length=50,
        max_length=2048,
        pattern=TRAINING_PLAN_ARN_PATTERN,
        description="The plan's ARN (see GET /catalog/training-plans).",
    )


Capacity = Annotated[
    OnDemandCapacity | SpotCapacity | TrainingPlanCapacity, Field(discriminator="type")
]

KubernetesKey = Annotated[str, Field(min_length=1, max_length=317), AfterValidator(_check_key)]
KubernetesValue = Annotated[
    str, Field(min_length=1, max_length=KUBERNETES_VALUE_MAX, pattern=KUBERNETES_VALUE_PATTERN)
]


class Taint(_Model):
    key: KubernetesKey = Field(description="A Kubernetes qualified name, e.g. nvidia.com/gpu.")
    value: KubernetesValue | None = None
    effect: TaintEffect


class InstanceGroupRequest(_Model):
    """One instance group as a client asks for it (``POST /clusters``; issue 6's group body)."""

    name: str = Field(
        min_length=1,
        max_length=GROUP_NAME_MAX_LENGTH,
        pattern=GROUP_NAME_PATTERN,
        description=(
            "The group's name: 1-63 letters, digits and hyphens, starting and ending with a "
            "letter or digit (valid as a SageMaker InstanceGroupName and a Kubernetes label "
            "value). Unique within the cluster." + create_time_only("name")
        ),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    instance_type: Annotated[str, AfterValidator(_check_instance_type)] = Field(
        alias="instanceType",
        description="A HyperPod ml.* type offered in the cluster's zone."
        + create_time_only("instanceType"),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    count: int = Field(
        ge=INSTANCE_COUNT_MIN,
        le=INSTANCE_COUNT_MAX,
        description="Number of instances (0-6758, SageMaker's InstanceCount range).",
    )
    capacity: Capacity = Field(
        description="How the group's instances are paid for." + create_time_only("capacity"),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    deep_health_checks: Annotated[list[DeepHealthCheck], AfterValidator(_unique)] = Field(
        default_factory=list,
        alias="deepHealthChecks",
        max_length=3,
        description=(
            "Deep health checks HyperPod runs when instances start (OnStartDeepHealthChecks). "
            "A group with deep health checks cannot have taints."
            + create_time_only("deepHealthChecks")
        ),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    efa_only: bool = Field(
        default=False,
        alias="efaOnly",
        description=(
            "EFA-only network interfaces; only for instance types with several network cards "
            "and EFA." + create_time_only("efaOnly")
        ),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    dedicated_subnet: bool = Field(
        default=False,
        alias="dedicatedSubnet",
        description=(
            "Place the group in its own compute subnet (which outlives the group and is reused "
            "by a successor) instead of the shared per-zone one."
            + create_time_only("dedicatedSubnet")
        ),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        max_length=LABELS_MAX,
        description="Kubernetes labels for the group's nodes (at most 50).",
    )
    taints: list[Taint] = Field(
        default_factory=list,
        max_length=TAINTS_MAX,
        description=(
            "Kubernetes taints for the group's nodes (at most 50). Not allowed together with "
            "deepHealthChecks (a documented HyperPod restriction)."
        ),
    )

    @field_validator("taints")
    @classmethod
    def _no_taints_with_deep_health_checks(
        cls, taints: list[Taint], info: ValidationInfo
    ) -> list[Taint]:
        if taints and info.data.get("deep_health_checks"):
            raise ValueError(
                "taints are not allowed on a group with deepHealthChecks (HyperPod does not "
                "apply custom taints to groups with deep health checks); drop one of them"
            )
        return taints

    @model_validator(mode="after")
    def _kubernetes_config(self) -> Self:
        raise_at(type(self).__name__, kubernetes_problems(self.labels, self.taints))
        return self


def kubernetes_problems(
    labels: Mapping[str, str], taints: Sequence[Taint]
) -> list[tuple[tuple[str | int, ...], str]]:
    """What is wrong with a group's labels and taints, each at its location: label keys and
    values, and taints repeating a (key, effect) pair."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    for key, value in labels.items():
        problem = _key_problem(key)
        if problem:
            problems.append((("labels", key), f"not a valid label key: {problem}"))
        problem = _value_problem(value)
        if problem:
            problems.append((("labels", key), problem))
    seen: dict[tuple[str, TaintEffect], int] = {}
    for index, taint in enumerate(taints):
        first = seen.setdefault((taint.key, taint.effect), index)
        if first != index:
            problems.append(
                (
                    ("taints", index),
                    f"repeats taints[{first}] (key {taint.key!r}, effect {taint.effect})",
                )
            )
    return problems


class S3Storage(_Model):
    bucket: Annotated[str, AfterValidator(_check_bucket)] = Field(
        description="The bucket mounted through the Mountpoint for Amazon S3 CSI driver."
    )
    prefix: str | None = Field(
        default=None,
        min_length=2,
        max_length=1024,
        pattern=r"^[^/].*/$",
        description="Mount only this prefix of the bucket; must end with '/', e.g. 'data/'.",
    )


class FsxDeploymentType(StrEnum):
    """fsx ``LustreDeploymentType`` (SCRATCH_1 is legacy and not offered)."""

    SCRATCH_2 = "SCRATCH_2"
    PERSISTENT_1 = "PERSISTENT_1"
    PERSISTENT_2 = "PERSISTENT_2"


class FsxStorage(_Model):
    storage_capacity_gib: int = Field(
        alias="storageCapacityGiB",
        ge=1200,
        le=2_147_483_647,
        description="Lustre capacity in GiB: 1200 or a multiple of 2400.",
    )
    deployment_type: FsxDeploymentType | None = Field(
        default=None,
        alias="deploymentType",
        description="FSx for Lustre deployment type; omit for hypd's default.",
    )

    @field_validator("storage_capacity_gib")
    @classmethod
    def _lustre_increment(cls, value: int) -> int:
        if value != 1200 and value % 2400:
            raise ValueError("must be 1200 or a multiple of 2400 GiB")
        return value


class StorageRequest(_Model):
    """Exactly one of ``s3`` and ``fsx``."""

    s3: S3Storage | None = None
    fsx: FsxStorage | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.s3 is None) == (self.fsx is None):
            raise ValueError("give exactly one of s3 and fsx")
        return self


class CreateClusterRequest(_Model):
    """The body of ``POST /clusters``."""

    tag: str = Field(
        min_length=1,
        max_length=TAG_MAX_LENGTH,
        pattern=TAG_PATTERN,
        description=(
            "The cluster's tag: 1-58 letters, digits and hyphens, starting and ending with a "
            "letter or digit, so that the derived names hypd-{tag} are valid both as an EKS "
            "cluster name (<= 100) and as a HyperPod cluster name (<= 63, no underscores)."
        ),
    )
    availability_zone: str | None = Field(
        default=None,
        alias="availabilityZone",
        pattern=ZONE_NAME_PATTERN,
        description=(
            "The zone of the compute nodes, e.g. us-west-2c. Optional when a group uses a "
            "training plan: the plan's zone is taken."
        ),
    )
    kubernetes_version: str | None = Field(
        default=None,
        alias="kubernetesVersion",
        pattern=KUBERNETES_VERSION_PATTERN,
        description=(
            "The EKS Kubernetes version: one HyperPod supports ("
            + ", ".join(HYPERPOD_KUBERNETES_VERSIONS)
            + f"); omit for {DEFAULT_KUBERNETES_VERSION}, the newest of them (not EKS's own "
            "default, which can move past HyperPod's list)."
        ),
    )
    instance_groups: list[InstanceGroupRequest] = Field(
        alias="instanceGroups",
        min_length=1,
        max_length=INSTANCE_GROUPS_MAX,
        description="1-100 instance groups with unique names.",
    )
    storage: StorageRequest

    @field_validator("kubernetes_version")
    @classmethod
    def _hyperpod_supports_version(cls, value: str | None) -> str | None:
        if value is not None and value not in HYPERPOD_KUBERNETES_VERSIONS:
            raise ValueError(
                f"Kubernetes {value} is not supported by SageMaker HyperPod; supported: "
                f"{', '.join(HYPERPOD_KUBERNETES_VERSIONS)} (omit it for "
                f"{DEFAULT_KUBERNETES_VERSION})"
            )
        return value

    @model_validator(mode="after")
    def _unique_group_names(self) -> Self:
        first: dict[str, int] = {}
        problems: list[tuple[tuple[str | int, ...], str]] = []
        for index, group in enumerate(self.instance_groups):
            seen = first.setdefault(group.name, index)
            if seen != index:
                problems.append(
                    (
                        ("instanceGroups", index, "name"),
                        f"{group.name!r} is already the name of instanceGroups[{seen}]",
                    )
                )
        raise_at(type(self).__name__, problems)
        return self

    @property
    def eks_cluster_name(self) -> str:
        return eks_cluster_name(self.tag)

    @property
    def hyperpod_cluster_name(self) -> str:
        return hyperpod_cluster_name(self.tag)


# ---------------------------------------------------------------------------- resolved request
class ResolvedCapacity(_Model):
    """A group's capacity after validation: its type, zone and (for a plan) the plan's facts."""

    type: CapacityType
    availability_zone: str = Field(alias="availabilityZone")
    training_plan_arn: str | None = Field(default=None, alias="trainingPlanArn")
    training_plan_name: str | None = Field(default=None, alias="trainingPlanName")
    training_plan_status: str | None = Field(default=None, alias="trainingPlanStatus")


class ResolvedInstanceGroup(InstanceGroupRequest):
    resolved_capacity: ResolvedCapacity = Field(alias="resolvedCapacity")


class ResolvedCreate(_Model):
    """A create request checked against the catalogue: the zone is always known."""

    tag: str
    availability_zone: str = Field(alias="availabilityZone")
    availability_zone_source: Literal["request", "training-plan"] = Field(
        alias="availabilityZoneSource"
    )
    kubernetes_version: str = Field(default=None, validate_default=True, alias="kubernetesVersion")
    """Always set: the request's, else `DEFAULT_KUBERNETES_VERSION` (`_pinned_version`, the one
    place that defaults it), also for operations recorded before hypd pinned it, whose input
    has none."""
    instance_groups: list[ResolvedInstanceGroup] = Field(alias="instanceGroups")
    storage: StorageRequest

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _pinned_version(cls, value: Any) -> Any:
        # Also runs for a missing version (validate_default): None, from either, is the default.
        return DEFAULT_KUBERNETES_VERSION if value is None else value

    @property
    def eks_cluster_name(self) -> str:
        return eks_cluster_name(self.tag)

    @property
    def hyperpod_cluster_name(self) -> str:
        return hyperpod_cluster_name(self.tag)


# ---------------------------------------------------------------------------- catalogue checks
@dataclass(frozen=True)
class Problem:
    field: str
    message: str


def _group(index: int, name: str = "") -> str:
    return f"instanceGroups[{index}]" + (f".{name}" if name else "")


def _names(values: Iterable[str]) -> str:
    return ", ".join(sorted(values)) or "none"


def plan_available(plan: TrainingPlan) -> int | None:
    """The plan's instances free for new use (None when the plan does not say)."""
    if plan.available_instance_count is not None:
        return plan.available_instance_count
    if plan.total_instance_count is not None:
        return plan.total_instance_count - (plan.in_use_instance_count or 0)
    return None


def _plan_zones(plan: TrainingPlan, instance_type: str) -> set[str]:
    """The zones of the plan's reserved capacities for ``instance_type`` (all, if none match)."""
    zones = {
        rc.availability_zone
        for rc in plan.reserved_capacities
        if rc.availability_zone and rc.instance_type == instance_type
    }
    return zones or set(plan.availability_zones)


def _at(prefix: str, name: str) -> str:
    """A field of a group, relative to the body: ``instanceGroups[1].count`` or ``count``."""
    return f"{prefix}.{name}" if prefix else name


def _usable_plan(
    group: InstanceGroupRequest, prefix: str, training_plans: Mapping[str, TrainingPlan]
) -> tuple[TrainingPlan | None, list[Problem]]:
    """The group's training plan if it can be used (it exists and is Active or Scheduled),
    with the problems found (its instance type not being the plan's is one)."""
    assert isinstance(group.capacity, TrainingPlanCapacity)
    arn_field = _at(prefix, "capacity.trainingPlanArn")
    plan = training_plans.get(group.capacity.training_plan_arn)
    if plan is None:
        return None, [
            Problem(
                arn_field,
                f"no training plan {group.capacity.training_plan_arn} in this account and "
                "Region (see GET /catalog/training-plans)",
            )
        ]
    if plan.status not in USABLE_TRAINING_PLAN_STATUSES:
        return None, [
            Problem(
                arn_field,
                f"training plan {plan.name} is {plan.status}; only Active or Scheduled "
                "plans can be used",
            )
        ]
    problems: list[Problem] = []
    if group.instance_type not in plan.instance_types:
        problems.append(
            Problem(
                _at(prefix, "instanceType"),
                f"training plan {plan.name} reserves {_names(plan.instance_types)}, "
                f"not {group.instance_type}",
            )
        )
    return plan, problems


def _zone_mismatch(plan: TrainingPlan, plan_zones: set[str], prefix: str, zone: str) -> Problem:
    return Problem(
        _at(prefix, "capacity.trainingPlanArn"),
        f"training plan {plan.name} reserves capacity in {_names(plan_zones)}, "
        f"not in the request's availabilityZone {zone}",
    )


def _zone_choice_needed(plan: TrainingPlan, plan_zones: set[str], prefix: str) -> Problem:
    return Problem(
        _at(prefix, "capacity.trainingPlanArn"),
        f"training plan {plan.name} reserves capacity in {_names(plan_zones)}; "
        "give availabilityZone to choose one",
    )


def _count_problem(
    plan: TrainingPlan, prefix: str, count: int, wanted: int, shared: str = ""
) -> Problem | None:
    """Too many instances asked of the plan (`wanted`: by every group on it together)."""
    available = plan_available(plan)
    if available is None or wanted <= available:
        return None
    return Problem(
        _at(prefix, "count"),
        f"training plan {plan.name} has {available} instances available; this group asks "
        f"for {count}{shared}",
    )


def _offering_problem(
    group: InstanceGroupRequest,
    prefix: str,
    zone: str,
    known_zones: set[str],
    offerings: Mapping[str, set[str]],
) -> Problem | None:
    """A group not on a plan needs its type offered in its zone (a plan's capacity is checked
    against the plan instead)."""
    if isinstance(group.capacity, TrainingPlanCapacity) or zone in offerings.get(
        group.instance_type, set()
    ):
        return None
    offered = offerings.get(group.instance_type, set()) & known_zones
    where = (
        f"zones that offer it: {_names(offered)}" if offered else "no zone of this Region offers it"
    )
    return Problem(
        _at(prefix, "instanceType"), f"{group.instance_type} is not offered in {zone}; {where}"
    )


def _efa_problem(
    group: InstanceGroupRequest, prefix: str, facts: Mapping[str, InstanceTypeFacts]
) -> Problem | None:
    """EFA-only interfaces need several network cards and EFA."""
    if not group.efa_only:
        return None
    fact = facts.get(group.instance_type)
    cards = fact.maximum_network_cards if fact else None
    if fact is not None and fact.efa_supported and (cards or 0) >= 2:
        return None
    why = (
        "its network cards and EFA support are unknown"
        if fact is None
        else f"it has {cards or 1} network card(s) and "
        f"{'supports' if fact.efa_supported else 'does not support'} EFA"
    )
    return Problem(
        _at(prefix, "efaOnly"),
        f"EFA-only interfaces need an instance type with several network cards and EFA; "
        f"{group.instance_type}: {why}",
    )


def _unknown_zone(zone: str, known_zones: set[str]) -> Problem:
    return Problem(
        "availabilityZone",
        f"{zone} is not an available Availability Zone of this Region "
        f"(zones: {_names(known_zones)})",
    )


def validate_against_catalog(
    request: CreateClusterRequest,
    *,
    zones: Sequence[str],
    offerings: Mapping[str, set[str]],
    facts: Mapping[str, InstanceTypeFacts],
    training_plans: Mapping[str, TrainingPlan],
) -> ResolvedCreate:
    """Check ``request`` against the account's catalogue and resolve its zone and capacities.

    Args:
        zones: the names of the Region's available zones.
        offerings: per HyperPod ``ml.*`` type, the zones that offer it.
        facts: per ``ml.*`` type, EC2's facts about it (network cards, EFA).
        training_plans: the account's training plans by ARN.

    Raises:
        ValidationError: every problem found, together; ``details.errors`` lists each as
            ``{"field", "in": "body", "message"}`` and ``details.field`` names the first.
    """
    problems: list[Problem] = []
    known_zones = set(zones)
    zone = request.availability_zone
    zone_known = zone is None or zone in known_zones
    if zone is not None and not zone_known:
        problems.append(_unknown_zone(zone, known_zones))

    # Training plans: each usable plan pins its group to a zone.
    plans: dict[int, TrainingPlan] = {}
    for index, group in enumerate(request.instance_groups):
        if isinstance(group.capacity, TrainingPlanCapacity):
            plan, found = _usable_plan(group, _group(index), training_plans)
            problems += found
            if plan is not None:
                plans[index] = plan

    pinned: tuple[int, str] | None = None  # the first plan group and its zone
    for index, plan in plans.items():
        group = request.instance_groups[index]
        arn_field = _group(index, "capacity.trainingPlanArn")
        plan_zones = _plan_zones(plan, group.instance_type)
        if zone is not None:
            if zone_known and zone not in plan_zones:
                problems.append(_zone_mismatch(plan, plan_zones, _group(index), zone))
            continue
        if len(plan_zones) != 1:
            problems.append(_zone_choice_needed(plan, plan_zones, _group(index)))
            continue
        (plan_zone,) = plan_zones
        if pinned is None:
            pinned = (index, plan_zone)
            if plan_zone not in known_zones:
                problems.append(
                    Problem(
                        arn_field,
                        f"training plan {plan.name} is in {plan_zone}, which is not an "
                        f"available zone of this Region (zones: {_names(known_zones)})",
                    )
                )
        elif plan_zone != pinned[1]:
            problems.append(
                Problem(
                    arn_field,
                    f"training plan {plan.name} is in {plan_zone}, but the plan of "
                    f"instanceGroups[{pinned[0]}] is in {pinned[1]}; all groups of a cluster "
                    "share one zone",
                )
            )

    source: Literal["request", "training-plan"] = "request"
    if zone is None and pinned is not None:
        zone, source = pinned[1], "training-plan"
        zone_known = zone in known_zones
    elif zone is None and not any(
        isinstance(g.capacity, TrainingPlanCapacity) for g in request.instance_groups
    ):
        problems.append(
            Problem(
                "availabilityZone",
                "required unless a group uses a training plan (whose zone is then taken); "
                f"zones: {_names(known_zones)}",
            )
        )

    # Plan counts: the groups on one plan share its available instances.
    by_plan: dict[str, list[int]] = {}
    for index, plan in plans.items():
        by_plan.setdefault(plan.arn, []).append(index)
    for indices in by_plan.values():
        plan = plans[indices[0]]
        wanted = sum(request.instance_groups[i].count for i in indices)
        shared = (
            ""
            if len(indices) == 1
            else f" (groups {', '.join(_group(i) for i in indices)} ask for {wanted} together)"
        )
        for index in indices:
            count = request.instance_groups[index].count
            problem = _count_problem(plan, _group(index), count, wanted, shared)
            if problem is not None:
                problems.append(problem)

    # Offerings (plan groups are checked against their plan instead) and EFA-only.
    for index, group in enumerate(request.instance_groups):
        if zone is not None and zone_known:
            offering = _offering_problem(group, _group(index), zone, known_zones, offerings)
            if offering is not None:
                problems.append(offering)
        efa = _efa_problem(group, _group(index), facts)
        if efa is not None:
            problems.append(efa)

    if problems:
        raise catalog_error(problems)
    assert zone is not None  # every path without a zone added a problem
    return ResolvedCreate(
        tag=request.tag,
        availability_zone=zone,
        availability_zone_source=source,
        kubernetes_version=request.kubernetes_version,
        instance_groups=[
            resolve_group(group, zone, plans.get(index))
            for index, group in enumerate(request.instance_groups)
        ],
        storage=request.storage,
    )


def validate_group_against_catalog(
    group: InstanceGroupRequest,
    *,
    zone: str | None,
    default_zone: str,
    zones: Sequence[str],
    offerings: Mapping[str, set[str]],
    facts: Mapping[str, InstanceTypeFacts],
    training_plans: Mapping[str, TrainingPlan],
) -> ResolvedInstanceGroup:
    """Check one group added to an existing cluster and resolve its zone and capacity.

    The zone is reconciled with a training plan, not left to fail: with `zone` (the request's
    availabilityZone) a plan group's zone must be the plan's; without it a plan group takes the
    plan's zone, any other group `default_zone` (the cluster's). Field names are relative to
    the group body (``capacity.trainingPlanArn``).

    Raises:
        ValidationError: every problem found, as `validate_against_catalog` reports them.
    """
    problems: list[Problem] = []
    known_zones = set(zones)
    if zone is not None and zone not in known_zones:
        problems.append(_unknown_zone(zone, known_zones))
    plan: TrainingPlan | None = None
    resolved_zone: str | None = zone or default_zone
    if isinstance(group.capacity, TrainingPlanCapacity):
        plan, found = _usable_plan(group, "", training_plans)
        problems += found
        resolved_zone = zone
        if plan is not None:
            plan_zones = _plan_zones(plan, group.instance_type)
            if zone is not None and zone not in plan_zones:
                problems.append(_zone_mismatch(plan, plan_zones, "", zone))
            elif zone is None and len(plan_zones) != 1:
                problems.append(_zone_choice_needed(plan, plan_zones, ""))
            elif zone is None:
                (resolved_zone,) = plan_zones
                if resolved_zone not in known_zones:
                    problems.append(
                        Problem(
                            "capacity.trainingPlanArn",
                            f"training plan {plan.name} is in {resolved_zone}, which is not an "
                            f"available zone of this Region (zones: {_names(known_zones)})",
                        )
                    )
            count = _count_problem(plan, "", group.count, group.count)
            if count is not None:
                problems.append(count)
    if resolved_zone is not None and resolved_zone in known_zones:
        offering = _offering_problem(group, "", resolved_zone, known_zones, offerings)
        if offering is not None:
            problems.append(offering)
    efa = _efa_problem(group, "", facts)
    if efa is not None:
        problems.append(efa)
    if problems:
        raise catalog_error(problems)
    assert resolved_zone is not None
    return resolve_group(group, resolved_zone, plan)


def resolve_group(
    group: InstanceGroupRequest, zone: str, plan: TrainingPlan | None
) -> ResolvedInstanceGroup:
    """The group with its resolved capacity (its fields as the client sent them)."""
    fields = InstanceGroupRequest.model_fields
    return ResolvedInstanceGroup.model_validate(
        {
            **{k: v for k, v in group.model_dump().items() if k in fields},
            "resolved_capacity": _resolved_capacity(group, zone, plan),
        }
    )


def _resolved_capacity(
    group: InstanceGroupRequest, zone: str, plan: TrainingPlan | None
) -> ResolvedCapacity:
    if isinstance(group.capacity, TrainingPlanCapacity) and plan is not None:
        return ResolvedCapacity(
            type=CapacityType.TRAINING_PLAN,
            availability_zone=zone,
            training_plan_arn=plan.arn,
            training_plan_name=plan.name,
            training_plan_status=plan.status,
        )
    return ResolvedCapacity(type=CapacityType(group.capacity.type), availability_zone=zone)


def catalog_error(problems: Sequence[Problem]) -> ValidationError:
    """One ValidationError for ``problems``, shaped like the API's 400 for pydantic errors."""
    errors: list[dict[str, Any]] = [
        {"field": p.field, "in": "body", "message": p.message} for p in problems
    ]
    summary = "; ".join(f"{p.field}: {p.message}" for p in problems)
    return ValidationError(
        f"invalid request: {summary}",
        details={"field": problems[0].field, "errors": errors},
    )
