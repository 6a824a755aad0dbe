"""One in-process Kubernetes API server per emulated EKS cluster (werkzeug, loopback, TLS)."""

from __future__ import annotations

import importlib
import json
import logging
import os
import ssl
import tempfile
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from datetime import timedelta
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from hypd_local.emulator.eks_catalog import DEFAULT_KUBERNETES_VERSION
from hypd_local.kube import openapi, schemas, tables, tls, validation
from hypd_local.kube.auth import (
    AccessDecision,
    AuthenticationError,
    Authorizer,
    Caller,
    TokenVerifier,
    allows,
)
from hypd_local.kube.errors import KubeError, bad_request, method_not_allowed
from hypd_local.kube.karpenter import HyperPodCluster, KarpenterStatus
from hypd_local.kube.openapi import gv_path
from hypd_local.kube.resources import CRD_GROUP, CRD_PLURAL, ResourceType
from hypd_local.kube.store import APPLY_PATCH, Clock, ObjectStore, rfc3339
from hypd_local.kube.version import git_version, version_info
from hypd_local.kube.watch import WatchRequest, watch_events

LOG = logging.getLogger(__name__)
yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs

HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
DEEP_HEALTH_LABEL = "sagemaker.amazonaws.com/deep-health-check-status"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
INSTANCE_GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
UNSCHEDULABLE_STATUSES = frozenset(
    {"Unschedulable", "UnschedulablePendingReplacement", "UnschedulablePendingReboot"}
)
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
TOKEN_CACHE_TTL = timedelta(minutes=2)  # kube-apiserver's webhook token cache default
_NODE_MANAGER = "kubelet"


def _taint_id(taint: Mapping[str, Any]) -> tuple[str, str]:
    """A node's taints are unique by key and effect."""
    return str(taint.get("key") or ""), str(taint.get("effect") or "")


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        LOG.debug("%s %s %s", self.command, self.path, code)


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")


def _unauthorized() -> KubeError:
    return KubeError(401, "Unauthorized", "Unauthorized")


