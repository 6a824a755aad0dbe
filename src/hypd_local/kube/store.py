"""Generic in-memory object storage with the API server's semantics.

Objects are kept by (group, resource) -> namespace ("" when cluster-scoped) -> name, whatever
their kind: no per-kind code paths except the few the API server itself special-cases
(namespaces, CRDs, secrets' ``stringData``). Controllers (`Controller`: PersistentVolumeClaim
binding, `volumes`, always; others added with `add_controller`) run after every write or
deletion of the resources they watch, and on `run_controllers`. One lock serialises every
write; ``resourceVersion`` is a global counter as in etcd.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import importlib
import json
import re
import secrets
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from hypd_local.kube import apply as ssa
from hypd_local.kube import volumes
from hypd_local.kube.errors import (
    KubeError,
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
)
from hypd_local.kube.patch import json_patch, merge_patch, strategic_merge_patch
from hypd_local.kube.resources import BUILTIN, CRD_GROUP, CRD_PLURAL, ResourceType, types_from_crd
from hypd_local.kube.selectors import parse_field_selector, parse_label_selector
from hypd_local.kube.validation import Admission

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
LAST_APPLIED_MANAGER = "kubectl"  # the field manager of kubectl apply --server-side
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAMED = frozenset({"namespaces", "services"})

# (group, plural) -> (namespace, name) -> the stored object (namespace "" when cluster-scoped)
Objects = Mapping[tuple[str, str], Mapping[tuple[str, str], dict[str, Any]]]


class Clock(Protocol):
    def now(self) -> datetime: ...


class Controller(Protocol):
    """Reconciles stored objects in place, as a controller of a real cluster would.

    ``reconcile`` gets every object of the ``resources`` it watches ((group, plural) pairs)
    and ``now`` (RFC 3339); whatever it changes gets a new resourceVersion."""

    @property
    def resources(self) -> frozenset[tuple[str, str]]: ...

    def reconcile(self, objects: Objects, now: str) -> None: ...


def rfc3339(moment: datetime) -> str:
    """Kubernetes' timestamp format (second precision, UTC, ``Z``)."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


WATCH_HISTORY = 10_000
"""How many changes the store keeps for watches (etcd's compaction, in count instead of time):
a watch from an older resourceVersion is told 410 Expired."""


@dataclass(frozen=True)
class Change:
    """One write as a watch reports it: ADDED, MODIFIED or DELETED, at resourceVersion ``rv``.
    ``obj`` is the object after the change (for DELETED its last state, with the deletion's
    resourceVersion); ``prev`` the object before a MODIFIED one."""

    rv: int
    type: str
    resource: tuple[str, str]  # (group, plural)
    namespace: str  # "" when cluster-scoped
    obj: dict[str, Any]
    prev: dict[str, Any] | None = None


