"""The create pipeline's EKS add-ons: what to install, in which order, and how far it got.

EKS add-ons are always installed through the EKS API (never through the dependency chart), in
dependency order. `plan_addons` picks the add-ons; `advance_addons` is one idempotent step of the
installation: it looks at every planned add-on (DescribeAddon), creates each missing one whose
prerequisites are settled, and reports where each stands. The state machine calls it, waits
(`next_check_seconds`, or the more precise `AddonProgress.next_check_seconds`), and calls it
again until `AddonProgress.done`.

The plan (a DAG; each add-on starts as soon as its prerequisites are settled, so the five of a
cluster take three rounds of about a minute):

| add-on | after | why |
|---|---|---|
| vpc-cni | | pod networking: nodes are not Ready without a CNI |
| kube-proxy | | Service routing (the ``kubernetes`` Service the others' pods call) |
| coredns | vpc-cni, kube-proxy | a Deployment whose pods need pod IPs and Service routing |
| eks-pod-identity-agent | vpc-cni | hands AWS credentials to pods that have a pod identity |
| storage CSI driver | eks-pod-identity-agent, coredns | credentials from a pod identity; DNS |

The CSI driver is aws-mountpoint-s3-csi-driver for S3 storage and aws-fsx-csi-driver for FSx for
Lustre; each gets a ``podIdentityAssociations`` entry for its service account with its own role
(`advance_addons`' ``pod_identity_roles``, by add-on name: the deployment's S3CsiDriverRole and
FsxCsiDriverRole), never another add-on's.

cert-manager and metrics-server are *not* in the create plan. Neither the HyperPod cluster nor
the dependency chart needs them (the HyperPod chart ships its cert-manager subchart disabled);
they are prerequisites of managed features only: the training operator add-on needs cert-manager
and the pod identity agent, the inference operator needs both CSI drivers, metrics-server and
cert-manager (AWS documentation; the emulator's catalogue encodes the same). Those features ask
for them through ``plan_addons(storage, extras=[feature add-on])``, which adds the prerequisites
the catalogue below names, transitively.

Add-ons on a cluster without nodes. The dependencies stage runs before HyperPod has added any
node, so add-ons whose workloads are Deployments (coredns, the CSI controllers) cannot reach their
replica count and EKS reports them DEGRADED with the single health issue
``InsufficientNumberOfReplicas``. While `awaiting_nodes` is true (the create pipeline) that is
the expected state: the add-on is installed and counts as settled (status ``AWAITING_NODES`` in
the progress); the verify stage, after nodes joined, checks real health. Any other health issue,
CREATE_FAILED, UPDATE_FAILED or DELETE_FAILED raises `AddonFailed` naming the add-on and its
issues.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from hypd import clock
from hypd.aws import eks as eks_api
from hypd.create.control_plane import read_eks_cluster
from hypd.errors import PermanentError
from hypd.operations.waits import WaitPolicy

StorageKind = Literal["s3", "fsx"]

AWAITING_NODES = "AWAITING_NODES"
"""Progress status of an add-on that is DEGRADED only for lack of nodes (see module doc)."""
MISSING = "MISSING"
"""Progress status of a planned add-on that does not exist (yet)."""
NODE_ISSUES = frozenset({"InsufficientNumberOfReplicas"})
FAILED_STATUSES = frozenset({"CREATE_FAILED", "UPDATE_FAILED", "DELETE_FAILED"})


class AddonFailed(PermanentError):
    """An add-on failed to install or is unhealthy for a reason nodes joining will not fix."""

    code = "AddonFailed"


class AddonsTimedOut(PermanentError):
    """Planned add-ons are still not installed when the wait is overdue (`ADDON_WAIT`): the
    stage fails; a retry of the operation waits for them again."""

    code = "AddonsTimedOut"


class AddonUnavailable(PermanentError):
    """EKS offers no version of a planned add-on for the cluster's Kubernetes version."""

    code = "AddonUnavailable"


@dataclass(frozen=True)
class AddonSpec:
    name: str
    prerequisites: tuple[str, ...] = ()
    service_account: str | None = None
    """The Kubernetes service account a pod identity association is made for, if any."""


