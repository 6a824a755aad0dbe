"""EKS Pod Identity associations: the standalone API (CreatePodIdentityAssociation ...
ListPodIdentityAssociations) and the associations add-ons own.

An association maps a cluster's (namespace, service account) to an IAM role; a cluster has at
most one per service account (``ResourceInUseException: Association already exists: <id>``,
EKS's words). IDs are ``a-`` and 17 lowercase letters and digits; a malformed one is refused
as EKS refuses it (``The parameter associationId should be 19 characters long.``).
Associations that CreateAddon or UpdateAddon make from ``podIdentityAssociations`` live in the
add-on's namespace, carry its ARN as ``ownerArn``, are listed with the others and go with the
add-on; the standalone Update and Delete refuse them (InvalidRequestException: they are the
add-on's to change). Whether the caller may pass the role, and whether it exists and trusts
``pods.eks.amazonaws.com``, the local cloud checks before the request reaches the emulator
(`hypd_local.iam.enforce`). ``clientRequestToken`` makes Create and Update idempotent.

Known differences: not-found and ownership messages are the emulator's wording; the session
policy (``policy``) is checked to be a JSON object, not evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from hypd_local.emulator.eks_catalog import AddonSpec
from hypd_local.emulator.eks_model import PAGES as _PAGES
from hypd_local.emulator.eks_model import (
    _Addon,
    _association_id,
    _Cluster,
    _iam_principal,
    _in_use,
    _invalid_parameter,
    _invalid_request,
    _not_found,
    _PodIdentity,
    _uuid,
)
from hypd_local.emulator.eks_state import EksState
from hypd_local.emulator.service import operation

_ID_LENGTH = 19
_CHANGEABLE = ("roleArn", "targetRoleArn", "disableSessionTags", "policy")


class PodIdentities(EksState):
    """CreatePodIdentityAssociation ... ListPodIdentityAssociations, and the associations of
    add-ons."""

    @operation
    def create_pod_identity_association(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["clusterName"])
        replayed = self._replayed("CreatePodIdentityAssociation", params)
        if replayed is not None and replayed in cluster.associations:
            return {"association": cluster.associations[replayed].describe(cluster.name)}
        if cluster.status in ("DELETING", "FAILED"):
            raise _invalid_request(f"Cluster {cluster.name} is in {cluster.status} state.",
                                   clusterName=cluster.name)
        namespace, service_account = params["namespace"], params["serviceAccount"]
        self._check_role(cluster, "roleArn", params["roleArn"])
        self._check_free(cluster, namespace, service_account)
        association = self._new_association(cluster, namespace, service_account,
                                            params["roleArn"], now, tags=params.get("tags"))
        self._set_options(cluster, association, params)
        cluster.associations[association.id] = association
        self._remember("CreatePodIdentityAssociation", params, association.id)
        return {"association": association.describe(cluster.name)}

    @operation
    def describe_pod_identity_association(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["clusterName"])
        association = self._association(cluster, params["associationId"])
        return {"association": association.describe(cluster.name)}

    @operation
    def list_pod_identity_associations(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["clusterName"])
        namespace, service_account = params.get("namespace"), params.get("serviceAccount")
        summaries = [
            a.summary(cluster.name) for a in cluster.associations.values()
            if namespace in (None, a.namespace) and service_account in (None, a.service_account)
        ]
        return _PAGES.listing("associations", summaries, params)

    @operation
    def update_pod_identity_association(self, params: Mapping[str, Any]) -> dict[str, Any]:
        now = self._now()
        cluster = self._cluster(params["clusterName"])
        association = self._association(cluster, params["associationId"])
        if self._replayed("UpdatePodIdentityAssociation", params) is not None:
            return {"association": association.describe(cluster.name)}
        self._check_unowned(association, "update")
        if all(params.get(member) is None for member in _CHANGEABLE):
            raise _invalid_parameter(
                "At least one of roleArn, targetRoleArn, disableSessionTags or policy must be "
                "specified to update a pod identity association.", clusterName=cluster.name)
        association = replace(association, modified_at=now)  # all of the update, or none
        if params.get("roleArn") is not None:
            self._check_role(cluster, "roleArn", params["roleArn"])
            association.role_arn = params["roleArn"]
        self._set_options(cluster, association, params)
        cluster.associations[association.id] = association
        self._remember("UpdatePodIdentityAssociation", params, association.id)
        return {"association": association.describe(cluster.name)}

    @operation
    def delete_pod_identity_association(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._advance()
        cluster = self._cluster(params["clusterName"])
        association = self._association(cluster, params["associationId"])
        self._check_unowned(association, "delete")
        del cluster.associations[association.id]
        return {"association": association.describe(cluster.name)}

    # ------------------------------------------------------------------ checks

    def _association(self, cluster: _Cluster, association_id: str) -> _PodIdentity:
        if len(association_id) != _ID_LENGTH:
            raise _invalid_parameter(
                f"The parameter associationId should be {_ID_LENGTH} characters long.",
                clusterName=cluster.name)
        association = cluster.associations.get(association_id)
        if association is None:
            raise _not_found(f"No pod identity association found for associationId: "
                             f"{association_id} in cluster: {cluster.name}",
                             clusterName=cluster.name)
        return association

    @staticmethod
    def _check_role(cluster: _Cluster, member: str, arn: str) -> None:
        principal = _iam_principal(arn)
        if principal is None or principal[1] != "role":
            raise _invalid_parameter(f"The {member} {arn} is not a valid IAM role ARN.",
                                     clusterName=cluster.name)

    @staticmethod
    def _check_free(cluster: _Cluster, namespace: str, service_account: str,
                    owner_arn: str | None = None) -> None:
        """ResourceInUseException when another association (not one of ``owner_arn``'s) is
        for that service account."""
        for existing in cluster.associations.values():
            if ((existing.namespace, existing.service_account) == (namespace, service_account)
                    and (owner_arn is None or existing.owner_arn != owner_arn)):
                raise _in_use(f"Association already exists: {existing.id}",
                              clusterName=cluster.name)

    @staticmethod
    def _check_unowned(association: _PodIdentity, verb: str) -> None:
        if association.owner_arn is not None:
            raise _invalid_request(
                f"Cannot {verb} association {association.id}: it is owned by addon "
                f"{association.owner_arn}; change it with UpdateAddon.")

    def _set_options(self, cluster: _Cluster, association: _PodIdentity,
                     params: Mapping[str, Any]) -> None:
        """Apply targetRoleArn, disableSessionTags and policy (an empty string removes a target
        role or a policy); a policy needs session tags disabled, as EKS documents."""
        target = params.get("targetRoleArn")
        if target is not None:
            if target:
                self._check_role(cluster, "targetRoleArn", target)
                association.external_id = association.external_id or _uuid(
                    f"external:{association.arn}:{target}")
            else:
                association.external_id = None
            association.target_role_arn = target or None
        if params.get("disableSessionTags") is not None:
            association.disable_session_tags = bool(params["disableSessionTags"])
        policy = params.get("policy")
        if policy is not None:
            if policy:
                try:
                    document = json.loads(policy)
                except ValueError:
                    document = None
                if not isinstance(document, dict):
                    raise _invalid_parameter("The policy must be a JSON policy document.",
                                             clusterName=cluster.name)
            association.policy = policy or None
        if association.policy is not None and not association.disable_session_tags:
            raise _invalid_parameter(
                "disableSessionTags must be true when a policy is specified.",
                clusterName=cluster.name)

    def _new_association(self, cluster: _Cluster, namespace: str, service_account: str,
                         role_arn: str, now: datetime, *, tags: Mapping[str, str] | None = None,
                         owner_arn: str | None = None) -> _PodIdentity:
        """A new association (the caller stores it in ``cluster.associations``)."""
        association_id = _association_id(
            f"pia:{cluster.arn}:{namespace}:{service_account}:{next(self._ids)}")
        return _PodIdentity(
            id=association_id,
            arn=self._arn(f"podidentityassociation/{cluster.name}/{association_id}"),
            namespace=namespace, service_account=service_account, role_arn=role_arn,
            created_at=now, modified_at=now, tags=dict(tags or {}), owner_arn=owner_arn,
        )

    # ------------------------------------------------------------------ add-ons' associations

    def _check_addon_associations(self, cluster: _Cluster, spec: AddonSpec, version: str,
                                  namespace: str, requested: Iterable[Mapping[str, str]],
                                  owner_arn: str | None = None) -> None:
        """What CreateAddon and UpdateAddon refuse of ``podIdentityAssociations``: any, for
        a version that does not take them; a service account the add-on does not document;
        one another association already has."""
        wanted = list(requested)
        if not wanted:
            return
        if not spec.takes_pod_identity(version):
            raise _invalid_parameter(
                f"Pod Identity feature is not supported for addon version: {version}",
                clusterName=cluster.name, addonName=spec.name)
        accounts = {c.service_account for c in spec.pod_identity}
        for item in wanted:
            if item["serviceAccount"] not in accounts:
                raise _invalid_parameter(
                    f"Service account {item['serviceAccount']} in pod identity configuration "
                    f"is not supported for addon {spec.name}",
                    clusterName=cluster.name, addonName=spec.name)
            self._check_role(cluster, "roleArn", item["roleArn"])
            self._check_free(cluster, namespace, item["serviceAccount"], owner_arn)

    def _own_associations(self, addon: _Addon, namespace: str,
                          requested: Iterable[Mapping[str, str]], now: datetime) -> None:
        """Make the add-on's associations those ``requested`` (one per service account):
        kept, changed (a new role), made or removed."""
        cluster = addon.cluster
        owned = {a.service_account: a for a in cluster.associations.values()
                 if a.owner_arn == addon.arn}
        arns: list[str] = []
        for item in requested:
            association = owned.pop(item["serviceAccount"], None)
            if association is None:
                association = self._new_association(cluster, namespace, item["serviceAccount"],
                                                    item["roleArn"], now, owner_arn=addon.arn)
                cluster.associations[association.id] = association
            elif association.role_arn != item["roleArn"]:
                association.role_arn = item["roleArn"]
                association.modified_at = now
            arns.append(association.arn)
        for dropped in owned.values():
            del cluster.associations[dropped.id]
        addon.pod_identity_associations = arns

    @staticmethod
    def _drop_associations(addon: _Addon) -> None:
        """The add-on is gone: so are the associations it owned."""
        cluster = addon.cluster
        for association in [a for a in cluster.associations.values()
                            if a.owner_arn == addon.arn]:
            del cluster.associations[association.id]
        addon.pod_identity_associations = []
