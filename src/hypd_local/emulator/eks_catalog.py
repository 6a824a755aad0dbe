"""Data for the EKS emulator: Kubernetes versions, the add-on catalogue, the access policies.

Everything here is data a test or the demo can replace (``AddonCatalog(...)``). The add-on
names, owners, types and prerequisites follow the AWS documentation (../shared/docs/AWS-FACTS.md);
the version strings are realistic in shape (``v1.19.6-eksbuild.7``) but invented: they are not a
copy of any Region's answer to DescribeAddonVersions. The SageMaker HyperPod add-ons' versions
that matter to their traps are the documented ones (../shared/docs/FEATURES-FACTS.md): the
training operator's v1.2.1-eksbuild.1 (the default, which needs no IAM permissions and refuses
pod identity associations on CreateAddon) and v1.2.0 / v1.1.0 (which need them), cert-manager's
v1.18.2-eksbuild.2 (the default, refusing pod identity too), task governance's
v1.3.0-eksbuild.1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hypd_local.emulator import eks_schemas

KUBERNETES_VERSIONS: tuple[str, ...] = ("1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
"""Kubernetes versions the emulated EKS accepts (oldest first)."""

DEFAULT_KUBERNETES_VERSION = "1.33"
"""What CreateCluster uses when ``version`` is omitted ("the default version", not the latest)."""

PLATFORM_VERSIONS: Mapping[str, str] = {
    "1.29": "eks.40",
    "1.30": "eks.35",
    "1.31": "eks.31",
    "1.32": "eks.18",
    "1.33": "eks.11",
    "1.34": "eks.4",
}


@dataclass(frozen=True)
class VersionSupport:
    """When a Kubernetes minor version came to EKS and when its standard and extended support
    end (DescribeClusterVersions' dates)."""

    release: datetime
    end_of_standard_support: datetime
    end_of_extended_support: datetime


def _day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


VERSION_SUPPORT: Mapping[str, VersionSupport] = {
    version: VersionSupport(_day(release), _day(standard), _day(extended))
    for version, release, standard, extended in (
        ("1.29", "2024-01-23", "2025-03-23", "2026-03-23"),
        ("1.30", "2024-05-23", "2025-07-23", "2026-07-23"),
        ("1.31", "2024-09-26", "2025-11-26", "2026-11-26"),
        ("1.32", "2025-01-25", "2026-03-23", "2027-03-23"),
        ("1.33", "2025-05-28", "2026-07-29", "2027-07-29"),
        ("1.34", "2025-10-06", "2026-12-02", "2027-12-02"),
    )
}
"""EKS's published release calendar (the user guide's "Understand the Kubernetes version
lifecycle on EKS": 14 months of standard support, then 12 of extended; the dates as
endoflife.date/amazon-eks lists them from that page)."""


@dataclass(frozen=True)
class ServerRelease:
    """The Kubernetes release a version's current platform version runs (what the cluster's
    ``/version`` and its nodes' kubelets report)."""

    patch: str  # "1.33.5"
    go_version: str
    build_date: str  # RFC 3339


SERVER_RELEASES: Mapping[str, ServerRelease] = {
    "1.29": ServerRelease("1.29.15", "go1.23.12", "2025-08-20T17:46:11Z"),
    "1.30": ServerRelease("1.30.14", "go1.24.6", "2025-08-20T17:48:42Z"),
    "1.31": ServerRelease("1.31.12", "go1.24.6", "2025-08-21T09:12:05Z"),
    "1.32": ServerRelease("1.32.8", "go1.24.6", "2025-08-21T09:15:37Z"),
    "1.33": ServerRelease("1.33.4", "go1.24.6", "2025-08-21T09:20:58Z"),
    "1.34": ServerRelease("1.34.1", "go1.24.6", "2025-09-12T22:03:19Z"),
}
"""Realistic in shape, invented (as the platform versions are)."""


@dataclass(frozen=True)
class AddonVersion:
    """One version of an add-on and the Kubernetes versions it runs on."""

    version: str
    kubernetes_versions: tuple[str, ...]
    default_for: tuple[str, ...] = ()
    """Kubernetes versions for which this is the version CreateAddon installs by default."""
    architectures: tuple[str, ...] = ("amd64", "arm64")
    compute_types: tuple[str, ...] = ("ec2",)
    requires_configuration: bool = False
    requires_iam_permissions: bool = False
    pod_identity: bool = True
    """Whether CreateAddon and UpdateAddon take ``podIdentityAssociations`` for this version
    (when its add-on has a `AddonSpec.pod_identity` configuration at all)."""


@dataclass(frozen=True)
class PodIdentityConfig:
    """A service account of an add-on that pod identity associations may name, and the AWS
    managed policies EKS recommends for its role (DescribeAddonConfiguration's
    ``podIdentityConfiguration``)."""

    service_account: str
    recommended_managed_policies: tuple[str, ...] = ()
    """Policy paths below ``arn:<partition>:iam::aws:policy/``."""


@dataclass(frozen=True)
class AddonSpec:
    """An add-on of the catalogue (the AddonInfo shape of DescribeAddonVersions)."""

    name: str
    type: str
    publisher: str
    owner: str
    default_namespace: str
    versions: tuple[AddonVersion, ...]
    """Newest first, as DescribeAddonVersions lists them."""
    prerequisites: tuple[str, ...] = ()
    """Add-ons that must be installed (and past CREATING) for this one to be healthy."""
    failing_prerequisites: tuple[tuple[str, str], ...] = ()
    """(prerequisite, the health issue's message): without it installed when its creation
    ends, this add-on is CREATE_FAILED (the inference operator checks the CSI drivers)."""
    pod_identity: tuple[PodIdentityConfig, ...] = ()
    """The service accounts pod identity associations of the add-on may name (none: the add-on
    takes no pod identity associations)."""
    configuration_schema: str = eks_schemas.NO_CONFIGURATION
    """DescribeAddonConfiguration's ``configurationSchema`` (a JSON document)."""

    def takes_pod_identity(self, version: str) -> bool:
        """Whether ``podIdentityAssociations`` are accepted for add-on version ``version``."""
        return bool(self.pod_identity) and any(
            v.version == version and v.pod_identity for v in self.versions)


@dataclass(frozen=True)
class AccessPolicy:
    """An AWS-managed EKS access policy and the Kubernetes role it grants (None: EKS-internal)."""

    name: str
    kubernetes_role: str | None

    def arn(self, partition: str) -> str:
        """Its ARN in `partition`: EKS's access policies are AWS's (account `aws`), one set
        per partition (`arn:aws-cn:eks::aws:cluster-access-policy/...` in China)."""
        return access_policy_arn(partition, self.name)


def access_policy_arn(partition: str, name: str) -> str:
    """The ARN of the EKS access policy `name` in `partition`."""
    return f"arn:{partition}:eks::aws:cluster-access-policy/{name}"


ACCESS_POLICIES: tuple[AccessPolicy, ...] = (
    AccessPolicy("AmazonEKSAdminPolicy", "admin"),
    AccessPolicy("AmazonEKSAdminViewPolicy", "view"),
    AccessPolicy("AmazonEKSAutoNodePolicy", None),
    AccessPolicy("AmazonEKSBlockStorageClusterPolicy", None),
    AccessPolicy("AmazonEKSBlockStoragePolicy", None),
    AccessPolicy("AmazonEKSClusterAdminPolicy", "cluster-admin"),
    AccessPolicy("AmazonEKSComputeClusterPolicy", None),
    AccessPolicy("AmazonEKSComputePolicy", None),
    AccessPolicy("AmazonEKSEditPolicy", "edit"),
    AccessPolicy("AmazonEKSHybridPolicy", None),
    AccessPolicy("AmazonEKSLoadBalancingClusterPolicy", None),
    AccessPolicy("AmazonEKSLoadBalancingPolicy", None),
    AccessPolicy("AmazonEKSNetworkingClusterPolicy", None),
    AccessPolicy("AmazonEKSNetworkingPolicy", None),
    AccessPolicy("AmazonEKSViewPolicy", "view"),
    AccessPolicy("AmazonSagemakerHyperpodClusterPolicy", None),
    AccessPolicy("AmazonSagemakerHyperpodControllerPolicy", None),
    AccessPolicy("AmazonSagemakerHyperpodSystemNamespacePolicy", None),
)
"""ListAccessPolicies' answer (alphabetical). AdminView maps to ``view`` as an approximation."""

CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


def _all(*versions: str) -> tuple[str, ...]:
    return versions or KUBERNETES_VERSIONS


def _simple(
    newest_first: Iterable[str], *, iam: bool = False, k8s: tuple[str, ...] = KUBERNETES_VERSIONS,
    configuration: bool = False, no_pod_identity: Iterable[str] = (),
    no_iam: Iterable[str] = (),
) -> tuple[AddonVersion, ...]:
    """Versions all compatible with ``k8s``; the newest is the default everywhere. Those of
    ``no_pod_identity`` refuse pod identity associations, those of ``no_iam`` require no IAM
    permissions (when ``iam`` says the others do)."""
    listed = list(newest_first)
    refusing, without_iam = set(no_pod_identity), set(no_iam)
    return tuple(
        AddonVersion(
            version,
            k8s,
            default_for=k8s if index == 0 else (),
            requires_configuration=configuration,
            requires_iam_permissions=iam and version not in without_iam,
            pod_identity=version not in refusing,
        )
        for index, version in enumerate(listed)
    )


def _per_minor(template: str, builds: int = 2) -> tuple[AddonVersion, ...]:
    """One version line per Kubernetes minor (kube-proxy style: v1.31.x for 1.31)."""
    out: list[AddonVersion] = []
    for k8s in reversed(KUBERNETES_VERSIONS):
        for build in range(builds, 0, -1):
            out.append(
                AddonVersion(
                    template.format(k8s=k8s, build=build),
                    (k8s,),
                    default_for=(k8s,) if build == builds else (),
                )
            )
    return tuple(out)


def _coredns() -> tuple[AddonVersion, ...]:
    lines = {
        "1.29": "v1.11.1", "1.30": "v1.11.3", "1.31": "v1.11.3",
        "1.32": "v1.11.4", "1.33": "v1.12.1", "1.34": "v1.12.3",
    }
    by_version: dict[str, list[str]] = {}
    for k8s, line in lines.items():
        by_version.setdefault(line, []).append(k8s)
    out: list[AddonVersion] = []
    for line in sorted(by_version, reverse=True):
        k8s_versions = tuple(by_version[line])
        out.append(AddonVersion(f"{line}-eksbuild.3", k8s_versions, default_for=k8s_versions))
        out.append(AddonVersion(f"{line}-eksbuild.1", k8s_versions))
    return tuple(out)


@dataclass
class AddonCatalog:
    """The add-ons and versions the emulated EKS offers (replaceable: pass your own)."""

    addons: tuple[AddonSpec, ...]
    kubernetes_versions: tuple[str, ...] = KUBERNETES_VERSIONS
    default_kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    platform_versions: Mapping[str, str] = field(default_factory=lambda: dict(PLATFORM_VERSIONS))
    version_support: Mapping[str, VersionSupport] = field(
        default_factory=lambda: dict(VERSION_SUPPORT))

    def get(self, name: str) -> AddonSpec | None:
        for spec in self.addons:
            if spec.name == name:
                return spec
        return None

    def versions_for(self, name: str, kubernetes_version: str) -> list[AddonVersion]:
        spec = self.get(name)
        if spec is None:
            return []
        return [v for v in spec.versions if kubernetes_version in v.kubernetes_versions]

    def default_version(self, name: str, kubernetes_version: str) -> str | None:
        versions = self.versions_for(name, kubernetes_version)
        for version in versions:
            if kubernetes_version in version.default_for:
                return version.version
        return versions[0].version if versions else None

    def platform_version(self, kubernetes_version: str) -> str:
        return self.platform_versions.get(kubernetes_version, "eks.1")

    def next_version(self, kubernetes_version: str) -> str | None:
        """The next minor version (1.33 -> 1.34) when the catalogue has it, else None."""
        major, _, minor = kubernetes_version.partition(".")
        if not minor.isdigit():
            return None
        candidate = f"{major}.{int(minor) + 1}"
        return candidate if candidate in self.kubernetes_versions else None

    @classmethod
    def default(cls) -> AddonCatalog:
        aws, community = "aws", "community"
        hyperpod_k8s = _all("1.30", "1.31", "1.32", "1.33", "1.34")
        return cls(
            addons=(
                AddonSpec("vpc-cni", "networking", "eks", aws, "kube-system",
                          _simple(["v1.20.4-eksbuild.1", "v1.19.6-eksbuild.7",
                                   "v1.18.6-eksbuild.3"], iam=True),
                          pod_identity=(PodIdentityConfig("aws-node", ("AmazonEKS_CNI_Policy",)),)),
                AddonSpec("coredns", "networking", "eks", aws, "kube-system", _coredns()),
                AddonSpec("kube-proxy", "networking", "eks", aws, "kube-system",
                          _per_minor("v{k8s}.0-eksbuild.{build}")),
                AddonSpec("eks-pod-identity-agent", "security", "eks", aws, "kube-system",
                          _simple(["v1.3.8-eksbuild.2", "v1.3.4-eksbuild.1"])),
                AddonSpec("aws-ebs-csi-driver", "storage", "eks", aws, "kube-system",
                          _simple(["v1.48.0-eksbuild.1", "v1.45.0-eksbuild.2"], iam=True),
                          pod_identity=(PodIdentityConfig(
                              "ebs-csi-controller-sa",
                              ("service-role/AmazonEBSCSIDriverPolicy",)),)),
                AddonSpec("aws-mountpoint-s3-csi-driver", "storage", "eks", aws, "kube-system",
                          _simple(["v2.0.0-eksbuild.1", "v1.15.0-eksbuild.1"], iam=True),
                          pod_identity=(PodIdentityConfig("s3-csi-driver-sa"),)),
                AddonSpec("aws-fsx-csi-driver", "storage", "eks", aws, "kube-system",
                          _simple(["v1.6.0-eksbuild.1", "v1.5.0-eksbuild.1"], iam=True),
                          pod_identity=(PodIdentityConfig("fsx-csi-controller-sa",
                                                          ("AmazonFSxFullAccess",)),)),
                AddonSpec("metrics-server", "observability", "eks", community, "kube-system",
                          _simple(["v0.8.0-eksbuild.2", "v0.7.2-eksbuild.4"])),
                AddonSpec("cert-manager", "security", "eks", community, "cert-manager",
                          _simple(["v1.18.2-eksbuild.2", "v1.17.2-eksbuild.1"],
                                  no_pod_identity=["v1.18.2-eksbuild.2"]),
                          pod_identity=(PodIdentityConfig("cert-manager"),)),
                AddonSpec("amazon-sagemaker-hyperpod-training-operator", "machine-learning",
                          "eks", aws, "aws-hyperpod",
                          _simple(["v1.2.1-eksbuild.1", "v1.2.0-eksbuild.1", "v1.1.0-eksbuild.1"],
                                  iam=True, k8s=hyperpod_k8s,
                                  no_pod_identity=["v1.2.1-eksbuild.1"],
                                  no_iam=["v1.2.1-eksbuild.1"]),
                          prerequisites=("cert-manager", "eks-pod-identity-agent"),
                          pod_identity=(PodIdentityConfig(
                              "hp-training-operator-controller-manager",
                              ("AmazonSageMakerHyperPodTrainingOperatorAccess",)),)),
                AddonSpec("amazon-sagemaker-hyperpod-inference", "machine-learning", "eks", aws,
                          "hyperpod-inference-system",
                          _simple(["v1.0.0-eksbuild.1"], iam=True, k8s=hyperpod_k8s,
                                  configuration=True),
                          prerequisites=("aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver",
                                         "metrics-server", "cert-manager"),
                          failing_prerequisites=(
                              ("aws-mountpoint-s3-csi-driver",
                               "S3 CSI driver not installed (missing CSIDriver s3.csi.aws.com)"),
                              ("aws-fsx-csi-driver",
                               "FSx CSI driver not installed (missing CSIDriver fsx.csi.aws.com)"),
                          ),
                          configuration_schema=eks_schemas.INFERENCE),
                AddonSpec("amazon-sagemaker-hyperpod-observability", "observability", "eks", aws,
                          "hyperpod-observability",
                          _simple(["v1.0.0-eksbuild.1"], iam=True, k8s=hyperpod_k8s),
                          prerequisites=("eks-pod-identity-agent",),
                          pod_identity=(PodIdentityConfig(
                              "hyperpod-observability-operator-otel-collector"),),
                          configuration_schema=eks_schemas.OBSERVABILITY),
                AddonSpec("amazon-sagemaker-hyperpod-taskgovernance", "machine-learning", "eks",
                          aws, "kueue-system",
                          _simple(["v1.3.0-eksbuild.1", "v1.1.0-eksbuild.1", "v1.0.0-eksbuild.1"],
                                  k8s=hyperpod_k8s)),
            )
        )
