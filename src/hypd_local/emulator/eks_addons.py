"""EKS add-ons: their life cycles, prerequisites, health, configuration and events.

CreateAddon and UpdateAddon check ``configurationValues`` against the version's schema (the
one DescribeAddonConfiguration answers, `eks_config`) and ``podIdentityAssociations`` against
what the version takes (`eks_pod_identity`); a version that requires configuration is refused
without it. An add-on whose `AddonSpec.failing_prerequisites` are not installed when its
creation ends is CREATE_FAILED, each missing one a health issue with the add-on's own message
(the inference operator: ``S3 CSI driver not installed (missing CSIDriver s3.csi.aws.com)``);
other missing prerequisites make it DEGRADED (or CREATE_FAILED, see
``missing_prerequisite_status``). An add-on deleted with ``preserve`` leaves its software
running: it still counts as installed for the others' prerequisites until it is created again.
``clientRequestToken`` makes CreateAddon and UpdateAddon idempotent.

What it emits (source ``aws.eks``, the detail-types the EventBridge reference lists for EKS):
``EKS Addon Creation Succeeded`` / ``EKS Addon Creation Failed`` (creation ended ACTIVE /
CREATE_FAILED), ``EKS Addon Update Succeeded``, ``EKS Addon Deletion Succeeded``,
``EKS Addon Health Degraded`` (ACTIVE -> DEGRADED, also when a creation ends DEGRADED) and
``EKS Addon Health Restored`` (DEGRADED -> ACTIVE).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from hypd_local.emulator.eks_catalog import AddonSpec, AddonVersion
from hypd_local.emulator.eks_config import invalid_configuration
from hypd_local.emulator.eks_model import PAGES as _PAGES
from hypd_local.emulator.eks_model import (
    _Addon,
    _Cluster,
    _in_use,
    _invalid_parameter,
    _invalid_request,
    _not_found,
    _Update,
    _uuid,
)
from hypd_local.emulator.eks_pod_identity import PodIdentities
from hypd_local.emulator.service import operation

SOURCE = "aws.eks"

ADDON_CREATION_SUCCEEDED = "EKS Addon Creation Succeeded"
ADDON_CREATION_FAILED = "EKS Addon Creation Failed"
ADDON_UPDATE_SUCCEEDED = "EKS Addon Update Succeeded"
ADDON_UPDATE_FAILED = "EKS Addon Update Failed"
ADDON_DELETION_SUCCEEDED = "EKS Addon Deletion Succeeded"
ADDON_HEALTH_DEGRADED = "EKS Addon Health Degraded"
ADDON_HEALTH_RESTORED = "EKS Addon Health Restored"

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


class Addons(PodIdentities):
    """CreateAddon ... DescribeAddonConfiguration, and the add-ons' health."""

    @operation
    def create_addon(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["clusterName"])
        name: str = params["addonName"]
        replayed = self._replayed("CreateAddon", params)
        existing = cluster.addons.get(name)
        if replayed is not None and existing is not None and existing.arn == replayed:
            return {"addon": self._describe_addon(existing)}
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
        namespace = (params.get("namespaceConfig") or {}).get("namespace") or spec.default_namespace
        self._check_configuration(cluster, spec, version, params.get("configurationValues"))
        associations = params.get("podIdentityAssociations") or []
        self._check_addon_associations(cluster, spec, version, namespace, associations)
        addon = _Addon(
            name=name,
            cluster=cluster,
            arn=self._arn(f"addon/{cluster.name}/{name}/"
                          f"{_uuid(f'addon:{cluster.arn}:{name}:{now.isoformat()}')}"),
            version=version,
            created_at=now,
            modified_at=now,
            service_account_role_arn=params.get("serviceAccountRoleArn"),
            configuration_values=params.get("configurationValues"),
            tags=dict(params.get("tags") or {}),
            namespace=namespace,
        )
        cluster.addons[name] = addon
        cluster.preserved.discard(name)
        self._own_associations(addon, namespace, associations, now)
        self._remember("CreateAddon", params, addon.arn)
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

    @staticmethod
    def _version(spec: AddonSpec, version: str) -> AddonVersion | None:
        return next((v for v in spec.versions if v.version == version), None)

    def _check_configuration(self, cluster: _Cluster, spec: AddonSpec, version: str,
                             values: str | None, *, updating: bool = False) -> None:
        """``configurationValues`` against the version's schema (InvalidParameterException
        naming each key that is unknown, of the wrong type or missing). Absent values are
        checked as ``{}`` when the version requires configuration and is being created."""
        known = self._version(spec, version)
        if values is None and (updating or known is None or not known.requires_configuration):
            return
        message = invalid_configuration(spec.configuration_schema, values or "")
        if message is not None:
            raise _invalid_parameter(message, clusterName=cluster.name, addonName=spec.name)

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
        failing = {prerequisite for prerequisite, _ in self._failing_prerequisites(addon)}
        if (any(i["resourceIds"][0] in failing for i in addon.prerequisite_issues)
                or (addon.prerequisite_issues
                    and self.missing_prerequisite_status == "CREATE_FAILED")):
            addon.status = "CREATE_FAILED"
            self._addon_event(ADDON_CREATION_FAILED, addon, now)
        elif addon.issues():
            addon.status = "DEGRADED"
            self._addon_event(ADDON_HEALTH_DEGRADED, addon, now)
        else:
            addon.status = "ACTIVE"
            self._addon_event(ADDON_CREATION_SUCCEEDED, addon, now)
        self._reevaluate_cluster(addon.cluster, now)

    def _failing_prerequisites(self, addon: _Addon) -> Iterable[tuple[str, str]]:
        spec = self.catalog.get(addon.name)
        return spec.failing_prerequisites if spec else ()

    def _prerequisite_issues(self, addon: _Addon) -> list[dict[str, Any]]:
        spec = self.catalog.get(addon.name)
        messages = dict(self._failing_prerequisites(addon))
        cluster = addon.cluster
        issues = []
        for prerequisite in spec.prerequisites if spec else ():
            other = cluster.addons.get(prerequisite)
            if (other is not None and other.status in _INSTALLED) or (
                    other is None and prerequisite in cluster.preserved):
                continue
            issues.append({
                "code": _PREREQUISITE_ISSUE_CODE.get(prerequisite,
                                                     _DEFAULT_PREREQUISITE_ISSUE_CODE),
                "message": messages.get(prerequisite) or (
                    f"{addon.name} requires the {prerequisite} add-on, which is not installed "
                    "on the cluster. Install it to resolve this issue."),
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

    @operation
    def describe_addon(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["clusterName"])
        return {"addon": self._describe_addon(self._addon(cluster, params["addonName"]))}

    @operation
    def list_addons(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["clusterName"])
        return _PAGES.listing("addons", sorted(cluster.addons), params)

    @operation
    def delete_addon(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["clusterName"])
        addon = self._addon(cluster, params["addonName"])
        if addon.status == "DELETING":
            return {"addon": self._describe_addon(addon)}
        addon.status = "DELETING"
        addon.modified_at = now
        preserve = bool(params.get("preserve"))

        def finish(t: datetime) -> None:
            if not self._live(addon) or addon.status != "DELETING":
                return
            del cluster.addons[addon.name]
            self._drop_associations(addon)
            if preserve:
                cluster.preserved.add(addon.name)
            self._addon_event(ADDON_DELETION_SUCCEEDED, addon, t, status="DELETED")
            self._reevaluate_cluster(cluster, t)

        self._at(now + timedelta(seconds=self.durations.addon_delete), finish)
        return {"addon": self._describe_addon(addon)}

    @operation
    def update_addon(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["clusterName"])
        addon = self._addon(cluster, params["addonName"])
        replayed = self._replayed("UpdateAddon", params)
        if replayed is not None and replayed in cluster.updates:
            return {"update": cluster.updates[replayed].describe()}
        if addon.status in ("CREATING", "UPDATING", "DELETING"):
            raise _in_use(f"Addon {addon.name} is in {addon.status} state and cannot be updated.",
                          clusterName=cluster.name, addonName=addon.name)
        if cluster.status not in ("ACTIVE", "UPDATING"):
            raise _invalid_request(f"Cluster {cluster.name} is in {cluster.status} state.",
                                   clusterName=cluster.name, addonName=addon.name)
        version = params.get("addonVersion")
        if version is not None:
            self._check_version(cluster, addon.name, version)
        spec = self.catalog.get(addon.name)
        associations = params.get("podIdentityAssociations")
        if spec is not None:
            target = version or addon.version
            self._check_configuration(cluster, spec, target, params.get("configurationValues"),
                                      updating=True)
            self._check_addon_associations(cluster, spec, target, addon.namespace or "",
                                           associations or [], owner_arn=addon.arn)
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
        if associations is not None:  # the whole list: what it leaves out goes
            self._own_associations(addon, addon.namespace or "", associations, now)
        self._remember("UpdateAddon", params, update.id)

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

    @operation
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
        return _PAGES.listing("addons", infos, params)

    @operation
    def describe_addon_configuration(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        name, version = params["addonName"], params["addonVersion"]
        spec = self.catalog.get(name)
        if spec is None:
            raise _not_found(f"No addon found for addonName: {name}", addonName=name)
        if self._version(spec, version) is None:
            raise _invalid_parameter(
                f"Addon version {version} specified is not supported for {name}",
                addonName=name)
        out: dict[str, Any] = {"addonName": name, "addonVersion": version,
                               "configurationSchema": spec.configuration_schema}
        if spec.takes_pod_identity(version):
            out["podIdentityConfiguration"] = [
                {"serviceAccount": c.service_account,
                 "recommendedManagedPolicies": [
                     f"arn:{self.partition}:iam::aws:policy/{policy}"
                     for policy in c.recommended_managed_policies]}
                for c in spec.pod_identity
            ]
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
