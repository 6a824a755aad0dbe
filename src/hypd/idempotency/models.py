"""What the idempotency store keeps and answers: a keyed request, its claim, its answer.

Plain values, cheap to import (the API's middleware imports them at init; the store, which
needs the DynamoDB adapter, is made with the services on first use).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class IdempotentRequest:
    """A request that carries an `Idempotency-Key`, as the store keys and compares it."""

    principal: str
    """Who sent it (`hypd.api.idempotency.principal`): a key is the caller's own."""
    route: str
    """`METHOD rule` of the route it reached (`POST /operations/<operationId>/retry`)."""
    key: str
    fingerprint: str
    """A digest of what makes two requests the same one: method, path, query and body."""

    @property
    def scope(self) -> str:
        """The record's name: a digest of the caller, the route and the key (any of them
        may be long or hold any printable character)."""
        text = "\n".join((self.principal, self.route, self.key))
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class StoredResponse:
    """An answer as the API sent it, to be sent again."""

    status: int
    body: str
    """The body's text; base64 of its bytes when `base64_encoded`."""
    headers: dict[str, str | list[str]] = field(default_factory=dict)
    base64_encoded: bool = False

    def body_value(self) -> str | bytes:
        return base64.b64decode(self.body) if self.base64_encoded else self.body

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "body": self.body,
            "headers": self.headers,
            "base64Encoded": self.base64_encoded,
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> StoredResponse:
        return cls(
            int(value["status"]),
            str(value["body"]),
            dict(value.get("headers") or {}),
            bool(value.get("base64Encoded")),
        )


@dataclass(frozen=True)
class Claim:
    """The right to run a request and record its answer, until `stale_at`."""

    request: IdempotentRequest
    claim_id: str
    stale_at: datetime
