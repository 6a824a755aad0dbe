"""hypd.pagination: opaque tokens bound to the listing they came from."""

from __future__ import annotations

import base64

import pytest

from hypd.errors import ValidationError
from hypd.pagination import decode_token, encode_token

KEY = {
    "PK": {"S": "OP#op-0123"},
    "SK": {"S": "OP"},
    "GSI2PK": {"S": "OPS#S#PENDING"},
    "GSI2SK": {"S": "2026-01-15T10:00:00.000Z#op-0123"},
}


def test_round_trip() -> None:
    token = encode_token("GSI2", "OPS#S#PENDING", KEY)
    assert token is not None
    assert "=" not in token
    assert decode_token(token, "GSI2", "OPS#S#PENDING") == KEY


def test_no_last_key_means_no_token() -> None:
    assert encode_token("GSI2", "OPS#S#PENDING", None) is None
    assert encode_token("GSI2", "OPS#S#PENDING", {}) is None


@pytest.mark.parametrize("token", [None, ""])
def test_no_token_is_the_first_page(token: str | None) -> None:
    assert decode_token(token, "GSI2", "OPS#S#PENDING") is None


@pytest.mark.parametrize(
    ("index", "partition"),
    [("GSI2", "OPS#S#RUNNING"), ("GSI3", "OPS#S#PENDING"), ("GSI4", "OPS")],
)
def test_token_is_bound_to_index_and_partition(index: str, partition: str) -> None:
    token = encode_token("GSI2", "OPS#S#PENDING", KEY)
    with pytest.raises(
        ValidationError, match="nextToken belongs to a listing with other filters"
    ) as raised:
        decode_token(token, index, partition)
    assert raised.value.details == {"field": "nextToken"}


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        "not a token",
        "%%%",
        "a",
        b64(b"not json"),
        b64(b"null"),
        b64(b"42"),
        b64(b'"text"'),
        b64(b"[]"),
        b64(b'{"i":"GSI2","p":"OPS#S#PENDING"}'),
        b64(b'{"i":"GSI2","p":"OPS#S#PENDING","k":[1]}'),
        b64(b"\x80\x81\x82"),
    ],
)
def test_garbage_is_rejected(token: str) -> None:
    with pytest.raises(ValidationError, match="nextToken is not a token this API issued") as raised:
        decode_token(token, "GSI2", "OPS#S#PENDING")
    assert raised.value.details == {"field": "nextToken"}
    assert "repeat the request without it" in raised.value.message
