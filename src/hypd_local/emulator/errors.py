"""AWS errors the emulators raise and the protocol layer serialises.

Codes and HTTP statuses follow the botocore service models (``botocore/data/<service>/*/
service-2.json``):

- SageMaker (``json`` protocol) declares ``ConflictException``, ``ResourceAlreadyExists``,
  ``ResourceInUse``, ``ResourceLimitExceeded`` and ``ResourceNotFound``, none with a status code:
  the JSON protocol answers every client error with HTTP 400. ``ValidationException``,
  ``ThrottlingException`` and ``InternalFailure`` are AWS's common errors (400, 400, 500).
- EKS (``rest-json``) declares its errors with their status codes: ``InvalidParameterException``
  400, ``InvalidRequestException`` 400, ``ResourceNotFoundException`` 404,
  ``ResourceInUseException`` 409, ``ResourceLimitExceededException`` 400,
  ``ThrottlingException`` 429, ``ServerException`` 500, ``ServiceUnavailableException`` 503,
  ``NotFoundException`` 404, ``AccessDeniedException`` 403, ``ClientException`` 400,
  ``BadRequestException`` 400, ``UnsupportedAvailabilityZoneException`` 400.

``error_for(service_model, code, message)`` builds an error whose status is the one the model
declares (used for injected faults, whose code is free text). ``status_for`` is the one place
that maps a code to a status: the model's declaration, then the few codes whose status depends on
the protocol (EC2's ``RequestLimitExceeded`` is 503 where the query services' throttling is 400,
S3's ``SlowDown`` 503), then AWS's common errors, then the code's shape (``...InternalFailure`` /
``...InternalError`` / ``...ServerException`` 500, ``ServiceUnavailable...`` 503,
``...AccessDenied`` 403), else 400.
"""

from __future__ import annotations

from typing import Any, ClassVar

# AWS's common errors (not in the service models): code -> (status, sender fault).
COMMON_ERRORS: dict[str, tuple[int, bool]] = {
    "ValidationException": (400, True),
    "ThrottlingException": (400, True),
    "ThrottledException": (400, True),
    "RequestLimitExceeded": (400, True),
    "TooManyRequestsException": (400, True),
    "AccessDeniedException": (400, True),
    "IncompleteSignature": (400, True),
    "InvalidAction": (400, True),
    "InvalidClientTokenId": (403, True),
    "MissingAuthenticationToken": (403, True),
    "SerializationException": (400, True),
    "UnknownOperationException": (400, True),
    "InternalFailure": (500, False),
    "InternalServerError": (500, False),
    "ServiceUnavailable": (503, False),
    "ServiceUnavailableException": (503, False),
    # the query / ec2 / rest-xml spellings (CloudFormation, STS, IAM, EC2, S3)
    "Throttling": (400, True),
    "AccessDenied": (403, True),
    "UnauthorizedOperation": (403, True),
    "AuthFailure": (401, True),
    "ExpiredToken": (400, True),
    "RequestExpired": (400, True),
    "InvalidAccessKeyId": (403, True),
    "SignatureDoesNotMatch": (403, True),
    "InternalError": (500, False),
    "Unavailable": (503, False),
}

# Codes whose status depends on the protocol: (protocol, code) -> status.
PROTOCOL_ERRORS: dict[tuple[str, str], int] = {
    ("ec2", "RequestLimitExceeded"): 503,
    ("rest-xml", "SlowDown"): 503,
}


class AwsError(Exception):
    """An AWS error response: ``code`` (the error type), ``message``, HTTP ``status``.

    ``fields`` are extra members of the modeled error shape (EKS errors carry ``clusterName``,
    ``addonName``...); they are written into the error body next to the message.
    """

    default_code: ClassVar[str] = "InternalFailure"
    default_status: ClassVar[int] = 500

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        status: int | None = None,
        sender_fault: bool | None = None,
        fields: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code: str = code or self.default_code
        self.message: str = message
        self.status: int = status if status is not None else self.default_status
        self.sender_fault: bool = self.status < 500 if sender_fault is None else sender_fault
        self.fields: dict[str, Any] = dict(fields or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, status={self.status}, {self.message!r})"

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


# --- common -------------------------------------------------------------------------------


class ValidationException(AwsError):
    """SageMaker's (and AWS's common) input validation error, 400."""

    default_code = "ValidationException"
    default_status = 400


class ThrottlingException(AwsError):
    """Rate exceeded: 400 on SageMaker (json protocol), 429 on EKS (the model says so)."""

    default_code = "ThrottlingException"
    default_status = 400


class InternalFailure(AwsError):
    """The generic server-side failure, 500."""

    default_code = "InternalFailure"
    default_status = 500


class ServiceUnavailableException(AwsError):
    """The service is unavailable, 503."""

    default_code = "ServiceUnavailableException"
    default_status = 503


# --- SageMaker (json protocol: every declared error is a 400) ---------------------------------


