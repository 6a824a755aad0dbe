"""Server-side apply of manifests through the official Kubernetes client, without kubectl.

`apply_manifests` sends each object as ``PATCH`` with content type
``application/apply-patch+yaml``, ``fieldManager`` and ``force`` (the API server merges, tracks
field ownership and creates what is missing: re-applying the same manifests changes nothing).
Order: Namespaces, then CustomResourceDefinitions, then everything else in the order given, so
that objects find their namespace and custom resources find their type.

A kind's resource path comes from API discovery (``/api/v1``, ``/apis/<group>/<version>``),
fetched per group version on first use and cached for the call; after CRDs are applied the
groups they define are discovered again (waiting briefly for a new CRD to be served: a real API
server takes a moment to establish it). A namespaced object without ``metadata.namespace`` goes
to the `namespace` argument (like ``kubectl apply -n``); a namespace on a cluster-scoped object
is ignored, as the API server does.

`check_rollout` reports what is not ready yet: Deployments, StatefulSets and DaemonSets whose
controller has not brought up the desired replicas, CRDs not Established. An object whose
``status`` is absent counts as applied, not as unready: the local cloud's Kubernetes API stores
objects but runs no controllers, so its workloads never get a status. On a real cluster, note
that workloads stay unready until nodes join (the dependency chart is applied before HyperPod
adds nodes): check rollout after the nodes are there.

Errors: 401/403 -> `KubernetesAccessDenied` (the access entry is missing or lacks a policy),
409 -> `KubernetesApplyConflict`, 429/5xx and connection failures -> `KubernetesUnavailable`
(a `TemporaryError`, retried), other refusals -> `KubernetesApplyRejected`.

``kubernetes`` is imported only inside the functions (see `hypd.kubernetes.client`).

A little over 400 lines, kept whole: apply, discovery and the rollout check share the
discovery cache and the error mapping above.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hypd.errors import PermanentError, TemporaryError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

APPLY_PATCH = "application/apply-patch+yaml"
REQUEST_TIMEOUT_SECONDS = 30
CRD_WAIT_SECONDS = 20.0
CRD_POLL_SECONDS = 0.5
CRD_GROUP_VERSION = "apiextensions.k8s.io/v1"


# ---------------------------------------------------------------------------- errors
class KubernetesUnavailable(TemporaryError):
    """The cluster's Kubernetes API could not be reached, throttled, or failed (5xx)."""

    code = "KubernetesUnavailable"


class KubernetesAccessDenied(PermanentError):
    """The Kubernetes API refused hypd's identity (401) or the action (403)."""

    code = "KubernetesAccessDenied"


class KubernetesApplyConflict(PermanentError):
    """Server-side apply found fields owned by another manager (409) and force was off."""

    code = "KubernetesApplyConflict"


