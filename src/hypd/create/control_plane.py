"""The create pipeline's ``eks`` stage: the EKS control plane, its access and its wait policy.

Plain functions over a boto3 EKS (and STS) client, each safe to run again: they inspect before
they create, and a second run finds what the first made.

* `ensure_eks_cluster`: DescribeCluster, else CreateCluster (authentication mode API, no
  bootstrap admin for the creator, endpoint public and private, control-plane logs api, audit and
  authenticator, the caller's client token). An existing cluster is adopted only when it is the
  one asked for (same subnets, access entries usable); otherwise `EksClusterConflict`.
* `read_eks_cluster`: the state the "Check EKS cluster" task reports (`EksState.ready` when
  ACTIVE). FAILED anywhere raises `EksClusterFailed` with EKS's own reason.
* `ensure_admin_access`: an access entry with the cluster-admin access policy for a principal;
  the control plane grants it to itself (`principal_of`) so its tasks can use the cluster's
  Kubernetes API. Call it once the cluster is ACTIVE.
* `EKS_WAIT` / `next_check_seconds`: EKS has no state-change events, so the state machine polls
  with Wait states shaped by the expected creation time (first look near the expected end, then
  short intervals); `check_overdue` ends the wait with `EksClusterTimedOut` once it is overdue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from hypd import clock
from hypd.aws import eks as eks_api
from hypd.aws.partitions import partition_of_arn
from hypd.aws.sts import caller_arn
from hypd.errors import PermanentError
from hypd.operations.waits import WaitPolicy

CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
ADMIN_VIEW_POLICY = "AmazonEKSAdminViewPolicy"
"""Reads every resource of the cluster (CRDs included), writes none: the API function's."""
LOG_TYPES = ("api", "audit", "authenticator")
API_AUTHENTICATION_MODES = ("API", "API_AND_CONFIG_MAP")
"""HyperPod needs access entries: authentication mode API or API_AND_CONFIG_MAP."""


# ---------------------------------------------------------------------------- errors
class EksClusterFailed(PermanentError):
    """EKS reports the cluster FAILED; the reason is EKS's own health issue."""

    code = "EksClusterFailed"


class EksClusterConflict(PermanentError):
    """A cluster of the derived name exists but is not the one this operation asked for
    (other subnets, CONFIG_MAP authentication, being deleted)."""

    code = "EksClusterConflict"


class EksClusterTimedOut(PermanentError):
    """The cluster is still not ACTIVE when its wait is overdue (`EKS_WAIT`): the stage fails;
    a retry of the operation waits for the same cluster again."""

    code = "EksClusterTimedOut"


class UnsupportedPrincipal(PermanentError):
    """The caller is not an IAM role or user, so no access entry can name it."""

    code = "UnsupportedPrincipal"


# ---------------------------------------------------------------------------- wait policy
EKS_EXPECTED_SECONDS = 10 * 60
"""EKS control planes take about 8-12 minutes to create."""

EKS_WAIT = WaitPolicy(
    expected_seconds=EKS_EXPECTED_SECONDS,
    first_look_seconds=8 * 60,  # the early end of the usual range
    interval_seconds=30,  # a cluster is noticed at most 30 s after it turns ACTIVE
    late_after_seconds=20 * 60,
    late_interval_seconds=60,
    give_up_after_seconds=45 * 60,
)


def next_check_seconds(elapsed_seconds: float) -> int:
    """Seconds until the next look at an EKS cluster created `elapsed_seconds` ago."""
    return EKS_WAIT.next_check(elapsed_seconds)


