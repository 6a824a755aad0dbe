"""What the parts of `hypd_local.kube.server.KubeApiServer` share: the attributes its
constructor sets, and small helpers of its answers."""

from __future__ import annotations

import importlib
import json
import logging
import threading
from typing import Any

from werkzeug.wrappers import Response

from hypd_local.kube import openapi
from hypd_local.kube.errors import KubeError
from hypd_local.kube.karpenter import KarpenterStatus
from hypd_local.kube.logs import PodLogs
from hypd_local.kube.store import Clock, ObjectStore

LOG = logging.getLogger("hypd_local.kube.server")

yaml: Any = importlib.import_module("yaml")  # PyYAML ships no type stubs


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")


def _unauthorized() -> KubeError:
    return KubeError(401, "Unauthorized", "Unauthorized")


class ServerState:
    """The state of one cluster's Kubernetes API (set by `KubeApiServer.__init__`)."""

    cluster_name: str
    kubernetes_version: str
    platform_version: str | None
    clock: Clock
    store: ObjectStore
    karpenter: KarpenterStatus
    logs: PodLogs  # what the pods' containers wrote (`kube.logs`)
    openapi: openapi.OpenApiDocuments
    _stopping: threading.Event  # ends the watches being streamed

    @staticmethod
    def _no_route() -> KubeError:
        return KubeError(404, "NotFound", "the server could not find the requested resource")