class Expired(KubeError):
    """The resourceVersion a watch starts from is older than the changes the store keeps."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(410, "Expired",
                         f"too old resource version: {requested} ({oldest})")


@dataclass
class _Entry:
    obj: dict[str, Any]
    ownership: ssa.Ownership = field(default_factory=dict)
    times: dict[tuple[str, str], str] = field(default_factory=dict)


class ObjectStore:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._rv = 0
        self._objects: dict[tuple[str, str], dict[str, dict[str, _Entry]]] = {}
        self._builtin = {(t.group, t.version, t.plural): t for t in BUILTIN}
        self._crd_types: dict[tuple[str, str, str], ResourceType] = {}
        self.crd_revision = 0  # changes whenever the CRDs (so the served custom types) change
        self._controllers: list[Controller] = [volumes.VolumeBinding()]
        self._changes: deque[Change] = deque(maxlen=WATCH_HISTORY)
        self._compacted = 0  # the newest resourceVersion whose change is no longer kept
        self._changed = threading.Condition(self._lock)
        ns_type = self._builtin[("", "v1", "namespaces")]
        for name in DEFAULT_NAMESPACES:
            self.create(ns_type, None, {"metadata": {"name": name}}, "kube-apiserver")

    # ----------------------------------------------------------------- types
    def find_type(self, group: str, version: str, plural: str) -> ResourceType | None:
        key = (group, version, plural)
        with self._lock:
            return self._builtin.get(key) or self._crd_types.get(key)

    def all_types(self) -> list[ResourceType]:
        with self._lock:
            return [*self._builtin.values(), *self._crd_types.values()]

    def builtin_type(self, group: str, plural: str) -> ResourceType:
        for rtype in self._builtin.values():
            if rtype.group == group and rtype.plural == plural:
                return rtype
        raise KeyError((group, plural))

    def _type_of(self, resource: tuple[str, str]) -> ResourceType | None:
        """The served type of stored objects of (group, plural) (a CRD's storage version)."""
        group, plural = resource
        for rtype in self._builtin.values():
            if rtype.group == group and rtype.plural == plural:
                return rtype
        found = [t for t in self._crd_types.values() if t.group == group and t.plural == plural]
        return next((t for t in found if t.storage), found[0] if found else None)

    def crd_version(self, rtype: ResourceType) -> dict[str, Any] | None:
        """The ``spec.versions[]`` entry of the CRD that serves ``rtype`` (None: built-in)."""
        if not rtype.crd:
            return None
        with self._lock:
            crds = self._bucket(self.builtin_type(CRD_GROUP, CRD_PLURAL), None)
            for entry in crds.values():
                spec = entry.obj.get("spec") or {}
                if (spec.get("group") == rtype.group
                        and (spec.get("names") or {}).get("plural") == rtype.plural):
                    for version in spec.get("versions") or []:
                        if version.get("name") == rtype.version:
                            return copy.deepcopy(dict(version))
        return None

    # ----------------------------------------------------------------- watch
    def _record(self, rtype: ResourceType, kind: str, view: dict[str, Any],
                prev: dict[str, Any] | None = None) -> None:
        if self._changes.maxlen is not None and len(self._changes) == self._changes.maxlen:
            self._compacted = self._changes[0].rv
        self._changes.append(Change(int(view["metadata"]["resourceVersion"]), kind,
                                    (rtype.group, rtype.plural),
                                    view["metadata"].get("namespace") or "", view, prev))
        self._changed.notify_all()

    def watch_start(self, rtype: ResourceType, namespace: str | None, since: int | None
                    ) -> tuple[list[dict[str, Any]] | None, int]:
        """Where a watch begins: without ``since``, the objects there are now (the watch's
        synthetic ADDED events) and the current resourceVersion; with it, no objects and
        ``since`` (`Expired` when changes after it are no longer kept)."""
        with self._lock:
            if since is None:
                buckets = self._objects.get((rtype.group, rtype.plural), {})
                views = [self._view(rtype, entry)
                         for ns, bucket in sorted(buckets.items())
                         if namespace is None or ns == namespace
                         for _name, entry in sorted(bucket.items())]
                return views, self._rv
            if since < self._compacted:
                raise Expired(since, self._compacted + 1)
            return None, since

    def changes_since(self, rtype: ResourceType, namespace: str | None, since: int,
                      wait: float = 0.0) -> tuple[list[Change], int]:
        """The changes of ``rtype``'s objects (in ``namespace``, if given) after resourceVersion
        ``since``, oldest first, and the resourceVersion they bring the watch to. Waits up to
        ``wait`` seconds (real time) for a write when there is none yet."""
        resource = (rtype.group, rtype.plural)
        with self._changed:
            if self._rv <= since and wait > 0:
                self._changed.wait(wait)
            if since < self._compacted:
                raise Expired(since, self._compacted + 1)
            found: list[Change] = []
            for change in reversed(self._changes):
                if change.rv <= since:
                    break
                if change.resource == resource and (namespace is None
                                                    or change.namespace == namespace):
                    found.append(change)
            found.reverse()
            return found, max(self._rv, since)

    @contextlib.contextmanager
    def dry_run(self) -> Iterator[None]:
        """Writes inside leave no trace (``dryRun=All``): everything they do, validation,
        defaults, controllers included, happens on the store's state and is then put back."""
        with self._lock:
            saved = (copy.deepcopy(self._objects), self._rv, list(self._changes),
                     self._compacted, dict(self._crd_types), self.crd_revision)
            try:
                yield
            finally:
                objects, self._rv, changes, self._compacted, crd_types, self.crd_revision = saved
                self._objects = objects
                self._changes.clear()
                self._changes.extend(changes)
                self._crd_types = crd_types

    def wake_watchers(self) -> None:
        """Wake every waiting `changes_since` (e.g. because the server stops)."""
        with self._changed:
            self._changed.notify_all()

    # --------------------------------------------------------------- helpers
    def _now(self) -> str:
        return rfc3339(self._clock.now())

    def _next_rv(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _bucket(self, rtype: ResourceType, namespace: str | None) -> dict[str, _Entry]:
        return self._objects.setdefault((rtype.group, rtype.plural), {}).setdefault(
            namespace or "", {}
        )

    def _entry(self, rtype: ResourceType, namespace: str | None, name: str) -> _Entry:
        entry = self._bucket(rtype, namespace).get(name)
        if entry is None:
            raise not_found(rtype.plural, rtype.group, name)
        return entry

    def _view(self, rtype: ResourceType, entry: _Entry) -> dict[str, Any]:
        obj = copy.deepcopy(entry.obj)
        obj["apiVersion"] = rtype.api_version
        obj["kind"] = rtype.kind
        if entry.ownership:
            obj["metadata"]["managedFields"] = ssa.managed_fields(
                entry.ownership, rtype.api_version, entry.times,
                obj["metadata"].get("creationTimestamp") or self._now(),
            )
        return obj

    def _require_namespace(self, rtype: ResourceType, namespace: str | None) -> None:
        if not rtype.namespaced:
            return
        if not namespace:
            raise bad_request("the namespace of the object must be given for a namespaced resource")
        if namespace not in self._bucket(self.builtin_type("", "namespaces"), None):
            raise not_found("namespaces", "", namespace)

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

    # ------------------------------------------------------------ operations
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

    def patch(self, rtype: ResourceType, namespace: str | None, name: str, content_type: str,
              body: bytes, manager: str | None, *, force: bool = False,
              subresource: str | None = None, admission: Admission | None = None
              ) -> tuple[dict[str, Any], bool]:
        """Apply a patch; returns the object and whether it was created (apply only)."""
        try:
            patch_doc = (yaml.safe_load(body.decode() or "{}") if content_type == APPLY_PATCH
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
