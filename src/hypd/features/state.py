"""What a cluster's features really are: one snapshot read from AWS and Kubernetes, and the
views `GET /clusters/{tag}/features` answers (never what hypd last wrote; docs/features.md).

`read` makes the snapshot through `FeatureClients` (a boto3 client per service and the cluster's
Kubernetes API); `views` turns it into each feature's ``{enabled, status, version, ...settings,
requires, requiredBy}`` and the shared prerequisites' counts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hypd.aws import amp as amp_api
from hypd.aws import eks as eks_api
from hypd.aws import iam as iam_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.clusters.create_request import eks_cluster_name, hyperpod_cluster_name
from hypd.errors import PermanentError, TemporaryError
from hypd.features.catalog import (
    FEATURES,
    INSTALLED_BY_FEATURES,
    INSTALLED_BY_TAG,
    SHARED_PREREQUISITES,
    Feature,
    role_name,
    workspace_alias,
)
from hypd.features.tls_bucket import BucketFact, tls_bucket_name
from hypd.features.tls_bucket import read as read_tls_bucket
from hypd.kubernetes.apply import list_objects, not_ready, read_object

CSI_DRIVER_NAMES = {
    "aws-mountpoint-s3-csi-driver": "s3.csi.aws.com",
    "aws-fsx-csi-driver": "fsx.csi.aws.com",
}


@dataclass(frozen=True)
class FeatureClients:
    client: Callable[[str], Any]
    """A boto3 client per service name."""
    kubernetes: Callable[[str], Any]
    """The Kubernetes API client of an EKS cluster, by name."""


@dataclass(frozen=True)
class AddonFact:
    name: str
    status: str
    version: str | None
    tags: Mapping[str, str]
    configuration: Mapping[str, Any] | None
    issues: tuple[Mapping[str, Any], ...] = ()

    @property
    def ours(self) -> bool:
        return self.tags.get(INSTALLED_BY_TAG) == INSTALLED_BY_FEATURES

    @property
    def present(self) -> bool:
        return self.status != "DELETING"


@dataclass(frozen=True)
class AssociationFact:
    namespace: str
    service_account: str
    association_id: str
    role_arn: str | None
    tags: Mapping[str, str]


@dataclass(frozen=True)
class KubeFacts:
    reachable: bool
    crds: Mapping[str, str | None] = field(default_factory=dict)
    """CRD name -> why it is not served yet (None: Established); absent: not there."""
    deployments: Mapping[tuple[str, str], str | None] = field(default_factory=dict)
    """(namespace, name) -> why it is not available (None: available); absent: not there."""
    csi_drivers_in_use: frozenset[str] = frozenset()
    """CSI drivers some PersistentVolume uses (storage needs them)."""
    error: str | None = None


@dataclass(frozen=True)
class Snapshot:
    tag: str
    eks_name: str
    eks_arn: str
    partition: str
    region: str
    account: str
    """All three from the EKS cluster's ARN (where hypd runs)."""
    oidc_issuer: str | None
    hyperpod_name: str
    hyperpod_arn: str | None
    hyperpod_status: str | None
    tiered: Mapping[str, Any] | None
    addons: Mapping[str, AddonFact]
    associations: Mapping[tuple[str, str], AssociationFact]
    roles: Mapping[str, iam_api.Role | None]
    oidc: iam_api.OidcProvider | None
    workspace: Mapping[str, Any] | None
    scheduler: Mapping[str, Any] | None
    quotas: tuple[Mapping[str, Any], ...]
    kube: KubeFacts
    tls_bucket: BucketFact | None = None
    """The bucket of the name hypd gives the TLS bucket it makes (None: there is none)."""

    @property
    def hypd_tls_bucket(self) -> str:
        """The name of the TLS bucket hypd makes for the cluster when none is named."""
        return tls_bucket_name(self.tag, self.account, self.region)

    @property
    def tls_bucket_made(self) -> bool:
        """Is that bucket there, made by hypd for this cluster?"""
        return self.tls_bucket is not None and self.tls_bucket.made_for(self.tag)

    def addon(self, name: str | None) -> AddonFact | None:
        fact = self.addons.get(name or "")
        return fact if fact is not None and fact.present else None

    def enabled(self, feature: Feature) -> bool:
        if feature.addon is None:
            return str((self.tiered or {}).get("Mode")) == "Enable"
        return self.addon(feature.addon) is not None

    def enabled_features(self) -> list[Feature]:
        return [f for f in FEATURES.values() if self.enabled(f)]


