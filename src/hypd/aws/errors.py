"""One translation from botocore errors to hypd's named errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from hypd.errors import (
    AwsAccessDenied,
    AwsRequestRejected,
    AwsResourceNotFound,
    AwsThrottled,
    AwsUnavailable,
    HypdError,
)

THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "RequestThrottled",
        "RequestThrottledException",
        "SlowDown",
        "TransactionInProgressException",
    }
)
UNAVAILABLE_CODES = frozenset(
    {
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "InternalServerException",
        "ServerException",
        "ServiceException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalException",  # EventBridge's (PutEvents)
        "RequestTimeout",
        "RequestTimeoutException",
        # IAM: another change to the same entity is in progress; the next attempt succeeds.
        "ConcurrentModification",
    }
)
ACCESS_DENIED_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
    }
)
NOT_FOUND_CODES = frozenset({"ResourceNotFound", "ResourceNotFoundException", "NotFoundException"})

NETWORK_ERRORS = (
    EndpointConnectionError,
    ConnectTimeoutError,
    ReadTimeoutError,
    ConnectionClosedError,
)


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


def translate(exc: Exception, action: str) -> HypdError:
    """The named hypd error for a failed AWS call; `action` says what we were doing.

    The AWS error code is kept in `details.awsErrorCode` and leads the message, so a stage's
    recorded error shows what AWS said.
    """
    if isinstance(exc, NETWORK_ERRORS):
        return AwsUnavailable(f"{action}: {exc}", details={"awsErrorCode": type(exc).__name__})
    if not isinstance(exc, ClientError):
        return AwsUnavailable(f"{action}: {exc}", details={"awsErrorCode": type(exc).__name__})
    code = error_code(exc)
    message = str(exc.response.get("Error", {}).get("Message", "")) or str(exc)
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    text = f"{action}: {code}: {message}"
    details = {"awsErrorCode": code}
    if code in THROTTLING_CODES:
        return AwsThrottled(text, details=details)
    if code in ACCESS_DENIED_CODES:
        return AwsAccessDenied(text, details=details)
    if code in NOT_FOUND_CODES:
        return AwsResourceNotFound(text, details=details)
    if code in UNAVAILABLE_CODES or status >= 500:
        return AwsUnavailable(text, details=details)
    return AwsRequestRejected(text, details=details)


T = TypeVar("T")


def translated(call: Callable[[], T], action: str) -> T:
    """`call()`, its AWS and network errors translated into hypd's (`translate`)."""
    try:
        return call()
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, action) from exc


def unless_not_found(
    call: Callable[[], T], action: str, is_not_found: Callable[[ClientError], bool]
) -> T | None:
    """`call()`, or None when AWS says the resource does not exist; other errors translated."""
    try:
        return call()
    except ClientError as exc:
        if is_not_found(exc):
            return None
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc


def code_in(*codes: str) -> Callable[[ClientError], bool]:
    """A not-found test for `unless_not_found`: the error code is one of `codes`."""
    return lambda exc: error_code(exc) in codes


def all_pages(client: Any, operation: str, key: str, action: str, **kwargs: Any) -> list[Any]:
    """Every `key` item of a paginated operation; errors translated with `action`."""
    items: list[Any] = []
    try:
        for page in client.get_paginator(operation).paginate(**kwargs):
            items.extend(page.get(key, []))
    except (ClientError, *NETWORK_ERRORS) as exc:
        raise translate(exc, action) from exc
    return items
