"""A Kubernetes API client for an EKS cluster, from DescribeCluster and a bearer token.

No kubeconfig and no exec plugin: the host is the cluster's endpoint, the cluster's CA is
trusted through a private temporary file that lives as long as the client, and the token goes
in the ``authorization`` API key with the ``Bearer`` prefix.

``kubernetes`` is imported inside `kubernetes_api` only: the import costs a quarter of a second
or more, and only the functions that talk to Kubernetes should pay for it on a cold start.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import tempfile
import weakref
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hypd.kubernetes.token import TokenCache

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, Configuration


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _write_ca(data: str) -> str:
    """The base64 ``certificateAuthority.data`` as a PEM file only this process can read."""
    try:
        pem = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("certificateAuthority.data is not valid base64") from exc
    handle, path = tempfile.mkstemp(prefix="hypd-eks-ca-", suffix=".crt")  # mode 0600
    with os.fdopen(handle, "wb") as file:
        file.write(pem)
    return path


def kubernetes_api(cluster: Mapping[str, Any], token: str, *,
                   refresh_token: Callable[[], str] | None = None) -> ApiClient:
    """A ``kubernetes.client.ApiClient`` for `cluster` (DescribeCluster's ``cluster``: needs
    ``endpoint`` and ``certificateAuthority.data``) authenticated with `token`.

    `refresh_token`, if given, is asked for the token before every request (hand it a
    `hypd.kubernetes.token.TokenCache` lookup so a long-lived client never sends a stale one).
    """
    endpoint = cluster.get("endpoint")
    ca_data = (cluster.get("certificateAuthority") or {}).get("data")
    if not endpoint or not ca_data:
        raise ValueError("cluster has no endpoint or certificateAuthority.data (not ACTIVE?)")

    from kubernetes.client import ApiClient, Configuration

    ca_path = _write_ca(str(ca_data))
    try:
        configuration = Configuration()
        configuration.host = str(endpoint)
        configuration.ssl_ca_cert = ca_path
        configuration.verify_ssl = True
        configuration.api_key = {"authorization": token}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        if refresh_token is not None:
            def refresh(config: Configuration) -> None:
                config.api_key["authorization"] = refresh_token()

            # kubernetes types the hook attribute as None; it calls hook(configuration).
            configuration.refresh_api_key_hook = refresh  # type: ignore[assignment]
        api = ApiClient(configuration)
    except BaseException:
        _remove(ca_path)
        raise
    # The CA file is read when the connection pool is built; keep it for the client's life.
    weakref.finalize(api, _remove, ca_path)
    return api


class ClusterAccess:
    """Kubernetes API clients for EKS clusters, authenticated as this function (bearer tokens
    from one cache, so a warm function presigns once a minute per cluster)."""

    def __init__(
        self,
        eks: Callable[[], Any],
        region: Callable[[], str | None],
        tokens: TokenCache | None = None,
    ) -> None:
        from hypd.aws.sts import token_sts_client

        self._eks = eks
        self.tokens = tokens or TokenCache(lambda: token_sts_client(region() or ""))

    def api(self, cluster_name: str) -> Any:
        """A client for the EKS cluster `cluster_name` (its endpoint and CA from EKS)."""
        description = self._eks().describe_cluster(name=cluster_name)["cluster"]
        tokens = self.tokens

        def token() -> str:
            return tokens.token(cluster_name, now=datetime.now(UTC)).value

        return kubernetes_api(description, token(), refresh_token=token)
