"""A Kubernetes API per emulated EKS cluster: EKS bearer tokens, access entries, in-memory objects.

See ``docs/emulator.md``. Public API: :class:`KubeApiServer`, :class:`KubeApiRegistry`,
:class:`AccessDecision` / :class:`AccessPolicy` (what an authorizer returns).
"""

from hypd_local.kube.auth import (
    ADMIN,
    ADMIN_VIEW,
    CLUSTER_ADMIN,
    EDIT,
    VIEW,
    AccessDecision,
    AccessPolicy,
    Authorizer,
    principal_arn,
)
from hypd_local.kube.registry import KubeApiRegistry
from hypd_local.kube.server import KubeApiServer

__all__ = [
    "ADMIN",
    "ADMIN_VIEW",
    "CLUSTER_ADMIN",
    "EDIT",
    "VIEW",
    "AccessDecision",
    "AccessPolicy",
    "Authorizer",
    "KubeApiRegistry",
    "KubeApiServer",
    "principal_arn",
]
