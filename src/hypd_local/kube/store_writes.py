"""The object store's reads and writes: create, get, list (selectors, pagination), replace,
delete (finalizers, cascading), mutate, and the write every one of them goes through."""

from __future__ import annotations

import base64
import copy
import json
import secrets
import uuid
from collections.abc import Callable
from typing import Any

from hypd_local.kube import apply as ssa
from hypd_local.kube.errors import (
    KubeError,
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
)
from hypd_local.kube.resources import CRD_GROUP, CRD_PLURAL, ResourceType
from hypd_local.kube.selectors import parse_field_selector, parse_label_selector
from hypd_local.kube.store_base import _Entry
from hypd_local.kube.store_controllers import StoreControllers
from hypd_local.kube.validation import Admission


class StoreWrites(StoreControllers):
    """The operations of the API server on stored objects, but patches."""

    def create(self, rtype: ResourceType, namespace: str | None, body: dict[str, Any],
               manager: str, *, keep_status: bool = False, admission: Admission | None = None,
               applied: ssa.Ownership | None = None) -> dict[str, Any]:
        """Create an object. ``admission`` checks a client's object (fields, a custom
        resource's schema); ``applied`` is the field ownership of a server-side apply that
        creates it."""
        with self._lock:
            obj = copy.deepcopy(body)
            self._check_identity(rtype, namespace, obj)
            if admission is not None:
                admission.fields(obj)
            metadata = obj["metadata"]
            if not metadata.get("name") and metadata.get("generateName"):
                metadata["name"] = metadata["generateName"] + "".join(
                    secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5)
                )
            if not metadata.get("name"):
                raise invalid(rtype.kind, rtype.group, "", "metadata.name",
                              "Required value: name or generateName is required")
            self._require_namespace(rtype, namespace)
            self._validate(rtype, obj)
            if admission is not None:
                admission.admit(obj)
            name = metadata["name"]
            bucket = self._bucket(rtype, namespace)
            if name in bucket:
                raise already_exists(rtype.plural, rtype.group, name)
            if "status" in rtype.subresources and not keep_status:
                obj.pop("status", None)
            for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                        "managedFields", "selfLink"):
                metadata.pop(key, None)
            metadata["uid"] = str(uuid.uuid4())
            metadata["creationTimestamp"] = self._now()
            metadata["generation"] = 1
            metadata["resourceVersion"] = self._next_rv()
            if not rtype.group and rtype.plural == "namespaces":
                metadata.setdefault("labels", {})["kubernetes.io/metadata.name"] = name
                obj.setdefault("spec", {"finalizers": ["kubernetes"]})
                obj["status"] = {"phase": "Active"}
            entry = _Entry(obj)
            if applied is None:
                ssa.record_update(None, obj, entry.ownership, manager)
                entry.times[(manager, "Update")] = metadata["creationTimestamp"]
            else:  # a manager that owns nothing has no entry, as after any other apply
                entry.ownership = {key: paths for key, paths in applied.items() if paths}
                entry.times[(manager, "Apply")] = metadata["creationTimestamp"]
            bucket[name] = entry
            self._after_write(rtype, entry, "ADDED")
            if not rtype.group and rtype.plural == "namespaces":
                sa_type = self.builtin_type("", "serviceaccounts")
                self.create(sa_type, name, {"metadata": {"name": "default"}}, "kube-controller")
            return self._view(rtype, entry)

    def get(self, rtype: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        with self._lock:
            return self._view(rtype, self._entry(rtype, namespace, name))

    def list(self, rtype: ResourceType, namespace: str | None, *,
             label_selector: str | None = None, field_selector: str | None = None,
             limit: int | None = None, continue_token: str | None = None,
             ) -> tuple[list[dict[str, Any]], str, str | None]:
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector)
        start: tuple[str, str] | None = None
        if continue_token:
            try:
                start_ns, start_name = json.loads(base64.urlsafe_b64decode(continue_token))
                start = (str(start_ns), str(start_name))
            except (ValueError, TypeError) as exc:
                raise KubeError(410, "Expired", "the provided continue parameter is invalid"
                                ) from exc
        with self._lock:
            buckets = self._objects.get((rtype.group, rtype.plural), {})
            keys = sorted(
                (ns, name)
                for ns, objects in buckets.items()
                if namespace is None or ns == (namespace or "")
                for name in objects
            )
            items: list[dict[str, Any]] = []
            next_token: str | None = None
            for ns, name in keys:
                if start is not None and (ns, name) <= start:
                    continue
                view = self._view(rtype, buckets[ns][name])
                if not (labels(view) and fields(view)):
                    continue
                if limit and len(items) >= limit:
                    last = items[-1]["metadata"]
                    next_token = base64.urlsafe_b64encode(
                        json.dumps([last.get("namespace") or "", last["name"]]).encode()
                    ).decode()
                    break
                items.append(view)
            return items, str(self._rv), next_token

    def _write(self, rtype: ResourceType, namespace: str | None, name: str,
               entry: _Entry, new: dict[str, Any], manager: str, operation: str,
               ownership: ssa.Ownership | None = None) -> dict[str, Any]:
        """Store ``new`` as the object; ``ownership`` is the field ownership after an apply
        (for an update it is derived here). A write that changes neither the object nor its
        managed fields is a no-op, as on the API server: same resourceVersion, same
        managedFields (times included)."""
        old = entry.obj
        metadata = new.setdefault("metadata", {})
        for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if key in old["metadata"]:
                metadata[key] = old["metadata"][key]
            else:
                metadata.pop(key, None)
        metadata["name"] = name
        if rtype.namespaced:
            metadata["namespace"] = namespace
        sent_fields = metadata.pop("managedFields", None)
        times = entry.times
        if (ownership is None and sent_fields is not None
                and sent_fields != self._view(rtype, entry)["metadata"].get("managedFields")):
            # the client sets the managed fields itself: they replace what the server tracked,
            # and this write is not tracked on top
            ownership, sent_times = ssa.parse_managed_fields(sent_fields)
            times = {**entry.times, **sent_times}
            manager = ""
        metadata.pop("selfLink", None)
        self._validate(rtype, new)
        generation = old["metadata"].get("generation", 1)
        metadata["generation"] = generation + 1 if self._spec_changed(old, new) else generation
        new.pop("apiVersion", None)
        new.pop("kind", None)
        if ownership is None:
            ownership = copy.deepcopy(entry.ownership)
            ssa.record_update(old, new, ownership, manager)
        unchanged = new == {**old, "metadata": {**old["metadata"],
                                                "generation": metadata["generation"]}}
        if unchanged and ownership == entry.ownership:
            return self._view(rtype, entry)
        prev = self._view(rtype, entry)
        metadata["resourceVersion"] = self._next_rv()
        entry.times = times
        if manager and (manager, operation) in ownership:
            entry.times[(manager, operation)] = self._now()
        entry.ownership = ownership
        entry.obj = new
        self._after_write(rtype, entry, "MODIFIED", prev)
        view = self._view(rtype, entry)
        if metadata.get("deletionTimestamp") and not metadata.get("finalizers"):
            self._remove(rtype, namespace, name)
        return view

    def _merge_subresource(self, rtype: ResourceType, old: dict[str, Any], new: dict[str, Any],
                           subresource: str | None) -> dict[str, Any]:
        if "status" not in rtype.subresources:
            if subresource:
                raise not_found(f"{rtype.plural}/{subresource}", rtype.group,
                                old["metadata"]["name"])
            return new
        if subresource == "status":
            merged = copy.deepcopy(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            return merged
        if subresource:
            raise not_found(f"{rtype.plural}/{subresource}", rtype.group, old["metadata"]["name"])
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)
        return new

    def replace(self, rtype: ResourceType, namespace: str | None, name: str,
                body: dict[str, Any], manager: str, subresource: str | None = None, *,
                admission: Admission | None = None) -> dict[str, Any]:
        with self._lock:
            new = copy.deepcopy(body)
            self._check_identity(rtype, namespace, new)
            if admission is not None:
                admission.fields(new)
            body_name = new["metadata"].get("name")
            if body_name and body_name != name:
                raise bad_request(f"the name of the object ({body_name}) does not match the name "
                                  f"on the URL ({name})")
            entry = self._entry(rtype, namespace, name)
            rv = new["metadata"].get("resourceVersion")
            if rv and rv != entry.obj["metadata"]["resourceVersion"]:
                raise conflict(rtype.plural, rtype.group, name,
                               "the object has been modified; please apply your changes to the "
                               "latest version and try again")
            new = self._merge_subresource(rtype, entry.obj, new, subresource)
            if admission is not None:
                admission.admit(new)
            return self._write(rtype, namespace, name, entry, new, manager, "Update")

    def _gone(self, rtype: ResourceType | None, entry: _Entry) -> dict[str, Any] | None:
        """Record the deletion of a removed entry (a new resourceVersion); its last view."""
        entry.obj["metadata"]["resourceVersion"] = self._next_rv()
        if rtype is None:
            return None
        view = self._view(rtype, entry)
        self._record(rtype, "DELETED", view)
        return view

    def _remove(self, rtype: ResourceType, namespace: str | None, name: str
                ) -> dict[str, Any] | None:
        """Remove an object (and what it contains: a namespace's objects, a CRD's custom
        resources), each with its DELETED event; the object's last view."""
        bucket = self._bucket(rtype, namespace)
        entry = bucket.pop(name, None)
        if entry is None:
            return None
        if not rtype.group and rtype.plural == "namespaces":
            for resource, namespaces in self._objects.items():
                inside = namespaces.pop(name, {})
                for _child_name, child in sorted(inside.items()):
                    self._gone(self._type_of(resource), child)
        cascade = not rtype.group and rtype.plural == "namespaces"
        if rtype.group == CRD_GROUP and rtype.plural == CRD_PLURAL:
            spec = entry.obj.get("spec") or {}
            resource = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
            crd_rtype = self._type_of(resource)
            for _ns, objects in sorted(self._objects.pop(resource, {}).items()):
                for _child_name, child in sorted(objects.items()):
                    self._gone(crd_rtype, child)
        view = self._gone(rtype, entry)
        if rtype.group == CRD_GROUP and rtype.plural == CRD_PLURAL:
            self._refresh_crds()
            cascade = True
        # e.g. a claim's volume is Released, a volume's claim Lost
        self._reconcile_watchers(None if cascade else rtype)
        return view

    def delete(
        self, rtype: ResourceType, namespace: str | None, name: str
    ) -> tuple[dict[str, Any], bool]:
        """Delete; returns (body, gone): the object if finalizers hold it or its type returns
        deleted objects, else a Status."""
        with self._lock:
            entry = self._entry(rtype, namespace, name)
            metadata = entry.obj["metadata"]
            if metadata.get("finalizers"):
                if not metadata.get("deletionTimestamp"):
                    prev = self._view(rtype, entry)
                    metadata["deletionTimestamp"] = self._now()
                    metadata["deletionGracePeriodSeconds"] = 0
                    metadata["resourceVersion"] = self._next_rv()
                    self._record(rtype, "MODIFIED", self._view(rtype, entry), prev)
                return self._view(rtype, entry), False
            deleted = self._remove(rtype, namespace, name)
            if rtype.returns_deleted and deleted is not None:
                return deleted, True
            return {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": {"name": name, "group": rtype.group, "kind": rtype.plural,
                            "uid": metadata["uid"]},
            }, True

    def mutate(self, rtype: ResourceType, namespace: str | None, name: str,
               change: Callable[[dict[str, Any]], None], manager: str) -> dict[str, Any]:
        """Change an object in place from inside the emulator (status included), as a
        controller or the kubelet would."""
        with self._lock:
            entry = self._entry(rtype, namespace, name)
            new = copy.deepcopy(entry.obj)
            change(new)
            return self._write(rtype, namespace, name, entry, new, manager, "Update")
