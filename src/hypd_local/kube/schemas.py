"""The schemas of what the API serves: built-in kinds and custom resources.

**Built-in kinds.** The official Python client's models (``kubernetes.client.models``, pydantic
classes generated from kube-apiserver's OpenAPI) know every field of every built-in type: its
JSON name, its type, whether it is required, its description. `builtin_definitions` turns the
models reachable from the served kinds into OpenAPI v3 schemas named as kube-apiserver names
them (``io.k8s.api.core.v1.Pod``, ``io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta``), with
``x-kubernetes-group-version-kind`` on the kinds and the patch strategies and merge keys of the
lists strategic merge patch merges (`PATCH_META`, those of the Kubernetes types). The models do
not say which strings are quantities or int-or-strings beyond a union type, nor give enums or
formats: those are not in the schemas.

**Custom resources.** A CRD version's ``openAPIV3Schema``, with ``apiVersion``, ``kind`` and
``metadata`` (ObjectMeta) added, named ``<reversed group>.<version>.<Kind>``
(``sh.karpenter.v1.NodePool``), as apiextensions-apiserver publishes it.

Schemas use v3 references (``#/components/schemas/<name>``); `openapi` rewrites them for v2.
"""

from __future__ import annotations

import collections
import copy
import datetime
import functools
import importlib
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hypd_local.kube.resources import BUILTIN, ResourceType

Schema = dict[str, Any]
REF_PREFIX = "#/components/schemas/"
GVK = "x-kubernetes-group-version-kind"
META = "io.k8s.apimachinery.pkg.apis.meta.v1"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"

_PACKAGES = {
    "": "io.k8s.api.core.v1",
    "apps": "io.k8s.api.apps.v1",
    "batch": "io.k8s.api.batch.v1",
    "rbac.authorization.k8s.io": "io.k8s.api.rbac.v1",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
    "coordination.k8s.io": "io.k8s.api.coordination.v1",
    "storage.k8s.io": "io.k8s.api.storage.v1",
    "scheduling.k8s.io": "io.k8s.api.scheduling.v1",
    "policy": "io.k8s.api.policy.v1",
}
_META_TYPES = frozenset({
    "ObjectMeta", "ListMeta", "LabelSelector", "LabelSelectorRequirement", "ManagedFieldsEntry",
    "OwnerReference", "Condition", "Status", "StatusDetails", "StatusCause", "DeleteOptions",
    "Preconditions",
})
_CLASS_NAME = re.compile(r"^(?:[A-Z][a-z]+)?(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")

# (kind name of a definition, JSON field) -> (x-kubernetes-patch-strategy,
# x-kubernetes-patch-merge-key)
# for the lists strategic merge patch merges in the Kubernetes types (key None: a list of
# scalars merged as a set).
PATCH_META: Mapping[tuple[str, str], tuple[str, str | None]] = {
    ("ObjectMeta", "finalizers"): ("merge", None),
    ("ObjectMeta", "ownerReferences"): ("merge", "uid"),
    ("PodSpec", "containers"): ("merge", "name"),
    ("PodSpec", "initContainers"): ("merge", "name"),
    ("PodSpec", "ephemeralContainers"): ("merge", "name"),
    ("PodSpec", "volumes"): ("merge,retainKeys", "name"),
    ("PodSpec", "imagePullSecrets"): ("merge", "name"),
    ("PodSpec", "hostAliases"): ("merge", "ip"),
    ("PodSpec", "topologySpreadConstraints"): ("merge", "topologyKey"),
    ("PodSpec", "resourceClaims"): ("merge,retainKeys", "name"),
    ("PodSpec", "schedulingGates"): ("merge", "name"),
    ("Container", "env"): ("merge", "name"),
    ("Container", "ports"): ("merge", "containerPort"),
    ("Container", "volumeMounts"): ("merge", "mountPath"),
    ("Container", "volumeDevices"): ("merge", "devicePath"),
    ("EphemeralContainer", "env"): ("merge", "name"),
    ("EphemeralContainer", "volumeMounts"): ("merge", "mountPath"),
    ("EphemeralContainer", "volumeDevices"): ("merge", "devicePath"),
    ("PodStatus", "conditions"): ("merge", "type"),
    ("PodStatus", "podIPs"): ("merge", "ip"),
    ("PodStatus", "hostIPs"): ("merge", "ip"),
    ("NodeSpec", "podCIDRs"): ("merge", None),
    ("NodeStatus", "conditions"): ("merge", "type"),
    ("NodeStatus", "addresses"): ("merge", "type"),
    ("ServiceSpec", "ports"): ("merge", "port"),
    ("NamespaceStatus", "conditions"): ("merge", "type"),
    ("PersistentVolumeClaimStatus", "conditions"): ("merge", "type"),
    ("DeploymentSpec", "strategy"): ("retainKeys", None),
    ("DeploymentStatus", "conditions"): ("merge", "type"),
    ("ReplicaSetStatus", "conditions"): ("merge", "type"),
    ("StatefulSetStatus", "conditions"): ("merge", "type"),
    ("DaemonSetStatus", "conditions"): ("merge", "type"),
    ("JobStatus", "conditions"): ("merge", "type"),
    ("PodDisruptionBudgetStatus", "conditions"): ("merge", "type"),
    ("ServiceStatus", "conditions"): ("merge", "type"),
}


