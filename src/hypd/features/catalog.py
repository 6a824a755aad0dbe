"""The managed features as data: what each installs, needs, and is verified by.

From ../shared/docs/FEATURES-FACTS.md (sections 1-5 and the dependency graph); nothing here calls
AWS. The shared prerequisites are EKS add-ons of `hypd.create.addons.CATALOG` (which orders
them); `Feature.prerequisites` names the ones a feature needs besides the create's base add-ons.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from hypd.clusters.create_request import cluster_role_name
from hypd.clusters.feature_request import FEATURE_NAMES


class Trust(StrEnum):
    POD_IDENTITY = "pod-identity"
    """Trusted by pods.eks.amazonaws.com (EKS Pod Identity, an association per service account)."""
    IRSA = "irsa"
    """Trusted by the cluster's IAM OIDC provider for named service accounts (IRSA)."""


@dataclass(frozen=True)
class FeatureRole:
    key: str
    """Short, unique across features: the role's name is ``hypd-{tag}-{key}``."""
    short: str
    """For a long tag's hashed name (IAM allows 64 characters)."""
    trust: Trust
    managed_policies: tuple[str, ...] = ()
    """AWS managed policies (names under ``arn:{partition}:iam::aws:policy/``)."""
    service_accounts: tuple[str, ...] = ()
    """IRSA: the ``namespace:name`` patterns the trust allows (``*`` as in StringLike)."""
    also_trusted_service: str | None = None
    """A service principal the role also trusts (the inference roles: sagemaker.amazonaws.com)."""
    name_prefix: str = "hypd-"
    """The inference operator's add-on mode requires its execution role's name to start with
    ``SageMakerHyperPodInference``."""
    path: str = "/hypd/"
    """The inference execution role is at ``/``: AmazonSageMakerHyperPodInferenceAccess lets
    the operator pass ``role/SageMakerHyperPodInference*`` only (a path would not match)."""
    inline: str | None = None
    """The name of the role's one inline policy (`hypd.features.roles.inline_policy`), if any."""


@dataclass(frozen=True)
class PodIdentity:
    namespace: str
    service_account: str
    role: str
    """The `FeatureRole.key` it associates."""


@dataclass(frozen=True)
class Feature:
    name: str
    """The API name (``trainingOperator``)."""
    title: str
    addon: str | None
    """Its EKS add-on; None for tiered checkpointing (HyperPod's UpdateCluster)."""
    prerequisites: tuple[str, ...] = ()
    """Shared EKS add-ons it needs installed first (reference-counted)."""
    oidc: bool = False
    """Needs the cluster's IAM OIDC provider (IRSA)."""
    amp_workspace: bool = False
    tls_bucket: bool = False
    """Needs an S3 bucket for its TLS certificates (hypd makes one unless one is named)."""
    roles: tuple[FeatureRole, ...] = ()
    pod_identities: tuple[PodIdentity, ...] = ()
    crds: tuple[str, ...] = ()
    """CustomResourceDefinitions its controller serves (``plural.group``), checked by verify."""
    controller: tuple[str, str] | None = None
    """(namespace, Deployment) of its controller, Available when it is ready."""


TRAINING_OPERATOR = Feature(
    name="trainingOperator",
    title="training operator",
    addon="amazon-sagemaker-hyperpod-training-operator",
    prerequisites=("cert-manager", "eks-pod-identity-agent"),
    roles=(
        FeatureRole(
            "training-operator",
            "hpto",
            Trust.POD_IDENTITY,
            managed_policies=("AmazonSageMakerHyperPodTrainingOperatorAccess",),
        ),
    ),
    pod_identities=(
        PodIdentity("aws-hyperpod", "hp-training-operator-controller-manager", "training-operator"),
    ),
    crds=("hyperpodpytorchjobs.sagemaker.amazonaws.com",),
    controller=("aws-hyperpod", "hp-training-operator-controller-manager"),
)

INFERENCE_NAMESPACE = "hyperpod-inference-system"

