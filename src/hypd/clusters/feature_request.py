"""The managed features' request bodies: ``PATCH /clusters/{tag}/features``, the ``features``
object of ``POST /clusters`` (the same model), and ``PUT /clusters/{tag}/teams/{team}``.

Explicit diff (docs/features.md): every field is optional and None means *not sent*; only what
a request names is acted on. ``{"trainingOperator": {"enabled": true}}`` turns the training
operator on and leaves every other feature as it is; ``{"tieredCheckpointing":
{"memoryPercent": 30}}`` changes one setting of an enabled feature. Limits come from botocore's
SageMaker model (TieredStorageConfig, SchedulerConfig, ComputeQuota) and the add-ons' documented
settings (../shared/docs/FEATURES-FACTS.md). These are models: they import nothing of hypd.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

FEATURE_NAMES = (
    "trainingOperator",
    "inferenceOperator",
    "tieredCheckpointing",
    "observability",
    "taskGovernance",
)
"""The features, by their API names, in the order they are reported."""

TEAM_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}?$"
"""botocore's ComputeQuotaTarget.TeamName."""
PRIORITY_CLASS_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}?$"
"""botocore's PriorityClass.Name."""
TLS_BUCKET_PATTERN = r"^hyperpod-tls[a-z0-9.-]{0,50}[a-z0-9]$"
"""AmazonSageMakerHyperPodInferenceAccess lets the operator use buckets named hyperpod-tls*."""


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class _Feature(_Model):
    enabled: StrictBool | None = Field(
        default=None,
        description="Turn the feature on (true) or off (false); omit to keep it as it is and "
        "change only the settings sent.",
    )

    def sent_settings(self) -> dict[str, object]:
        """The settings this request names (by API name), without `enabled`; a field sent as
        null counts as not sent (clients that fill every field with null change nothing)."""
        return {
            k: v
            for k, v in self.model_dump(
                mode="json", by_alias=True, exclude_unset=True, exclude_none=True
            ).items()
            if k != "enabled"
        }


class TrainingOperatorRequest(_Feature):
    """The HyperPod training operator (EKS add-on amazon-sagemaker-hyperpod-training-operator):
    installs cert-manager and the pod identity agent first, and a pod identity for its
    controller with AmazonSageMakerHyperPodTrainingOperatorAccess."""


class InferenceOperatorRequest(_Feature):
    """The HyperPod inference operator (EKS add-on amazon-sagemaker-hyperpod-inference): needs
    cert-manager, both CSI drivers, metrics-server, the cluster's IAM OIDC provider, four IRSA
    roles and an S3 bucket for its TLS certificates (hypd makes one unless one is named), all
    installed first."""

    tls_certificate_bucket: str | None = Field(
        default=None,
        alias="tlsCertificateBucket",
        pattern=TLS_BUCKET_PATTERN,
        description="The S3 bucket of this account the operator writes endpoints' TLS "
        "certificates to, used as it is and never deleted by hypd. Its name must start with "
        "hyperpod-tls: the operator's AWS managed policy (AmazonSageMakerHyperPodInferenceAccess) "
        "allows only such buckets. Omit it for the one hypd makes for the cluster, "
        "hyperpod-tls-{tag}-{digest} (the tag lower-cased, cut to 37 characters; digest: the "
        "first 12 hex digits of the SHA-256 of {account}/{region}/{tag}): private, encrypted, "
        "tagged hypd:tag, and deleted, emptied first, when the inference operator is turned "
        "off or the cluster deleted.",
    )


class TieredCheckpointingRequest(_Feature):
    """Managed tiered checkpointing: HyperPod's TieredStorageConfig (UpdateCluster)."""

    memory_percent: int | None = Field(
        default=None,
        alias="memoryPercent",
        ge=0,
        le=100,
        description="InstanceMemoryAllocationPercentage: the share of each instance's CPU memory "
        "for the checkpoint tier (0-100); omit for HyperPod's default.",
    )


class MetricLevel(StrEnum):
    DISABLED = "DISABLED"
    BASIC = "BASIC"
    ADVANCED = "ADVANCED"


class ObservabilityMetrics(_Model):
    """The add-on's metricsProvider levels. training, cluster, node and acceleratedCompute take
    BASIC or ADVANCED; taskGovernance, scaling and network take DISABLED or ADVANCED."""

    training: MetricLevel | None = None
    cluster: MetricLevel | None = None
    node: MetricLevel | None = None
    accelerated_compute: MetricLevel | None = Field(default=None, alias="acceleratedCompute")
    task_governance: MetricLevel | None = Field(default=None, alias="taskGovernance")
    scaling: MetricLevel | None = None
    network: MetricLevel | None = None

    @model_validator(mode="after")
    def _allowed_levels(self) -> Self:
        basic = {"training", "cluster", "node", "acceleratedCompute"}
        for name, value in self.model_dump(by_alias=True, exclude_none=True).items():
            allowed = (
                {MetricLevel.BASIC, MetricLevel.ADVANCED}
                if name in basic
                else {MetricLevel.DISABLED, MetricLevel.ADVANCED}
            )
            if value not in allowed:
                raise ValueError(
                    f"{name} takes " + " or ".join(sorted(a.value for a in allowed))
                )
        return self


