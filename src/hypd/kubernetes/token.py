"""EKS bearer tokens: a presigned STS ``GetCallerIdentity`` URL, the way ``aws eks get-token``
builds one, without the aws CLI or a kubeconfig.

The token is ``k8s-aws-v1.`` + unpadded URL-safe base64 of a presigned ``GET`` URL for the
regional STS endpoint whose signed headers include ``x-k8s-aws-id: <cluster name>``. EKS's token
webhook (aws-iam-authenticator) checks the URL's shape, then calls it with that header; STS
answers with the caller's ARN, which EKS maps to an access entry.

Lifetime. The URL is signed with ``X-Amz-Expires=60`` (the value the authenticator has always
expected), but neither STS nor the authenticator hold the token to those 60 s: the authenticator
accepts it for 15 minutes after its ``X-Amz-Date`` and rejects an ``X-Amz-Expires`` above
15 minutes (the local cloud's verifier, ``hypd_local.kube.auth``, does the same). Like
``aws eks get-token`` we report ``expires_at`` = signing time + 14 minutes (a minute of margin
for clock skew), and `TokenCache` hands a token out only while it is younger than 10 minutes, so
whoever gets one still has at least 4 minutes to use it (a paginated list, a watch, a slow
apply) before the server would refuse it.

Building a token does not load the Kubernetes client; the STS client that signs it comes from
`hypd.aws.sts.token_sts_client`.
"""

from __future__ import annotations

import base64
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hypd.aws.sts import token_sts_client

__all__ = ["EksToken", "TokenCache", "eks_token", "encode", "token_sts_client"]

TOKEN_PREFIX = "k8s-aws-v1."  # noqa: S105 - a prefix, not a secret
CLUSTER_ID_HEADER = "x-k8s-aws-id"
PRESIGN_EXPIRES_SECONDS = 60
# aws-iam-authenticator accepts a token for 15 minutes after X-Amz-Date; aws eks get-token
# reports 14 (one minute of margin).
TOKEN_LIFETIME = timedelta(minutes=14)
# Refresh well before that, so a token handed out is good for at least 4 more minutes.
REFRESH_AFTER = timedelta(minutes=10)

# GetCallerIdentity has no parameters; this one carries the cluster name from the presign call
# to the before-sign handler and is removed before botocore validates the parameters. Calls
# without it (any ordinary get_caller_identity on a shared client) are left untouched.
_CLUSTER_PARAM = "HypdEksClusterName"
_CONTEXT_KEY = "hypd_eks_cluster_name"
_PARAMS_EVENT = "provide-client-params.sts.GetCallerIdentity"
_SIGN_EVENT = "before-sign.sts.GetCallerIdentity"


@dataclass(frozen=True)
class EksToken:
    """A bearer token for one EKS cluster and when to stop using it."""

    value: str
    expires_at: datetime


def _take_cluster_name(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    if _CLUSTER_PARAM in params:
        context[_CONTEXT_KEY] = params.pop(_CLUSTER_PARAM)


def _add_cluster_header(request: Any, **_: Any) -> None:
    cluster_name = request.context.get(_CONTEXT_KEY)
    if cluster_name is not None:
        request.headers[CLUSTER_ID_HEADER] = cluster_name


def _register_handlers(sts_client: Any) -> None:
    """Idempotent (unique ids) and inert for calls that do not carry the cluster parameter."""
    events = sts_client.meta.events
    events.register(_PARAMS_EVENT, _take_cluster_name, unique_id="hypd-eks-token-params")
    events.register(_SIGN_EVENT, _add_cluster_header, unique_id="hypd-eks-token-header")


def encode(url: str) -> str:
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def eks_token(sts_client: Any, cluster_name: str, *, now: datetime) -> EksToken:
    """A fresh bearer token for `cluster_name`, signed with `sts_client`'s credentials.

    `sts_client` should come from `token_sts_client` (regional STS endpoint). `now` is the
    signing time as the caller's clock sees it; ``expires_at`` = `now` + 14 minutes. botocore
    itself stamps ``X-Amz-Date`` from the system clock, so the local cloud's Kubernetes API
    judges token age on the wall clock, not on its virtual clock.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if not cluster_name:
        raise ValueError("cluster_name is required")
    _register_handlers(sts_client)
    url: str = sts_client.generate_presigned_url(
        "get_caller_identity",
        Params={_CLUSTER_PARAM: cluster_name},
        ExpiresIn=PRESIGN_EXPIRES_SECONDS,
        HttpMethod="GET",
    )
    host = urllib.parse.urlsplit(url).hostname or ""
    if not (host.startswith("sts.") and ".amazonaws.com" in host):
        raise ValueError(
            f"STS client signs for {host!r}; EKS only accepts STS hosts (use token_sts_client)")
    return EksToken(encode(url), now + TOKEN_LIFETIME)


class TokenCache:
    """Tokens per cluster, signed by one principal (the STS client the factory returns).

    A token is reused while younger than `refresh_after` (10 minutes by default; see the module
    docstring). Thread-safe. `invalidate` drops a cluster's token (after a 401, say).
    """

    def __init__(self, sts_client: Callable[[], Any], *,
                 refresh_after: timedelta = REFRESH_AFTER) -> None:
        if not timedelta(0) < refresh_after <= TOKEN_LIFETIME:
            raise ValueError("refresh_after must be positive and at most the token lifetime")
        self._sts_client = sts_client
        self._refresh_after = refresh_after
        self._tokens: dict[str, tuple[datetime, EksToken]] = {}
        self._lock = threading.Lock()

    def token(self, cluster_name: str, *, now: datetime) -> EksToken:
        with self._lock:
            cached = self._tokens.get(cluster_name)
            if cached is not None:
                signed_at, token = cached
                if signed_at <= now < signed_at + self._refresh_after:
                    return token
            token = eks_token(self._sts_client(), cluster_name, now=now)
            self._tokens[cluster_name] = (now, token)
            return token

    def invalidate(self, cluster_name: str) -> None:
        with self._lock:
            self._tokens.pop(cluster_name, None)