CATALOG: Mapping[str, AddonSpec] = {
    spec.name: spec
    for spec in (
        AddonSpec("vpc-cni"),
        AddonSpec("kube-proxy"),
        AddonSpec("coredns", ("vpc-cni", "kube-proxy")),
        AddonSpec("eks-pod-identity-agent", ("vpc-cni",)),
        AddonSpec(
            "aws-mountpoint-s3-csi-driver",
            ("eks-pod-identity-agent", "coredns"),
            service_account="s3-csi-driver-sa",
        ),
        AddonSpec(
            "aws-fsx-csi-driver",
            ("eks-pod-identity-agent", "coredns"),
            service_account="fsx-csi-controller-sa",
        ),
        AddonSpec("cert-manager", ("coredns",)),
        AddonSpec("metrics-server", ("coredns",)),
        AddonSpec(
            "amazon-sagemaker-hyperpod-training-operator",
            ("cert-manager", "eks-pod-identity-agent"),
        ),
        AddonSpec(
            "amazon-sagemaker-hyperpod-inference",
            (
                "aws-mountpoint-s3-csi-driver",
                "aws-fsx-csi-driver",
                "metrics-server",
                "cert-manager",
            ),
        ),
        AddonSpec("amazon-sagemaker-hyperpod-observability", ("eks-pod-identity-agent",)),
        AddonSpec("amazon-sagemaker-hyperpod-taskgovernance", ("coredns",)),
    )
}
"""Every add-on hypd knows, with the add-ons it must come after."""

BASE_ADDONS = ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent")
CSI_DRIVERS: Mapping[str, str] = {"s3": "aws-mountpoint-s3-csi-driver", "fsx": "aws-fsx-csi-driver"}


def plan_addons(storage_kind: str | None, *, extras: Iterable[str] = ()) -> list[AddonSpec]:
    """The add-ons of a new cluster with `storage_kind` storage (``s3`` or ``fsx``; None: no
    storage driver), plus `extras` and everything they need, in a dependency order (each after
    its prerequisites)."""
    if storage_kind is not None and storage_kind not in CSI_DRIVERS:
        raise ValueError(f"unknown storage kind {storage_kind!r} (expected s3 or fsx)")
    storage = [CSI_DRIVERS[storage_kind]] if storage_kind else []
    wanted = [*BASE_ADDONS, *storage, *extras]
    ordered: list[AddonSpec] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if any(spec.name == name for spec in ordered):
            return
        spec = CATALOG.get(name)
        if spec is None:
            raise ValueError(f"unknown add-on {name!r}")
        if name in visiting:
            raise ValueError(f"add-on prerequisites form a cycle through {name!r}")
        visiting.add(name)
        for prerequisite in spec.prerequisites:
            visit(prerequisite)
        visiting.discard(name)
        ordered.append(spec)

    for name in wanted:
        visit(name)
    return ordered


# ---------------------------------------------------------------------------- wait policy
ADDON_EXPECTED_SECONDS = 60
"""An EKS add-on takes about a minute from CreateAddon to ACTIVE."""

ADDON_WAIT = WaitPolicy(
    expected_seconds=ADDON_EXPECTED_SECONDS,
    first_look_seconds=ADDON_EXPECTED_SECONDS,
    interval_seconds=15,
    late_after_seconds=10 * 60,
    late_interval_seconds=30,
    give_up_after_seconds=30 * 60,
)


def next_check_seconds(elapsed_seconds: float) -> int:
    """Seconds until the next look, `elapsed_seconds` after the latest add-on creation (or,
    coarser, after the stage started)."""
    return ADDON_WAIT.next_check(elapsed_seconds)


def check_overdue(progress: AddonProgress, waited_seconds: float) -> None:
    """Give up on add-ons not settled after `ADDON_WAIT`'s give-up time.

    Raises:
        AddonsTimedOut: some planned add-on is not settled and `waited_seconds` are overdue.
    """
    if progress.done or not ADDON_WAIT.overdue(waited_seconds):
        return
    waiting = progress.unsettled
    raise AddonsTimedOut(
        f"after {int(waited_seconds)} s the add-ons "
        + _named(waiting)
        + f" are still not installed (each takes about {ADDON_EXPECTED_SECONDS} s; hypd waits "
        f"{ADDON_WAIT.give_up_after_seconds // 60} minutes); retry the operation to wait for "
        "them again",
        details={"addons": waiting, "waitedSeconds": int(waited_seconds)},
    )


