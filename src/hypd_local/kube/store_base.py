"""The object store's state: stored objects, served types, the change history watches read,
and the helpers every write uses (`hypd_local.kube.store`)."""

from __future__ import annotations

import contextlib
import copy
import importlib
import re
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from hypd_local.documents import json_first
from hypd_local.kube import apply as ssa
from hypd_local.kube import volumes
from hypd_local.kube.errors import (
    KubeError,
    bad_request,
    not_found,
)
from hypd_local.kube.resources import BUILTIN, CRD_GROUP, CRD_PLURAL, ResourceType

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs


def load_yaml(text: str) -> Any:
    """A YAML request body. JSON (what clients send for server-side apply) is read as JSON, as
    the API server reads it (`hypd_local.documents`: PyYAML was 3% of the process with fifty
    creates at once applying their manifests).

    Raises ValueError or yaml.YAMLError for a body that is neither."""
    return json_first(text, yaml.safe_load)

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


class StoreBase:
    """Objects by (group, resource) -> namespace -> name, the served types and the watch
    history, under one lock."""

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
