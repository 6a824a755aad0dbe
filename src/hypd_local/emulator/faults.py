"""Deterministic fault injection by (service, operation).

``Faults`` answers requests with an AWS error instead of the emulator or moto::

    faults.fail("sagemaker", "CreateCluster", code="ResourceLimitExceeded", times=1)
    faults.fail("eks", "DescribeCluster", code="ThrottlingException", times=3)

Each matching request consumes one occurrence; faults for the same operation are consumed in the
order they were added. ``times=None`` fails every call until ``clear()``. Service names are
botocore's (``sagemaker``, ``eks``, ``cloudformation``, ``ec2``, ``s3``, ``sts``...: see
``middleware.DEFAULT_SERVICES``); operation names are the model's (``CreateCluster``,
``CreateStack``, ``DescribeVpcs``, ``HeadBucket``) and ``"*"`` matches every operation of the
service. The HTTP status comes from ``errors.status_for`` (the model's declaration, e.g. EKS
``ThrottlingException`` 429; EC2 ``RequestLimitExceeded`` 503; ``InternalFailure`` 500;
``AccessDenied`` 403; else 400) unless ``status`` is given. The error body is the protocol's
(JSON, query / ec2 / S3 XML).

Emulator-level faults (a creation that ends Failed, an add-on that degrades, a node that turns
unhealthy) belong to the emulators, not here.

Admin routes (mounted by the API front): ``admin_routes(faults)`` returns
``{("GET", "/_local/faults"): fn, ("POST", ...): fn, ("DELETE", ...): fn}`` where each ``fn``
takes the decoded JSON body (or None) and returns ``(status, json_able_body)``.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hypd_local.emulator.errors import AwsError, error_for, status_for


@dataclass
class Fault:
    """One injected fault; ``remaining`` None means unlimited."""

    id: int
    service: str
    operation: str
    code: str
    remaining: int | None
    message: str | None = None
    status: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "service": self.service,
            "operation": self.operation,
            "code": self.code,
            "times": self.remaining,
            "message": self.message,
            "status": self.status,
        }


class Faults:
    """A thread-safe, ordered set of pending faults."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._ids = itertools.count(1)
        self.fired: list[dict[str, Any]] = []  # what answered, in order (for tests and the demo)

    def fail(
        self,
        service: str,
        operation: str,
        code: str = "ThrottlingException",
        times: int | None = 1,
        message: str | None = None,
        status: int | None = None,
    ) -> Fault:
        """Answer the next ``times`` calls of ``service``/``operation`` with error ``code``."""
        if not service or not operation or not code:
            raise ValueError("service, operation and code are required")
        if times is not None and (isinstance(times, bool) or not isinstance(times, int)
                                  or times < 1):
            raise ValueError("times must be a positive integer or None (always)")
        if status is not None and not 400 <= status <= 599:
            raise ValueError("status must be an HTTP error status (400-599)")
        with self._lock:
            fault = Fault(next(self._ids), service.lower(), operation, code, times, message, status)
            self._faults.append(fault)
            return fault

    def clear(self, service: str | None = None, operation: str | None = None) -> int:
        """Remove pending faults (all, or those of a service / operation); returns how many."""
        with self._lock:
            keep = [f for f in self._faults
                    if (service is not None and f.service != service.lower())
                    or (operation is not None and f.operation != operation)]
            removed = len(self._faults) - len(keep)
            self._faults = keep
            return removed

    def pending(self) -> list[dict[str, Any]]:
        """The pending faults as JSON-able dicts, in the order they will fire."""
        with self._lock:
            return [f.to_json() for f in self._faults]

    def has(self, service: str) -> bool:
        """Whether a fault is pending for ``service`` (any operation)."""
        with self._lock:
            return any(f.service == service.lower() for f in self._faults)

    def take(self, service: str, operation: str) -> Fault | None:
        """Consume one occurrence of the first fault matching this call, if any."""
        with self._lock:
            for fault in self._faults:
                if fault.service == service.lower() and fault.operation in (operation, "*"):
                    if fault.remaining is not None:
                        fault.remaining -= 1
                        if fault.remaining <= 0:
                            self._faults.remove(fault)
                    self.fired.append({"service": service, "operation": operation,
                                       "code": fault.code, "id": fault.id})
                    return Fault(fault.id, fault.service, operation, fault.code,
                                 fault.remaining, fault.message, fault.status)
            return None

    def error_for(self, service_model: Any, operation: str) -> AwsError | None:
        """The error to answer this call with (consuming one occurrence), or None."""
        fault = self.take(service_model.service_name, operation)
        if fault is None:
            return None
        status = fault.status if fault.status is not None else status_for(service_model,
                                                                          fault.code)
        return error_for(service_model, fault.code, fault.message, status=status)

    # --- JSON ---------------------------------------------------------------------------------

    def to_json(self) -> list[dict[str, Any]]:
        return self.pending()

    def add_json(self, spec: Mapping[str, Any]) -> Fault:
        """Add one fault from ``{"service", "operation", "code"?, "times"?, "message"?,
        "status"?}`` (``times`` null = always)."""
        if not isinstance(spec, Mapping):
            raise ValueError("a fault is a JSON object")
        unknown = set(spec) - {"service", "operation", "code", "times", "message", "status", "id"}
        if unknown:
            raise ValueError(f"unknown fault fields: {sorted(unknown)}")
        times = spec.get("times", 1)
        return self.fail(
            str(spec.get("service") or ""),
            str(spec.get("operation") or ""),
            code=str(spec.get("code") or "ThrottlingException"),
            times=times,
            message=spec.get("message"),
            status=spec.get("status"),
        )

    @classmethod
    def from_json(cls, data: list[Mapping[str, Any]]) -> Faults:
        faults = cls()
        for spec in data:
            faults.add_json(spec)
        return faults


AdminHandler = Callable[[Any], tuple[int, Any]]


def admin_routes(faults: Faults) -> dict[tuple[str, str], AdminHandler]:
    """Plain handlers for ``/_local/faults``: ``(method, path) -> fn(json_body) -> (status, body)``.

    - ``GET /_local/faults`` -> 200 ``{"faults": [...]}``
    - ``POST /_local/faults`` with one fault object or a list of them -> 201 ``{"faults": [...]}``
      (the added ones); 400 ``{"message": ...}`` if invalid
    - ``DELETE /_local/faults`` -> 200 ``{"cleared": n}``
    """

    def get(_body: Any) -> tuple[int, Any]:
        return 200, {"faults": faults.pending()}

    def post(body: Any) -> tuple[int, Any]:
        specs = body if isinstance(body, list) else [body]
        try:
            added = [faults.add_json(spec) for spec in specs]
        except (ValueError, TypeError) as exc:
            return 400, {"message": str(exc)}
        return 201, {"faults": [f.to_json() for f in added]}

    def delete(_body: Any) -> tuple[int, Any]:
        return 200, {"cleared": faults.clear()}

    return {
        ("GET", "/_local/faults"): get,
        ("POST", "/_local/faults"): post,
        ("DELETE", "/_local/faults"): delete,
    }
