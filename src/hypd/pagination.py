"""Opaque, query-bound pagination tokens.

A token wraps DynamoDB's LastEvaluatedKey together with the index and partition it came from, so
a token from one listing is rejected by another instead of silently returning the wrong page.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from hypd.errors import ValidationError


def encode_token(index: str, partition: str, last_key: dict[str, Any] | None) -> str | None:
    if not last_key:
        return None
    raw = json.dumps({"i": index, "p": partition, "k": last_key}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(token: str | None, index: str, partition: str) -> dict[str, Any] | None:
    """The ExclusiveStartKey for this query, or None for the first page.

    Raises:
        ValidationError: the token is malformed or belongs to another listing.
    """
    if not token:
        return None
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise _invalid("is not a token this API issued") from exc
    if not isinstance(data, dict) or not isinstance(data.get("k"), dict):
        raise _invalid("is not a token this API issued")
    if data.get("i") != index or data.get("p") != partition:
        raise _invalid("belongs to a listing with other filters")
    key: dict[str, Any] = data["k"]
    return key


def _invalid(why: str) -> ValidationError:
    return ValidationError(
        f"nextToken {why}; repeat the request without it to start from the first page",
        details={"field": "nextToken"},
    )