class KubernetesApplyRejected(PermanentError):
    """The API server refused an object (invalid, unknown kind, missing namespace...)."""

    code = "KubernetesApplyRejected"


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True)
class AppliedObject:
    api_version: str
    kind: str
    name: str
    namespace: str | None
    path: str
    """The object's URL path on the API server."""
    created: bool
    resource_version: str | None = None

    @property
    def ref(self) -> str:
        """``Kind namespace/name`` or ``Kind name``, for messages."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    def to_json(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "created": self.created,
        }


@dataclass(frozen=True)
class ResourceType:
    group_version: str
    plural: str
    kind: str
    namespaced: bool

    def path(self, name: str, namespace: str | None) -> str:
        prefix = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        where = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        return f"{prefix}{where}/{self.plural}/{name}"


# ---------------------------------------------------------------------------- HTTP
@dataclass
class _Response:
    status: int
    body: Any


def _describe_target(api: ApiClient) -> str:
    return str(getattr(api.configuration, "host", "the cluster"))


def _request(
    api: ApiClient,
    method: str,
    path: str,
    *,
    query: Sequence[tuple[str, str]] = (),
    body: Any = None,
    content_type: str | None = None,
    text: bool = False,
) -> _Response:
    """One call through the client's transport (auth, TLS, token refresh), errors mapped;
    `text`: a 2xx body is the text as sent (a pod's logs), not parsed as JSON."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    headers = {"Accept": "text/plain, */*" if text else "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    try:
        serialized = api.param_serialize(
            method,
            path,
            query_params=list(query),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = api.call_api(*serialized, _request_timeout=REQUEST_TIMEOUT_SECONDS)
        raw: Any = response.read()  # type: ignore[no-untyped-call]  # RESTResponse.read
    except ApiException as exc:  # TLS failures and the like surface as status 0
        if exc.status and exc.status not in (429,) and exc.status < 500:
            raise _error(exc.status, exc.body, method, path, api) from exc
        raise KubernetesUnavailable(
            f"{method} {path} on {_describe_target(api)}: {exc.reason or exc}",
            details={"kubernetesStatus": exc.status},
        ) from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise KubernetesUnavailable(
            f"{method} {path}: cannot reach the Kubernetes API at {_describe_target(api)}: {exc}"
        ) from exc
    status = int(response.status)
    decoded = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")
    if text and 200 <= status <= 299:
        return _Response(status, decoded)
    try:
        parsed: Any = json.loads(decoded) if decoded else None
    except ValueError:
        parsed = decoded
    if not 200 <= status <= 299:
        raise _error(status, parsed, method, path, api)
    return _Response(status, parsed)


def _status_message(body: Any) -> tuple[str, str]:
    if isinstance(body, (bytes, str)):
        try:
            body = json.loads(body)
        except ValueError:
            return "", str(body)[:500]
    if isinstance(body, Mapping):
        return str(body.get("reason") or ""), str(body.get("message") or "")
    return "", ""


def _error(status: int, body: Any, method: str, path: str, api: ApiClient) -> Exception:
    reason, message = _status_message(body)
    details: dict[str, Any] = {"kubernetesStatus": status, "reason": reason, "path": path}
    target = _describe_target(api)
    if status == 401:
        return KubernetesAccessDenied(
            f"the Kubernetes API at {target} rejected hypd's bearer token (401 Unauthorized): "
            "the principal hypd runs as has no EKS access entry on this cluster (grant it one "
            "with AmazonEKSClusterAdminPolicy), or the token was made for another cluster",
            details=details,
        )
    if status == 403:
        return KubernetesAccessDenied(
            f"the Kubernetes API at {target} forbids {method} {path} (403): {message} -- the "
            "access entry of the principal hypd runs as needs AmazonEKSClusterAdminPolicy at "
            "cluster scope",
            details=details,
        )
    if status == 409:
        return KubernetesApplyConflict(
            f"{method} {path}: conflict (409): {message}", details=details
        )
    if status == 429 or status >= 500:
        return KubernetesUnavailable(
            f"{method} {path}: {status} {reason}: {message}", details=details
        )
    return KubernetesApplyRejected(
        f"{method} {path}: {status} {reason}: {message}", details=details
    )


# ---------------------------------------------------------------------------- discovery
@dataclass
class Discovery:
    """Kind -> resource type per group version, fetched on first use and cached."""

    api: ApiClient
    _types: dict[str, dict[str, ResourceType]] = field(default_factory=dict)

    def group_version(self, group_version: str) -> dict[str, ResourceType]:
        if group_version not in self._types:
            self._types[group_version] = self._fetch(group_version)
        return self._types[group_version]

    def _fetch(self, group_version: str) -> dict[str, ResourceType]:
        path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        try:
            listing = _request(self.api, "GET", path).body or {}
        except KubernetesApplyRejected as exc:
            if exc.details.get("kubernetesStatus") == 404:
                return {}  # the group version is not served (yet)
            raise
        types: dict[str, ResourceType] = {}
        for resource in listing.get("resources") or []:
            name = str(resource.get("name") or "")
            if not name or "/" in name:  # subresources (deployments/status)
                continue
            kind = str(resource.get("kind") or "")
            types.setdefault(
                kind, ResourceType(group_version, name, kind, bool(resource.get("namespaced")))
            )
        return types

    def forget(self, group_version: str) -> None:
        self._types.pop(group_version, None)

    def resolve(
        self, api_version: str, kind: str, *, wait_seconds: float = 0.0
    ) -> ResourceType | None:
        """The resource type of `kind`, re-discovering once on a miss (and, with
        `wait_seconds`, polling that long for a just-created CRD to be served)."""
        found = self.group_version(api_version).get(kind)
        deadline = time.monotonic() + wait_seconds
        while found is None:
            self.forget(api_version)
            found = self.group_version(api_version).get(kind)
            if found is not None or time.monotonic() >= deadline:
                break
            time.sleep(CRD_POLL_SECONDS)
        return found


# ---------------------------------------------------------------------------- apply
def _rank(manifest: Mapping[str, Any]) -> int:
    kind = manifest.get("kind")
    if kind == "Namespace" and manifest.get("apiVersion") == "v1":
        return 0
    if kind == "CustomResourceDefinition":
        return 1
    return 2


def apply_order(manifests: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Namespaces, then CRDs, then the rest; stable within each rank."""
    return sorted(manifests, key=_rank)


def _crd_group_versions(crd: Mapping[str, Any]) -> set[str]:
    spec = crd.get("spec") or {}
    group = spec.get("group")
    return {f"{group}/{v.get('name')}" for v in spec.get("versions") or [] if group}


def apply_manifests(
    api_client: ApiClient,
    manifests: Iterable[Mapping[str, Any]],
    *,
    field_manager: str = "hypd",
    force: bool = True,
    namespace: str = "default",
) -> list[AppliedObject]:
    """Server-side apply of every object in `manifests` (see the module docstring); returns
    what was applied, in the order it was applied."""
    discovery = Discovery(api_client)
    defined_by_crds: set[str] = set()
    applied: list[AppliedObject] = []
    query = [("fieldManager", field_manager)]
    if force:
        query.append(("force", "true"))
    for manifest in apply_order(manifests):
        body = copy.deepcopy(dict(manifest))
        api_version, kind = str(body.get("apiVersion") or ""), str(body.get("kind") or "")
        metadata = body.setdefault("metadata", {})
        name = str(metadata.get("name") or "")
        if not api_version or not kind or not name:
            raise KubernetesApplyRejected(
                f"cannot apply an object without apiVersion, kind and metadata.name: "
                f"{json.dumps(manifest)[:200]}"
            )
        wait = CRD_WAIT_SECONDS if api_version in defined_by_crds else 0.0
        rtype = discovery.resolve(api_version, kind, wait_seconds=wait)
        if rtype is None:
            raise KubernetesApplyRejected(
                f"the cluster does not serve {kind} in {api_version} (no such resource type; "
                "is its CRD applied?)",
                details={"apiVersion": api_version, "kind": kind},
            )
        object_namespace: str | None = None
        if rtype.namespaced:
            object_namespace = str(metadata.get("namespace") or namespace)
            metadata["namespace"] = object_namespace
        else:
            metadata.pop("namespace", None)
        path = rtype.path(name, object_namespace)
        response = _request(
            api_client, "PATCH", path, query=query, body=body, content_type=APPLY_PATCH
        )
        result = response.body if isinstance(response.body, Mapping) else {}
        applied.append(
            AppliedObject(
                api_version=api_version,
                kind=kind,
                name=name,
                namespace=object_namespace,
                path=path,
                created=response.status == 201,
                resource_version=(result.get("metadata") or {}).get("resourceVersion"),
            )
        )
        if kind == "CustomResourceDefinition":
            for group_version in _crd_group_versions(body):
                defined_by_crds.add(group_version)
                discovery.forget(group_version)
    return applied


# ---------------------------------------------------------------------------- rollout
def _not_ready(obj: Mapping[str, Any], kind: str) -> str | None:
    """Why `obj` is not ready, or None (ready, or no status to judge by)."""
    status = obj.get("status")
    if not status:
        return None
    spec = obj.get("spec") or {}
    generation = (obj.get("metadata") or {}).get("generation")
    observed = status.get("observedGeneration")
    if (
        kind in ("Deployment", "StatefulSet", "DaemonSet")
        and generation is not None
        and observed is not None
        and observed < generation
    ):
        return f"controller has not seen generation {generation} yet"
    if kind == "Deployment":
        desired = int(spec.get("replicas", 1))
        available = int(status.get("availableReplicas") or 0)
        return f"{available}/{desired} replicas available" if available < desired else None
    if kind == "StatefulSet":
        desired = int(spec.get("replicas", 1))
        ready = int(status.get("readyReplicas") or 0)
        return f"{ready}/{desired} replicas ready" if ready < desired else None
    if kind == "DaemonSet":
        desired = int(status.get("desiredNumberScheduled") or 0)
        available = int(status.get("numberAvailable") or 0)
        return f"{available}/{desired} pods available" if available < desired else None
    if kind == "CustomResourceDefinition":
        established = any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in status.get("conditions") or []
        )
        return None if established else "not Established"
    return None


ROLLOUT_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "CustomResourceDefinition"})


def check_rollout(api_client: ApiClient, applied: Iterable[AppliedObject]) -> list[str]:
    """What is not ready yet among `applied`, one line each (empty: all ready). Reads each
    workload and CRD again; see the module docstring for objects without a status."""
    pending: list[str] = []
    for item in applied:
        if item.kind not in ROLLOUT_KINDS:
            continue
        current = _request(api_client, "GET", item.path).body
        reason = _not_ready(current if isinstance(current, Mapping) else {}, item.kind)
        if reason:
            pending.append(f"{item.ref}: {reason}")
    return pending


# ---------------------------------------------------------------------------- read / delete
def _object_path(
    discovery: Discovery, api_version: str, kind: str, name: str, namespace: str | None
) -> str | None:
    """The object's path, or None when the cluster does not serve its kind (no CRD)."""
    rtype = discovery.resolve(api_version, kind)
    if rtype is None:
        return None
    return rtype.path(name, namespace if rtype.namespaced else None)


def read_object(
    api_client: ApiClient, api_version: str, kind: str, name: str, namespace: str | None = None
) -> dict[str, Any] | None:
    """The object as the API server has it, or None when it (or its kind) does not exist."""
    path = _object_path(Discovery(api_client), api_version, kind, name, namespace)
    if path is None:
        return None
    try:
        body = _request(api_client, "GET", path).body
    except KubernetesApplyRejected as exc:
        if exc.details.get("kubernetesStatus") == 404:
            return None
        raise
    return dict(body) if isinstance(body, Mapping) else None


def delete_object(
    api_client: ApiClient, api_version: str, kind: str, name: str, namespace: str | None = None,
    *, propagation: str | None = None,
) -> bool:
    """Delete the object; False when it (or its kind) did not exist. `propagation`:
    ``Foreground`` (the object stays until its dependents are gone), ``Background``, ``Orphan``."""
    path = _object_path(Discovery(api_client), api_version, kind, name, namespace)
    if path is None:
        return False
    query = [("propagationPolicy", propagation)] if propagation else []
    try:
        _request(api_client, "DELETE", path, query=query)
    except KubernetesApplyRejected as exc:
        if exc.details.get("kubernetesStatus") == 404:
            return False
        raise
    return True


def not_ready(obj: Mapping[str, Any], kind: str) -> str | None:
    """Why a Deployment, StatefulSet, DaemonSet or CRD as read is not ready (None: it is)."""
    if kind == "Deployment" and not obj.get("status"):
        return "no status yet"
    return _not_ready(obj, kind)


def list_objects(
    api_client: ApiClient, api_version: str, kind: str, namespace: str | None = None,
    *, labels: str | None = None, fields: str | None = None,
) -> list[dict[str, Any]]:
    """Every object of the kind (in `namespace`, or all) that matches the label and field
    selectors; empty when the kind is not served."""
    discovery = Discovery(api_client)
    rtype = discovery.resolve(api_version, kind)
    if rtype is None:
        return []
    path = rtype.path("", namespace if rtype.namespaced else None).rstrip("/")
    query = [(key, value) for key, value in (("labelSelector", labels),
                                             ("fieldSelector", fields)) if value]
    body = _request(api_client, "GET", path, query=query).body
    items = body.get("items") if isinstance(body, Mapping) else None
    return [dict(item) for item in items or [] if isinstance(item, Mapping)]