class ObservabilityRequest(_Feature):
    """HyperPod observability (EKS add-on amazon-sagemaker-hyperpod-observability): an Amazon
    Managed Prometheus workspace, a pod identity for its collector, then the add-on."""

    metrics: ObservabilityMetrics | None = None
    logging: StrictBool | None = Field(
        default=None, description="Ship container logs to CloudWatch."
    )
    amp_workspace_arn: str | None = Field(
        default=None,
        alias="ampWorkspaceArn",
        pattern=r"^arn:aws[a-z-]*:aps:[a-z0-9-]+:\d{12}:workspace/ws-[a-zA-Z0-9-]+$",
        description="Use this Amazon Managed Prometheus workspace; omit for one hypd makes "
        "(and removes when observability is turned off).",
    )


class PriorityClass(_Model):
    name: str = Field(min_length=1, max_length=40, pattern=PRIORITY_CLASS_PATTERN)
    weight: int = Field(ge=0, le=100)


class TaskGovernanceRequest(_Feature):
    """HyperPod task governance (EKS add-on amazon-sagemaker-hyperpod-taskgovernance, Kueue)
    and the cluster's scheduler config (priority classes, fair share)."""

    priority_classes: list[PriorityClass] | None = Field(
        default=None, alias="priorityClasses", max_length=17
    )
    fair_share: StrictBool | None = Field(default=None, alias="fairShare")
    idle_resource_sharing: StrictBool | None = Field(default=None, alias="idleResourceSharing")

    @model_validator(mode="after")
    def _unique_classes(self) -> Self:
        names = [c.name for c in self.priority_classes or []]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"priorityClasses lists {', '.join(twice)} more than once")
        return self


class FeaturesRequest(_Model):
    """Any subset of the features; a feature not named is left exactly as it is."""

    training_operator: TrainingOperatorRequest | None = Field(
        default=None, alias="trainingOperator"
    )
    inference_operator: InferenceOperatorRequest | None = Field(
        default=None, alias="inferenceOperator"
    )
    tiered_checkpointing: TieredCheckpointingRequest | None = Field(
        default=None, alias="tieredCheckpointing"
    )
    observability: ObservabilityRequest | None = None
    task_governance: TaskGovernanceRequest | None = Field(default=None, alias="taskGovernance")

    def named(self) -> dict[str, _Feature]:
        """The features this request names, by API name."""
        out: dict[str, _Feature] = {}
        for name in FEATURE_NAMES:
            value = getattr(self, _ATTRIBUTES[name])
            if value is not None:
                out[name] = value
        return out


_ATTRIBUTES = {
    "trainingOperator": "training_operator",
    "inferenceOperator": "inference_operator",
    "tieredCheckpointing": "tiered_checkpointing",
    "observability": "observability",
    "taskGovernance": "task_governance",
}


# ---------------------------------------------------------------------------- teams
class SharingStrategy(StrEnum):
    LEND = "Lend"
    DONT_LEND = "DontLend"
    LEND_AND_BORROW = "LendAndBorrow"


class QuotaResource(_Model):
    instance_type: str = Field(alias="instanceType", pattern=r"^ml\.[a-z0-9]+\.[a-z0-9]+$")
    count: int = Field(ge=0, le=10000)


class TeamSharing(_Model):
    strategy: SharingStrategy = SharingStrategy.LEND_AND_BORROW
    borrow_limit: int | None = Field(
        default=None, alias="borrowLimit", ge=1, le=10000,
        description="How much of the team's quota it may borrow, in percent (LendAndBorrow).",
    )

    @model_validator(mode="after")
    def _borrowing(self) -> Self:
        if self.borrow_limit is not None and self.strategy is not SharingStrategy.LEND_AND_BORROW:
            raise ValueError("borrowLimit applies only to the LendAndBorrow strategy")
        return self


class PreemptTeamTasks(StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"


class TeamRequest(_Model):
    """The body of ``PUT /clusters/{tag}/teams/{team}``: the team's compute quota."""

    resources: list[QuotaResource] = Field(min_length=1, max_length=15)
    fair_share_weight: int | None = Field(default=None, alias="fairShareWeight", ge=0, le=100)
    sharing: TeamSharing = Field(default_factory=TeamSharing)
    preempt_team_tasks: PreemptTeamTasks = Field(
        default=PreemptTeamTasks.LOWER_PRIORITY, alias="preemptTeamTasks"
    )
    active: StrictBool = Field(
        default=True, description="ActivationState Enabled (true) or Disabled."
    )

    @model_validator(mode="after")
    def _unique_types(self) -> Self:
        types = [r.instance_type for r in self.resources]
        twice = sorted({t for t in types if types.count(t) > 1})
        if twice:
            raise ValueError(f"resources lists {', '.join(twice)} more than once")
        return self


class FeaturesInput(_Model):
    """A set-features operation's input: the cluster and the request as sent."""

    tag: str
    request: FeaturesRequest
    eks_name: str | None = Field(default=None, alias="eksName")
    hyperpod_name: str | None = Field(default=None, alias="hyperPodName")