class ResourceNotFound(AwsError):
    """SageMaker: the resource does not exist (400)."""

    default_code = "ResourceNotFound"
    default_status = 400


class ConflictException(AwsError):
    """SageMaker: the request conflicts with the resource's state (400)."""

    default_code = "ConflictException"
    default_status = 400


class ResourceLimitExceeded(AwsError):
    """SageMaker: a quota or capacity limit was reached (400)."""

    default_code = "ResourceLimitExceeded"
    default_status = 400


class ResourceInUse(AwsError):
    """SageMaker: the resource is in use (400)."""

    default_code = "ResourceInUse"
    default_status = 400


class ResourceAlreadyExists(AwsError):
    """SageMaker: the resource already exists (400)."""

    default_code = "ResourceAlreadyExists"
    default_status = 400


# --- EKS (rest-json: statuses from the model) -------------------------------------------------


class InvalidParameterException(AwsError):
    """EKS: a parameter is invalid (400)."""

    default_code = "InvalidParameterException"
    default_status = 400


class InvalidRequestException(AwsError):
    """EKS: the request is invalid given the resource's state (400)."""

    default_code = "InvalidRequestException"
    default_status = 400


class ResourceNotFoundException(AwsError):
    """EKS: the resource does not exist (404)."""

    default_code = "ResourceNotFoundException"
    default_status = 404


class NotFoundException(AwsError):
    """EKS: a generic 404."""

    default_code = "NotFoundException"
    default_status = 404


class ResourceInUseException(AwsError):
    """EKS: the resource exists already or is in use (409)."""

    default_code = "ResourceInUseException"
    default_status = 409


class ResourceLimitExceededException(AwsError):
    """EKS: a quota was reached (400)."""

    default_code = "ResourceLimitExceededException"
    default_status = 400


class UnsupportedAvailabilityZoneException(AwsError):
    """EKS: a subnet is in a zone EKS does not support for the cluster (400); carries
    ``validZones``."""

    default_code = "UnsupportedAvailabilityZoneException"
    default_status = 400


class InvalidStateException(AwsError):
    """EKS: upgrade readiness issues block UpdateClusterVersion unless ``force`` (400);
    carries ``clusterName``."""

    default_code = "InvalidStateException"
    default_status = 400


class ClientException(AwsError):
    """EKS: a client-side error such as missing permissions (400)."""

    default_code = "ClientException"
    default_status = 400


class ServerException(AwsError):
    """EKS: a server-side error (500)."""

    default_code = "ServerException"
    default_status = 500


class EksThrottlingException(ThrottlingException):
    """EKS's ``ThrottlingException`` (429 in the model)."""

    default_status = 429


def declared_status(service_model: Any, code: str) -> int | None:
    """The HTTP status the service model declares for error ``code``, if it declares one."""
    for shape in service_model.error_shapes:
        if shape.name == code or shape.metadata.get("error", {}).get("code") == code:
            status = shape.metadata.get("error", {}).get("httpStatusCode")
            if status is not None:
                return int(status)
            # A declared error without a status: the json protocol's client error.
            return 400 if not shape.metadata.get("fault") else 500
    return None


def status_for(service_model: Any, code: str) -> int:
    """The status AWS answers ``code`` with on this service: declared, common, else 400."""
    status = declared_status(service_model, code)
    if status is not None:
        return status
    by_protocol = PROTOCOL_ERRORS.get((str(service_model.protocol), code))
    if by_protocol is not None:
        return by_protocol
    if code in COMMON_ERRORS:
        return COMMON_ERRORS[code][0]
    if code.endswith(("InternalFailure", "InternalError", "ServerError", "ServerException")):
        return 500
    if code.startswith("ServiceUnavailable"):
        return 503
    if code.endswith("AccessDenied"):
        return 403
    return 400


def error_for(
    service_model: Any,
    code: str,
    message: str | None = None,
    *,
    status: int | None = None,
) -> AwsError:
    """An ``AwsError`` for ``code`` on this service with the status its model declares."""
    resolved = status if status is not None else status_for(service_model, code)
    return AwsError(message if message is not None else _default_message(code), code=code,
                    status=resolved)


def validation_error_code(service_model: Any) -> str:
    """The error code this service uses for input that violates its model's constraints."""
    codes = {shape.name for shape in service_model.error_shapes}
    if "InvalidParameterException" in codes:
        return "InvalidParameterException"
    return "ValidationException"


def _default_message(code: str) -> str:
    if "Throttl" in code or code in {"RequestLimitExceeded", "TooManyRequestsException",
                                     "SlowDown"}:
        return "Rate exceeded"
    if code in {"InternalFailure", "InternalServerError", "InternalError", "ServerException"}:
        return "An internal error occurred."
    if code.startswith("ServiceUnavailable") or code == "Unavailable":
        return "Service is unavailable. Try again later."
    if code in {"AccessDenied", "UnauthorizedOperation"}:
        return "Access Denied"
    return code