class KubeApiServer:
    """A Kubernetes API for one EKS cluster.

    ``authorizer(principal_arn)`` returns the principal's access entry as an
    :class:`AccessDecision`, or ``None`` when it has none (401, as EKS answers). ``sts_endpoint``
    is where bearer tokens' presigned STS URLs are sent (the local cloud's moto endpoint).
    With ``tls`` (default) the server speaks https with a CA of its own
    (:attr:`certificate_authority_data`); without, plain http. ``kubernetes_version`` and
    ``platform_version`` are the EKS cluster's (DescribeCluster): ``/version`` and the kubelets
    of joined nodes report that build.
    """

    def __init__(self, cluster_name: str, authorizer: Authorizer, clock: Clock,
                 host: str = "127.0.0.1", port: int = 0, *, sts_endpoint: str | None = None,
                 tls_enabled: bool = True, token_clock: Clock | None = None,
                 kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
                 platform_version: str | None = None) -> None:
        self.cluster_name = cluster_name
        self.kubernetes_version = kubernetes_version
        self.platform_version = platform_version
        self.authorizer = authorizer
        self.clock = clock
        self.host = host
        self.store = ObjectStore(clock)
        self.karpenter = KarpenterStatus()
        self.store.add_controller(self.karpenter)
        # Token ages are judged on `token_clock` (default: `clock`): clients sign with the real
        # time, so a local cloud whose virtual clock runs ahead passes the wall clock here.
        self._verifier = TokenVerifier(cluster_name, token_clock or clock, sts_endpoint)
        self._token_cache: dict[str, tuple[Caller, Any]] = {}
        self._cache_lock = threading.Lock()
        self.tls: tls.TlsMaterial | None = tls.generate(cluster_name, host) if tls_enabled else None
        ssl_context = self._ssl_context() if self.tls else None
        self._server: BaseWSGIServer = make_server(
            host, port, self._wsgi, threaded=True, request_handler=_QuietHandler,
            ssl_context=ssl_context,
        )
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()  # ends the watches being streamed
        self.openapi = openapi.OpenApiDocuments(
            self.store.all_types, self.store.crd_version, lambda: self.store.crd_revision,
            lambda: git_version(self.kubernetes_version, self.platform_version))

    # ------------------------------------------------------------ lifecycle
    def _ssl_context(self) -> ssl.SSLContext:
        assert self.tls is not None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="hypd-kube-") as directory:
            cert = os.path.join(directory, "tls.crt")
            key = os.path.join(directory, "tls.key")
            with open(cert, "wb") as handle:
                handle.write(self.tls.cert_pem)
            with open(key, "wb") as handle:
                handle.write(self.tls.key_pem)
            context.load_cert_chain(cert, key)
        return context

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def certificate_authority_data(self) -> str | None:
        """base64 of the CA's PEM (EKS's ``certificateAuthority.data``); None without TLS."""
        return self.tls.certificate_authority_data if self.tls else None

    def start(self) -> str:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                name=f"kube-{self.cluster_name}", daemon=True,
            )
            self._thread.start()
        return self.url

    def stop(self) -> None:
        self._stopping.set()
        self.store.wake_watchers()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> KubeApiServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------- what HyperPod installs
    def ensure_crds(self, crds: Iterable[Mapping[str, Any]], manager: str) -> None:
        """Create the CustomResourceDefinitions that do not exist yet (existing ones are kept
        as they are)."""
        crd_type = self.store.builtin_type(CRD_GROUP, CRD_PLURAL)
        for crd in crds:
            try:
                self.store.create(crd_type, None, dict(crd), manager)
            except KubeError as exc:
                if exc.code != 409:
                    raise

    def observe_hyperpod(self, cluster: HyperPodCluster | None) -> None:
        """Tell the Karpenter status controller how the HyperPod cluster is now, and run it."""
        self.karpenter.observe(cluster)
        self.store.run_controllers(self.karpenter)

    # ---------------------------------------------------------------- nodes
    def _nodes(self) -> ResourceType:
        return self.store.builtin_type("", "nodes")

    def join_node(self, name: str, labels: Mapping[str, str],
                  taints: Iterable[Mapping[str, str]] = (), ready: bool = True, *,
                  provider_id: str | None = None,
                  capacity: Mapping[str, str] | None = None,
                  addresses: Iterable[Mapping[str, str]] = ()) -> dict[str, Any]:
        """A node registers (as the kubelet does) with its labels, taints, conditions and
        addresses (``InternalIP``, ``InternalDNS``; ``Hostname`` is its name)."""
        now = rfc3339(self.clock.now())
        all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                      "kubernetes.io/arch": "amd64", **labels}
        resources = dict(capacity or {"cpu": "8", "memory": "32Gi", "pods": "110"})
        kubelet = git_version(self.kubernetes_version, self.platform_version)
        node: dict[str, Any] = {
            "metadata": {"name": name, "labels": all_labels},
            "spec": {"taints": [dict(t) for t in taints]},
            "status": {
                "capacity": resources,
                "allocatable": dict(resources),
                "conditions": [
                    {"type": kind, "status": "False", "reason": f"KubeletHasNo{kind}",
                     "lastHeartbeatTime": now, "lastTransitionTime": now, "message": ""}
                    for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")
                ],
                "addresses": [*(dict(a) for a in addresses),
                              {"type": "Hostname", "address": name}],
                "nodeInfo": {"kubeletVersion": kubelet, "kubeProxyVersion": kubelet,
                             "operatingSystem": "linux", "architecture": "amd64",
                             "osImage": "Amazon Linux 2023", "kernelVersion": "6.1.0",
                             "containerRuntimeVersion": "containerd://1.7.0",
                             "machineID": uuid.uuid5(uuid.NAMESPACE_DNS, name).hex,
                             "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
                             "bootID": str(uuid.uuid5(uuid.NAMESPACE_OID, name))},
            },
        }
        if provider_id:
            node["spec"]["providerID"] = provider_id
        self._set_ready(node, ready, now)
        self._sync_health_taint(node)
        if not node["spec"]["taints"]:
            del node["spec"]["taints"]
        return self.store.create(self._nodes(), None, node, _NODE_MANAGER, keep_status=True)

    def update_node(self, name: str, *, labels: Mapping[str, str | None] | None = None,
                    taints: Iterable[Mapping[str, str]] = (),
                    remove_taints: Iterable[Mapping[str, str]] = (),
                    ready: bool | None = None) -> dict[str, Any]:
        """Change a joined node in one write (one new resourceVersion, none when nothing
        changes): set labels (``None`` removes one); remove the taints with the key and effect
        of one of ``remove_taints``, then add ``taints``, replacing those with the same key and
        effect; set the Ready condition (not-ready taint included) unless ``ready`` is None. An
        Unschedulable* health status label taints the node
        ``sagemaker.amazonaws.com/node-health-status=<status>:NoSchedule``."""
        now = rfc3339(self.clock.now())
        added = [dict(t) for t in taints]
        dropped = {_taint_id(t) for t in [*remove_taints, *added]}

        def change(node: dict[str, Any]) -> None:
            current = node["metadata"].setdefault("labels", {})
            for key, value in (labels or {}).items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            spec = node.setdefault("spec", {})
            kept = [t for t in spec.get("taints") or [] if _taint_id(t) not in dropped]
            spec["taints"] = kept + added
            if ready is not None:
                self._set_ready(node, ready, now)
            self._sync_health_taint(node)
            if not node["spec"]["taints"]:
                del node["spec"]["taints"]

        return self.store.mutate(self._nodes(), None, name, change, _NODE_MANAGER)

    def update_node_labels(self, name: str, labels: Mapping[str, str | None]) -> dict[str, Any]:
        """Set (or, with ``None``, remove) node labels (see `update_node`)."""
        return self.update_node(name, labels=labels)

    def set_node_ready(self, name: str, ready: bool) -> dict[str, Any]:
        return self.update_node(name, ready=ready)

    def set_node_taints(self, name: str, taints: Iterable[Mapping[str, str]]) -> dict[str, Any]:
        wanted = [dict(t) for t in taints]

        def change(node: dict[str, Any]) -> None:
            node.setdefault("spec", {})["taints"] = wanted
            self._sync_health_taint(node)

        return self.store.mutate(self._nodes(), None, name, change, _NODE_MANAGER)

    def remove_node(self, name: str) -> None:
        try:
            self.store.delete(self._nodes(), None, name)
        except KubeError as exc:
            if exc.code != 404:
                raise

    @staticmethod
    def _set_ready(node: dict[str, Any], ready: bool, now: str) -> None:
        conditions = [c for c in node["status"].get("conditions", []) if c["type"] != "Ready"]
        previous = next((c for c in node["status"].get("conditions", [])
                         if c["type"] == "Ready"), None)
        status = "True" if ready else "False"
        changed = previous is None or previous["status"] != status
        conditions.append({
            "type": "Ready",
            "status": status,
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "message": "kubelet is posting ready status" if ready else "node is not ready",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now if changed or previous is None
            else previous["lastTransitionTime"],
        })
        node["status"]["conditions"] = conditions
        taints = [t for t in node.setdefault("spec", {}).get("taints") or []
                  if t.get("key") != NOT_READY_TAINT]
        if not ready:
            taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule"})
        node["spec"]["taints"] = taints

    @staticmethod
    def _sync_health_taint(node: dict[str, Any]) -> None:
        health = (node["metadata"].get("labels") or {}).get(HEALTH_LABEL)
        taints = [t for t in node.setdefault("spec", {}).get("taints") or []
                  if t.get("key") != HEALTH_LABEL]
        if health in UNSCHEDULABLE_STATUSES:
            taints.append({"key": HEALTH_LABEL, "value": health, "effect": "NoSchedule"})
        node["spec"]["taints"] = taints

    # ------------------------------------------------------------------ WSGI
    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        try:
            response = self._handle(request)
        except KubeError as exc:
            response = _json(exc.status(), exc.code)
        except Exception:
            LOG.exception("kube api: %s %s failed", request.method, request.path)
            response = _json(KubeError(500, "InternalError", "internal error").status(), 500)
        return response(environ, start_response)

    def _authenticate(self, request: Request) -> AccessDecision:
        header = request.headers.get("Authorization")
        now = self.clock.now()
        with self._cache_lock:
            cached = self._token_cache.get(header or "")
        if cached is not None and now < cached[1]:
            caller = cached[0]
        else:
            try:
                caller = self._verifier.verify(header)
            except AuthenticationError as exc:
                LOG.info("kube api %s: 401: %s", self.cluster_name, exc)
                raise _unauthorized() from exc
            with self._cache_lock:
                self._token_cache[header or ""] = (caller, now + TOKEN_CACHE_TTL)
        decision = self.authorizer(caller.principal_arn)
        if decision is None:
            LOG.info("kube api %s: 401: no access entry for %s", self.cluster_name,
                     caller.principal_arn)
            raise _unauthorized()
        return decision

    def _handle(self, request: Request) -> Response:
        segments = [s for s in request.path.split("/") if s]
        if request.path in ("/healthz", "/livez", "/readyz"):
            return Response("ok", content_type="text/plain")
        decision = self._authenticate(request)
        if not segments or segments == ["version"]:
            if not segments:
                return _json({"paths": sorted({
                    "/api", "/api/v1", "/apis", "/healthz", "/livez", "/openapi/v2",
                    "/openapi/v3", "/readyz", "/version",
                    *(f"/{gv_path(t.group, t.version)}" for t in self.store.all_types())})})
            return _json(self._version())
        if segments[0] == "openapi":
            return self._openapi(request, segments[1:])
        if segments[0] == "api":
            if len(segments) == 1:
                return _json({"kind": "APIVersions", "versions": ["v1"],
                              "serverAddressByClientCIDRs": [
                                  {"clientCIDR": "0.0.0.0/0",
                                   "serverAddress": f"{self.host}:{self.port}"}]})
            group, version, rest = "", segments[1], segments[2:]
        elif segments[0] == "apis":
            if len(segments) == 1:
                return _json(self._group_list())
            if len(segments) == 2:
                return _json(self._group(segments[1]))
            group, version, rest = segments[1], segments[2], segments[3:]
        else:
            raise self._no_route()
        if not rest:
            return _json(self._resource_list(group, version))
        return self._resource_request(request, decision, group, version, rest)

    @staticmethod
    def _no_route() -> KubeError:
        return KubeError(404, "NotFound", "the server could not find the requested resource")

    # --------------------------------------------------------------- openapi
    def _openapi(self, request: Request, rest: list[str]) -> Response:
        if request.method != "GET":
            raise method_not_allowed()
        accept = request.headers.get("Accept") or ""
        if rest == ["v2"]:
            if any(media in accept for media in openapi.PROTOBUF_V2_ALIASES):
                return Response(self.openapi.v2_protobuf(), status=200,
                                content_type=openapi.PROTOBUF_V2)
            if accept and not any(m in accept for m in ("application/json", "*/*")):
                raise KubeError(406, "NotAcceptable", "only the following media types are "
                                f"accepted: application/json, {openapi.PROTOBUF_V2}")
            return _json(self.openapi.v2())
        if rest == ["v3"]:
            return _json(self.openapi.v3_root())
        if len(rest) < 3 or rest[0] != "v3":
            raise self._no_route()
        found = self.openapi.v3_document("/".join(rest[1:]))
        if found is None:
            raise self._no_route()
        document, digest = found
        wanted = request.args.get("hash")
        if wanted and wanted != digest:  # an old link: the document changed since
            response = Response(status=301)
            response.headers["Location"] = f"{request.path}?hash={digest}"
            return response
        response = _json(document)
        response.headers["Etag"] = f'"{digest}"'
        response.headers["Cache-Control"] = "public, immutable" if wanted else "no-cache, private"
        return response

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

    # ------------------------------------------------------------- discovery
    def _version(self) -> dict[str, str]:
        return version_info(self.kubernetes_version, self.platform_version)

    def _versions_by_group(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for rtype in self.store.all_types():
            versions = groups.setdefault(rtype.group, [])
            if rtype.version not in versions:
                versions.append(rtype.version)
        return groups

    def _group_entry(self, group: str, versions: list[str]) -> dict[str, Any]:
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    def _group_list(self) -> dict[str, Any]:
        groups = [self._group_entry(g, vs) for g, vs in self._versions_by_group().items() if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def _group(self, group: str) -> dict[str, Any]:
        versions = self._versions_by_group().get(group)
        if not group or not versions:
            raise self._no_route()
        return {"kind": "APIGroup", "apiVersion": "v1", **self._group_entry(group, versions)}

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        types = [t for t in self.store.all_types() if t.group == group and t.version == version]
        if not types:
            raise self._no_route()
        resources = [entry for t in types for entry in t.discovery()]
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version,
                "resources": resources}

    # ------------------------------------------------------------- resources
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
                body = yaml.safe_load(raw.decode() or "{}")
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
