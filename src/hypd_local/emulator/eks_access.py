"""EKS access entries and access policies, and who a principal is in a cluster's Kubernetes
API (`AccessEntries.authorize`, read by the local Kubernetes API servers)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from hypd_local.emulator.eks_catalog import ACCESS_POLICIES, AccessPolicy
from hypd_local.emulator.eks_model import PAGES as _PAGES
from hypd_local.emulator.eks_model import (
    AccessDecision,
    PolicyGrant,
    _AccessEntry,
    _caller_principal,
    _Cluster,
    _default_username,
    _iam_principal,
    _in_use,
    _invalid_parameter,
    _invalid_request,
    _not_found,
    _uuid,
)
from hypd_local.emulator.eks_state import EksState
from hypd_local.emulator.service import operation

ACCESS_ENTRY_TYPES = (
    "STANDARD", "FARGATE_LINUX", "EC2_LINUX", "EC2_WINDOWS", "EC2", "HYBRID_LINUX",
    "HYPERPOD_LINUX",
)
API_MODES = ("API", "API_AND_CONFIG_MAP")
"""The authentication modes in which a cluster has access entries."""


class AccessEntries(EksState):
    """CreateAccessEntry ... ListAccessPolicies, and `authorize`."""

    def _access_cluster(self, name: str) -> _Cluster:
        cluster = self._cluster(name)
        if cluster.authentication_mode not in API_MODES:
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
            arn=self._arn(f"access-entry/{cluster.name}/{kind}/{account}/{pname}/"
                          f"{_uuid(f'entry:{cluster.arn}:{principal_arn}')}"),
            type=entry_type,
            username=username or _default_username(principal_arn, entry_type),
            groups=list(groups),
            tags=dict(tags),
            created_at=now,
            modified_at=now,
        )
        cluster.access_entries[principal_arn] = entry
        return entry

    @operation
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

    @operation
    def describe_access_entry(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._access_cluster(params["clusterName"])
        return {"accessEntry": self._describe_entry(
            cluster, self._entry(cluster, params["principalArn"]))}

    @operation
    def list_access_entries(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._access_cluster(params["clusterName"])
        policy = params.get("associatedPolicyArn")
        arns = sorted(arn for arn, entry in cluster.access_entries.items()
                      if policy is None or policy in entry.policies)
        return _PAGES.listing("accessEntries", arns, params)

    @operation
    def delete_access_entry(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._access_cluster(params["clusterName"])
        entry = self._entry(cluster, params["principalArn"])
        del cluster.access_entries[entry.principal_arn]
        return {}

    @operation
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

    @operation
    def disassociate_access_policy(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._access_cluster(params["clusterName"])
        entry = self._entry(cluster, params["principalArn"])
        if entry.policies.pop(params["policyArn"], None) is None:
            raise _not_found(f"The policy {params['policyArn']} is not associated with "
                             f"{entry.principal_arn}.", clusterName=cluster.name)
        entry.modified_at = now
        return {}

    @operation
    def list_associated_access_policies(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._access_cluster(params["clusterName"])
        entry = self._entry(cluster, params["principalArn"])
        policies = [self._copy_policy(entry.policies[arn]) for arn in sorted(entry.policies)]
        return _PAGES.listing("associatedAccessPolicies", policies, params,
            head={"clusterName": cluster.name, "principalArn": entry.principal_arn})

    @operation
    def list_access_policies(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        policies = [{"name": p.name, "arn": p.arn(self.partition)} for p in ACCESS_POLICIES]
        return _PAGES.listing("accessPolicies", policies, params)

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

    @operation
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
        if entry is None and session is not None and cluster.authentication_mode in API_MODES:
            entry = self._entry_for_role(cluster, session[0])
        if entry is None or cluster.authentication_mode not in API_MODES:
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


def _same_principal(a: str, b: str) -> bool:
    """Same IAM principal, ignoring the role path (session ARNs do not carry it)."""
    pa, pb = _iam_principal(a), _iam_principal(b)
    return pa is not None and pa == pb
