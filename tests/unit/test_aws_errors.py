"""hypd.aws.errors.translate: botocore errors -> hypd's named errors."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from hypd.aws.dynamodb import Table
from hypd.aws.errors import translate
from hypd.errors import (
    AwsAccessDenied,
    AwsRequestRejected,
    AwsResourceNotFound,
    AwsThrottled,
    AwsUnavailable,
    HypdError,
    PermanentError,
    TemporaryError,
)

ENDPOINT = "https://eks.us-west-2.amazonaws.com/"


def client_error(code: str, message: str = "what AWS said", status: int = 400) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"RequestId": "8c1f0e3a", "HTTPStatusCode": status},
        },
        "DescribeCluster",
    )


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        ("ThrottlingException", 400, AwsThrottled),
        ("Throttling", 400, AwsThrottled),
        ("TooManyRequestsException", 429, AwsThrottled),
        ("ProvisionedThroughputExceededException", 400, AwsThrottled),
        ("RequestLimitExceeded", 503, AwsThrottled),
        ("InternalServerError", 500, AwsUnavailable),
        ("ServiceUnavailableException", 503, AwsUnavailable),
        ("InternalFailure", 500, AwsUnavailable),
        ("SomethingNewAndBroken", 502, AwsUnavailable),
        ("AccessDeniedException", 403, AwsAccessDenied),
        ("AccessDenied", 403, AwsAccessDenied),
        ("ExpiredTokenException", 400, AwsAccessDenied),
        ("UnrecognizedClientException", 403, AwsAccessDenied),
        ("ResourceNotFoundException", 404, AwsResourceNotFound),
        ("ResourceNotFound", 400, AwsResourceNotFound),
        ("ValidationException", 400, AwsRequestRejected),
        ("InvalidParameterException", 400, AwsRequestRejected),
        ("ResourceInUseException", 409, AwsRequestRejected),
    ],
)
def test_client_errors_map_to_the_named_error(
    code: str, status: int, expected: type[HypdError]
) -> None:
    # Given AWS answered with `code`
    # When it is translated
    error = translate(client_error(code, status=status), "describing EKS cluster train")
    # Then it is the named class, keeping the AWS code in details and leading the message
    assert type(error) is expected
    assert error.details == {"awsErrorCode": code}
    assert error.message == f"describing EKS cluster train: {code}: what AWS said"


def test_temporary_and_permanent_families() -> None:
    assert isinstance(translate(client_error("ThrottlingException"), "x"), TemporaryError)
    assert isinstance(translate(client_error("InternalError", status=500), "x"), TemporaryError)
    assert isinstance(
        translate(client_error("AccessDeniedException", status=403), "x"), PermanentError
    )
    assert isinstance(translate(client_error("ValidationException"), "x"), PermanentError)


def test_client_error_without_message_uses_botocores_text() -> None:
    exc = ClientError({"Error": {"Code": "ValidationException"}}, "ListClusters")
    error = translate(exc, "listing")
    assert type(error) is AwsRequestRejected
    assert error.message.startswith("listing: ValidationException: An error occurred")


@pytest.mark.parametrize(
    "exc",
    [
        EndpointConnectionError(endpoint_url=ENDPOINT),
        ConnectTimeoutError(endpoint_url=ENDPOINT),
        ReadTimeoutError(endpoint_url=ENDPOINT),
        ConnectionClosedError(endpoint_url=ENDPOINT),
    ],
)
def test_network_errors_are_unavailable(exc: Exception) -> None:
    error = translate(exc, "listing EKS clusters")
    assert type(error) is AwsUnavailable
    assert error.details == {"awsErrorCode": type(exc).__name__}
    assert error.message.startswith("listing EKS clusters: ")
    assert ENDPOINT in error.message


def test_dynamodb_adapter_translates_a_missing_table(dynamodb_client: Any) -> None:
    # Given a table name that does not exist
    table = Table(dynamodb_client, "no-such-table")
    # When it is read
    with pytest.raises(AwsResourceNotFound) as raised:
        table.get({"PK": "OP#x", "SK": "OP"})
    # Then the adapter raised the named error with AWS's code
    assert raised.value.details == {"awsErrorCode": "ResourceNotFoundException"}
    assert "no-such-table" in raised.value.message