# ---------------------------------------------------------------------------- read
def read(
    clients: FeatureClients, tag: str, eks_name: str | None = None,
    hyperpod_name: str | None = None,
) -> Snapshot:
    """The snapshot of cluster `tag`: its EKS and HyperPod clusters (by default those a create
    makes, ``hypd-{tag}``; a discovered cluster's record names its own)."""
    eks = clients.client("eks")
    eks_name = eks_name or eks_cluster_name(tag)
    hyperpod_name = hyperpod_name or hyperpod_cluster_name(tag)
    cluster = eks_api.read_cluster(eks, eks_name)
    addons = {}
    for name in eks_api.list_addon_names(eks, eks_name):
        raw = eks_api.find_addon(eks, eks_name, name)
        if raw is not None:
            addons[name] = _addon_fact(raw)
    associations = {}
    for summary in eks_api.list_pod_identity_associations(eks, eks_name):
        key = (str(summary["namespace"]), str(summary["serviceAccount"]))
        described = eks_api.describe_pod_identity_association(
            eks, eks_name, str(summary["associationId"])
        )
        if described is None:
            continue
        associations[key] = AssociationFact(
            key[0], key[1], str(summary["associationId"]), described.get("roleArn"),
            dict(described.get("tags") or {}),
        )
    iam = clients.client("iam")
    roles = {
        role.key: iam_api.get_role(iam, role_name(tag, role))
        for feature in FEATURES.values()
        for role in feature.roles
    }
    issuer = ((cluster.get("identity") or {}).get("oidc") or {}).get("issuer")
    _arn, partition, _service, region, account, _rest = str(cluster["arn"]).split(":", 5)
    oidc = (
        iam_api.get_oidc_provider(iam, iam_api.oidc_provider_arn(partition, account, issuer))
        if issuer
        else None
    )
    sagemaker = clients.client("sagemaker")
    hyperpod = sagemaker_api.find_cluster(sagemaker, hyperpod_name)
    hyperpod_arn = (hyperpod or {}).get("ClusterArn")
    scheduler = None
    quotas: tuple[Mapping[str, Any], ...] = ()
    if hyperpod_arn:
        configs = sagemaker_api.list_scheduler_configs(sagemaker, hyperpod_arn)
        if configs:
            scheduler = sagemaker_api.describe_scheduler_config(
                sagemaker, str(configs[0]["ClusterSchedulerConfigId"])
            )
        quotas = tuple(sagemaker_api.list_compute_quotas(sagemaker, hyperpod_arn))
    workspace = amp_api.find_workspace(clients.client("amp"), workspace_alias(tag))
    return Snapshot(
        tag=tag,
        eks_name=eks_name,
        eks_arn=str(cluster["arn"]),
        partition=partition,
        region=region,
        account=account,
        oidc_issuer=issuer,
        hyperpod_name=hyperpod_name,
        hyperpod_arn=hyperpod_arn,
        hyperpod_status=(hyperpod or {}).get("ClusterStatus"),
        tiered=(hyperpod or {}).get("TieredStorageConfig"),
        addons=addons,
        associations=associations,
        roles=roles,
        oidc=oidc,
        workspace=workspace,
        scheduler=scheduler,
        quotas=quotas,
        kube=read_kube(clients, eks_name),
        tls_bucket=read_tls_bucket(clients.client("s3"), tls_bucket_name(tag, account, region)),
    )


def _addon_fact(raw: Mapping[str, Any]) -> AddonFact:
    configuration = raw.get("configurationValues")
    parsed: Mapping[str, Any] | None = None
    if configuration:
        try:
            loaded = json.loads(configuration)
            parsed = loaded if isinstance(loaded, dict) else None
        except ValueError:
            parsed = None
    return AddonFact(
        name=str(raw["addonName"]),
        status=str(raw.get("status") or "UNKNOWN"),
        version=raw.get("addonVersion"),
        tags=dict(raw.get("tags") or {}),
        configuration=parsed,
        issues=tuple((raw.get("health") or {}).get("issues") or ()),
    )


