"""Kubernetes API errors and their ``Status`` bodies."""

from __future__ import annotations

from typing import Any


class KubeError(Exception):
    """An error the API answers with a Kubernetes ``Status`` body (kind Status, status Failure)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        name: str | None = None,
        group: str | None = None,
        kind: str | None = None,
        causes: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details: dict[str, Any] = {}
        if name is not None:
            self.details["name"] = name
        if group:
            self.details["group"] = group
        if kind is not None:
            self.details["kind"] = kind
        if causes:
            self.details["causes"] = causes

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> KubeError:
    return KubeError(
        404,
        "NotFound",
        f'{_qualified(resource, group)} "{name}" not found',
        name=name,
        group=group,
        kind=resource,
    )


def already_exists(resource: str, group: str, name: str) -> KubeError:
    return KubeError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        name=name,
        group=group,
        kind=resource,
    )


def conflict(resource: str, group: str, name: str, why: str) -> KubeError:
    return KubeError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        name=name,
        group=group,
        kind=resource,
    )


def invalid(kind: str, group: str, name: str, field: str, why: str) -> KubeError:
    return KubeError(
        422,
        "Invalid",
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {field}: {why}',
        name=name,
        group=group,
        kind=kind,
        causes=[{"reason": "FieldValueInvalid", "message": why, "field": field}],
    )


def bad_request(message: str) -> KubeError:
    return KubeError(400, "BadRequest", message)


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> KubeError:
    return KubeError(405, "MethodNotAllowed", message)