INFERENCE_OPERATOR = Feature(
    name="inferenceOperator",
    title="inference operator",
    addon="amazon-sagemaker-hyperpod-inference",
    prerequisites=(
        "cert-manager",
        "aws-mountpoint-s3-csi-driver",
        "aws-fsx-csi-driver",
        "metrics-server",
    ),
    oidc=True,
    tls_bucket=True,
    roles=(
        FeatureRole(
            "inference",
            "hpio",
            Trust.IRSA,
            managed_policies=("AmazonSageMakerHyperPodInferenceAccess",),
            service_accounts=(f"{INFERENCE_NAMESPACE}:hyperpod-inference-controller-manager",),
            also_trusted_service="sagemaker.amazonaws.com",
            name_prefix="SageMakerHyperPodInference-hypd-",
            path="/",
            inline="hyperpod-inference-v3",
        ),
        FeatureRole(
            "inference-gated",
            "gated",
            Trust.IRSA,
            managed_policies=("AmazonSageMakerHyperPodGatedModelAccess",),
            service_accounts=("*:hyperpod-inference-service-account*",),
            also_trusted_service="sagemaker.amazonaws.com",
        ),
        FeatureRole(
            "inference-alb",
            "alb",
            Trust.IRSA,
            service_accounts=(f"{INFERENCE_NAMESPACE}:aws-load-balancer-controller",),
            inline="aws-load-balancer-controller",
        ),
        FeatureRole(
            "inference-keda",
            "keda",
            Trust.IRSA,
            service_accounts=(f"{INFERENCE_NAMESPACE}:keda-operator",),
            inline="keda-metrics",
        ),
    ),
    crds=(
        "inferenceendpointconfigs.inference.sagemaker.aws.amazon.com",
        "jumpstartmodels.inference.sagemaker.aws.amazon.com",
    ),
    controller=(INFERENCE_NAMESPACE, "hyperpod-inference-controller-manager"),
)

OBSERVABILITY = Feature(
    name="observability",
    title="observability",
    addon="amazon-sagemaker-hyperpod-observability",
    prerequisites=("eks-pod-identity-agent",),
    amp_workspace=True,
    roles=(
        FeatureRole("observability", "obs", Trust.POD_IDENTITY, inline="remote-write-and-logs"),
    ),
    pod_identities=(
        PodIdentity(
            "hyperpod-observability",
            "hyperpod-observability-operator-otel-collector",
            "observability",
        ),
    ),
    controller=("hyperpod-observability", "hyperpod-observability-operator"),
)

TASK_GOVERNANCE = Feature(
    name="taskGovernance",
    title="task governance",
    addon="amazon-sagemaker-hyperpod-taskgovernance",
    crds=("clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io"),
    controller=("kueue-system", "kueue-controller-manager"),
)

TIERED_CHECKPOINTING = Feature(
    name="tieredCheckpointing", title="tiered checkpointing", addon=None
)

FEATURES: Mapping[str, Feature] = {
    f.name: f
    for f in (
        TRAINING_OPERATOR,
        INFERENCE_OPERATOR,
        TIERED_CHECKPOINTING,
        OBSERVABILITY,
        TASK_GOVERNANCE,
    )
}
assert tuple(FEATURES) == FEATURE_NAMES

ADDON_FEATURES: Mapping[str, Feature] = {f.addon: f for f in FEATURES.values() if f.addon}
"""Feature by its add-on's name."""

SHARED_PREREQUISITES = tuple(
    dict.fromkeys(p for f in FEATURES.values() for p in f.prerequisites)
)
"""Every add-on some feature needs, in first-mention order."""

INSTALLED_BY_TAG = "hypd:installed-by"
"""Tag hypd puts on what it installs for a feature (add-ons, associations, the OIDC provider,
the AMP workspace, the TLS bucket): only what carries it is ever removed."""
INSTALLED_BY_FEATURES = "features"

TRAINING_OPERATOR_MIN_GOVERNANCE = (1, 3, 0)
"""With task governance installed, the training operator needs it at v1.3.0 or later."""


def role_of(key: str) -> FeatureRole:
    for feature in FEATURES.values():
        for role in feature.roles:
            if role.key == key:
                return role
    raise KeyError(key)


def role_name(tag: str, role: FeatureRole) -> str:
    """The name of cluster `tag`'s `role` (``hypd-{tag}-{key}``, hashed when long)."""
    return cluster_role_name(tag, role.key, role.short, prefix=role.name_prefix)


def role_arn(partition: str, account: str, tag: str, role: FeatureRole) -> str:
    return f"arn:{partition}:iam::{account}:role{role.path}{role_name(tag, role)}"


def workspace_alias(tag: str) -> str:
    """The alias of the AMP workspace observability makes for cluster `tag`."""
    return f"hypd-{tag}"