# ---------------------------------------------------------------------------- progress
@dataclass(frozen=True)
class AddonStatus:
    name: str
    status: str
    """EKS's status, `MISSING`, or `AWAITING_NODES`."""
    version: str | None = None
    created_at: datetime | None = None
    issues: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)

    @property
    def settled(self) -> bool:
        """Installed far enough for the add-ons that come after it."""
        return self.status in ("ACTIVE", AWAITING_NODES)


@dataclass(frozen=True)
class AddonProgress:
    addons: tuple[AddonStatus, ...]
    created: tuple[str, ...]
    """Add-ons this call created, in creation order."""
    next_check_seconds: int
    """When to look again: timed from the newest add-on still being created."""

    @property
    def done(self) -> bool:
        return all(addon.settled for addon in self.addons)

    @property
    def statuses(self) -> dict[str, str]:
        return {addon.name: addon.status for addon in self.addons}

    @property
    def unsettled(self) -> dict[str, str]:
        """Each add-on not settled yet, with its status (`MISSING`: not created yet)."""
        return {addon.name: addon.status for addon in self.addons if not addon.settled}

    @property
    def waiting(self) -> str | None:
        """What a look waits for, in words (None once every add-on is settled)."""
        if self.done:
            return None
        return "add-ons not ACTIVE yet: " + _named(self.unsettled)

    @property
    def awaiting_nodes(self) -> list[str]:
        return [addon.name for addon in self.addons if addon.status == AWAITING_NODES]

    def summary(self) -> dict[str, Any]:
        """JSON-able: for task outputs and the stage record."""
        return {
            "done": self.done,
            "addons": [
                {"name": a.name, "status": a.status, "version": a.version} for a in self.addons
            ],
            "created": list(self.created),
            "awaitingNodes": self.awaiting_nodes,
            "nextCheckSeconds": 0 if self.done else self.next_check_seconds,
        }


def _named(statuses: Mapping[str, str]) -> str:
    """``coredns (CREATING), kube-proxy (not created yet)``."""
    return ", ".join(
        f"{name} ({'not created yet' if status == MISSING else status})"
        for name, status in statuses.items()
    )


def _issues_text(issues: Sequence[Mapping[str, Any]]) -> str:
    return (
        "; ".join(
            f"{issue.get('code', 'Unknown')}: {issue.get('message', '')}".strip()
            for issue in issues
        )
        or "no health issues reported"
    )


def status_of(name: str, addon: Mapping[str, Any] | None, *, awaiting_nodes: bool) -> AddonStatus:
    """One add-on's progress from DescribeAddon's ``addon`` (None: not installed); raises
    `AddonFailed` for a failed or unhealthy add-on."""
    if addon is None:
        return AddonStatus(name, MISSING)
    status = str(addon.get("status") or "UNKNOWN")
    issues = tuple((addon.get("health") or {}).get("issues") or ())
    created = addon.get("createdAt")
    result = AddonStatus(
        name,
        status,
        addon.get("addonVersion"),
        created if isinstance(created, datetime) else None,
        issues,
    )
    failed = status in FAILED_STATUSES
    if status == "DEGRADED" and issues:
        if awaiting_nodes and {str(i.get("code")) for i in issues} <= NODE_ISSUES:
            return AddonStatus(name, AWAITING_NODES, result.version, result.created_at, issues)
        failed = True
    if failed:
        codes = sorted({str(i.get("code")) for i in issues if i.get("code")})
        raise AddonFailed(
            f"add-on {name} is {status}: {_issues_text(issues)}",
            details={
                "addonName": name,
                "status": status,
                "healthIssues": [dict(i) for i in issues],
                "awsErrorCode": codes[0] if codes else status,
            },
        )
    return result


