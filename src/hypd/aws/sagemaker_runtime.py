"""SageMaker runtime adapter: InvokeEndpoint on an endpoint the inference operator registered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from hypd.aws.errors import NETWORK_ERRORS, error_code, translate
from hypd.errors import ClientRequestError, ConflictError


class ModelError(ClientRequestError):
    """The model container answered an error (InvokeEndpoint's ModelError: 424, as SageMaker
    answers it: the request reached the model, which refused it)."""

    status = 424
    code = "ModelError"


class EndpointNotReady(ConflictError):
    code = "EndpointNotReady"


@dataclass(frozen=True)
class Invocation:
    body: bytes
    content_type: str | None
    invoked_production_variant: str | None


def invoke_endpoint(client: Any, endpoint_name: str, body: bytes, content_type: str,
                    accept: str | None = None) -> Invocation:
    """InvokeEndpoint.

    Raises:
        EndpointNotReady: the endpoint does not exist (yet) or its model is not loaded.
        ModelError: the model answered an error.
    """
    request: dict[str, Any] = {"EndpointName": endpoint_name, "Body": body,
                               "ContentType": content_type}
    if accept:
        request["Accept"] = accept
    action = f"invoking SageMaker endpoint {endpoint_name}"
    try:
        answer = client.invoke_endpoint(**request)
    except ClientError as exc:
        code = error_code(exc)
        message = str(exc.response.get("Error", {}).get("Message", "")) or str(exc)
        if code in ("ModelNotReadyException",) or (
                code in ("ValidationError", "ValidationException")
                and "not found" in message.lower()):
            raise EndpointNotReady(f"{action}: {code}: {message}",
                                   details={"awsErrorCode": code,
                                            "endpointName": endpoint_name}) from exc
        if code == "ModelError":
            raise ModelError(f"{action}: the model answered an error: {message}",
                             details={"awsErrorCode": code}) from exc
        raise translate(exc, action) from exc
    except NETWORK_ERRORS as exc:
        raise translate(exc, action) from exc
    payload = answer["Body"].read()
    return Invocation(payload, answer.get("ContentType"), answer.get("InvokedProductionVariant"))