def check_overdue(name: str, doing: str, waited_seconds: float) -> None:
    """Give up on cluster `name`, not ACTIVE yet (`doing`: what it is at, e.g. "still
    CREATING"), once `EKS_WAIT`'s give-up time has passed.

    Raises:
        EksClusterTimedOut: `waited_seconds` are overdue.
    """
    if not EKS_WAIT.overdue(waited_seconds):
        return
    raise EksClusterTimedOut(
        f"EKS cluster {name} is {doing} after {int(waited_seconds)} s (EKS takes about "
        f"{EKS_EXPECTED_SECONDS // 60} minutes; hypd waits "
        f"{EKS_WAIT.give_up_after_seconds // 60}); retry the operation to wait for it again",
        details={"clusterName": name, "status": doing, "waitedSeconds": int(waited_seconds)},
    )


# ---------------------------------------------------------------------------- state
@dataclass(frozen=True)
class EksState:
    """What the pipeline needs to know about its EKS cluster."""

    name: str
    status: str
    arn: str
    version: str | None = None
    endpoint: str | None = None
    certificate_authority: str | None = None
    """base64 PEM (DescribeCluster's ``certificateAuthority.data``); set once ACTIVE."""
    vpc_id: str | None = None
    subnet_ids: tuple[str, ...] = ()
    authentication_mode: str | None = None
    created_at: datetime | None = None
    health_issues: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)

    @property
    def ready(self) -> bool:
        return self.status == "ACTIVE"

    def elapsed_seconds(self, now: datetime | None = None) -> float:
        """Seconds since EKS accepted the creation (0 when unknown)."""
        if self.created_at is None:
            return 0.0
        return max(0.0, ((now or clock.now()) - self.created_at).total_seconds())

    def next_check_seconds(self, now: datetime | None = None) -> int:
        return next_check_seconds(self.elapsed_seconds(now))

    def kubernetes_cluster(self) -> dict[str, Any]:
        """The DescribeCluster fields `hypd.kubernetes.kubernetes_api` needs."""
        return {
            "name": self.name,
            "endpoint": self.endpoint,
            "certificateAuthority": {"data": self.certificate_authority},
        }

    def to_json(self) -> dict[str, Any]:
        """Task output (camelCase, JSON-able)."""
        return {
            "name": self.name,
            "status": self.status,
            "arn": self.arn,
            "ready": self.ready,
            "version": self.version,
            "endpoint": self.endpoint,
            "certificateAuthority": self.certificate_authority,
            "vpcId": self.vpc_id,
            "subnetIds": list(self.subnet_ids),
            "authenticationMode": self.authentication_mode,
            "createdAt": clock.isoformat(self.created_at) if self.created_at else None,
        }


def state_of(cluster: Mapping[str, Any]) -> EksState:
    """An `EksState` from DescribeCluster's / CreateCluster's ``cluster``."""
    vpc = cluster.get("resourcesVpcConfig") or {}
    created = cluster.get("createdAt")
    return EksState(
        name=str(cluster["name"]),
        status=str(cluster.get("status") or "UNKNOWN"),
        arn=str(cluster["arn"]),
        version=cluster.get("version"),
        endpoint=cluster.get("endpoint"),
        certificate_authority=(cluster.get("certificateAuthority") or {}).get("data"),
        vpc_id=vpc.get("vpcId"),
        subnet_ids=tuple(vpc.get("subnetIds") or ()),
        authentication_mode=(cluster.get("accessConfig") or {}).get("authenticationMode"),
        created_at=created if isinstance(created, datetime) else None,
        health_issues=tuple((cluster.get("health") or {}).get("issues") or ()),
    )


def _failed(state: EksState) -> EksClusterFailed:
    reasons = (
        "; ".join(
            f"{issue.get('code', 'Unknown')}: {issue.get('message', '')}".strip()
            for issue in state.health_issues
        )
        or "no reason given"
    )
    return EksClusterFailed(
        f"EKS cluster {state.name} is FAILED: {reasons}",
        details={
            "clusterName": state.name,
            "healthIssues": [dict(i) for i in state.health_issues],
            "awsErrorCode": next(
                (str(i["code"]) for i in state.health_issues if i.get("code")), "ClusterFailed"
            ),
        },
    )


