"""Types, records and helpers of the EKS emulator (`hypd_local.emulator.eks`)."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from hypd_local.emulator.errors import (
    AwsError,
    InvalidParameterException,
    InvalidRequestException,
    InvalidStateException,
    ResourceInUseException,
    ResourceNotFoundException,
    UnsupportedAvailabilityZoneException,
)
from hypd_local.emulator.service import Clock, OffsetPages

__all__ = ["PAGES", "AccessDecision", "Clock", "EksDurations", "Emit", "PolicyGrant"]

_NODE_USERNAMES = {
    "FARGATE_LINUX": "system:node:{{SessionName}}",
    "EC2_LINUX": "system:node:{{EC2PrivateDNSName}}",
    "EC2_WINDOWS": "system:node:{{EC2PrivateDNSName}}",
    "EC2": "system:node:{{EC2PrivateDNSName}}",
    "HYBRID_LINUX": "system:node:{{SessionName}}",
    "HYPERPOD_LINUX": "system:node:{{EC2PrivateDNSName}}",
}


# --------------------------------------------------------------------------- errors


def _not_found(message: str, **fields: str) -> AwsError:
    return ResourceNotFoundException(message, fields=fields)


def _in_use(message: str, **fields: str) -> AwsError:
    return ResourceInUseException(message, fields=fields)


def _invalid_parameter(message: str, **fields: str) -> AwsError:
    return InvalidParameterException(message, fields=fields)


def _invalid_request(message: str, **fields: str) -> AwsError:
    return InvalidRequestException(message, fields=fields)


def _invalid_state(message: str, **fields: str) -> AwsError:
    return InvalidStateException(message, fields=fields)


def _unsupported_zone(name: str, zone: str, valid_zones: Sequence[str]) -> AwsError:
    # EKS's wording (the EKS user guide's troubleshooting, "Insufficient capacity").
    return UnsupportedAvailabilityZoneException(
        f"Cannot create cluster '{name}' because {zone}, the targeted availability zone, does "
        "not currently have sufficient capacity to support the cluster. Retry and choose from "
        f"these availability zones: {', '.join(valid_zones)}",
        fields={"clusterName": name, "validZones": list(valid_zones)},
    )


# --------------------------------------------------------------------------- public types


class Emit(Protocol):
    def __call__(
        self, *, source: str, detail_type: str, detail: dict[str, Any], resources: list[str]
    ) -> None: ...


@dataclass(frozen=True)
class EksDurations:
    """Virtual durations, in seconds. Cluster creation is drawn per cluster name, seedably."""

    cluster_create_min: float = 8 * 60
    cluster_create_max: float = 12 * 60
    cluster_delete: float = 4 * 60
    """DeleteCluster keeps the cluster DELETING this long (made up; the ClusterDeleted waiter
    allows 20 minutes)."""
    cluster_update: float = 2 * 60
    cluster_version_update: float = 10 * 60
    """UpdateClusterVersion keeps the cluster UPDATING this long (the API reference: "should
    finish within a few minutes"; control-plane upgrades are commonly reported at 8-12)."""
    addon_create: float = 60
    addon_update: float = 45
    addon_delete: float = 30
    eni_linger: float = 5 * 60
    """The control plane's network interfaces stay this long after the cluster is gone (made
    up: EKS documents that they outlive it, not for how long)."""
    seed: int = 0

    def cluster_create(self, name: str) -> float:
        """Creation time of cluster ``name``: uniform in [min, max], a function of (seed, name)."""
        digest = hashlib.sha256(f"{self.seed}:{name}".encode()).digest()
        fraction = int.from_bytes(digest[:8], "big") / 2**64
        span = self.cluster_create_max - self.cluster_create_min
        return float(round(self.cluster_create_min + fraction * span))


@dataclass(frozen=True)
class PolicyGrant:
    """An access policy associated with an access entry, as the Kubernetes API server needs it."""

    policy_arn: str
    kubernetes_role: str | None
    """``cluster-admin``, ``admin``, ``edit``, ``view``, or None for EKS-internal policies."""
    scope_type: str
    namespaces: tuple[str, ...]


@dataclass(frozen=True)
class AccessDecision:
    """Who a principal is inside the cluster (what `EksEmulator.authorize` returns)."""

    principal_arn: str
    username: str
    groups: tuple[str, ...]
    policies: tuple[PolicyGrant, ...]
    access_entry_type: str

    @property
    def cluster_admin(self) -> bool:
        return "system:masters" in self.groups or any(
            p.kubernetes_role == "cluster-admin" and p.scope_type == "cluster"
            for p in self.policies
        )


# --------------------------------------------------------------------------- records


@dataclass(eq=False)
class _Update:
    id: str
    type: str
    params: list[dict[str, str]]
    created_at: datetime
    addon_name: str | None = None
    status: str = "InProgress"
    errors: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id, "status": self.status, "type": self.type,
            "params": [dict(p) for p in self.params], "createdAt": self.created_at,
            "errors": [dict(e) for e in self.errors],
        }


@dataclass(eq=False)
class _Addon:
    name: str
    cluster: _Cluster
    arn: str
    version: str
    created_at: datetime
    modified_at: datetime
    status: str = "CREATING"
    service_account_role_arn: str | None = None
    configuration_values: str | None = None
    pod_identity_associations: list[str] = field(default_factory=list)
    """The ARNs of the pod identity associations the add-on owns (in `_Cluster.associations`)."""
    tags: dict[str, str] = field(default_factory=dict)
    namespace: str | None = None
    prerequisite_issues: list[dict[str, Any]] = field(default_factory=list)
    injected_issues: list[dict[str, Any]] = field(default_factory=list)

    def issues(self) -> list[dict[str, Any]]:
        return [dict(i) for i in self.injected_issues + self.prerequisite_issues]


