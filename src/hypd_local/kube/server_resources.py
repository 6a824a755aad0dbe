"""The Kubernetes API's resource requests: get, list and watch (as JSON or Tables), create,
replace, patch and delete, with admission, dry runs and RBAC answers."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from werkzeug.wrappers import Request, Response

from hypd_local.kube import schemas, tables, validation
from hypd_local.kube.auth import (
    AccessDecision,
    allows,
)
from hypd_local.kube.errors import KubeError, bad_request, method_not_allowed
from hypd_local.kube.logs import log_text
from hypd_local.kube.resources import ResourceType
from hypd_local.kube.server_base import ServerState, _json, yaml
from hypd_local.kube.store import APPLY_PATCH
from hypd_local.kube.store_base import load_yaml
from hypd_local.kube.watch import WatchRequest, watch_events


class ResourceRequests(ServerState):
    """``/api/...`` and ``/apis/...`` requests on resources."""

    def _admission(self, rtype: ResourceType, args: Mapping[str, str],
                   raw: bytes | None = None) -> validation.Admission:
        """The checks a write's objects get: fields per ``fieldValidation``, a custom
        resource's schema."""
        definitions = schemas.builtin_definitions()
        declared: dict[str, Any] = {}
        if rtype.crd:
            declared = schemas.custom_resource_schemas(rtype, self.store.crd_version(rtype))
            root: Any = declared[f"{schemas.crd_definition_prefix(rtype.group, rtype.version)}"
                                 f".{rtype.kind}"]
        else:
            name = schemas.builtin_root(rtype.group, rtype.version, rtype.kind)
            root = definitions.get(name) if name else None

        def resolve(name: str) -> Any:
            return declared.get(name) or definitions.get(name)

        check = validation.Admission(root, resolve, rtype.kind, rtype.group, rtype.version,
                                     rtype.crd, validation.directive(args.get("fieldValidation")))
        if raw:
            check.duplicates = validation.duplicate_fields(raw)
        return check

    def _resource_request(self, request: Request, decision: AccessDecision, group: str,
                          version: str, rest: list[str]) -> Response:
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3 and not (
            len(rest) == 3 and rest[2] in ("status", "finalize")
        ):
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise self._no_route()
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        subresource = rest[2] if len(rest) > 2 else None
        rtype = self.store.find_type(group, version, plural)
        if rtype is None:
            raise self._no_route()
        if (namespace is not None and not rtype.namespaced) or (
            rtype.namespaced and namespace is None and name is not None
        ):
            raise self._no_route()
        if (group, plural, subresource) == ("", "pods", "log") and name is not None:
            return self._pod_log(request, decision, rtype, namespace, name)
        if subresource is not None and subresource not in rtype.subresources:
            raise self._no_route()
        method = request.method
        args = request.args
        if method == "GET" and name is None and args.get("watch") in ("true", "1"):
            verb = "watch"
        elif name is None:
            verb = {"GET": "list", "POST": "create", "DELETE": "deletecollection"}.get(method, "")
        else:
            verb = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
                method, "")
        if not verb:
            raise method_not_allowed()
        if not allows(decision, verb, group, plural, namespace, rtype.namespaced):
            raise self._forbidden(decision, verb, rtype, namespace, name, subresource)
        manager = args.get("fieldManager") or (
            request.headers.get("User-Agent", "unknown").split("/", 1)[0] or "unknown")
        store = self.store
        target = tables.negotiate(request.headers.get("Accept"))
        if verb in ("get", "list", "watch") and target.kind == "Table":
            include = tables.include_object(args)
        if verb == "watch":
            events = watch_events(store, rtype, namespace, WatchRequest.from_args(args),
                                  self._stopping)
            if target.kind == "Table":
                events = self._table_events(rtype, events, target, include)
            elif target.kind is not None:
                events = ({**event, "object": tables.partial_metadata(event["object"], target)}
                          if event["type"] != "ERROR" else event for event in events)
            return self._stream(events)
        if verb == "get":
            assert name is not None
            obj = store.get(rtype, namespace, name)
            if target.kind == "Table":
                return _json(self._table(rtype, [obj], target, include,
                                         {"resourceVersion": obj["metadata"]["resourceVersion"]}))
            if target.kind is not None:
                return _json(tables.partial_metadata(obj, target))
            return _json(obj)
        if verb == "list":
            limit = args.get("limit", type=int)
            items, rv, token = store.list(
                rtype, namespace, label_selector=args.get("labelSelector"),
                field_selector=args.get("fieldSelector"), limit=limit,
                continue_token=args.get("continue"))
            metadata: dict[str, Any] = {"resourceVersion": rv}
            if token:
                metadata["continue"] = token
            if target.kind == "Table":
                return _json(self._table(rtype, items, target, include, metadata))
            if target.kind is not None:
                return _json(tables.partial_metadata_list(items, metadata, target))
            return _json({"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version,
                          "metadata": metadata, "items": items})
        # kubectl --dry-run=server: dryRun=All in the query, or in a DELETE's DeleteOptions
        dry_run = args.getlist("dryRun") + (self._delete_options(request).get("dryRun") or []
                                            if verb in ("delete", "deletecollection") else [])
        unsupported = [value for value in dry_run if value != "All"]
        if unsupported:
            raise bad_request(f'dryRun: Unsupported value: "{unsupported[0]}": supported '
                              'values: "All"')
        if dry_run:
            with store.dry_run():
                return self._mutate(request, rtype, namespace, name, subresource, verb, manager)
        return self._mutate(request, rtype, namespace, name, subresource, verb, manager)

    def _pod_log(self, request: Request, decision: AccessDecision, rtype: ResourceType,
                 namespace: str | None, name: str) -> Response:
        """``GET .../pods/{name}/log``: authorised as ``get`` of ``pods/log`` (`kube.logs`)."""
        if request.method != "GET":
            raise method_not_allowed()
        if not allows(decision, "get", "", "pods/log", namespace, True):
            raise self._forbidden(decision, "get", rtype, namespace, name, "log")
        pod = self.store.get(rtype, namespace, name)
        text = log_text(self.logs, pod, request.args, self.clock.now())
        return Response(text, status=200, content_type="text/plain")

    def _mutate(self, request: Request, rtype: ResourceType, namespace: str | None,
                name: str | None, subresource: str | None, verb: str, manager: str
                ) -> Response:
        store, args = self.store, request.args
        if verb in ("create", "update", "patch"):
            return self._write(request, rtype, namespace, name, subresource, verb, manager)
        if verb == "delete":
            assert name is not None
            body, _gone = store.delete(rtype, namespace, name)
            return _json(body)
        # deletecollection
        items, _rv, _token = store.list(rtype, namespace,
                                        label_selector=args.get("labelSelector"),
                                        field_selector=args.get("fieldSelector"))
        for item in items:
            meta = item["metadata"]
            try:
                store.delete(rtype, meta.get("namespace"), meta["name"])
            except KubeError as exc:
                if exc.code != 404:
                    raise
        return _json({"kind": "Status", "apiVersion": "v1", "metadata": {},
                      "status": "Success"})

    def _table(self, rtype: ResourceType, objects: list[dict[str, Any]], target: tables.Target,
               include: str, metadata: dict[str, Any], *, headers: bool = True
               ) -> dict[str, Any]:
        return tables.to_table(rtype, objects, self.clock.now(), target, include=include,
                               crd_version=self.store.crd_version(rtype),
                               list_metadata=metadata, headers=headers)

    def _table_events(self, rtype: ResourceType, events: Iterator[dict[str, Any]],
                      target: tables.Target, include: str) -> Iterator[dict[str, Any]]:
        """A watch as Tables: each event's object a one-row Table, the columns in the first."""
        headers = True
        for event in events:
            if event["type"] == "ERROR":
                yield event
                continue
            obj = event["object"]
            metadata = {"resourceVersion": obj["metadata"].get("resourceVersion", "")}
            rows = [] if event["type"] == "BOOKMARK" else [obj]
            yield {**event, "object": self._table(rtype, rows, target, include, metadata,
                                                  headers=headers)}
            headers = False

    @staticmethod
    def _stream(events: Iterator[dict[str, Any]]) -> Response:
        """A watch's events as the API server streams them: one JSON object per line, each
        flushed as it happens (chunked transfer encoding: the length is never known)."""

        def lines() -> Iterator[bytes]:
            yield b""  # the status line and headers go out at once, before any event
            for event in events:
                yield json.dumps(event).encode() + b"\n"

        return Response(lines(), status=200, content_type="application/json",
                        direct_passthrough=True)

    def _write(self, request: Request, rtype: ResourceType, namespace: str | None,
               name: str | None, subresource: str | None, verb: str, manager: str) -> Response:
        args = request.args
        if verb == "patch":
            assert name is not None
            content_type = request.mimetype
            raw = request.get_data()
            admission = self._admission(rtype, args, raw if content_type != APPLY_PATCH else None)
            apply_manager = args.get("fieldManager") if content_type == APPLY_PATCH else manager
            obj, created = self.store.patch(
                rtype, namespace, name, content_type, raw, apply_manager,
                force=args.get("force") in ("true", "1"), subresource=subresource,
                admission=admission)
            status = 201 if created else 200
        else:
            body = self._body(request)
            admission = self._admission(rtype, args, request.get_data())
            if verb == "create":
                obj, status = self.store.create(rtype, namespace, body, manager,
                                                admission=admission), 201
            else:
                assert name is not None
                obj, status = self.store.replace(rtype, namespace, name, body, manager,
                                                 subresource, admission=admission), 200
        response = _json(obj, status)
        for header, value in validation.warning_headers(admission.warnings):
            response.headers.add(header, value)
        return response

    @classmethod
    def _delete_options(cls, request: Request) -> dict[str, Any]:
        """A DELETE's DeleteOptions body ({} when it has none), read as any body (`_body`)."""
        if not request.get_data().strip() or (
                request.mimetype and "json" not in request.mimetype):
            return {}  # a protobuf DeleteOptions (typed clients) is not read
        return cls._body(request)

    @staticmethod
    def _body(request: Request) -> dict[str, Any]:
        raw = request.get_data()
        if request.mimetype and request.mimetype not in (
            "application/json", "application/yaml", "application/x-yaml", "text/yaml",
            "text/plain",
        ):
            raise KubeError(415, "UnsupportedMediaType",
                            f"the body of the request was in an unknown format - accepted media "
                            f"types include: application/json, application/yaml (not "
                            f"{request.mimetype}: the local Kubernetes API decodes no protobuf "
                            f"or CBOR)")
        try:
            if "yaml" in (request.mimetype or ""):
                body = load_yaml(raw.decode() or "{}")
            else:
                body = json.loads(raw or b"null")
        except (ValueError, yaml.YAMLError) as exc:
            raise bad_request(f"the request body could not be decoded: {exc}") from exc
        if not isinstance(body, dict):
            raise bad_request("the request body must be an object")
        return body

    @staticmethod
    def _forbidden(decision: AccessDecision, verb: str, rtype: ResourceType,
                   namespace: str | None, name: str | None,
                   subresource: str | None) -> KubeError:
        resource = f"{rtype.plural}/{subresource}" if subresource else rtype.plural
        subject = f'{rtype.plural} "{name}"' if name else rtype.plural
        where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        return KubeError(
            403, "Forbidden",
            f'{subject} is forbidden: User "{decision.username}" cannot {verb} resource '
            f'"{resource}" in API group "{rtype.group}" {where}',
            name=name, group=rtype.group, kind=rtype.plural,
        )
