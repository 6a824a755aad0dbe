"""The API server's OpenAPI documents: ``/openapi/v2`` and ``/openapi/v3`` (+ one document per
group-version, ``/openapi/v3/api/v1``, ``/openapi/v3/apis/<group>/<version>``).

kubectl reads them to decide how to validate and patch: a PATCH operation of a kind that takes
the ``fieldValidation`` query parameter means the server validates fields itself (kubectl then
sends ``fieldValidation=Strict`` and validates nothing), and a PATCH whose request body may be
``application/strategic-merge-patch+json`` means kubectl computes strategic merge patches from the
schemas' ``x-kubernetes-patch-*`` extensions. ``kubectl explain`` prints the schemas.

Every served kind is there (`schemas`): paths with their operations (``x-kubernetes-action``,
``x-kubernetes-group-version-kind``, parameters, request bodies, responses), the definitions the
kinds reach, custom resources from their CRDs. The v3 root lists each group-version's document
with a content hash in its URL (``?hash=``), so clients cache a document until it changes (a CRD
is added, changed or removed); a stale hash is redirected to the current one. The v2 document is
served as JSON or, as kubectl asks for it, as gnostic's protobuf (`openapi_pb`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from hypd_local.kube import openapi_pb, schemas
from hypd_local.kube.resources import ResourceType
from hypd_local.kube.schemas import GVK, META, REF_PREFIX, Schema

PATCH_TYPES_BUILTIN = ("application/apply-patch+yaml", "application/json-patch+json",
                       "application/merge-patch+json", "application/strategic-merge-patch+json")
PATCH_TYPES_CUSTOM = PATCH_TYPES_BUILTIN[:3]
# What clients ask for (client-go writes "@", which is not a valid media type token) and what
# the answer says it is.
PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
PROTOBUF_V2_ALIASES = (PROTOBUF_V2, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
_V2_ONLY_V3_KEYS = ("nullable", "anyOf", "oneOf", "not")
PATCH_DEFINITION = f"{META}.Patch"
_EXTRA_DEFINITIONS: Mapping[str, Schema] = {
    PATCH_DEFINITION: {"type": "object", "description": "Patch is provided to give a concrete "
                       "name and type to the Kubernetes PATCH request body."},
}

Operation = dict[str, Any]


def gv_path(group: str, version: str) -> str:
    """A group-version's key in the v3 root: ``api/v1``, ``apis/apps/v1``."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in text.replace("-", ".").split(".")
                   if part)


def _operation_group(rtype: ResourceType) -> str:
    if not rtype.group:
        return "Core"
    group = rtype.group.removesuffix(".k8s.io") if not rtype.crd else rtype.group
    return _camel(group)


def _param(name: str, where: str, kind: str, description: str, required: bool = False
           ) -> dict[str, Any]:
    param: dict[str, Any] = {"name": name, "in": where, "description": description,
                             "schema": {"type": kind}, "uniqueItems": True}
    if required:
        param["required"] = True
    return param


_PRETTY = _param("pretty", "query", "string", "If 'true', then the output is pretty printed.")
_NAME = _param("name", "path", "string", "name of the object", required=True)
_NAMESPACE = _param("namespace", "path", "string", "object name and auth scope, such as for "
                    "teams and projects", required=True)
_DRY_RUN = _param("dryRun", "query", "string", "When present, indicates that modifications "
                  "should not be persisted.")
