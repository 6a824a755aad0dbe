"""One Kubernetes API server per EKS cluster, for the local cloud."""

from __future__ import annotations

import threading

from hypd_local.emulator.eks_catalog import DEFAULT_KUBERNETES_VERSION
from hypd_local.kube.auth import Authorizer
from hypd_local.kube.server import KubeApiServer
from hypd_local.kube.store import Clock


class KubeApiRegistry:
    """Starts a server when a cluster becomes ACTIVE (:meth:`ensure`), stops it on delete
    (:meth:`remove`) and stops them all on shutdown (:meth:`stop_all`)."""

    def __init__(self, clock: Clock, *, sts_endpoint: str | None, host: str = "127.0.0.1",
                 tls_enabled: bool = True, token_clock: Clock | None = None) -> None:
        self._clock = clock
        self._token_clock = token_clock
        self._sts_endpoint = sts_endpoint
        self._host = host
        self._tls = tls_enabled
        self._servers: dict[str, KubeApiServer] = {}
        self._lock = threading.Lock()

    def ensure(self, cluster_name: str, authorizer: Authorizer, *,
               kubernetes_version: str | None = None, platform_version: str | None = None) -> str:
        """The cluster's API URL, starting its server if needed (idempotent; the authorizer
        and, when given, the versions are replaced on an existing server)."""
        with self._lock:
            server = self._servers.get(cluster_name)
            if server is None:
                server = KubeApiServer(cluster_name, authorizer, self._clock, self._host,
                                       sts_endpoint=self._sts_endpoint, tls_enabled=self._tls,
                                       token_clock=self._token_clock,
                                       kubernetes_version=kubernetes_version
                                       or DEFAULT_KUBERNETES_VERSION,
                                       platform_version=platform_version)
                server.start()
                self._servers[cluster_name] = server
            else:
                server.authorizer = authorizer
                if kubernetes_version:
                    server.kubernetes_version = kubernetes_version
                    server.platform_version = platform_version
            return server.url

    def get(self, cluster_name: str) -> KubeApiServer | None:
        with self._lock:
            return self._servers.get(cluster_name)

    def names(self) -> list[str]:
        """The clusters whose API is being served."""
        with self._lock:
            return sorted(self._servers)

    def __contains__(self, cluster_name: object) -> bool:
        with self._lock:
            return cluster_name in self._servers

    def remove(self, cluster_name: str) -> None:
        with self._lock:
            server = self._servers.pop(cluster_name, None)
        if server is not None:
            server.stop()

    def stop_all(self) -> None:
        with self._lock:
            servers = list(self._servers.values())
            self._servers.clear()
        for server in servers:
            server.stop()

    def __enter__(self) -> KubeApiRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()
