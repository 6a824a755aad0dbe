"""Creating one object and reading a pod's logs, beside `hypd.kubernetes.apply`'s reads.

`create_object` is a plain ``POST`` (not server-side apply): a workload is created once, and an
object of the same name is the caller's conflict (`ObjectExists`), never merged into. `pod_logs`
is ``GET .../pods/{name}/log``: text, not JSON.

Errors are `hypd.kubernetes.apply`'s (the same mapping of 401/403/409/429/5xx).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hypd.errors import ConflictError, NotFoundError, ValidationError
from hypd.kubernetes.apply import (
    Discovery,
    KubernetesApplyConflict,
    KubernetesApplyRejected,
    _request,
)

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


class ObjectExists(ConflictError):
    code = "WorkloadExists"


class KindNotServed(ConflictError):
    code = "KindNotServed"


def create_object(api_client: ApiClient, manifest: Mapping[str, Any],
                  field_manager: str = "hypd") -> dict[str, Any]:
    """Create `manifest` (it names its namespace when its kind is namespaced); the object as
    the API server stored it.

    Raises:
        ObjectExists: an object of that name is there already (409 AlreadyExists).
        KindNotServed: the cluster does not serve the kind (its CRD is absent).
    """
    body = copy.deepcopy(dict(manifest))
    api_version, kind = str(body["apiVersion"]), str(body["kind"])
    metadata = body.get("metadata") or {}
    rtype = Discovery(api_client).resolve(api_version, kind)
    if rtype is None:
        raise KindNotServed(
            f"the cluster does not serve {kind} ({api_version}): its operator is not installed",
            details={"apiVersion": api_version, "kind": kind},
        )
    namespace = str(metadata.get("namespace") or "default") if rtype.namespaced else None
    path = rtype.path("", namespace).rstrip("/")
    try:
        response = _request(api_client, "POST", path, query=[("fieldManager", field_manager)],
                            body=body)
    except KubernetesApplyConflict as exc:
        raise ObjectExists(
            f"{kind} {metadata.get('name')} exists already in namespace {namespace}",
            details={"name": metadata.get("name"), "namespace": namespace},
        ) from exc
    return dict(response.body) if isinstance(response.body, Mapping) else {}


def pod_logs(
    api_client: ApiClient,
    namespace: str,
    pod: str,
    *,
    container: str | None = None,
    tail_lines: int | None = None,
    since_seconds: int | None = None,
    timestamps: bool = False,
) -> str:
    """The pod's logs as text.

    Raises:
        NotFoundError: no such pod.
        ValidationError: the API server refused the request (e.g. no such container).
    """
    query: list[tuple[str, str]] = []
    if container:
        query.append(("container", container))
    if tail_lines is not None:
        query.append(("tailLines", str(tail_lines)))
    if since_seconds is not None:
        query.append(("sinceSeconds", str(since_seconds)))
    if timestamps:
        query.append(("timestamps", "true"))
    path = f"/api/v1/namespaces/{namespace}/pods/{pod}/log"
    try:
        body = _request(api_client, "GET", path, query=query, text=True).body
    except KubernetesApplyRejected as exc:
        status = exc.details.get("kubernetesStatus")
        if status == 404:
            raise NotFoundError(f"pod {pod} does not exist in namespace {namespace}",
                                details={"pod": pod, "namespace": namespace}) from exc
        if status == 400:
            raise ValidationError(str(exc).split(": ", 3)[-1],
                                  details={"field": "container", "pod": pod}) from exc
        raise
    return str(body or "")