_LIST = [
    _param("allowWatchBookmarks", "query", "boolean", "allowWatchBookmarks requests watch "
           "events with type \"BOOKMARK\"."),
    _param("continue", "query", "string", "The continue option should be set when retrieving "
           "more results from the server."),
    _param("fieldSelector", "query", "string", "A selector to restrict the list of returned "
           "objects by their fields. Defaults to everything."),
    _param("labelSelector", "query", "string", "A selector to restrict the list of returned "
           "objects by their labels. Defaults to everything."),
    _param("limit", "query", "integer", "limit is a maximum number of responses to return for "
           "a list call."),
    _param("resourceVersion", "query", "string", "resourceVersion sets a constraint on what "
           "resource versions a request may be served from."),
    _param("resourceVersionMatch", "query", "string", "resourceVersionMatch determines how "
           "resourceVersion is applied to list calls."),
    _param("sendInitialEvents", "query", "boolean", "`sendInitialEvents=true` may be set "
           "together with `watch=true`: the stream begins with synthetic events."),
    _param("timeoutSeconds", "query", "integer", "Timeout for the list/watch call."),
    _param("watch", "query", "boolean", "Watch for changes to the described resources and "
           "return them as a stream of add, update, and remove notifications."),
]
_WRITE = [
    _DRY_RUN,
    _param("fieldManager", "query", "string", "fieldManager is a name associated with the "
           "actor or entity that is making these changes."),
    _param("fieldValidation", "query", "string", "fieldValidation instructs the server on how "
           "to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate "
           "fields. Valid values are: Ignore, Warn (the default), Strict."),
]
_FORCE = _param("force", "query", "boolean", "Force is going to \"force\" Apply requests.")
_DELETE = [
    _DRY_RUN,
    _param("gracePeriodSeconds", "query", "integer", "The duration in seconds before the object "
           "should be deleted."),
    _param("propagationPolicy", "query", "string", "Whether and how garbage collection will be "
           "performed."),
]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF_PREFIX + name}


def _responses(name: str, created: bool = False) -> dict[str, Any]:
    content = {media: {"schema": _ref(name)} for media in ("application/json", "application/yaml")}
    responses: dict[str, Any] = {"200": {"description": "OK", "content": content},
                                 "401": {"description": "Unauthorized"}}
    if created:
        responses["201"] = {"description": "Created", "content": content}
    return responses


def _operation(rtype: ResourceType, action: str, operation_id: str, kind: str,
               parameters: list[dict[str, Any]], response: str, *,
               body: tuple[tuple[str, ...], str] | None = None, created: bool = False
               ) -> Operation:
    operation: Operation = {
        "tags": [f"{_operation_group(rtype).lower()}_{rtype.version}"],
        "description": f"{action} {kind}", "operationId": operation_id,
        "parameters": parameters, "responses": _responses(response, created),
        "x-kubernetes-action": action,
        GVK: {"group": rtype.group, "kind": kind, "version": rtype.version},
    }
    if body is not None:
        media, name = body
        operation["requestBody"] = {"content": {m: {"schema": _ref(name)} for m in media},
                                    "required": True}
    return operation


def paths_for(rtype: ResourceType, kind_name: str, list_name: str) -> dict[str, Any]:
    """The v3 paths of one served kind (collection, object, status, all-namespaces list)."""
    prefix = f"/apis/{rtype.group}/{rtype.version}" if rtype.group else f"/api/{rtype.version}"
    scope = "Namespaced" if rtype.namespaced else ""
    where = f"{prefix}/namespaces/{{namespace}}/{rtype.plural}" if rtype.namespaced else (
        f"{prefix}/{rtype.plural}")
    ident = f"{_operation_group(rtype)}{_camel(rtype.version)}{scope}{rtype.kind}"
    scope_params = [_NAMESPACE] if rtype.namespaced else []
    patch_types = PATCH_TYPES_CUSTOM if rtype.crd else PATCH_TYPES_BUILTIN
    json_body = ("*/*",)
    kind, status_kind = rtype.kind, rtype.kind
    paths: dict[str, Any] = {
        where: {
            "get": _operation(rtype, "list", f"list{ident}", kind, _LIST, list_name),
            "post": _operation(rtype, "post", f"create{ident}", kind, _WRITE, kind_name,
                               body=(json_body, kind_name), created=True),
            "delete": _operation(rtype, "deletecollection", f"deleteCollection{ident}", kind,
                                 [*_LIST, *_DELETE], f"{META}.Status",
                                 body=(json_body, f"{META}.DeleteOptions")),
            "parameters": [*scope_params, _PRETTY],
        },
        f"{where}/{{name}}": {
            "get": _operation(rtype, "get", f"read{ident}", kind, [], kind_name),
            "put": _operation(rtype, "put", f"replace{ident}", kind, _WRITE, kind_name,
                              body=(json_body, kind_name), created=True),
            "patch": _operation(rtype, "patch", f"patch{ident}", kind, [*_WRITE, _FORCE],
                                kind_name, body=(patch_types, PATCH_DEFINITION), created=True),
            "delete": _operation(rtype, "delete", f"delete{ident}", kind, _DELETE,
                                 f"{META}.Status", body=(json_body, f"{META}.DeleteOptions")),
            "parameters": [_NAME, *scope_params, _PRETTY],
        },
    }
    if "status" in rtype.subresources:
        paths[f"{where}/{{name}}/status"] = {
            "get": _operation(rtype, "get", f"read{ident}Status", status_kind, [], kind_name),
            "put": _operation(rtype, "put", f"replace{ident}Status", status_kind, _WRITE,
                              kind_name, body=(json_body, kind_name), created=True),
            "patch": _operation(rtype, "patch", f"patch{ident}Status", status_kind,
                                [*_WRITE, _FORCE], kind_name,
                                body=(patch_types, PATCH_DEFINITION), created=True),
            "parameters": [_NAME, *scope_params, _PRETTY],
        }
    if rtype.namespaced:
        paths[f"{prefix}/{rtype.plural}"] = {
            "get": _operation(rtype, "list", f"list{_operation_group(rtype)}"
                              f"{_camel(rtype.version)}{rtype.kind}ForAllNamespaces", kind, _LIST,
                              list_name),
            "parameters": [_PRETTY],
        }
    return paths


