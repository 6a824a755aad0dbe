"""The resource types the API serves: built-in ones, and those CRDs define at run time."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()  # "status"
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    crd: bool = False
    singular: str = field(default="")
    storage: bool = True  # the version objects are stored in (a CRD's `storage: true` one)
    # DELETE answers with the deleted object instead of a Status (the API server's
    # ReturnDeletedObject, which the official client's return types follow).
    returns_deleted: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    def discovery(self) -> list[dict[str, Any]]:
        """This type's entries in an ``APIResourceList`` (the resource and its subresources)."""
        entry: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular_name,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        entries = [entry]
        for sub in self.subresources:
            entries.append(
                {
                    "name": f"{self.plural}/{sub}",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": self.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        return entries


def _t(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    status: bool = False,
    all_category: bool = False,
    returns_deleted: bool = False,
) -> ResourceType:
    return ResourceType(
        group=group,
        version=version,
        plural=plural,
        kind=kind,
        namespaced=namespaced,
        short_names=short,
        subresources=("status",) if status else (),
        categories=("all",) if all_category else (),
        returns_deleted=returns_deleted,
    )


BUILTIN: tuple[ResourceType, ...] = (
    _t("", "v1", "namespaces", "Namespace", False, ("ns",), status=True),
    _t("", "v1", "nodes", "Node", False, ("no",), status=True),
    _t(
        "", "v1", "pods", "Pod", short=("po",), status=True, all_category=True, returns_deleted=True
    ),
    _t(
        "",
        "v1",
        "services",
        "Service",
        short=("svc",),
        status=True,
        all_category=True,
        returns_deleted=True,
    ),
    _t("", "v1", "endpoints", "Endpoints", short=("ep",)),
    _t("", "v1", "configmaps", "ConfigMap", short=("cm",)),
    _t("", "v1", "secrets", "Secret"),
    _t("", "v1", "serviceaccounts", "ServiceAccount", short=("sa",), returns_deleted=True),
    _t(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        False,
        ("pv",),
        status=True,
        returns_deleted=True,
    ),
    _t(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        short=("pvc",),
        status=True,
        returns_deleted=True,
    ),
    _t("", "v1", "events", "Event", short=("ev",)),
    _t(
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        short=("quota",),
        status=True,
        returns_deleted=True,
    ),
    _t("", "v1", "limitranges", "LimitRange", short=("limits",)),
    _t("apps", "v1", "deployments", "Deployment", short=("deploy",), status=True,
       all_category=True),
    _t("apps", "v1", "daemonsets", "DaemonSet", short=("ds",), status=True, all_category=True),
    _t("apps", "v1", "statefulsets", "StatefulSet", short=("sts",), status=True, all_category=True),
    _t("apps", "v1", "replicasets", "ReplicaSet", short=("rs",), status=True, all_category=True),
    _t("batch", "v1", "jobs", "Job", status=True, all_category=True),
    _t("batch", "v1", "cronjobs", "CronJob", short=("cj",), status=True, all_category=True),
    _t("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    _t("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _t("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _t("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _t("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
       False, ("crd", "crds"), status=True),
    _t("coordination.k8s.io", "v1", "leases", "Lease"),
    _t("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    _t("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _t("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    _t("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", short=("pdb",), status=True),
)

CRD_GROUP = "apiextensions.k8s.io"
CRD_PLURAL = "customresourcedefinitions"


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """The resource types a (valid) CRD object serves: one per served version."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    types = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = tuple(
            sub for sub in ("status", "scale") if sub in (version.get("subresources") or {})
        )
        types.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                plural=names["plural"],
                kind=names["kind"],
                namespaced=namespaced,
                short_names=tuple(names.get("shortNames") or ()),
                subresources=subresources,
                categories=tuple(names.get("categories") or ()),
                crd=True,
                singular=names.get("singular", ""),
                storage=bool(version.get("storage")),
            )
        )
    return types


def crd_manifest(group: str, kind: str, plural: str, *, namespaced: bool,
                 served: Iterable[str] = ("v1",), storage: str = "v1",
                 categories: Iterable[str] = ()) -> dict[str, Any]:
    """A CustomResourceDefinition serving ``served`` versions (``storage`` the stored one),
    each with a status subresource and a schema that keeps unknown fields, as a controller's
    installer writes it when its own schema is not modelled."""
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    names: dict[str, Any] = {"plural": plural, "singular": kind.lower(), "kind": kind,
                             "listKind": f"{kind}List"}
    if categories:
        names["categories"] = list(categories)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced" if namespaced else "Cluster",
            "names": names,
            "versions": [{"name": version, "served": True, "storage": version == storage,
                          "schema": {"openAPIV3Schema": dict(schema)},
                          "subresources": {"status": {}}}
                         for version in served],
        },
    }