def read_kube(clients: FeatureClients, eks_name: str) -> KubeFacts:
    """The features' CRDs and controllers as the cluster's API server has them."""
    try:
        api = clients.kubernetes(eks_name)
        crds: dict[str, str | None] = {}
        deployments: dict[tuple[str, str], str | None] = {}
        for feature in FEATURES.values():
            for name in feature.crds:
                obj = read_object(api, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
                if obj is not None:
                    crds[name] = not_ready(obj, "CustomResourceDefinition")
            if feature.controller:
                namespace, name = feature.controller
                obj = read_object(api, "apps/v1", "Deployment", name, namespace)
                if obj is not None:
                    deployments[(namespace, name)] = not_ready(obj, "Deployment")
        in_use = frozenset(
            str(((pv.get("spec") or {}).get("csi") or {}).get("driver"))
            for pv in list_objects(api, "v1", "PersistentVolume")
            if ((pv.get("spec") or {}).get("csi") or {}).get("driver")
        )
    except (TemporaryError, PermanentError) as exc:
        return KubeFacts(reachable=False, error=str(exc))
    return KubeFacts(True, crds, deployments, in_use)


# ---------------------------------------------------------------------------- views
def needed_prerequisites(snapshot: Snapshot, enabled: list[Feature]) -> dict[str, list[str]]:
    """Shared prerequisite -> what needs it: the `enabled` features, and ``storage`` for a CSI
    driver a PersistentVolume uses."""
    needs: dict[str, list[str]] = {}
    for feature in enabled:
        for name in feature.prerequisites:
            needs.setdefault(name, []).append(feature.name)
    for addon, driver in CSI_DRIVER_NAMES.items():
        if driver in snapshot.kube.csi_drivers_in_use:
            needs.setdefault(addon, []).append("storage")
    return needs


def feature_status(snapshot: Snapshot, feature: Feature) -> tuple[str, list[str]]:
    """(status, what is wrong) of an enabled-or-not feature, as the snapshot shows it."""
    if feature.addon is None:
        if not snapshot.enabled(feature):
            return "DISABLED", []
        if snapshot.hyperpod_status not in (None, "InService"):
            return "UPDATING", [f"HyperPod cluster is {snapshot.hyperpod_status}"]
        return "ACTIVE", []
    addon = snapshot.addon(feature.addon)
    if addon is None:
        deleting = feature.addon in snapshot.addons
        return ("DELETING" if deleting else "DISABLED"), []
    problems = [f"{i.get('code')}: {i.get('message')}" for i in addon.issues]
    if addon.status in ("CREATING", "UPDATING"):
        return addon.status, problems
    if addon.status.endswith("_FAILED"):
        return "FAILED", problems or [f"add-on {addon.name} is {addon.status}"]
    if addon.status == "DEGRADED":
        return "DEGRADED", problems
    problems += controller_problems(snapshot, feature)
    if feature.name == "taskGovernance" and snapshot.scheduler is not None:
        status = str(snapshot.scheduler.get("Status"))
        if status not in ("Created", "Updated"):
            reason = snapshot.scheduler.get("FailureReason")
            problems.append(f"scheduler config is {status}" + (f": {reason}" if reason else ""))
    return ("ACTIVE" if not problems else "DEGRADED"), problems


def controller_problems(snapshot: Snapshot, feature: Feature) -> list[str]:
    """What the cluster's API says is missing for an installed feature (CRDs, controller)."""
    kube = snapshot.kube
    if not kube.reachable:
        return [f"Kubernetes API not readable: {kube.error}"]
    problems = []
    for name in feature.crds:
        if name not in kube.crds:
            problems.append(f"CRD {name} is not served")
        elif kube.crds[name]:
            problems.append(f"CRD {name}: {kube.crds[name]}")
    if feature.controller:
        if feature.controller not in kube.deployments:
            problems.append(f"Deployment {'/'.join(feature.controller)} does not exist")
        elif kube.deployments[feature.controller]:
            problems.append(
                f"Deployment {'/'.join(feature.controller)}: {kube.deployments[feature.controller]}"
            )
    return problems


def settings_of(snapshot: Snapshot, feature: Feature) -> dict[str, Any]:
    """The feature's settings by API name, as they are (empty when it is off)."""
    if not snapshot.enabled(feature):
        return {}
    if feature.name == "tieredCheckpointing":
        percent = (snapshot.tiered or {}).get("InstanceMemoryAllocationPercentage")
        return {"memoryPercent": percent} if percent is not None else {}
    config = (snapshot.addon(feature.addon) or AddonFact("", "", None, {}, None)).configuration
    config = config or {}
    if feature.name == "inferenceOperator":
        bucket = config.get("tlsCertificateS3Bucket")
        return {"tlsCertificateBucket": bucket} if bucket else {}
    if feature.name == "observability":
        out: dict[str, Any] = {}
        providers = config.get("metricsProvider") or {}
        metrics = {
            api: providers[key]["level"]
            for api, key in OBSERVABILITY_PROVIDERS.items()
            if isinstance(providers.get(key), dict) and providers[key].get("level")
        }
        if metrics:
            out["metrics"] = metrics
        if "logging" in config:
            out["logging"] = bool((config.get("logging") or {}).get("enabled"))
        arn = (config.get("ampWorkspace") or {}).get("arn")
        if arn:
            out["ampWorkspaceArn"] = arn
        return out
    if feature.name == "taskGovernance" and snapshot.scheduler is not None:
        scheduler = snapshot.scheduler.get("SchedulerConfig") or {}
        out = {
            "priorityClasses": [
                {"name": c["Name"], "weight": c["Weight"]}
                for c in scheduler.get("PriorityClasses") or []
            ],
        }
        if scheduler.get("FairShare"):
            out["fairShare"] = scheduler["FairShare"] == "Enabled"
        if scheduler.get("IdleResourceSharing"):
            out["idleResourceSharing"] = scheduler["IdleResourceSharing"] == "Enabled"
        return out
    return {}


OBSERVABILITY_PROVIDERS = {
    "training": "trainingMetrics",
    "cluster": "customMetrics",
    "node": "nodeMetrics",
    "acceleratedCompute": "acceleratedComputeMetrics",
    "taskGovernance": "taskGovernanceMetrics",
    "scaling": "scalingMetrics",
    "network": "networkMetrics",
}
"""API name of a metric level -> the add-on's metricsProvider key."""


def views(snapshot: Snapshot) -> dict[str, Any]:
    """The body of ``GET /clusters/{tag}/features``."""
    enabled = snapshot.enabled_features()
    needs = needed_prerequisites(snapshot, enabled)
    features: dict[str, Any] = {}
    for feature in FEATURES.values():
        status, problems = feature_status(snapshot, feature)
        addon = snapshot.addon(feature.addon)
        requires = list(feature.prerequisites)
        if feature.oidc:
            requires.append("oidc-provider")
        if feature.amp_workspace:
            requires.append("amp-workspace")
        if feature.tls_bucket:
            requires.append("tls-bucket")
        view: dict[str, Any] = {
            "enabled": snapshot.enabled(feature),
            "status": status,
            **({"version": addon.version} if addon and addon.version else {}),
            **settings_of(snapshot, feature),
            "requires": requires,
            "requiredBy": (
                [f"team:{q.get('ComputeQuotaTarget', {}).get('TeamName') or q.get('Name')}"
                 for q in snapshot.quotas]
                if feature.name == "taskGovernance"
                else []
            ),
        }
        if problems:
            view["problems"] = problems
        features[feature.name] = view
    prerequisites = {}
    for name in SHARED_PREREQUISITES:
        fact = snapshot.addon(name)
        prerequisites[name] = {
            "installed": fact is not None,
            **({"status": fact.status, "version": fact.version} if fact else {}),
            "installedBy": ("hypd" if fact.ours else "other") if fact else None,
            "requiredBy": needs.get(name, []),
        }
    return {
        "tag": snapshot.tag,
        "features": features,
        "prerequisites": prerequisites,
        "kubernetesReadable": snapshot.kube.reachable,
    }
