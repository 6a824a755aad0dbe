"""The AWS Load Balancer Controller's IAM policy, as its project publishes it.

The inference operator add-on bundles the controller (service account
``hyperpod-inference-system:aws-load-balancer-controller``); AWS's HyperPod inference setup and
its Terraform module give that service account the controller's documented policy,
``docs/install/iam_policy.json`` of kubernetes-sigs/aws-load-balancer-controller. hypd ships
that file unchanged (``policies/aws-load-balancer-controller.json``, provenance and how to
refresh it in ``policies/README.md``) and writes it as the inline policy of the cluster's
``inference-alb`` role, in the deployment's partition.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

POLICY_NAME = "aws-load-balancer-controller"
"""The inline policy's name on the ``inference-alb`` role."""

FILE = "aws-load-balancer-controller.json"
RELEASE = "v3.5.0"
COMMIT = "11eb202c97e4ae2ee45e0658c4cde9a4b59f33d4"
"""The release's commit (2026-08-03); ``main`` at 225f445 (2026-08-17) has the same blob."""
GIT_BLOB = "761d0e733c41089c91ea009dd29faf71918085e5"
"""``git rev-parse v3.5.0:docs/install/iam_policy.json`` in the controller's repository."""
SHA256 = "16f232c9d9f79366fe949c4550ad517a202380058a9e48d45a4e215044a20a6a"

_PUBLISHED_PARTITION = "arn:aws:"


def published_bytes() -> bytes:
    """The vendored file, exactly as it was fetched."""
    return files("hypd.features").joinpath("policies", FILE).read_bytes()


@cache
def _text() -> str:
    return published_bytes().decode("utf-8")


def policy(partition: str) -> dict[str, Any]:
    """The controller's policy with its ARNs in ``partition`` (published for ``aws``)."""
    document: dict[str, Any] = json.loads(
        _text().replace(f'"{_PUBLISHED_PARTITION}', f'"arn:{partition}:'))
    return document
