"""Kubernetes access to EKS clusters: bearer tokens (`token`) and API clients (`client`).

Importing this package does not import ``kubernetes``; `hypd.kubernetes.client.kubernetes_api`
does, on first call.
"""

from __future__ import annotations

from hypd.kubernetes.client import kubernetes_api
from hypd.kubernetes.token import EksToken, TokenCache, eks_token, token_sts_client

__all__ = ["EksToken", "TokenCache", "eks_token", "kubernetes_api", "token_sts_client"]
