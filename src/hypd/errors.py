"""Error families shared by the API and the state-machine tasks.

* `ClientError` subclasses are the caller's fault; the API maps each to one HTTP status.
* `TemporaryError` subclasses are retried: the state machines retry exactly these names.
* `PermanentError` subclasses stop the operation and are recorded on the failing stage.

The exception class name is the error name Step Functions sees (Lambda reports it as
`errorType`), so renaming a class here is an API change for every state machine.
"""

from __future__ import annotations

from typing import Any


class HypdError(Exception):
    """Base of every error hypd raises on purpose."""

    code: str = "InternalError"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


# ---------------------------------------------------------------- caller errors (4xx)
class ClientRequestError(HypdError):
    """The request cannot be served as sent."""

    status = 400
    code = "BadRequest"


class ValidationError(ClientRequestError):
    status = 400
    code = "ValidationError"


class NotFoundError(ClientRequestError):
    status = 404
    code = "NotFound"


class ConflictError(ClientRequestError):
    status = 409
    code = "Conflict"


class IdempotencyKeyMismatch(ClientRequestError):
    """An `Idempotency-Key` already used for a different request (method, path, query or
    body) by the same caller on the same route."""

    status = 422
    code = "IdempotencyKeyMismatch"


class IdempotencyKeyInUse(ClientRequestError):
    """The first request with this `Idempotency-Key` is still being served: ask again after
    `retry_after` seconds (429, which EventBridge retries, unlike a 409)."""

    status = 429
    code = "IdempotencyKeyInUse"

    def __init__(
        self, message: str, *, retry_after: int, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message, details=details)
        self.retry_after = retry_after


# ---------------------------------------------------------------- retried by the state machines
class TemporaryError(HypdError):
    """Worth retrying after a delay."""

    code = "TemporaryError"


class AwsThrottled(TemporaryError):
    """AWS throttled the request."""

    code = "Throttled"


class AwsUnavailable(TemporaryError):
    """AWS answered with a server-side error or could not be reached."""

    code = "ServiceUnavailable"


class ConcurrentUpdate(TemporaryError):
    """A record kept changing under us beyond the optimistic-locking retry budget."""

    code = "ConcurrentUpdate"


# ---------------------------------------------------------------- stop the operation
class PermanentError(HypdError):
    """Retrying will not help; the stage fails with this error."""

    code = "PermanentError"


class AwsAccessDenied(PermanentError):
    code = "AccessDenied"


class AwsResourceNotFound(PermanentError):
    code = "ResourceNotFound"


class AwsRequestRejected(PermanentError):
    """AWS rejected the request (validation, limits, conflicting state)."""

    code = "RequestRejected"


class InvalidTaskInput(PermanentError):
    """A state machine passed a task input that does not match the task's model."""

    code = "InvalidTaskInput"


class OperationStateError(PermanentError):
    """A transition that the operation's current state does not allow."""

    code = "OperationStateError"
