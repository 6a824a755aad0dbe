"""One in-process Kubernetes API server per emulated EKS cluster (werkzeug, loopback, TLS).

`KubeApiServer` serves, authenticates and routes requests, the OpenAPI documents and discovery;
`server_nodes` holds what HyperPod does to the cluster (CRDs, nodes), `server_resources` the
resource requests, `server_base` what the parts share.
"""

from __future__ import annotations

import os
import ssl
import tempfile
import threading
from datetime import timedelta
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from hypd_local import transport
from hypd_local.emulator.eks_catalog import DEFAULT_KUBERNETES_VERSION
from hypd_local.kube import openapi, tls
from hypd_local.kube.auth import (
    AccessDecision,
    AuthenticationError,
    Authorizer,
    Caller,
    TokenVerifier,
)
from hypd_local.kube.errors import KubeError, method_not_allowed
from hypd_local.kube.karpenter import KarpenterStatus
from hypd_local.kube.logs import PodLogs
from hypd_local.kube.openapi import gv_path
from hypd_local.kube.server_base import LOG, _json, _unauthorized
from hypd_local.kube.server_nodes import NodeLifecycle
from hypd_local.kube.server_resources import ResourceRequests
from hypd_local.kube.store import Clock, ObjectStore
from hypd_local.kube.version import git_version, version_info

TOKEN_CACHE_TTL = timedelta(minutes=2)  # kube-apiserver's webhook token cache default


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        LOG.debug("%s %s %s", self.command, self.path, code)


class KubeApiServer(NodeLifecycle, ResourceRequests):
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
        self.logs = PodLogs()
        # Token ages are judged on `token_clock` (default: `clock`): clients sign with the real
        # time, so a local cloud whose virtual clock runs ahead passes the wall clock here.
        self._verifier = TokenVerifier(cluster_name, token_clock or clock, sts_endpoint)
        self._token_cache: dict[str, tuple[Caller, Any]] = {}
        self._cache_lock = threading.Lock()
        self.tls: tls.TlsMaterial | None = tls.generate(cluster_name, host) if tls_enabled else None
        ssl_context = self._ssl_context() if self.tls else None
        self._ssl = ssl_context
        self._server: BaseWSGIServer = make_server(
            host, port, self._wsgi, threaded=True, request_handler=_QuietHandler,
            ssl_context=ssl_context,
        )
        self._thread: threading.Thread | None = None
        self._transport: transport.InProcessTransport | None = None
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
            # The functions' requests skip the socket; their TLS settings are still checked
            # against this server's certificate (hypd_local.transport).
            self._transport = transport.InProcessTransport(
                self._wsgi, self.host, self.port, scheme="https" if self.tls else "http",
                server_tls=self._ssl)
            transport.serve(self._transport)
        return self.url

    def stop(self) -> None:
        if self._transport is not None:
            transport.stop_serving(self._transport)
            self._transport = None
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