# --------------------------------------------------------------------------- v2 from v3

def _to_v2_schema(schema: Any) -> Any:
    if isinstance(schema, dict):
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and set(all_of[0]) == {"$ref"}:
            # v3's `allOf: [$ref]` beside a description is v2's $ref with siblings
            schema = {**{k: v for k, v in schema.items() if k != "allOf"}, **all_of[0]}
        out = {}
        for key, value in schema.items():
            if key in _V2_ONLY_V3_KEYS:
                continue
            if key == "$ref" and isinstance(value, str):
                out[key] = value.replace(REF_PREFIX, "#/definitions/")
            else:
                out[key] = _to_v2_schema(value)
        return out
    if isinstance(schema, list):
        return [_to_v2_schema(item) for item in schema]
    return schema


def _to_v2_parameter(param: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in param.items() if k != "schema"}
    out["type"] = param["schema"]["type"]
    return out


def _to_v2_operation(operation: Operation) -> Operation:
    out: Operation = {k: v for k, v in operation.items()
                      if k not in ("requestBody", "responses", "parameters")}
    parameters = [_to_v2_parameter(p) for p in operation.get("parameters") or []]
    body = operation.get("requestBody")
    if body is not None:
        media = list(body["content"])
        schema = next(iter(body["content"].values()))["schema"]
        parameters.insert(0, {"name": "body", "in": "body", "required": True,
                              "schema": _to_v2_schema(schema)})
        out["consumes"] = media
    out["parameters"] = parameters
    out["produces"] = ["application/json", "application/yaml"]
    out["schemes"] = ["https"]
    responses = {}
    for code, response in operation["responses"].items():
        converted: dict[str, Any] = {"description": response["description"]}
        if "content" in response:
            converted["schema"] = _to_v2_schema(
                response["content"]["application/json"]["schema"])
        responses[code] = converted
    out["responses"] = responses
    return out


