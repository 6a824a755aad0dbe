"""The EKS emulator: clusters, add-ons with prerequisites, access entries, add-on events.

A plain class (docs/emulator.md, "Contracts"): one method per EKS operation named in snake_case,
taking the validated input dict (model member names) and returning the output dict (model member
names, aware datetimes). It never sleeps and never reads the wall clock: every scheduled
transition (cluster CREATING -> ACTIVE, add-on CREATING -> ACTIVE, ...) is a timer on the virtual
clock, applied in time order by `tick`, which every operation calls first. So a read always sees
the state at ``clock.now()`` and every event is emitted once, in order, stamped with the virtual
time at which its transition happened.

What it emits (source ``aws.eks``, the detail-types the EventBridge reference lists for EKS):
``EKS Addon Creation Succeeded`` / ``EKS Addon Creation Failed`` (creation ended ACTIVE /
CREATE_FAILED), ``EKS Addon Update Succeeded``, ``EKS Addon Deletion Succeeded``,
``EKS Addon Health Degraded`` (ACTIVE -> DEGRADED, also when a creation ends DEGRADED) and
``EKS Addon Health Restored`` (DEGRADED -> ACTIVE). EKS publishes no cluster-status events and
neither does this emulator. AWS does not document the detail of these events; ours is
``{clusterName, clusterArn, addonName, addonArn, addonVersion, status, health, eventTime}``.
"""

from __future__ import annotations

import base64
import functools
import heapq
import itertools
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

from hypd_local.emulator.eks_catalog import (
    ACCESS_POLICIES,
    CLUSTER_ADMIN_POLICY,
    AccessPolicy,
    AddonCatalog,
    access_policy_arn,
)
from hypd_local.emulator.eks_model import (
    AccessDecision,
    Clock,
    EksDurations,
    Emit,
    PolicyGrant,
    _AccessEntry,
    _Addon,
    _caller_principal,
    _Cluster,
    _default_username,
    _hex,
    _iam_principal,
    _in_use,
    _invalid_parameter,
    _invalid_request,
    _not_found,
    _page,
    _unsupported_zone,
    _Update,
    _uuid,
)
from hypd_local.partitions import dns_suffix, partition_of

__all__ = [
    "ADDON_CREATION_FAILED", "ADDON_CREATION_SUCCEEDED", "ADDON_DELETION_SUCCEEDED",
    "ADDON_HEALTH_DEGRADED", "ADDON_HEALTH_RESTORED", "ADDON_UPDATE_FAILED",
    "ADDON_UPDATE_SUCCEEDED", "SOURCE", "AccessDecision", "AddonCatalog", "Clock",
    "EksDurations", "EksEmulator", "Emit", "PolicyGrant",
]

SOURCE = "aws.eks"

ADDON_CREATION_SUCCEEDED = "EKS Addon Creation Succeeded"
ADDON_CREATION_FAILED = "EKS Addon Creation Failed"
ADDON_UPDATE_SUCCEEDED = "EKS Addon Update Succeeded"
ADDON_UPDATE_FAILED = "EKS Addon Update Failed"
ADDON_DELETION_SUCCEEDED = "EKS Addon Deletion Succeeded"
ADDON_HEALTH_DEGRADED = "EKS Addon Health Degraded"
ADDON_HEALTH_RESTORED = "EKS Addon Health Restored"

ACCESS_ENTRY_TYPES = (
    "STANDARD", "FARGATE_LINUX", "EC2_LINUX", "EC2_WINDOWS", "EC2", "HYBRID_LINUX",
    "HYPERPOD_LINUX",
)
_API_MODES = ("API", "API_AND_CONFIG_MAP")
# The only authentication-mode changes AWS allows (one way, one step at a time).
_MODE_TRANSITIONS = {("CONFIG_MAP", "API_AND_CONFIG_MAP"), ("API_AND_CONFIG_MAP", "API")}

# Which AddonIssueCode a missing prerequisite produces (the model's enum has no "missing
# dependency" code, so these are the closest):
# - cert-manager missing: the operator's Certificate/Issuer objects (cert-manager.io kinds) and
#   webhook certificates cannot be created because those CRDs do not exist -> K8sResourceNotFound.
# - CSI drivers / metrics-server missing: the CSIDriver objects and the metrics.k8s.io APIService
#   the add-on relies on are absent -> K8sResourceNotFound.
# - eks-pod-identity-agent missing: the controller pods get no AWS credentials and crash-loop, so
#   the deployment never reaches its desired replicas -> InsufficientNumberOfReplicas.
_PREREQUISITE_ISSUE_CODE = {"eks-pod-identity-agent": "InsufficientNumberOfReplicas"}
_DEFAULT_PREREQUISITE_ISSUE_CODE = "K8sResourceNotFound"
# Statuses in which an installed add-on satisfies another's prerequisite.
_INSTALLED = ("ACTIVE", "UPDATING", "DEGRADED", "UPDATE_FAILED", "DELETING", "DELETE_FAILED")

ADDON_ISSUE_CODES = (
    "AccessDenied", "InternalFailure", "ClusterUnreachable", "InsufficientNumberOfReplicas",
    "ConfigurationConflict", "AdmissionRequestDenied", "UnsupportedAddonModification",
    "K8sResourceNotFound", "AddonSubscriptionNeeded", "AddonPermissionFailure",
)
CLUSTER_ISSUE_CODES = (
    "AccessDenied", "ClusterUnreachable", "ConfigurationConflict", "InternalFailure",
    "ResourceLimitExceeded", "ResourceNotFound", "IamRoleNotFound", "VpcNotFound",
    "InsufficientFreeAddresses", "Ec2ServiceNotSubscribed", "Ec2SubnetNotFound",
    "Ec2SecurityGroupNotFound", "KmsGrantRevoked", "KmsKeyNotFound", "KmsKeyMarkedForDeletion",
    "KmsKeyDisabled", "StsRegionalEndpointDisabled", "UnsupportedVersion", "Other",
)

_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]

UNSUPPORTED_ZONES: Mapping[str, tuple[str, ...]] = {"us-east-1": ("us-east-1e",)}
"""Zones where the emulated EKS refuses control-plane subnets, by Region (the default of
`EksEmulator.unsupported_zones`): us-east-1e, the zone AWS's documentation and users' reports
name (zone use1-az3 in moto's mapping, one EKS lists as unsupported)."""


