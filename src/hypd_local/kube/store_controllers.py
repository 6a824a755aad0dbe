"""What the object store checks on a write (identity, names, schemas, CRDs) and the
controllers it runs after one (`hypd_local.kube.store`)."""

from __future__ import annotations

import base64
import copy
from typing import Any

from hypd_local.kube.errors import (
    KubeError,
    bad_request,
    invalid,
)
from hypd_local.kube.resources import CRD_GROUP, CRD_PLURAL, ResourceType, types_from_crd
from hypd_local.kube.store_base import (
    _LABEL,
    _LABEL_NAMED,
    _SUBDOMAIN,
    Controller,
    StoreBase,
    _Entry,
)


class StoreControllers(StoreBase):
    """Checks of what is written, and the controllers that reconcile after a write."""

    def _check_identity(self, rtype: ResourceType, namespace: str | None, obj: dict[str, Any]
                        ) -> None:
        if not isinstance(obj, dict):
            raise bad_request("the request body must be a JSON object")
        kind = obj.get("kind")
        if kind is not None and kind != rtype.kind:
            raise bad_request(f"the kind in the data ({kind}) does not match the expected kind "
                              f"({rtype.kind})")
        api_version = obj.get("apiVersion")
        if api_version is not None and api_version.split("/")[0] != (
            rtype.group or rtype.version
        ) and api_version != rtype.api_version:
            raise bad_request(f"the API version in the data ({api_version}) does not match the "
                              f"expected API version ({rtype.api_version})")
        metadata = obj.setdefault("metadata", {})
        if not isinstance(metadata, dict):
            raise bad_request("metadata must be an object")
        body_ns = metadata.get("namespace")
        if rtype.namespaced:
            if body_ns and namespace and body_ns != namespace:
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)

    def _validate(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        name = obj["metadata"].get("name") or ""
        pattern = _LABEL if rtype.plural in _LABEL_NAMED and not rtype.group else _SUBDOMAIN
        limit = 63 if pattern is _LABEL else 253
        if not pattern.match(name) or len(name) > limit:
            what = "RFC 1123 label" if pattern is _LABEL else "RFC 1123 subdomain"
            raise invalid(rtype.kind, rtype.group, name, "metadata.name",
                          f'Invalid value: "{name}": a lowercase {what} must consist of lower '
                          "case alphanumeric characters, '-' or '.', and must start and end with "
                          "an alphanumeric character")
        for section in ("labels", "annotations"):
            values = obj["metadata"].get(section)
            if values is None:
                continue
            if not isinstance(values, dict) or not all(
                isinstance(v, str) for v in values.values()
            ):
                raise invalid(rtype.kind, rtype.group, name, f"metadata.{section}",
                              "Invalid value: values must be strings")
        if rtype.group == CRD_GROUP and rtype.plural == CRD_PLURAL:
            self._validate_crd(obj)

    @staticmethod
    def _validate_crd(obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}

        def fail(field_path: str, why: str) -> KubeError:
            return invalid("CustomResourceDefinition", CRD_GROUP, name, field_path, why)

        if not spec.get("group"):
            raise fail("spec.group", "Required value")
        for key in ("plural", "kind"):
            if not names.get(key):
                raise fail(f"spec.names.{key}", "Required value")
        if name != f"{names['plural']}.{spec['group']}":
            raise fail("metadata.name", f'Invalid value: "{name}": must be spec.names.plural+"."'
                                        "+spec.group")
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            raise fail("spec.scope", 'Unsupported value: must be "Cluster" or "Namespaced"')
        versions = spec.get("versions") or []
        if not versions or not all(isinstance(v, dict) and v.get("name") for v in versions):
            raise fail("spec.versions", "Required value: must have exactly one version marked "
                                        "as storage version")
        if sum(1 for v in versions if v.get("storage")) != 1:
            raise fail("spec.versions", "Invalid value: must have exactly one version marked as "
                                        "storage version")

    def _refresh_crds(self) -> None:
        crd_type = self.builtin_type(CRD_GROUP, CRD_PLURAL)
        types: dict[tuple[str, str, str], ResourceType] = {}
        for entry in self._bucket(crd_type, None).values():
            for rtype in types_from_crd(entry.obj):
                types[(rtype.group, rtype.version, rtype.plural)] = rtype
        self._crd_types = types
        self.crd_revision += 1

    def _crd_status(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec") or {}
        now = self._now()
        obj["status"] = {
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": now},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted", "lastTransitionTime": now},
            ],
            "acceptedNames": spec.get("names") or {},
            "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
        }

    # ------------------------------------------------------------ controllers
    def add_controller(self, controller: Controller) -> None:
        """Run ``controller`` after every write of what it watches (and now)."""
        with self._lock:
            self._controllers.append(controller)
            self._reconcile(controller)

    def run_controllers(self, controller: Controller | None = None) -> None:
        """Run ``controller`` (default: every controller) once, e.g. because the world outside
        the cluster changed."""
        with self._lock:
            for each in self._controllers if controller is None else [controller]:
                self._reconcile(each)

    def _reconcile(self, controller: Controller) -> None:
        entries = {
            resource: {
                (namespace, name): entry
                for namespace, bucket in self._objects.get(resource, {}).items()
                for name, entry in bucket.items()
            }
            for resource in controller.resources
        }
        flat = [entry for by_key in entries.values() for entry in by_key.values()]
        before = [copy.deepcopy(entry.obj) for entry in flat]
        controller.reconcile(
            {resource: {key: e.obj for key, e in by_key.items()}
             for resource, by_key in entries.items()},
            self._now(),
        )
        resources = [resource for resource, by_key in entries.items() for _ in by_key]
        for resource, entry, old in zip(resources, flat, before, strict=True):
            if entry.obj != old:
                rtype = self._type_of(resource)
                entry.obj["metadata"]["resourceVersion"] = self._next_rv()
                if rtype is not None:
                    prev = self._view(rtype, _Entry(old, entry.ownership, entry.times))
                    self._record(rtype, "MODIFIED", self._view(rtype, entry), prev)

    def _reconcile_watchers(self, rtype: ResourceType | None) -> None:
        """Run the controllers watching ``rtype`` (None: every controller)."""
        for controller in self._controllers:
            if rtype is None or (rtype.group, rtype.plural) in controller.resources:
                self._reconcile(controller)

    def _after_write(self, rtype: ResourceType, entry: _Entry, kind: str,
                     prev: dict[str, Any] | None = None) -> None:
        """What the API server does as part of a write (a CRD's status, a secret's
        ``stringData``), the write's watch event, then the controllers watching ``rtype``."""
        if rtype.group == CRD_GROUP and rtype.plural == CRD_PLURAL:
            self._crd_status(entry.obj)
            self._refresh_crds()
        elif not rtype.group and rtype.plural == "secrets":
            string_data = entry.obj.pop("stringData", None) or {}
            data = entry.obj.setdefault("data", {}) if string_data else entry.obj.get("data")
            for key, value in string_data.items():
                assert data is not None
                data[key] = base64.b64encode(str(value).encode()).decode()
        self._record(rtype, kind, self._view(rtype, entry), prev)
        self._reconcile_watchers(rtype)

    @staticmethod
    def _spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
        def strip(obj: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion",
                                                              "kind")}

        return strip(old) != strip(new)