def create_addon_params(
    spec: AddonSpec,
    *,
    cluster_name: str,
    version: str,
    pod_identity_role_arn: str | None,
    client_token: str | None,
    tags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The CreateAddon request hypd sends for `spec` (pure)."""
    params: dict[str, Any] = {
        "clusterName": cluster_name,
        "addonName": spec.name,
        "addonVersion": version,
        "resolveConflicts": "OVERWRITE",
    }
    if tags:
        params["tags"] = dict(tags)
    if client_token:
        params["clientRequestToken"] = f"{client_token}-{spec.name}"
    if spec.service_account and pod_identity_role_arn:
        params["podIdentityAssociations"] = [
            {"serviceAccount": spec.service_account, "roleArn": pod_identity_role_arn}
        ]
    return params


def advance_addons(
    eks: Any,
    cluster_name: str,
    plan: Sequence[AddonSpec],
    *,
    version_for: str | None = None,
    pod_identity_roles: Mapping[str, str] | None = None,
    client_token: str | None = None,
    awaiting_nodes: bool = True,
    now: datetime | None = None,
    tags: Mapping[str, str] | None = None,
) -> AddonProgress:
    """One step of installing `plan` on `cluster_name` (see the module docstring).

    `version_for` is the Kubernetes version whose default add-on versions are installed
    (DescribeAddonVersions); None reads it from the cluster. `pod_identity_roles` maps an
    add-on's name to the role its service account's pod identity association gets (an add-on
    with a service account but no role gets no association). `client_token` prefixes each
    CreateAddon's token (``{client_token}-{addon}``); `tags` go on each add-on it creates.
    Raises `AddonFailed`, `AddonUnavailable`.
    """
    roles = pod_identity_roles or {}
    names = {spec.name for spec in plan}
    for spec in plan:
        outside = [p for p in spec.prerequisites if p not in names]
        if outside:
            raise ValueError(f"plan lists {spec.name} without its prerequisites {outside}")
    statuses = {
        spec.name: status_of(
            spec.name,
            eks_api.find_addon(eks, cluster_name, spec.name),
            awaiting_nodes=awaiting_nodes,
        )
        for spec in plan
    }
    kubernetes_version = version_for
    created: list[str] = []
    for spec in plan:  # in plan order: dependency order
        if statuses[spec.name].status != MISSING:
            continue
        if not all(statuses[p].settled for p in spec.prerequisites):
            continue
        if kubernetes_version is None:
            kubernetes_version = read_eks_cluster(eks, cluster_name).version
            if kubernetes_version is None:
                raise AddonUnavailable(f"EKS cluster {cluster_name} reports no Kubernetes version")
        version = eks_api.default_addon_version(eks, spec.name, kubernetes_version)
        if version is None:
            raise AddonUnavailable(
                f"EKS offers no version of add-on {spec.name} for Kubernetes {kubernetes_version}",
                details={"addonName": spec.name, "kubernetesVersion": kubernetes_version},
            )
        params = create_addon_params(
            spec,
            cluster_name=cluster_name,
            version=version,
            pod_identity_role_arn=roles.get(spec.name),
            client_token=client_token,
            tags=tags,
        )
        addon = eks_api.create_addon(eks, params)
        if addon is None:  # created since we looked (a concurrent or retried attempt)
            addon = eks_api.find_addon(eks, cluster_name, spec.name)
        statuses[spec.name] = status_of(spec.name, addon, awaiting_nodes=awaiting_nodes)
        created.append(spec.name)
    ordered = tuple(statuses[spec.name] for spec in plan)
    return AddonProgress(ordered, tuple(created), _next_check(ordered, now or clock.now()))


def _next_check(addons: Sequence[AddonStatus], now: datetime) -> int:
    """Time the next look from the newest add-on still on its way to ACTIVE."""
    pending = [a for a in addons if not a.settled and a.status != MISSING]
    if not pending:
        return ADDON_WAIT.interval_seconds
    ages = [(now - a.created_at).total_seconds() if a.created_at else 0.0 for a in pending]
    return min(ADDON_WAIT.next_check(age) for age in ages)