# --------------------------------------------------------------------------- the emulator

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(
    method: Callable[Concatenate[EksEmulator, _P], _R],
) -> Callable[Concatenate[EksEmulator, _P], _R]:
    """Run a public method under the emulator's lock, then deliver the events it queued.

    Events are emitted outside the state lock (a subscriber may call back into the emulator,
    from this thread or another) but under the delivery lock, so they leave in queue order.
    """

    @functools.wraps(method)
    def wrapper(self: EksEmulator, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            with self._lock:
                return method(self, *args, **kwargs)
        finally:
            self._flush()

    return wrapper



class EksEmulator:
    """Emulated EKS control plane for one account and Region (see module docstring)."""

    def __init__(
        self,
        clock: Clock,
        emit: Emit,
        account_id: str,
        region: str,
        durations: EksDurations | None = None,
        addon_catalog: AddonCatalog | None = None,
        *,
        subnet_vpc: Callable[[str], str | None] | None = None,
        caller_arn: Callable[[], str] | None = None,
        missing_prerequisite_status: str = "DEGRADED",
        subnet_zone: Callable[[str], str | None] | None = None,
        region_zones: Callable[[], list[str]] | None = None,
        unsupported_zones: Iterable[str] | None = None,
    ) -> None:
        if missing_prerequisite_status not in ("DEGRADED", "CREATE_FAILED"):
            raise ValueError("missing_prerequisite_status must be DEGRADED or CREATE_FAILED")
        self._clock = clock
        self._emit = emit
        self.account_id = account_id
        self.region = region
        self.partition = partition_of(region)
        self.durations = durations or EksDurations()
        self.catalog = addon_catalog or AddonCatalog.default()
        self._subnet_vpc = subnet_vpc
        self._subnet_zone = subnet_zone
        self._region_zones = region_zones
        self.unsupported_zones: set[str] = set(
            UNSUPPORTED_ZONES.get(region, ()) if unsupported_zones is None else unsupported_zones
        )
        """Zones where CreateCluster refuses subnets (UnsupportedAvailabilityZoneException);
        needs ``subnet_zone`` to know a subnet's zone."""
        self._caller_arn = caller_arn or (
            lambda: f"arn:{self.partition}:iam::{account_id}:user/moto")
        self.missing_prerequisite_status = missing_prerequisite_status
        self._clusters: dict[str, _Cluster] = {}
        self._timers: list[tuple[datetime, int, Callable[[datetime], None]]] = []
        self._seq = itertools.count()
        self._fail_next: list[tuple[str | None, str]] = []
        # Stalled creations: the next CreateCluster of a name (None: any) takes these seconds
        # (None: stays CREATING until released); clusters and add-ons stalled until released.
        self._stall_next: list[tuple[str | None, float | None]] = []
        self._stalled_clusters: dict[str, tuple[_Cluster, str | None]] = {}
        self._pending_addon_stalls: dict[tuple[str, str], float | None] = {}
        self._stalled_addons: dict[tuple[str, str], _Addon] = {}
        self._pending_degrade: dict[tuple[str, str], dict[str, Any]] = {}
        self._endpoints: dict[str, str] = {}
        self._certificate_authorities: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self._delivery = threading.RLock()
        self._outbox: list[dict[str, Any]] = []
        self._delivering = False

    # ------------------------------------------------------------------ time

    def tick(self) -> None:
        """Apply every transition due by ``clock.now()``, in time order, emitting its events."""
        try:
            with self._lock:
                self._advance()
        finally:
            self._flush()

    def _advance(self) -> None:
        now = self._clock.now()
        while self._timers and self._timers[0][0] <= now:
            due, _, action = heapq.heappop(self._timers)
            action(due)

    def next_due(self) -> datetime | None:
        """When the earliest scheduled transition strictly after ``clock.now()`` happens, or
        None when nothing is scheduled (transitions already due wait for the next `tick`)."""
        with self._lock:
            now = self._clock.now()
            return min((due for due, _, _ in self._timers if due > now), default=None)

    def _flush(self) -> None:
        with self._delivery:
            if self._delivering:
                return  # a subscriber called back: the outer delivery loop sends the rest
            self._delivering = True
            try:
                while True:
                    with self._lock:
                        if not self._outbox:
                            return
                        event = self._outbox.pop(0)
                    self._emit(**event)
            finally:
                self._delivering = False

    def _at(self, due: datetime, action: Callable[[datetime], None]) -> None:
        heapq.heappush(self._timers, (due, next(self._seq), action))

    def _now(self) -> datetime:
        self._advance()
        return self._clock.now()

    # ------------------------------------------------------------------ fault hooks

    @_locked
    def fail_next_cluster(self, name: str | None = None, message: str = "") -> None:
        """The next CreateCluster (of ``name``, or of any name) ends FAILED instead of ACTIVE."""
        self._fail_next.append((name, message or "Cluster creation failed (injected fault)."))

    @_locked
    def set_unsupported_zones(self, zones: Iterable[str]) -> None:
        """The zones where CreateCluster refuses subnets from now on (replacing the Region's
        default, `UNSUPPORTED_ZONES`)."""
        self.unsupported_zones = set(zones)

    @_locked
    def stall_next_cluster(self, name: str | None = None, seconds: float | None = None) -> None:
        """The next CreateCluster (of ``name``, or of any name) stays CREATING for ``seconds``
        instead of the usual 8-12 minutes; None: until `release_cluster`."""
        self._stall_next.append((name, seconds))

    @_locked
    def release_cluster(self, name: str) -> None:
        """A cluster stalled until released finishes its creation now."""
        now = self._now()
        stalled = self._stalled_clusters.pop(name, None)
        if stalled is not None:
            cluster, failure = stalled
            self._at(now, lambda t: self._finish_cluster_create(cluster, failure, t))
            self._advance()

    @_locked
    def stall_addon(self, cluster: str, addon: str, seconds: float | None = None) -> None:
        """The add-on's creation (the next one, if it is not being created yet) stays
        CREATING for ``seconds`` instead of `EksDurations.addon_create`; None: until
        `release_addon`."""
        self._pending_addon_stalls[(cluster, addon)] = seconds

    @_locked
    def release_addon(self, cluster: str, addon: str) -> None:
        """An add-on stalled until released finishes its creation now."""
        now = self._now()
        self._pending_addon_stalls.pop((cluster, addon), None)
        record = self._stalled_addons.pop((cluster, addon), None)
        if record is not None:
            self._at(now, lambda t: self._finish_addon_create(record, t))
            self._advance()

    @_locked
    def degrade_addon(
        self, cluster: str, addon: str, issue_code: str = "InsufficientNumberOfReplicas",
        message: str = "",
    ) -> None:
        """Turn an add-on DEGRADED with one health issue (now, or when its creation ends)."""
        if issue_code not in ADDON_ISSUE_CODES:
            raise ValueError(f"{issue_code!r} is not an AddonIssueCode")
        issue = {"code": issue_code, "message": message or f"{addon} is degraded (injected fault).",
                 "resourceIds": []}
        now = self._now()
        record = self._cluster(cluster).addons.get(addon)
        if record is None or record.status == "CREATING":
            self._pending_degrade[(cluster, addon)] = issue
            return
        record.injected_issues = [issue]
        self._reevaluate(record, now)

    @_locked
    def restore_addon(self, cluster: str, addon: str) -> None:
        """Clear an injected degradation; the add-on returns to ACTIVE if nothing else is wrong."""
        now = self._now()
        self._pending_degrade.pop((cluster, addon), None)
        record = self._cluster(cluster).addons.get(addon)
        if record is not None:
            record.injected_issues = []
            self._reevaluate(record, now)

    def set_durations(self, durations: EksDurations | None = None, **changes: float) -> None:
        """Replace the durations (whole object and/or fields); applies to future transitions."""
        with self._lock:
            base = durations or self.durations
            self.durations = replace(base, **changes)  # type: ignore[arg-type]

    @_locked
    def set_endpoint(
        self, cluster_name: str, url: str, certificate_authority: str | None = None
    ) -> None:
        """Where the local cloud serves the cluster's Kubernetes API (DescribeCluster endpoint)
        and, when it serves TLS, the base64 PEM of its CA (`certificateAuthority.data`)."""
        self._endpoints[cluster_name] = url
        if certificate_authority is not None:
            self._certificate_authorities[cluster_name] = certificate_authority

    # ------------------------------------------------------------------ clusters

    @_locked
    def create_cluster(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        name: str = params["name"]
        if name in self._clusters:
            raise _in_use(f"Cluster already exists with name: {name}", clusterName=name)
        version = params.get("version") or self.catalog.default_kubernetes_version
        if version not in self.catalog.kubernetes_versions:
            raise _invalid_parameter(f"unsupported Kubernetes version {version}", clusterName=name)
        vpc_request = dict(params["resourcesVpcConfig"])
        subnets = list(vpc_request.get("subnetIds") or [])
        if len(set(subnets)) < 2:
            raise _invalid_parameter(
                "Subnets specified must be in at least two different AZs", clusterName=name
            )
        vpc_id = self._vpc_of(name, subnets)
        self._check_zones(name, subnets)
        access = dict(params.get("accessConfig") or {})
        mode = access.get("authenticationMode") or "CONFIG_MAP"
        bootstrap = access.get("bootstrapClusterCreatorAdminPermissions")
        bootstrap = True if bootstrap is None else bool(bootstrap)

        cluster_id = _hex(f"{self.account_id}:{self.region}:{name}:{next(self._ids)}", 32).upper()
        zone = "abcdefghijklmnopqrstuvwxyz"[int(cluster_id[:2], 16) % 26]
        suffix = f"{zone}{'rksy'[int(cluster_id[2], 16) % 4]}{int(cluster_id[3], 16) % 10}"
        domain = dns_suffix(self.region)
        endpoint = f"https://{cluster_id}.{suffix}.{self.region}.eks.{domain}"
        knc_request = dict(params.get("kubernetesNetworkConfig") or {})
        ip_family = knc_request.get("ipFamily") or "ipv4"
        knc: dict[str, Any] = {
            "ipFamily": ip_family,
            "elasticLoadBalancing": knc_request.get("elasticLoadBalancing") or {"enabled": False},
        }
        if ip_family == "ipv4":
            knc["serviceIpv4Cidr"] = knc_request.get("serviceIpv4Cidr") or "10.100.0.0/16"
        else:
            knc["serviceIpv6Cidr"] = f"fd{cluster_id[:2].lower()}:{cluster_id[2:6].lower()}::/108"
        vpc: dict[str, Any] = {
            "subnetIds": subnets,
            "securityGroupIds": list(vpc_request.get("securityGroupIds") or []),
            "clusterSecurityGroupId": f"sg-{_hex('csg:' + cluster_id, 17)}",
            "vpcId": vpc_id,
            "endpointPublicAccess": vpc_request.get("endpointPublicAccess", True),
            "endpointPrivateAccess": vpc_request.get("endpointPrivateAccess", False),
            "publicAccessCidrs": list(vpc_request.get("publicAccessCidrs") or ["0.0.0.0/0"]),
        }
        spec: dict[str, Any] = {
            "roleArn": params["roleArn"],
            "resourcesVpcConfig": vpc,
            "kubernetesNetworkConfig": knc,
            "logging": params.get("logging")
            or {"clusterLogging": [{"types": list(_LOG_TYPES), "enabled": False}]},
            "identity": {"oidc": {
                "issuer": f"https://oidc.eks.{self.region}.{domain}/id/{cluster_id}"}},
            "certificateAuthority": {"data": base64.b64encode(
                f"-----BEGIN CERTIFICATE-----\nhypd-local {name} {cluster_id}\n"
                "-----END CERTIFICATE-----\n".encode()).decode()},
            "platformVersion": self.catalog.platform_version(version),
            "tags": dict(params.get("tags") or {}),
            "upgradePolicy": params.get("upgradePolicy") or {"supportType": "EXTENDED"},
        }
        for member in ("clientRequestToken", "encryptionConfig", "zonalShiftConfig",
                       "remoteNetworkConfig", "computeConfig", "storageConfig",
                       "controlPlaneScalingConfig"):
            if params.get(member) is not None:
                spec[member] = params[member]
        cluster = _Cluster(
            name=name,
            arn=f"arn:{self.partition}:eks:{self.region}:{self.account_id}:cluster/{name}",
            created_at=now,
            spec=spec,
            version=version,
            authentication_mode=mode,
            bootstrap_admin=bootstrap,
            creator_arn=self._caller_arn(),
            endpoint=endpoint,
            deletion_protection=bool(params.get("deletionProtection") or False),
        )
        self._clusters[name] = cluster
        if bootstrap and mode in _API_MODES:
            self._bootstrap_creator_entry(cluster, now)
        failure = self._take_failure(name)
        seconds: float | None = self.durations.cluster_create(name)
        for index, (wanted, stall) in enumerate(self._stall_next):
            if wanted is None or wanted == name:
                del self._stall_next[index]
                seconds = stall
                break
        if seconds is None:
            self._stalled_clusters[name] = (cluster, failure)
        else:
            due = now + timedelta(seconds=seconds)
            self._at(due, lambda t: self._finish_cluster_create(cluster, failure, t))
        return {"cluster": self._describe_cluster(cluster)}

    def _vpc_of(self, name: str, subnets: list[str]) -> str:
        if self._subnet_vpc is None:
            return f"vpc-{_hex('vpc:' + ','.join(sorted(subnets)), 17)}"
        vpcs = set()
        for subnet in subnets:
            vpc = self._subnet_vpc(subnet)
            if vpc is None:
                raise _invalid_parameter(f"The subnet ID '{subnet}' does not exist",
                                         clusterName=name)
            vpcs.add(vpc)
        if len(vpcs) > 1:
            raise _invalid_parameter("Subnets must all be in the same VPC", clusterName=name)
        return vpcs.pop()

    def _check_zones(self, name: str, subnets: list[str]) -> None:
        """UnsupportedAvailabilityZoneException, as EKS answers it, for a subnet in one of the
        `unsupported_zones`; ``validZones`` are the Region's other zones."""
        if self._subnet_zone is None or not self.unsupported_zones:
            return
        zones = [self._subnet_zone(subnet) for subnet in subnets]
        refused = sorted({z for z in zones if z in self.unsupported_zones})
        if refused:
            region_zones = self._region_zones() if self._region_zones else []
            valid = [z for z in sorted(region_zones) if z not in self.unsupported_zones]
            raise _unsupported_zone(name, refused[0], valid)

    def _take_failure(self, name: str) -> str | None:
        for index, (wanted, message) in enumerate(self._fail_next):
            if wanted is None or wanted == name:
                del self._fail_next[index]
                return message
        return None

    def _finish_cluster_create(self, cluster: _Cluster, failure: str | None, _t: datetime) -> None:
        if self._clusters.get(cluster.name) is not cluster or cluster.status != "CREATING":
            return
        if failure is None:
            cluster.status = "ACTIVE"
        else:
            cluster.status = "FAILED"
            cluster.failure = {"code": "InternalFailure", "message": failure, "resourceIds": []}

    def _bootstrap_creator_entry(self, cluster: _Cluster, now: datetime) -> None:
        creator = cluster.creator_arn
        role = _caller_principal(creator)
        principal = role[0] if role else creator
        if principal in cluster.access_entries or _iam_principal(principal) is None:
            return
        entry = self._new_entry(cluster, principal, "STANDARD", None, [], {}, now)
        admin = access_policy_arn(self.partition, CLUSTER_ADMIN_POLICY)
        entry.policies[admin] = {
            "policyArn": admin, "accessScope": {"type": "cluster"},
            "associatedAt": now, "modifiedAt": now,
        }

    @_locked
    def describe_cluster(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        return {"cluster": self._describe_cluster(self._cluster(params["name"]))}

    @_locked
    def list_clusters(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        names, token = _page(sorted(self._clusters), params.get("maxResults"),
                             params.get("nextToken"))
        out: dict[str, Any] = {"clusters": names}
        if token:
            out["nextToken"] = token
        return out

    @_locked
    def delete_cluster(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["name"])
        if cluster.deletion_protection:
            raise _invalid_request(
                f"Cluster {cluster.name} has deletion protection enabled; disable it first.",
                clusterName=cluster.name,
            )
        if cluster.status in ("CREATING", "UPDATING", "DELETING", "PENDING"):
            raise _in_use(
                f"Cluster {cluster.name} is in {cluster.status} state and cannot be deleted.",
                clusterName=cluster.name,
            )
        cluster.status = "DELETING"
        for addon in cluster.addons.values():
            addon.status = "DELETING"
        due = now + timedelta(seconds=self.durations.cluster_delete)
        self._at(due, lambda _t: self._finish_cluster_delete(cluster))
        return {"cluster": self._describe_cluster(cluster)}

    def _finish_cluster_delete(self, cluster: _Cluster) -> None:
        if self._clusters.get(cluster.name) is cluster:
            del self._clusters[cluster.name]
            self._endpoints.pop(cluster.name, None)
            self._certificate_authorities.pop(cluster.name, None)

    @_locked
    def update_cluster_config(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Only accessConfig.authenticationMode changes are emulated."""
        now = self._now()
        cluster = self._cluster(params["name"])
        others = sorted(k for k, v in params.items()
                        if k not in ("name", "clientRequestToken", "accessConfig")
                        and v is not None)
        if others:
            raise _invalid_parameter(
                f"The local EKS emulator only supports accessConfig updates, not {others}",
                clusterName=cluster.name,
            )
        mode = (params.get("accessConfig") or {}).get("authenticationMode")
        if not mode:
            raise _invalid_parameter("No changes were specified in the update request.",
                                     clusterName=cluster.name)
        if cluster.status != "ACTIVE":
            raise _in_use(f"Cluster {cluster.name} is in {cluster.status} state; "
                          "an update is only possible while it is ACTIVE.",
                          clusterName=cluster.name)
        if (cluster.authentication_mode, mode) not in _MODE_TRANSITIONS:
            raise _invalid_parameter(
                f"Unsupported authentication mode update from {cluster.authentication_mode} "
                f"to {mode}", clusterName=cluster.name)
        update = _Update(
            id=_uuid(f"update:{cluster.arn}:{len(cluster.updates)}:{now.isoformat()}"),
            type="AccessConfigUpdate",
            params=[{"type": "AuthenticationMode", "value": mode}],
            created_at=now,
        )
        cluster.updates[update.id] = update
        cluster.status = "UPDATING"

        def finish(t: datetime) -> None:
            if self._clusters.get(cluster.name) is not cluster:
                return
            previous = cluster.authentication_mode
            cluster.authentication_mode = mode
            if previous == "CONFIG_MAP" and cluster.bootstrap_admin:
                self._bootstrap_creator_entry(cluster, t)
            update.status = "Successful"
            if cluster.status == "UPDATING":
                cluster.status = "ACTIVE"

        self._at(now + timedelta(seconds=self.durations.cluster_update), finish)
        return {"update": update.describe()}

    @_locked
    def describe_update(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["name"])
        update = cluster.updates.get(params["updateId"])
        if update is None or update.addon_name != params.get("addonName"):
            raise _not_found(f"No update found for ID: {params['updateId']}",
                             clusterName=cluster.name)
        return {"update": update.describe()}

    @_locked
    def list_updates(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["name"])
        addon = params.get("addonName")
        if addon is not None:
            self._addon(cluster, addon)
        ids = [u.id for u in sorted(cluster.updates.values(), key=lambda u: u.created_at)
               if u.addon_name == addon]
        page, token = _page(ids, params.get("maxResults"), params.get("nextToken"))
        out: dict[str, Any] = {"updateIds": page}
        if token:
            out["nextToken"] = token
        return out

    def _cluster(self, name: str) -> _Cluster:
        cluster = self._clusters.get(name)
        if cluster is None:
            raise _not_found(f"No cluster found for name: {name}.", clusterName=name)
        return cluster

    def _describe_cluster(self, cluster: _Cluster) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": cluster.name,
            "arn": cluster.arn,
            "createdAt": cluster.created_at,
            "version": cluster.version,
            "status": cluster.status,
        }
        spec = json.loads(json.dumps(cluster.spec))  # a deep copy (all JSON data)
        if cluster.status in ("CREATING", "FAILED"):
            # AWS fills the endpoint, CA and OIDC issuer in only once the control plane is up.
            spec.pop("certificateAuthority")
            spec.pop("identity")
        else:
            out["endpoint"] = self._endpoints.get(cluster.name, cluster.endpoint)
            served_ca = self._certificate_authorities.get(cluster.name)
            if served_ca is not None:
                spec["certificateAuthority"] = {"data": served_ca}
        out.update(spec)
        out["accessConfig"] = {
            "bootstrapClusterCreatorAdminPermissions": cluster.bootstrap_admin,
            "authenticationMode": cluster.authentication_mode,
        }
        out["deletionProtection"] = cluster.deletion_protection
        out["health"] = {"issues": [dict(cluster.failure)] if cluster.failure else []}
        return out

    # ------------------------------------------------------------------ add-ons

    @_locked
    def create_addon(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["clusterName"])
        name: str = params["addonName"]
        if cluster.status != "ACTIVE":
            raise _invalid_request(
                f"Cluster {cluster.name} is in {cluster.status} state; add-ons can only be "
                "created on an ACTIVE cluster.", clusterName=cluster.name, addonName=name)
        spec = self.catalog.get(name)
        if spec is None or not self.catalog.versions_for(name, cluster.version):
            raise _invalid_parameter(
                f"Addon {name} specified is not supported in {cluster.version} kubernetes version",
                clusterName=cluster.name, addonName=name)
        if name in cluster.addons:
            raise _in_use("Addon already exists.", clusterName=cluster.name, addonName=name)
        version = params.get("addonVersion") or self.catalog.default_version(name, cluster.version)
        assert version is not None
        self._check_version(cluster, name, version)
        namespace = (params.get("namespaceConfig") or {}).get("namespace")
        addon = _Addon(
            name=name,
            cluster=cluster,
            arn=(f"arn:{self.partition}:eks:{self.region}:{self.account_id}:addon/{cluster.name}/{name}/"
                 f"{_uuid(f'addon:{cluster.arn}:{name}:{now.isoformat()}')}"),
            version=version,
            created_at=now,
            modified_at=now,
            service_account_role_arn=params.get("serviceAccountRoleArn"),
            configuration_values=params.get("configurationValues"),
            pod_identity_associations=[
                f"arn:{self.partition}:eks:{self.region}:{self.account_id}:podidentityassociation/"
                f"{cluster.name}/a-{_hex(json.dumps(p, sort_keys=True), 17)}"
                for p in params.get("podIdentityAssociations") or []
            ],
            tags=dict(params.get("tags") or {}),
            namespace=namespace or spec.default_namespace,
        )
        cluster.addons[name] = addon
        seconds: float | None = self.durations.addon_create
        if (cluster.name, name) in self._pending_addon_stalls:
            seconds = self._pending_addon_stalls.pop((cluster.name, name))
        if seconds is None:
            self._stalled_addons[(cluster.name, name)] = addon
        else:
            due = now + timedelta(seconds=seconds)
            self._at(due, lambda t: self._finish_addon_create(addon, t))
        return {"addon": self._describe_addon(addon)}

    def _check_version(self, cluster: _Cluster, name: str, version: str) -> None:
        if version not in {v.version for v in self.catalog.versions_for(name, cluster.version)}:
            raise _invalid_parameter(
                f"Addon version specified is not supported for {name} on Kubernetes "
                f"{cluster.version}", clusterName=cluster.name, addonName=name)

    def _live(self, addon: _Addon) -> bool:
        cluster = addon.cluster
        return (self._clusters.get(cluster.name) is cluster
                and cluster.addons.get(addon.name) is addon)

    def _finish_addon_create(self, addon: _Addon, now: datetime) -> None:
        if not self._live(addon) or addon.status != "CREATING":
            return
        pending = self._pending_degrade.pop((addon.cluster.name, addon.name), None)
        if pending is not None:
            addon.injected_issues = [pending]
        addon.prerequisite_issues = self._prerequisite_issues(addon)
        addon.modified_at = now
        if addon.prerequisite_issues and self.missing_prerequisite_status == "CREATE_FAILED":
            addon.status = "CREATE_FAILED"
            self._addon_event(ADDON_CREATION_FAILED, addon, now)
        elif addon.issues():
            addon.status = "DEGRADED"
            self._addon_event(ADDON_HEALTH_DEGRADED, addon, now)
        else:
            addon.status = "ACTIVE"
            self._addon_event(ADDON_CREATION_SUCCEEDED, addon, now)
        self._reevaluate_cluster(addon.cluster, now)

    def _prerequisite_issues(self, addon: _Addon) -> list[dict[str, Any]]:
        spec = self.catalog.get(addon.name)
        issues = []
        for prerequisite in spec.prerequisites if spec else ():
            other = addon.cluster.addons.get(prerequisite)
            if other is not None and other.status in _INSTALLED:
                continue
            issues.append({
                "code": _PREREQUISITE_ISSUE_CODE.get(prerequisite,
                                                     _DEFAULT_PREREQUISITE_ISSUE_CODE),
                "message": f"{addon.name} requires the {prerequisite} add-on, which is not "
                           "installed on the cluster. Install it to resolve this issue.",
                "resourceIds": [prerequisite],
            })
        return issues

    def _reevaluate(self, addon: _Addon, now: datetime) -> None:
        """Recompute an installed add-on's health; move ACTIVE <-> DEGRADED with an event."""
        if addon.status not in ("ACTIVE", "DEGRADED"):
            return
        addon.prerequisite_issues = self._prerequisite_issues(addon)
        unhealthy = bool(addon.issues())
        if addon.status == "ACTIVE" and unhealthy:
            addon.status = "DEGRADED"
            addon.modified_at = now
            self._addon_event(ADDON_HEALTH_DEGRADED, addon, now)
        elif addon.status == "DEGRADED" and not unhealthy:
            addon.status = "ACTIVE"
            addon.modified_at = now
            self._addon_event(ADDON_HEALTH_RESTORED, addon, now)

    def _reevaluate_cluster(self, cluster: _Cluster, now: datetime) -> None:
        for addon in list(cluster.addons.values()):
            self._reevaluate(addon, now)

    @_locked
    def describe_addon(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["clusterName"])
        return {"addon": self._describe_addon(self._addon(cluster, params["addonName"]))}

    @_locked
    def list_addons(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["clusterName"])
        names, token = _page(sorted(cluster.addons), params.get("maxResults"),
                             params.get("nextToken"))
        out: dict[str, Any] = {"addons": names}
        if token:
            out["nextToken"] = token
        return out

    @_locked
    def delete_addon(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["clusterName"])
        addon = self._addon(cluster, params["addonName"])
        if addon.status == "DELETING":
            return {"addon": self._describe_addon(addon)}
        addon.status = "DELETING"
        addon.modified_at = now

        def finish(t: datetime) -> None:
            if not self._live(addon) or addon.status != "DELETING":
                return
            del cluster.addons[addon.name]
            self._addon_event(ADDON_DELETION_SUCCEEDED, addon, t, status="DELETED")
            self._reevaluate_cluster(cluster, t)

        self._at(now + timedelta(seconds=self.durations.addon_delete), finish)
        return {"addon": self._describe_addon(addon)}

    @_locked
    def update_addon(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["clusterName"])
        addon = self._addon(cluster, params["addonName"])
        if addon.status in ("CREATING", "UPDATING", "DELETING"):
            raise _in_use(f"Addon {addon.name} is in {addon.status} state and cannot be updated.",
                          clusterName=cluster.name, addonName=addon.name)
        if cluster.status not in ("ACTIVE", "UPDATING"):
            raise _invalid_request(f"Cluster {cluster.name} is in {cluster.status} state.",
                                   clusterName=cluster.name, addonName=addon.name)
        version = params.get("addonVersion")
        if version is not None:
            self._check_version(cluster, addon.name, version)
        update_params = []
        for member, param_type in (
            ("addonVersion", "AddonVersion"), ("serviceAccountRoleArn", "ServiceAccountRoleArn"),
            ("resolveConflicts", "ResolveConflicts"),
            ("configurationValues", "ConfigurationValues"),
        ):
            if params.get(member) is not None:
                update_params.append({"type": param_type, "value": str(params[member])})
        if params.get("podIdentityAssociations") is not None:
            update_params.append({"type": "PodIdentityAssociations",
                                  "value": json.dumps(params["podIdentityAssociations"])})
        update = _Update(
            id=_uuid(f"update:{addon.arn}:{len(cluster.updates)}:{now.isoformat()}"),
            type="AddonUpdate", params=update_params, created_at=now, addon_name=addon.name,
        )
        cluster.updates[update.id] = update
        addon.status = "UPDATING"
        addon.modified_at = now

        def finish(t: datetime) -> None:
            if not self._live(addon) or addon.status != "UPDATING":
                update.status = "Cancelled" if update.status == "InProgress" else update.status
                return
            if version is not None:
                addon.version = version
            if params.get("serviceAccountRoleArn") is not None:
                addon.service_account_role_arn = params["serviceAccountRoleArn"]
            if params.get("configurationValues") is not None:
                addon.configuration_values = params["configurationValues"]
            update.status = "Successful"
            addon.modified_at = t
            addon.prerequisite_issues = self._prerequisite_issues(addon)
            addon.status = "DEGRADED" if addon.issues() else "ACTIVE"
            self._addon_event(ADDON_UPDATE_SUCCEEDED, addon, t)
            self._reevaluate_cluster(cluster, t)

        self._at(now + timedelta(seconds=self.durations.addon_update), finish)
        return {"update": update.describe()}

    @_locked
    def describe_addon_versions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        k8s = params.get("kubernetesVersion")
        wanted_name = params.get("addonName")
        types, publishers, owners = (set(params.get(k) or ()) for k in
                                     ("types", "publishers", "owners"))
        infos = []
        for spec in self.catalog.addons:
            if wanted_name is not None and spec.name != wanted_name:
                continue
            if ((types and spec.type not in types)
                    or (publishers and spec.publisher not in publishers)
                    or (owners and spec.owner not in owners)):
                continue
            versions = []
            for v in spec.versions:
                k8s_versions = [x for x in v.kubernetes_versions if k8s is None or x == k8s]
                if not k8s_versions:
                    continue
                versions.append({
                    "addonVersion": v.version,
                    "architecture": list(v.architectures),
                    "computeTypes": list(v.compute_types),
                    "compatibilities": [{
                        "clusterVersion": x,
                        "platformVersions": ["*"],
                        "defaultVersion": x in v.default_for,
                    } for x in k8s_versions],
                    "requiresConfiguration": v.requires_configuration,
                    "requiresIamPermissions": v.requires_iam_permissions,
                })
            if not versions:
                continue
            infos.append({
                "addonName": spec.name, "type": spec.type, "addonVersions": versions,
                "publisher": spec.publisher, "owner": spec.owner,
                "defaultNamespace": spec.default_namespace,
            })
        page, token = _page(infos, params.get("maxResults"), params.get("nextToken"))
        out: dict[str, Any] = {"addons": page}
        if token:
            out["nextToken"] = token
        return out

    def _addon(self, cluster: _Cluster, name: str) -> _Addon:
        addon = cluster.addons.get(name)
        if addon is None:
            raise _not_found(f"No addon: {name} found in cluster: {cluster.name}",
                             clusterName=cluster.name, addonName=name)
        return addon

    def _describe_addon(self, addon: _Addon, status: str | None = None) -> dict[str, Any]:
        spec = self.catalog.get(addon.name)
        out: dict[str, Any] = {
            "addonName": addon.name,
            "clusterName": addon.cluster.name,
            "status": status or addon.status,
            "addonVersion": addon.version,
            "health": {"issues": addon.issues()},
            "addonArn": addon.arn,
            "createdAt": addon.created_at,
            "modifiedAt": addon.modified_at,
            "tags": dict(addon.tags),
            "podIdentityAssociations": list(addon.pod_identity_associations),
        }
        if spec is not None:
            out["publisher"] = spec.publisher
            out["owner"] = spec.owner
        if addon.service_account_role_arn:
            out["serviceAccountRoleArn"] = addon.service_account_role_arn
        if addon.configuration_values is not None:
            out["configurationValues"] = addon.configuration_values
        if addon.namespace:
            out["namespaceConfig"] = {"namespace": addon.namespace}
        return out

    def _addon_event(
        self, detail_type: str, addon: _Addon, at: datetime, status: str | None = None
    ) -> None:
        detail: dict[str, Any] = {
            "clusterName": addon.cluster.name,
            "clusterArn": addon.cluster.arn,
            "addonName": addon.name,
            "addonArn": addon.arn,
            "addonVersion": addon.version,
            "status": status or addon.status,
            "health": {"issues": addon.issues()},
            "eventTime": at.isoformat(),
        }
        self._outbox.append({"source": SOURCE, "detail_type": detail_type, "detail": detail,
                             "resources": [addon.arn, addon.cluster.arn]})

    # ------------------------------------------------------------------ access entries

    def _access_cluster(self, name: str) -> _Cluster:
        cluster = self._cluster(name)
        if cluster.authentication_mode not in _API_MODES:
            raise _invalid_request(
                "The cluster's authentication mode must be set to one of [API, "
                "API_AND_CONFIG_MAP] to perform this operation.", clusterName=cluster.name)
        return cluster

    def _entry(self, cluster: _Cluster, principal_arn: str) -> _AccessEntry:
        entry = cluster.access_entries.get(principal_arn)
        if entry is None:
            raise _not_found(
                "The specified principalArn could not be found. You can view your available "
                "access entries with 'list-access-entries'.", clusterName=cluster.name)
        return entry

    def _new_entry(
        self, cluster: _Cluster, principal_arn: str, entry_type: str, username: str | None,
        groups: list[str], tags: dict[str, str], now: datetime,
    ) -> _AccessEntry:
        principal = _iam_principal(principal_arn)
        assert principal is not None
        account, kind, pname = principal
        entry = _AccessEntry(
            principal_arn=principal_arn,
            arn=(f"arn:{self.partition}:eks:{self.region}:{self.account_id}:access-entry/{cluster.name}/"
                 f"{kind}/{account}/{pname}/{_uuid(f'entry:{cluster.arn}:{principal_arn}')}"),
            type=entry_type,
            username=username or _default_username(principal_arn, entry_type),
            groups=list(groups),
            tags=dict(tags),
            created_at=now,
            modified_at=now,
        )
        cluster.access_entries[principal_arn] = entry
        return entry

    @_locked
    def create_access_entry(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._access_cluster(params["clusterName"])
        if cluster.status in ("DELETING", "FAILED"):
            raise _invalid_request(f"Cluster {cluster.name} is in {cluster.status} state.",
                                   clusterName=cluster.name)
        principal_arn: str = params["principalArn"]
        entry_type = params.get("type") or "STANDARD"
        if entry_type not in ACCESS_ENTRY_TYPES:
            raise _invalid_parameter(
                f"The type {entry_type} is invalid. Valid values are {list(ACCESS_ENTRY_TYPES)}",
                clusterName=cluster.name)
        principal = _iam_principal(principal_arn)
        if principal is None:
            raise _invalid_parameter(
                f"The specified principalArn is invalid: {principal_arn}. It must be the ARN of "
                "an IAM role or user (STS session principals are not supported).",
                clusterName=cluster.name)
        if entry_type != "STANDARD":
            if principal[1] != "role":
                raise _invalid_parameter(
                    f"Access entries of type {entry_type} require an IAM role principalArn.",
                    clusterName=cluster.name)
            if params.get("kubernetesGroups") or params.get("username"):
                raise _invalid_parameter(
                    f"kubernetesGroups and username cannot be specified for access entries of "
                    f"type {entry_type}.", clusterName=cluster.name)
        username = params.get("username")
        if username is not None and (username.startswith(("system:", "eks:", "aws:", "amazon:"))
                                     or username == "kubernetes-admin"):
            raise _invalid_parameter(f"The username {username} is reserved.",
                                     clusterName=cluster.name)
        for group in params.get("kubernetesGroups") or []:
            if group.startswith("system:") or group.startswith("eks:"):
                raise _invalid_parameter(f"The Kubernetes group {group} is reserved.",
                                         clusterName=cluster.name)
        if principal_arn in cluster.access_entries:
            raise _in_use("The specified access entry resource is already in use on this "
                          "cluster.", clusterName=cluster.name)
        entry = self._new_entry(cluster, principal_arn, entry_type, username,
                                list(params.get("kubernetesGroups") or []),
                                dict(params.get("tags") or {}), now)
        return {"accessEntry": self._describe_entry(cluster, entry)}

    @_locked
    def describe_access_entry(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._access_cluster(params["clusterName"])
        return {"accessEntry": self._describe_entry(
            cluster, self._entry(cluster, params["principalArn"]))}

    @_locked
    def list_access_entries(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._access_cluster(params["clusterName"])
        policy = params.get("associatedPolicyArn")
        arns = sorted(arn for arn, entry in cluster.access_entries.items()
                      if policy is None or policy in entry.policies)
        page, token = _page(arns, params.get("maxResults"), params.get("nextToken"))
        out: dict[str, Any] = {"accessEntries": page}
        if token:
            out["nextToken"] = token
        return out

    @_locked
    def delete_access_entry(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._access_cluster(params["clusterName"])
        entry = self._entry(cluster, params["principalArn"])
        del cluster.access_entries[entry.principal_arn]
        return {}

    @_locked
    def associate_access_policy(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._access_cluster(params["clusterName"])
        entry = self._entry(cluster, params["principalArn"])
        policy_arn: str = params["policyArn"]
        if self._policy(policy_arn) is None:
            raise _invalid_parameter(f"The specified policyArn {policy_arn} is invalid.",
                                     clusterName=cluster.name)
        if entry.type != "STANDARD":
            raise _invalid_request(
                f"Access policies can only be associated with STANDARD access entries, not "
                f"{entry.type}.", clusterName=cluster.name)
        scope = dict(params["accessScope"])
        scope_type = scope.get("type") or "cluster"
        namespaces = list(scope.get("namespaces") or [])
        if scope_type == "namespace" and not namespaces:
            raise _invalid_parameter("At least one namespace is required for accessScope type "
                                     "namespace.", clusterName=cluster.name)
        if scope_type == "cluster" and namespaces:
            raise _invalid_parameter("Namespaces cannot be specified for accessScope type "
                                     "cluster.", clusterName=cluster.name)
        access_scope: dict[str, Any] = {"type": scope_type}
        if namespaces:
            access_scope["namespaces"] = namespaces
        existing = entry.policies.get(policy_arn)
        entry.policies[policy_arn] = {
            "policyArn": policy_arn, "accessScope": access_scope,
            "associatedAt": existing["associatedAt"] if existing else now, "modifiedAt": now,
        }
        entry.modified_at = now
        return {"clusterName": cluster.name, "principalArn": entry.principal_arn,
                "associatedAccessPolicy": self._copy_policy(entry.policies[policy_arn])}

    @_locked
    def disassociate_access_policy(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._access_cluster(params["clusterName"])
        entry = self._entry(cluster, params["principalArn"])
        if entry.policies.pop(params["policyArn"], None) is None:
            raise _not_found(f"The policy {params['policyArn']} is not associated with "
                             f"{entry.principal_arn}.", clusterName=cluster.name)
        entry.modified_at = now
        return {}

    @_locked
    def list_associated_access_policies(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._access_cluster(params["clusterName"])
        entry = self._entry(cluster, params["principalArn"])
        policies = [self._copy_policy(entry.policies[arn]) for arn in sorted(entry.policies)]
        page, token = _page(policies, params.get("maxResults"), params.get("nextToken"))
        out: dict[str, Any] = {"clusterName": cluster.name, "principalArn": entry.principal_arn,
                               "associatedAccessPolicies": page}
        if token:
            out["nextToken"] = token
        return out

    @_locked
    def list_access_policies(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        policies = [{"name": p.name, "arn": p.arn(self.partition)} for p in ACCESS_POLICIES]
        page, token = _page(policies, params.get("maxResults"), params.get("nextToken"))
        out: dict[str, Any] = {"accessPolicies": page}
        if token:
            out["nextToken"] = token
        return out

    def _policy(self, arn: str) -> AccessPolicy | None:
        """The access policy `arn` names in this emulator's partition (another partition's
        ARN names none, as EKS answers there)."""
        return next((p for p in ACCESS_POLICIES if p.arn(self.partition) == arn), None)

    @staticmethod
    def _copy_policy(policy: dict[str, Any]) -> dict[str, Any]:
        scope = dict(policy["accessScope"])
        if "namespaces" in scope:
            scope["namespaces"] = list(scope["namespaces"])
        return {**policy, "accessScope": scope}

    def _describe_entry(self, cluster: _Cluster, entry: _AccessEntry) -> dict[str, Any]:
        return {
            "clusterName": cluster.name,
            "principalArn": entry.principal_arn,
            "kubernetesGroups": list(entry.groups),
            "accessEntryArn": entry.arn,
            "createdAt": entry.created_at,
            "modifiedAt": entry.modified_at,
            "tags": dict(entry.tags),
            "username": entry.username,
            "type": entry.type,
        }

    # ------------------------------------------------------------------ for the Kubernetes API

    @_locked
    def authorize(self, cluster_name: str, principal_arn: str) -> AccessDecision | None:
        """Who ``principal_arn`` (an IAM or STS assumed-role ARN) is in the cluster, or None.

        None when the cluster does not exist, is not ACTIVE/UPDATING, or the principal has no
        access entry. In CONFIG_MAP mode (no access entries) only the cluster creator gets in,
        as ``system:masters`` (what bootstrapClusterCreatorAdminPermissions grants there).
        """
        self._advance()
        cluster = self._clusters.get(cluster_name)
        if cluster is None or cluster.status not in ("ACTIVE", "UPDATING"):
            return None
        session = _caller_principal(principal_arn)
        session_name = session[1] if session else None
        entry = cluster.access_entries.get(principal_arn)
        if entry is None and session is not None and cluster.authentication_mode in _API_MODES:
            entry = self._entry_for_role(cluster, session[0])
        if entry is None or cluster.authentication_mode not in _API_MODES:
            creator = _caller_principal(cluster.creator_arn)
            creator_arn = creator[0] if creator else cluster.creator_arn
            caller = session[0] if session else principal_arn
            if (cluster.authentication_mode != "API" and cluster.bootstrap_admin
                    and _same_principal(caller, creator_arn)):
                return AccessDecision(principal_arn, "kubernetes-admin", ("system:masters",), (),
                                      "CONFIG_MAP")
            return None
        username = entry.username
        if session_name is not None:
            username = username.replace("{{SessionName}}", session_name)
        groups = list(entry.groups)
        if entry.type != "STANDARD":
            groups.append("system:nodes")
        grants = tuple(
            PolicyGrant(
                policy_arn=arn,
                kubernetes_role=(p.kubernetes_role if (p := self._policy(arn)) else None),
                scope_type=assoc["accessScope"]["type"],
                namespaces=tuple(assoc["accessScope"].get("namespaces") or ()),
            )
            for arn, assoc in sorted(entry.policies.items())
        )
        return AccessDecision(entry.principal_arn, username, tuple(groups), grants, entry.type)

    def _entry_for_role(self, cluster: _Cluster, role_arn: str) -> _AccessEntry | None:
        for arn, entry in cluster.access_entries.items():
            if _same_principal(arn, role_arn):
                return entry
        return None

    # ------------------------------------------------------------------ introspection

    @_locked
    def cluster_names(self) -> list[str]:
        self._advance()
        return sorted(self._clusters)

    @_locked
    def addon_names(self, cluster_name: str) -> list[str]:
        self._advance()
        return sorted(self._cluster(cluster_name).addons)

    # ------------------------------------------------------------------ authorisation facts
    # What IAM reads of a resource to authorise a request on it: its ARN and tags (None: it
    # does not exist, and IAM authorises the ARN the request would have named).

    @_locked
    def cluster_facts(self, name: str) -> tuple[str, dict[str, str]] | None:
        cluster = self._clusters.get(name)
        if cluster is None:
            return None
        return cluster.arn, dict(cluster.spec.get("tags") or {})

    @_locked
    def addon_facts(self, cluster_name: str, addon_name: str
                    ) -> tuple[str, dict[str, str]] | None:
        cluster = self._clusters.get(cluster_name)
        addon = cluster.addons.get(addon_name) if cluster is not None else None
        return (addon.arn, dict(addon.tags)) if addon is not None else None

    @_locked
    def access_entry_facts(self, cluster_name: str, principal_arn: str
                           ) -> tuple[str, dict[str, str]] | None:
        cluster = self._clusters.get(cluster_name)
        entry = cluster.access_entries.get(principal_arn) if cluster is not None else None
        return (entry.arn, dict(entry.tags)) if entry is not None else None


def _same_principal(a: str, b: str) -> bool:
    """Same IAM principal, ignoring the role path (session ARNs do not carry it)."""
    pa, pb = _iam_principal(a), _iam_principal(b)
    return pa is not None and pa == pb


def emitted_detail_types() -> Iterable[str]:
    """Every detail-type the emulator can emit (all under source ``aws.eks``)."""
    return (ADDON_CREATION_SUCCEEDED, ADDON_CREATION_FAILED, ADDON_UPDATE_SUCCEEDED,
            ADDON_DELETION_SUCCEEDED, ADDON_HEALTH_DEGRADED, ADDON_HEALTH_RESTORED)
