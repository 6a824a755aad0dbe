"""Generic in-memory object storage with the API server's semantics.

Objects are kept by (group, resource) -> namespace ("" when cluster-scoped) -> name, whatever
their kind: no per-kind code paths except the few the API server itself special-cases
(namespaces, CRDs, secrets' ``stringData``). Controllers (`Controller`: PersistentVolumeClaim
binding, `volumes`, always; others added with `add_controller`) run after every write or
deletion of the resources they watch, and on `run_controllers`. One lock serialises every
write; ``resourceVersion`` is a global counter as in etcd.

`ObjectStore` is put together from `store_base` (state, types, watch history, helpers),
`store_controllers` (checks of a write, controllers) and `store_writes` (reads and writes);
this module adds patches (JSON, merge, strategic merge, server-side apply).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypd_local.kube import apply as ssa
from hypd_local.kube.errors import (
    KubeError,
    bad_request,
    conflict,
    not_found,
)
from hypd_local.kube.patch import json_patch, merge_patch, strategic_merge_patch
from hypd_local.kube.resources import ResourceType
from hypd_local.kube.store_base import (
    APPLY_PATCH,
    DEFAULT_NAMESPACES,
    JSON_PATCH,
    LAST_APPLIED_ANNOTATION,
    LAST_APPLIED_MANAGER,
    MERGE_PATCH,
    PATCH_TYPES,
    STRATEGIC_MERGE_PATCH,
    WATCH_HISTORY,
    Change,
    Clock,
    Controller,
    Expired,
    Objects,
    load_yaml,
    rfc3339,
    yaml,
)
from hypd_local.kube.store_writes import StoreWrites
from hypd_local.kube.validation import Admission

__all__ = [
    "APPLY_PATCH", "DEFAULT_NAMESPACES", "JSON_PATCH", "LAST_APPLIED_ANNOTATION",
    "LAST_APPLIED_MANAGER", "MERGE_PATCH", "PATCH_TYPES", "STRATEGIC_MERGE_PATCH",
    "WATCH_HISTORY", "Change", "Clock", "Controller", "Expired", "ObjectStore", "Objects",
    "rfc3339",
]


class ObjectStore(StoreWrites):
    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        ns_type = self._builtin[("", "v1", "namespaces")]
        for name in DEFAULT_NAMESPACES:
            self.create(ns_type, None, {"metadata": {"name": name}}, "kube-apiserver")

    # ------------------------------------------------------------ patches
    def patch(self, rtype: ResourceType, namespace: str | None, name: str, content_type: str,
              body: bytes, manager: str | None, *, force: bool = False,
              subresource: str | None = None, admission: Admission | None = None
              ) -> tuple[dict[str, Any], bool]:
        """Apply a patch; returns the object and whether it was created (apply only)."""
        try:
            patch_doc = (load_yaml(body.decode() or "{}") if content_type == APPLY_PATCH
                         else json.loads(body or b"null"))
        except (ValueError, yaml.YAMLError) as exc:
            raise bad_request(f"error decoding patch: {exc}") from exc
        with self._lock:
            if content_type == APPLY_PATCH:
                if not manager:
                    raise bad_request("PATCH with content type application/apply-patch+yaml "
                                      "requires a non-empty parameter `fieldManager`")
                return self._apply(rtype, namespace, name, patch_doc, manager, force=force,
                                   subresource=subresource, admission=admission)
            entry = self._entry(rtype, namespace, name)
            current = self._view(rtype, entry)
            if content_type == JSON_PATCH:
                new = json_patch(current, patch_doc)
            elif content_type == MERGE_PATCH:
                if not isinstance(patch_doc, dict):
                    raise bad_request("a merge patch must be a JSON object")
                new = merge_patch(current, patch_doc)
            elif content_type == STRATEGIC_MERGE_PATCH:
                if not isinstance(patch_doc, dict):
                    raise bad_request("a strategic merge patch must be a JSON object")
                if rtype.crd:
                    raise KubeError(415, "UnsupportedMediaType",
                                    "strategic merge patch is not supported for custom resources;"
                                    " use merge patch")
                new = strategic_merge_patch(
                    current, patch_doc, admission.schema if admission else None,
                    admission.resolve if admission else None)
            else:
                raise KubeError(415, "UnsupportedMediaType",
                                f"the body of the request was in an unknown format - accepted "
                                f"media types include: {', '.join(PATCH_TYPES)}")
            if not isinstance(new, dict):
                raise bad_request("the patched object is not an object")
            self._check_identity(rtype, namespace, new)
            rv = new["metadata"].get("resourceVersion")
            if rv and rv != entry.obj["metadata"]["resourceVersion"]:
                raise conflict(rtype.plural, rtype.group, name,
                               "the object has been modified; please apply your changes to the "
                               "latest version and try again")
            new = self._merge_subresource(rtype, entry.obj, new, subresource)
            if admission is not None:
                admission.admit(new)
            return self._write(rtype, namespace, name, entry, new, manager or "unknown",
                               "Update"), False

    def _apply(self, rtype: ResourceType, namespace: str | None, name: str, applied: Any,
               manager: str, *, force: bool, subresource: str | None,
               admission: Admission | None) -> tuple[dict[str, Any], bool]:
        if not isinstance(applied, dict):
            raise bad_request("the apply configuration must be an object")
        for key in ("apiVersion", "kind"):
            if not applied.get(key):
                raise bad_request(f"{key} must be set in an apply configuration")
        self._check_identity(rtype, namespace, applied)
        body_name = applied["metadata"].get("name")
        if body_name != name:
            raise bad_request(f"the name of the object ({body_name}) does not match the name on "
                              f"the URL ({name})")
        if admission is not None:  # what the configuration does not declare is not applied
            admission.fields(applied, applying=True)
        applied = {k: v for k, v in applied.items() if k not in ("apiVersion", "kind")}
        existing = self._bucket(rtype, namespace).get(name)
        if existing is None:
            if subresource:
                raise not_found(rtype.plural, rtype.group, name)
            ownership: ssa.Ownership = {}
            obj = ssa.apply(None, applied, ownership, manager, force=force,
                            resource=rtype.plural, group=rtype.group, name=name)
            return self.create(rtype, namespace, obj, manager, admission=admission,
                               applied=ownership), True
        current = copy.deepcopy(existing.obj)
        if subresource == "status":
            applied = {"metadata": applied.get("metadata", {}), "status": applied.get("status")}
        ownership = copy.deepcopy(existing.ownership)
        try:
            new = ssa.apply(current, applied, ownership, manager, force=force,
                            resource=rtype.plural, group=rtype.group, name=name)
        except ssa.ApplyConflict as conflict:
            # kubectl's first server-side apply after client-side ones takes over the fields
            # its last-applied annotation still holds, as kube-apiserver lets it
            left = conflict.without(self._last_applied(rtype, existing.obj))
            if manager != LAST_APPLIED_MANAGER or left is not None:
                raise left or conflict from None
            new = ssa.apply(current, applied, ownership, manager, force=True,
                            resource=rtype.plural, group=rtype.group, name=name)
        new = self._merge_subresource(rtype, existing.obj, new, subresource)
        if admission is not None:
            admission.admit(new)
        return self._write(rtype, namespace, name, existing, new, manager, "Apply",
                           ownership), False

    @staticmethod
    def _last_applied(rtype: ResourceType, obj: dict[str, Any]) -> set[ssa.Path]:
        annotation = ((obj.get("metadata") or {}).get("annotations") or {}).get(
            LAST_APPLIED_ANNOTATION)
        try:
            last = json.loads(annotation) if annotation else None
        except ValueError:
            return set()
        if not isinstance(last, dict) or last.get("apiVersion") != rtype.api_version:
            return set()
        return ssa.owned_by_last_applied(obj, last)