@dataclass(eq=False)
class _AccessEntry:
    principal_arn: str
    arn: str
    type: str
    username: str
    groups: list[str]
    tags: dict[str, str]
    created_at: datetime
    modified_at: datetime
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(eq=False)
class _PodIdentity:
    """An EKS Pod Identity association (standalone, or owned by the add-on ``owner_arn``)."""

    id: str
    arn: str
    namespace: str
    service_account: str
    role_arn: str
    created_at: datetime
    modified_at: datetime
    tags: dict[str, str] = field(default_factory=dict)
    owner_arn: str | None = None
    disable_session_tags: bool = False
    target_role_arn: str | None = None
    external_id: str | None = None
    policy: str | None = None

    def describe(self, cluster_name: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            **self.summary(cluster_name),
            "roleArn": self.role_arn,
            "tags": dict(self.tags),
            "createdAt": self.created_at,
            "modifiedAt": self.modified_at,
            "disableSessionTags": self.disable_session_tags,
        }
        for member, value in (("targetRoleArn", self.target_role_arn),
                              ("externalId", self.external_id), ("policy", self.policy)):
            if value is not None:
                out[member] = value
        return out

    def summary(self, cluster_name: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "clusterName": cluster_name,
            "namespace": self.namespace,
            "serviceAccount": self.service_account,
            "associationArn": self.arn,
            "associationId": self.id,
        }
        if self.owner_arn is not None:
            out["ownerArn"] = self.owner_arn
        return out


@dataclass(eq=False)
class _Cluster:
    name: str
    arn: str
    created_at: datetime
    spec: dict[str, Any]
    """Static members of the Cluster shape, returned as they are."""
    version: str
    authentication_mode: str
    bootstrap_admin: bool
    creator_arn: str
    endpoint: str
    status: str = "CREATING"
    failure: dict[str, Any] | None = None
    addons: dict[str, _Addon] = field(default_factory=dict)
    access_entries: dict[str, _AccessEntry] = field(default_factory=dict)
    updates: dict[str, _Update] = field(default_factory=dict)
    deletion_protection: bool = False
    associations: dict[str, _PodIdentity] = field(default_factory=dict)
    """Pod identity associations by associationId, in creation order."""
    preserved: set[str] = field(default_factory=set)
    """Add-ons deleted with ``preserve``: their software still runs in the cluster, unmanaged."""
    active_since: datetime | None = None
    """When the control plane came up (and its network interfaces with it)."""
    deleted_at: datetime | None = None
    findings: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Upgrade-insight findings a test planted, by insight key (`eks_upgrades.INSIGHTS`)."""


# --------------------------------------------------------------------------- helpers


PAGES = OffsetPages(
    encode=lambda offset: base64.urlsafe_b64encode(
        json.dumps({"offset": offset}).encode()).decode(),
    decode=lambda token: int(json.loads(base64.urlsafe_b64decode(token.encode()))["offset"]),
    invalid=lambda: _invalid_parameter("The nextToken provided is invalid."),
    size_member="maxResults",
    next_member="nextToken",
)
"""EKS's pagination: an opaque offset token (InvalidParameterException on a foreign one)."""


def _hex(seed: str, length: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def _uuid(seed: str) -> str:
    return str(uuid.UUID(hex=_hex(seed, 32)))


_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _association_id(seed: str) -> str:
    """A pod identity association's ID as EKS makes them: ``a-`` and 17 lowercase letters and
    digits (``a-kyevsbqhrnchy79jw``), 19 characters in all."""
    number = int.from_bytes(hashlib.sha256(seed.encode()).digest(), "big")
    chars = []
    for _ in range(17):
        number, digit = divmod(number, 36)
        chars.append(_BASE36[digit])
    return "a-" + "".join(chars)


def _iam_principal(arn: str) -> tuple[str, str, str] | None:
    """(account, kind 'role'|'user', name without path) of an IAM role/user ARN, else None."""
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "iam" or not parts[4].isdigit():
        return None
    kind, _, rest = parts[5].partition("/")
    if kind not in ("role", "user") or not rest:
        return None
    return parts[4], kind, rest.rsplit("/", 1)[-1]


def _caller_principal(arn: str) -> tuple[str, str] | None:
    """The IAM role ARN (path unknown) and session name behind an STS assumed-role ARN."""
    parts = arn.split(":", 5)
    if len(parts) != 6 or parts[2] != "sts" or not parts[5].startswith("assumed-role/"):
        return None
    pieces = parts[5].split("/")
    if len(pieces) < 3:
        return None
    return f"arn:{parts[1]}:iam::{parts[4]}:role/{pieces[1]}", pieces[2]


def _default_username(principal_arn: str, entry_type: str) -> str:
    if entry_type in _NODE_USERNAMES:
        return _NODE_USERNAMES[entry_type]
    principal = _iam_principal(principal_arn)
    if principal is not None and principal[1] == "role":
        # EKS maps a role to its session ARN (the role's path dropped), in its partition.
        partition = principal_arn.split(":", 2)[1]
        return (f"arn:{partition}:sts::{principal[0]}:assumed-role/{principal[2]}/"
                "{{SessionName}}")
    return principal_arn