def _to_v2_paths(paths: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path, item in paths.items():
        converted: dict[str, Any] = {}
        for key, value in item.items():
            if key == "parameters":
                converted[key] = [_to_v2_parameter(p) for p in value]
            else:
                converted[key] = _to_v2_operation(value)
        out[path] = converted
    return out


# --------------------------------------------------------------------------- documents

def _digest(document: Any) -> str:
    return hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest().upper()


class OpenApiDocuments:
    """The documents of one API server, rebuilt when its served types change.

    ``types()`` lists the served resource types; ``crd_version(rtype)`` gives a custom type's
    CRD version; ``revision()`` changes whenever those do; ``title_version()`` is the server's
    gitVersion."""

    def __init__(self, types: Callable[[], list[ResourceType]],
                 crd_version: Callable[[ResourceType], Mapping[str, Any] | None],
                 revision: Callable[[], int], title_version: Callable[[], str]) -> None:
        self._types = types
        self._crd_version = crd_version
        self._revision = revision
        self._title_version = title_version
        self._lock = threading.Lock()
        self._built: tuple[int, str, dict[str, Any]] | None = None

    def _build(self) -> dict[str, Any]:
        key = (self._revision(), self._title_version())
        with self._lock:
            if self._built is not None and self._built[:2] == key:
                return self._built[2]
            built = self._assemble()
            self._built = (*key, built)
            return built

    def _assemble(self) -> dict[str, Any]:
        builtin = schemas.builtin_definitions()
        info = {"title": "Kubernetes", "version": self._title_version()}
        by_gv: dict[str, tuple[dict[str, Any], dict[str, Schema]]] = {}
        all_definitions: dict[str, Schema] = dict(_EXTRA_DEFINITIONS)
        all_paths: dict[str, Any] = {}
        for rtype in self._types():
            if rtype.crd:
                definitions = schemas.custom_resource_schemas(rtype,
                                                              self._crd_version(rtype))
                prefix = schemas.crd_definition_prefix(rtype.group, rtype.version)
                kind_name = f"{prefix}.{rtype.kind}"
                list_name = f"{prefix}.{rtype.kind}List"
            else:
                kind_name = schemas.builtin_root(rtype.group, rtype.version, rtype.kind) or ""
                list_name = schemas.builtin_root(rtype.group, rtype.version,
                                                 f"{rtype.kind}List") or ""
                definitions = {}
                if not kind_name:
                    continue
            paths = paths_for(rtype, kind_name, list_name)
            gv = gv_path(rtype.group, rtype.version)
            gv_paths, gv_definitions = by_gv.setdefault(gv, ({}, {}))
            gv_paths.update(paths)
            gv_definitions.update(definitions)
            pool = {**builtin, **_EXTRA_DEFINITIONS, **definitions}
            gv_definitions.update(schemas.closure(
                [kind_name, list_name, f"{META}.Status", f"{META}.DeleteOptions",
                 PATCH_DEFINITION], pool))
            all_paths.update(paths)
            all_definitions.update(gv_definitions)
        v3 = {
            gv: {"openapi": "3.0.0", "info": info, "paths": paths,
                 "components": {"schemas": dict(sorted(definitions.items())),
                                "securitySchemes": {"BearerToken": {
                                    "type": "apiKey", "description": "Bearer Token "
                                    "authentication", "name": "authorization",
                                    "in": "header"}}}}
            for gv, (paths, definitions) in sorted(by_gv.items())
        }
        hashes = {gv: _digest(document) for gv, document in v3.items()}
        v2 = {"swagger": "2.0", "info": info, "paths": _to_v2_paths(dict(sorted(
            all_paths.items()))),
              "definitions": _to_v2_schema(dict(sorted(all_definitions.items()))),
              "securityDefinitions": {"BearerToken": {
                  "description": "Bearer Token authentication", "type": "apiKey",
                  "name": "authorization", "in": "header"}},
              "security": [{"BearerToken": []}]}
        return {"v3": v3, "hashes": hashes, "v2": v2, "v2_protobuf": None}

    # ------------------------------------------------------------------ what the server serves
    def v3_root(self) -> dict[str, Any]:
        built = self._build()
        return {"paths": {gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
                          for gv, digest in built["hashes"].items()}}

    def v3_document(self, gv: str) -> tuple[dict[str, Any], str] | None:
        """A group-version's document and its hash, or None if nothing is served there."""
        built = self._build()
        document = built["v3"].get(gv)
        return None if document is None else (document, built["hashes"][gv])

    def v2(self) -> dict[str, Any]:
        return dict(self._build()["v2"])

    def v2_protobuf(self) -> bytes:
        built = self._build()
        with self._lock:
            if built["v2_protobuf"] is None:
                built["v2_protobuf"] = openapi_pb.encode_document(built["v2"])
            encoded: bytes = built["v2_protobuf"]
            return encoded