def _checked(state: EksState) -> EksState:
    if state.status == "FAILED":
        raise _failed(state)
    return state


# ---------------------------------------------------------------------------- cluster
def create_cluster_params(
    *,
    name: str,
    role_arn: str,
    subnet_ids: Sequence[str],
    security_group_ids: Sequence[str],
    kubernetes_version: str | None,
    tags: Mapping[str, str],
    client_token: str,
    public_access_cidrs: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The CreateCluster request hypd sends (pure: unit-tested on its own)."""
    vpc: dict[str, Any] = {
        "subnetIds": list(subnet_ids),
        "endpointPublicAccess": True,
        "endpointPrivateAccess": True,
    }
    if security_group_ids:
        vpc["securityGroupIds"] = list(security_group_ids)
    if public_access_cidrs:
        vpc["publicAccessCidrs"] = list(public_access_cidrs)
    params: dict[str, Any] = {
        "name": name,
        "roleArn": role_arn,
        "resourcesVpcConfig": vpc,
        "accessConfig": {
            "authenticationMode": "API",
            "bootstrapClusterCreatorAdminPermissions": False,
        },
        "logging": {"clusterLogging": [{"types": list(LOG_TYPES), "enabled": True}]},
        "clientRequestToken": client_token,
    }
    if tags:  # EKS refuses an empty tag map
        params["tags"] = dict(tags)
    if kubernetes_version:
        params["version"] = kubernetes_version
    return params


def _adoptable(state: EksState, subnet_ids: Sequence[str]) -> EksState:
    """`state` if the existing cluster is the one asked for, else `EksClusterConflict`."""
    details = {"clusterName": state.name, "status": state.status}
    if state.status == "DELETING":
        raise EksClusterConflict(
            f"EKS cluster {state.name} is being deleted; retry once it is gone", details=details
        )
    if set(state.subnet_ids) != set(subnet_ids):
        raise EksClusterConflict(
            f"EKS cluster {state.name} already exists in VPC {state.vpc_id} on subnets "
            f"{sorted(state.subnet_ids)}, not on the requested subnets {sorted(subnet_ids)}",
            details={
                **details,
                "vpcId": state.vpc_id,
                "subnetIds": sorted(state.subnet_ids),
                "requestedSubnetIds": sorted(subnet_ids),
            },
        )
    if state.authentication_mode not in API_AUTHENTICATION_MODES:
        raise EksClusterConflict(
            f"EKS cluster {state.name} uses authentication mode {state.authentication_mode}; "
            "HyperPod and hypd need API or API_AND_CONFIG_MAP (access entries)",
            details={**details, "authenticationMode": state.authentication_mode},
        )
    return _checked(state)


def ensure_eks_cluster(
    eks: Any,
    *,
    name: str,
    role_arn: str,
    subnet_ids: Sequence[str],
    security_group_ids: Sequence[str],
    kubernetes_version: str | None,
    tags: Mapping[str, str],
    client_token: str,
    public_access_cidrs: Sequence[str] | None = None,
    replace_failed: bool = False,
) -> EksState:
    """The cluster `name`, created if it does not exist yet; its current state.

    `replace_failed` (a retry of the stage): a FAILED cluster of that name is deleted and, once
    gone, created anew; meanwhile the state is DELETING (not ready: look again later). The
    retry should pass a fresh `client_token`.

    Raises `EksClusterConflict` when a cluster of that name exists on other subnets (hence
    another VPC), without access entries, or is being deleted; `EksClusterFailed` when it is
    FAILED. A Kubernetes version is not compared: an adopted cluster keeps its own.
    """
    existing = eks_api.find_cluster(eks, name)
    if existing is not None:
        state = state_of(existing)
        if replace_failed and state.status in ("FAILED", "DELETING"):
            if state.status == "FAILED":
                eks_api.delete_cluster(eks, name)
            return replace(state, status="DELETING")
        return _adoptable(state, subnet_ids)
    params = create_cluster_params(
        name=name,
        role_arn=role_arn,
        subnet_ids=subnet_ids,
        security_group_ids=security_group_ids,
        kubernetes_version=kubernetes_version,
        tags=tags,
        client_token=client_token,
        public_access_cidrs=public_access_cidrs,
    )
    created = eks_api.create_cluster(eks, params)
    if created is None:  # created by someone else since we looked
        return _adoptable(read_eks_cluster(eks, name), subnet_ids)
    return _checked(state_of(created))


def read_eks_cluster(eks: Any, name: str) -> EksState:
    """The cluster's state (`EksState.ready` once ACTIVE); `EksClusterFailed` when FAILED and
    `hypd.errors.AwsResourceNotFound` when it does not exist."""
    return _checked(state_of(eks_api.read_cluster(eks, name)))


# ---------------------------------------------------------------------------- access
def ensure_admin_access(
    eks: Any, cluster_name: str, principal_arn: str, client_token: str | None = None,
    *, policy: str = CLUSTER_ADMIN_POLICY,
) -> bool:
    """`principal_arn` gets a STANDARD access entry with the access policy `policy` (by default
    AmazonEKSClusterAdminPolicy; AmazonEKSAdminViewPolicy for a reader) at cluster scope, the
    policy of the principal's partition. Idempotent: an existing entry and an existing
    association are kept. Returns True when anything was created or associated."""
    policy_arn = eks_api.access_policy_arn(partition_of_arn(principal_arn), policy)
    created = eks_api.create_access_entry(
        eks,
        cluster_name,
        principal_arn,
        client_token=f"{client_token}-access" if client_token else None,
    )
    policies = [] if created else eks_api.associated_policies(eks, cluster_name, principal_arn)
    if any(
        p.get("policyArn") == policy_arn
        and (p.get("accessScope") or {}).get("type") == "cluster"
        for p in policies
    ):
        return created
    eks_api.associate_cluster_policy(eks, cluster_name, principal_arn, policy_arn)
    return True


def cluster_admin_policy_arn(partition: str) -> str:
    """AmazonEKSClusterAdminPolicy's ARN in `partition` (`arn:aws:eks::aws:...` in `aws`)."""
    return eks_api.access_policy_arn(partition, CLUSTER_ADMIN_POLICY)


def iam_principal(caller_arn: str) -> str:
    """The IAM ARN an access entry names for an STS caller ARN.

    ``arn:P:sts::A:assumed-role/NAME/SESSION`` -> ``arn:P:iam::A:role/NAME`` (a role path, if the
    role has one, is not in the session ARN: give such a role's ARN explicitly). IAM user and
    role ARNs are returned unchanged. ``arn:P:sts::A:user/NAME`` (what moto answers for its
    default identity on the local cloud) -> ``arn:P:iam::A:user/NAME``. Anything else (root,
    federated users) cannot have an access entry: `UnsupportedPrincipal`.
    """
    parts = caller_arn.split(":", 5)
    if len(parts) == 6 and parts[0] == "arn" and parts[4]:
        partition, service, account, resource = parts[1], parts[2], parts[4], parts[5]
        kind, _, rest = resource.partition("/")
        if service == "iam" and kind in ("role", "user") and rest:
            return caller_arn
        if service == "sts" and kind == "assumed-role" and rest.count("/") >= 1:
            role = rest.split("/", 1)[0]
            return f"arn:{partition}:iam::{account}:role/{role}"
        if service == "sts" and kind == "user" and rest:
            return f"arn:{partition}:iam::{account}:user/{rest}"
    raise UnsupportedPrincipal(
        f"{caller_arn} is not an IAM role or user; an EKS access entry cannot name it",
        details={"principalArn": caller_arn},
    )


def principal_of(sts: Any) -> str:
    """The IAM ARN of the caller of `sts` (GetCallerIdentity), as an access entry names it."""
    return iam_principal(caller_arn(sts))
