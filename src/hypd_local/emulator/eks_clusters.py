"""EKS clusters: creation (VPC and zone checks, the creator's access), description, deletion,
authentication-mode updates and their update records."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from hypd_local.emulator.eks_access import API_MODES, AccessEntries
from hypd_local.emulator.eks_addons import Addons
from hypd_local.emulator.eks_catalog import CLUSTER_ADMIN_POLICY, access_policy_arn
from hypd_local.emulator.eks_model import PAGES as _PAGES
from hypd_local.emulator.eks_model import (
    _caller_principal,
    _Cluster,
    _hex,
    _iam_principal,
    _in_use,
    _invalid_parameter,
    _invalid_request,
    _not_found,
    _unsupported_zone,
    _Update,
    _uuid,
)
from hypd_local.emulator.interfaces import Interface
from hypd_local.emulator.service import operation
from hypd_local.partitions import dns_suffix

# The only authentication-mode changes AWS allows (one way, one step at a time).
_MODE_TRANSITIONS = {("CONFIG_MAP", "API_AND_CONFIG_MAP"), ("API_AND_CONFIG_MAP", "API")}
CLUSTER_ISSUE_CODES = (
    "AccessDenied", "ClusterUnreachable", "ConfigurationConflict", "InternalFailure",
    "ResourceLimitExceeded", "ResourceNotFound", "IamRoleNotFound", "VpcNotFound",
    "InsufficientFreeAddresses", "Ec2ServiceNotSubscribed", "Ec2SubnetNotFound",
    "Ec2SecurityGroupNotFound", "KmsGrantRevoked", "KmsKeyNotFound", "KmsKeyMarkedForDeletion",
    "KmsKeyDisabled", "StsRegionalEndpointDisabled", "UnsupportedVersion", "Other",
)

_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]


class Clusters(AccessEntries, Addons):
    """CreateCluster ... ListUpdates."""

    @operation
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
            arn=self._arn(f"cluster/{name}"),
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
        if bootstrap and mode in API_MODES:
            self._bootstrap_creator_entry(cluster, now)
        failure = self._fail_next.take(name, None)
        seconds = self._stall_next.take(name, self.durations.cluster_create(name))
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

    def _finish_cluster_create(self, cluster: _Cluster, failure: str | None, _t: datetime
                               ) -> None:
        if self._clusters.get(cluster.name) is not cluster or cluster.status != "CREATING":
            return
        if failure is None:
            cluster.status = "ACTIVE"
            cluster.active_since = _t
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

    @operation
    def describe_cluster(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        return {"cluster": self._describe_cluster(self._cluster(params["name"]))}

    @operation
    def list_clusters(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        return _PAGES.listing("clusters", sorted(self._clusters), params)

    def delete_cluster(self, params: Mapping[str, Any]) -> dict[str, Any]:
        # Who uses the cluster is asked before the EKS lock is taken: HyperPod asks EKS
        # under its own lock (CreateCluster), so the other order could deadlock.
        users = self._hyperpod_users(self._arn(f"cluster/{params['name']}"))
        return self._delete_cluster(params, users)

    @operation
    def _delete_cluster(self, params: Mapping[str, Any], hyperpod: list[str]) -> dict[str, Any]:
        """DeleteCluster. Refused (ResourceInUseException) while a HyperPod cluster, even one
        Deleting, is orchestrated by it: HyperPod's documentation says to delete HyperPod
        first; the message is the emulator's, in EKS's words for node groups ("Cluster has
        nodegroups attached")."""
        now = self._now()
        cluster = self._cluster(params["name"])
        if hyperpod:
            raise _in_use(
                f"Cluster has SageMaker HyperPod clusters attached: {', '.join(hyperpod)}. "
                "Delete them (and wait until they are gone) first.",
                clusterName=cluster.name,
            )
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
        self._at(due, lambda t: self._finish_cluster_delete(cluster, t))
        return {"cluster": self._describe_cluster(cluster)}

    def _finish_cluster_delete(self, cluster: _Cluster, t: datetime) -> None:
        if self._clusters.get(cluster.name) is not cluster:
            return
        del self._clusters[cluster.name]
        self._endpoints.pop(cluster.name, None)
        self._certificate_authorities.pop(cluster.name, None)
        cluster.deleted_at = t
        if cluster.active_since is not None:
            # its interfaces stay a while; the timer makes their end a scheduled change
            self._lingering.append(cluster)
            self._at(t + timedelta(seconds=self.durations.eni_linger),
                     lambda _t: self._lingering.remove(cluster))

    def network_interfaces(self) -> list[Interface]:
        """The control plane's two interfaces ("Amazon EKS <name>", the description EKS gives
        them) of every cluster that came up, in its first two subnets with its security
        groups, until ``eni_linger`` after it is deleted."""
        with self._lock:
            self._advance()
            clusters = [c for c in self._clusters.values() if c.active_since is not None]
            found: list[Interface] = []
            for cluster in clusters + self._lingering:
                vpc = cluster.spec["resourcesVpcConfig"]
                subnets: list[str] = vpc["subnetIds"]
                for index in range(2):
                    found.append(Interface(
                        f"eks:{cluster.arn}:{cluster.created_at.isoformat()}:{index}",
                        subnets[index % len(subnets)], tuple(vpc["securityGroupIds"]),
                        f"Amazon EKS {cluster.name}"))
            return found

    @operation
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

    @operation
    def describe_update(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["name"])
        update = cluster.updates.get(params["updateId"])
        if update is None or update.addon_name != params.get("addonName"):
            raise _not_found(f"No update found for ID: {params['updateId']}",
                             clusterName=cluster.name)
        return {"update": update.describe()}

    @operation
    def list_updates(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["name"])
        addon = params.get("addonName")
        if addon is not None:
            self._addon(cluster, addon)
        ids = [u.id for u in sorted(cluster.updates.values(), key=lambda u: u.created_at)
               if u.addon_name == addon]
        return _PAGES.listing("updateIds", ids, params)

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
