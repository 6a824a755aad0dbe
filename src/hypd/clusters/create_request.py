"""The body of ``POST /clusters``: the request models, what validation resolves them to, and
the names a created cluster's resources get.

The pydantic models check everything a request can be judged on by itself: name patterns and
lengths taken from botocore's SageMaker and EKS models, Kubernetes label and taint syntax, count
ranges, unique group names, exactly one storage kind, no taints with deep health checks. Their
errors carry the exact location (``instanceGroups[1].name``) like any pydantic error. The check
against what the account and Region offer (zones, offerings, instance-type facts, training
plans), which resolves a request into a :class:`ResolvedCreate`, is the create capability's:
`hypd.create.validate`; its problems become one 400 here (`Problem`, `catalog_error`).

The instance-group model is shared with the capacity routes of issue 6 (a group body there has the
shape of an ``instanceGroups`` item here). These are models: they import nothing above
`hypd.catalog`'s instance-type names and `hypd.errors`.

About 600 lines, kept whole: one request body, its botocore limits and its field descriptions
(most of the length), imported by name from here by the create and capacity code alike.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError
from pydantic.config import JsonDict
from pydantic_core import InitErrorDetails, PydanticCustomError

from hypd.catalog.instance_types import ZONE_NAME_PATTERN, hyperpod_instance_types
from hypd.clusters.feature_request import FeaturesRequest
from hypd.errors import ValidationError

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


ROLE_NAME_MAX = 64
"""IAM's limit on a role name."""


def cluster_role_name(tag: str, suffix: str, short: str, *, prefix: str = NAME_PREFIX) -> str:
    """The name of an IAM role hypd makes for cluster `tag`: ``{prefix}{tag}-{suffix}``, or, when
    that is longer than IAM allows, ``{prefix}{tag[:n]}-{hash}-{short}`` (a hash of the whole tag
    keeps the names of two long tags apart)."""
    name = f"{prefix}{tag}-{suffix}"
    if len(name) <= ROLE_NAME_MAX:
        return name
    digest = hashlib.sha256(tag.encode()).hexdigest()[:8]
    keep = ROLE_NAME_MAX - len(prefix) - len(digest) - len(short) - 2
    return f"{prefix}{tag[:keep]}-{digest}-{short}"


# ---------------------------------------------------------------------------- create-time fields
CREATE_TIME_ONLY: JsonDict = {"x-hypd-create-time-only": True}
"""The OpenAPI extension on a group field a PATCH cannot change."""

_CREATE_TIME_REASONS: Mapping[str, str] = {
    "name": "it names the group; a new name is a new group",
    "instanceType": "it is fixed at creation",
    "capacity": "it is fixed at creation",
    "deepHealthChecks": "it is fixed at creation (not documented as changeable by UpdateCluster)",
    "efaOnly": "it is fixed at creation",
    "dedicatedSubnet": "it is fixed at creation (not documented as changeable by UpdateCluster)",
}
"""Why a PATCH cannot change each create-time field of a group body: the reasons of the field
catalogue (`hypd.instance_groups.fields`, which has them from the normaliser), written out here
so that the models import nothing above them; a unit test holds the two to each other."""


def _create_time_only(name: str) -> str:
    """The description suffix of a create-time field (the catalogue's `create_time_only`)."""
    return f" Create-time only: a PATCH cannot change it ({_CREATE_TIME_REASONS[name]})."


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


def check_bucket_name(value: str) -> str:
    """`value` when S3 would take it as a new bucket's name, else a ValueError saying why."""
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
            "value). Unique within the cluster." + _create_time_only("name")
        ),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    instance_type: Annotated[str, AfterValidator(_check_instance_type)] = Field(
        alias="instanceType",
        description="A HyperPod ml.* type offered in the cluster's zone."
        + _create_time_only("instanceType"),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    count: int = Field(
        ge=INSTANCE_COUNT_MIN,
        le=INSTANCE_COUNT_MAX,
        description="Number of instances (0-6758, SageMaker's InstanceCount range).",
    )
    capacity: Capacity = Field(
        description="How the group's instances are paid for." + _create_time_only("capacity"),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    deep_health_checks: Annotated[list[DeepHealthCheck], AfterValidator(_unique)] = Field(
        default_factory=list,
        alias="deepHealthChecks",
        max_length=3,
        description=(
            "Deep health checks HyperPod runs when instances start (OnStartDeepHealthChecks). "
            "A group with deep health checks cannot have taints."
            + _create_time_only("deepHealthChecks")
        ),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    efa_only: StrictBool = Field(
        default=False,
        alias="efaOnly",
        description=(
            "EFA-only network interfaces; only for instance types with several network cards "
            "and EFA." + _create_time_only("efaOnly")
        ),
        json_schema_extra=CREATE_TIME_ONLY,
    )
    dedicated_subnet: StrictBool = Field(
        default=False,
        alias="dedicatedSubnet",
        description=(
            "Place the group in its own compute subnet (which outlives the group and is reused "
            "by a successor) instead of the shared per-zone one."
            + _create_time_only("dedicatedSubnet")
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
    bucket: Annotated[str, AfterValidator(check_bucket_name)] = Field(
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
    features: FeaturesRequest | None = Field(
        default=None,
        description="Managed features to turn on as the create's last stage (the body of "
        "PATCH /clusters/{tag}/features): e.g. {\"trainingOperator\": {\"enabled\": true}}.",
    )

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
    features: FeaturesRequest | None = None
    """Applied by the create's features stage (docs/features.md)."""

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


# ---------------------------------------------------------------------------- problems
@dataclass(frozen=True)
class Problem:
    """What is wrong with a request, at its field (``instanceGroups[1].count``)."""

    field: str
    message: str


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
