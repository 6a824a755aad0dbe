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
    if not _is_key_of(key, index, partition):
        raise _invalid("is not a token this API issued")
    return key


def _is_key_of(key: dict[str, Any], index: str, partition: str) -> bool:
    """A LastEvaluatedKey of this index partition: string keys of the table and the index."""
    allowed = {"PK", "SK", f"{index}PK", f"{index}SK"}
    if set(key) != allowed:
        return False
    if not all(
        isinstance(v, dict) and list(v) == ["S"] and isinstance(v["S"], str) for v in key.values()
    ):
        return False
    return bool(key[f"{index}PK"] == {"S": partition})


def _invalid(why: str) -> ValidationError:
    return ValidationError(
        f"nextToken {why}; repeat the request without it to start from the first page",
        details={"field": "nextToken"},
    )