def _models() -> Any:
    return importlib.import_module("kubernetes.client.models")


def model_class(rtype: ResourceType, *, list_kind: bool = False) -> type | None:
    """The client's model class of a built-in kind (``V1Pod``; core Event is ``CoreV1Event``)."""
    models = _models()
    kind = rtype.kind + ("List" if list_kind else "")
    version = rtype.version[0].upper() + rtype.version[1:]
    for name in (f"{version}{kind}", f"Core{version}{kind}"):
        found = getattr(models, name, None)
        if isinstance(found, type):
            return found
    return None


def _kind_name(cls: type) -> str:
    match = _CLASS_NAME.match(cls.__name__)
    return match.group(2) if match else cls.__name__


def _description(cls: type) -> str:
    text = (cls.__doc__ or "").split("Attributes:", 1)[0]
    return " ".join(text.split())


def _json_name(name: str, field: Any) -> str:
    return str(field.serialization_alias or name)


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and hasattr(annotation, "model_fields")


class _Builder:
    """Walks the model classes from the served kinds, naming each after the package of the
    first kind that reaches it."""

    def __init__(self) -> None:
        self.names: dict[type, str] = {}
        self.definitions: dict[str, Schema] = {}
        self._pending: collections.deque[tuple[type, str]] = collections.deque()

    def name(self, cls: type, package: str) -> str:
        if cls not in self.names:
            kind = _kind_name(cls)
            own = META if kind in _META_TYPES else package
            name = f"{own}.{kind}"
            if name in self.definitions or name in self.names.values():
                name = f"{own}.{cls.__name__}"
            self.names[cls] = name
            self._pending.append((cls, own))
        return self.names[cls]

    def type_schema(self, annotation: Any, package: str) -> Schema:
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is typing.Annotated:
            return self.type_schema(args[0], package)
        if origin in (typing.Union, types.UnionType):
            kinds = [a for a in args if a is not type(None)]
            if len(kinds) == 1:
                return self.type_schema(kinds[0], package)
            plain = {typing.get_args(k)[0] if typing.get_origin(k) is typing.Annotated else k
                     for k in kinds}
            if plain == {int, str}:
                self.definitions.setdefault(INT_OR_STRING, {
                    "type": "string", "format": "int-or-string",
                    "description": "IntOrString is a type that can hold an int32 or a string."})
                return {"$ref": REF_PREFIX + INT_OR_STRING}
            if plain <= {int, float}:
                return {"type": "number", "format": "double"}
            if plain <= {bytes, str}:
                return {"type": "string", "format": "byte"}
            return {}
        if origin in (list, typing.List):  # noqa: UP006 - the models' own annotations
            return {"type": "array", "items": self.type_schema(args[0], package) if args else {}}
        if origin in (dict, typing.Dict):  # noqa: UP006
            value = args[1] if len(args) == 2 else Any
            if value is Any:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            return {"type": "object", "additionalProperties": self.type_schema(value, package)}
        if annotation is str:
            return {"type": "string"}
        if annotation is bool:
            return {"type": "boolean"}
        if annotation is int:
            return {"type": "integer"}
        if annotation is float:
            return {"type": "number", "format": "double"}
        if annotation is datetime.datetime:
            return {"type": "string", "format": "date-time"}
        if annotation is bytes:
            return {"type": "string", "format": "byte"}
        if _is_model(annotation):
            return {"$ref": REF_PREFIX + self.name(annotation, package)}
        return {}

    def build(self) -> None:
        while self._pending:
            cls, package = self._pending.popleft()  # breadth first: core kinds name first
            kind = _kind_name(cls)
            properties: dict[str, Schema] = {}
            required: list[str] = []
            fields: Mapping[str, Any] = getattr(cls, "model_fields", {})
            for name, field in fields.items():
                json_name = _json_name(name, field)
                schema = self.type_schema(field.annotation, package)
                if field.description:
                    schema = ({"allOf": [schema], "description": field.description}
                              if "$ref" in schema else {**schema,
                                                        "description": field.description})
                patch = PATCH_META.get((kind, json_name))
                if patch is not None:
                    schema["x-kubernetes-patch-strategy"] = patch[0]
                    if patch[1]:
                        schema["x-kubernetes-patch-merge-key"] = patch[1]
                properties[json_name] = schema
                if field.is_required():
                    required.append(json_name)
            definition: Schema = {"type": "object", "description": _description(cls),
                                  "properties": properties}
            if required:
                definition["required"] = sorted(required)
            self.definitions[self.names[cls]] = definition


@functools.cache
def _builtin() -> tuple[Mapping[str, Schema], Mapping[tuple[str, str, str], str]]:
    builder = _Builder()
    roots: dict[tuple[str, str, str], str] = {}
    for rtype in BUILTIN:
        package = _PACKAGES.get(rtype.group, f"io.k8s.api.{rtype.group}.{rtype.version}")
        for list_kind in (False, True):
            cls = model_class(rtype, list_kind=list_kind)
            if cls is None:
                continue
            kind = rtype.kind + ("List" if list_kind else "")
            roots[(rtype.group, rtype.version, kind)] = builder.name(cls, package)
    for name in ("V1Status", "V1DeleteOptions"):
        builder.name(getattr(_models(), name), META)
    builder.build()
    for (group, version, kind), name in roots.items():
        builder.definitions[name][GVK] = [{"group": group, "kind": kind, "version": version}]
    for name, kind in ((f"{META}.Status", "Status"), (f"{META}.DeleteOptions", "DeleteOptions")):
        builder.definitions[name][GVK] = [{"group": "", "kind": kind, "version": "v1"}]
    return builder.definitions, roots


def builtin_definitions() -> Mapping[str, Schema]:
    """Every built-in definition (a shared, cached mapping: copy before changing one)."""
    return _builtin()[0]


def builtin_root(group: str, version: str, kind: str) -> str | None:
    """The definition name of a built-in kind (or its list kind)."""
    return _builtin()[1].get((group, version, kind))


# --------------------------------------------------------------------------- custom resources

def crd_definition_prefix(group: str, version: str) -> str:
    return ".".join([*reversed(group.split(".")), version])


def custom_resource_schemas(rtype: ResourceType, crd_version: Mapping[str, Any] | None
                            ) -> dict[str, Schema]:
    """The definitions of a custom resource kind and its list kind."""
    prefix = crd_definition_prefix(rtype.group, rtype.version)
    declared = copy.deepcopy(((crd_version or {}).get("schema") or {}).get("openAPIV3Schema")
                             or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    properties = declared.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string", "description": "APIVersion defines the "
                                "versioned schema of this representation of an object."}
    properties["kind"] = {"type": "string", "description": "Kind is a string value "
                          "representing the REST resource this object represents."}
    properties["metadata"] = {"$ref": f"{REF_PREFIX}{META}.ObjectMeta"}
    declared.setdefault("type", "object")
    declared[GVK] = [{"group": rtype.group, "kind": rtype.kind, "version": rtype.version}]
    kind_ref = f"{REF_PREFIX}{prefix}.{rtype.kind}"
    listed: Schema = {
        "type": "object", "required": ["items"],
        "description": f"{rtype.kind}List is a list of {rtype.kind}",
        "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                       "items": {"type": "array", "items": {"$ref": kind_ref}},
                       "metadata": {"$ref": f"{REF_PREFIX}{META}.ListMeta"}},
        GVK: [{"group": rtype.group, "kind": f"{rtype.kind}List", "version": rtype.version}],
    }
    return {f"{prefix}.{rtype.kind}": declared, f"{prefix}.{rtype.kind}List": listed}


# --------------------------------------------------------------------------- references

def references(schema: Any) -> Iterable[str]:
    """The definition names a schema refers to (directly)."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            yield ref[len(REF_PREFIX):]
        for key, value in schema.items():
            if key != "$ref":
                yield from references(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from references(item)


def closure(names: Iterable[str], definitions: Mapping[str, Schema]) -> dict[str, Schema]:
    """``names`` and every definition they refer to, transitively."""
    found: dict[str, Schema] = {}
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in found or name not in definitions:
            continue
        found[name] = definitions[name]
        pending.extend(references(definitions[name]))
    return found


Resolve = Callable[[str], Schema | None]


def resolve_node(schema: Schema, resolve: Resolve) -> Schema:
    """A schema node with its `$ref` (and a single-`allOf` wrapper) resolved, its own keys
    kept."""
    seen = 0
    while True:
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX) and seen < 32:
            target = resolve(ref[len(REF_PREFIX):])
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**(target or {}), **rest}
            seen += 1
            continue
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            schema = {**all_of[0], **rest}
            continue
        return schema
