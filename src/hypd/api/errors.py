"""Every error the API returns is `{"code", "message", "details"}`; the mapping lives here."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError as RouteNotFound
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from hypd.api.field_messages import field_message
from hypd.errors import (
    AwsThrottled,
    ClientRequestError,
    HypdError,
    IdempotencyKeyInUse,
    TemporaryError,
)

ERROR_RESPONSES: dict[int, OpenAPIResponse] = {
    status: {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for status, description in {
        400: "Bad input; `message` names the field and `details.errors` lists every problem.",
        404: "No such resource.",
        409: "The request conflicts with the current state (e.g. an operation in progress; "
        "ClusterDeleted: the cluster was torn down, its record is all that is left; "
        "ClusterNotActive: its creation has not made its HyperPod cluster).",
        422: "IdempotencyKeyMismatch: this Idempotency-Key was already used for a different "
        "request (method, path, query or body) on this route.",
        429: "IdempotencyKeyInUse: the first request with this Idempotency-Key is still being "
        "served; ask again after Retry-After seconds.",
        500: "hypd failed; the operation record (if any) holds the error.",
        503: "AWS throttled hypd or was unavailable; retry later.",
    }.items()
}


def json_response(schema: str, description: str) -> OpenAPIResponse:
    """An OpenAPI response whose JSON body is the component schema `schema` (a route that
    declares its responses gets no 200 from its return type: name it here)."""
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
    }


def accepted_response(description: str) -> OpenAPIResponse:
    """The OpenAPI 202 response of a route that starts an operation."""
    return json_response("OperationAccepted", description)


def error_response(
    status: int,
    code: str,
    message: str,
    details: dict[str, Any] | None = None,
    *,
    retry_after: int | None = None,
) -> Response[str]:
    """The error body of `status`; a 503 says `Retry-After: 5` unless told otherwise."""
    headers: dict[str, str] = {}
    if retry_after is None and status == 503:
        retry_after = 5
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps({"code": code, "message": message, "details": details or {}}),
        headers=headers,
    )


def _field_name(location: tuple[Any, ...] | list[Any], body: Any = None) -> str:
    """`("body", "clusterNames", 0)` -> `clusterNames[0]`; `("query", "limit")` -> `limit`.

    A union's tag, which pydantic puts in the location (`capacity.training-plan.trainingPlanArn`
    for a `{"type": "training-plan"}` capacity), is not a field the user wrote: a part before the
    last that the body (`body`, the parsed request) does not hold where it points is dropped.
    """
    parts = list(location)
    source = parts.pop(0) if parts and parts[0] in {"body", "query", "path", "header"} else None
    walk = body if source == "body" else None
    name = ""
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if isinstance(walk, dict) and not last and part not in walk:
            continue
        if isinstance(walk, dict):
            walk = walk.get(part)
        elif isinstance(walk, list) and isinstance(part, int) and 0 <= part < len(walk):
            walk = walk[part]
        else:
            walk = None
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or (source or "body")


def _request_body(app: APIGatewayRestResolver) -> Any:
    """The request's JSON body, or None when it has none or it is not JSON."""
    try:
        return json.loads(app.current_event.decoded_body or "null")
    except (TypeError, ValueError, RecursionError):  # not JSON, or nested too deeply to read
        return None


def register_error_handlers(app: APIGatewayRestResolver) -> None:
    # Created here, not at import: Powertools binds a logger to the service of the
    # function that builds it (several functions share one process on the local cloud).
    logger = Logger(child=True)

    @app.exception_handler(RequestValidationError)
    def validation_failed(exc: RequestValidationError) -> Response[str]:
        body = _request_body(app)
        errors = [
            {
                "field": "body"
                if error.get("type") == "json_invalid"
                else _field_name(error.get("loc", ()), body),
                "in": (error.get("loc") or ["body"])[0],
                "message": field_message(error),
            }
            for error in exc.errors()
        ]
        summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return error_response(
            400, "ValidationError", f"invalid request: {summary}", {"errors": errors}
        )

    @app.exception_handler(ClientRequestError)
    def client_error(exc: ClientRequestError) -> Response[str]:
        retry_after = exc.retry_after if isinstance(exc, IdempotencyKeyInUse) else None
        return error_response(
            exc.status, exc.code, exc.message, exc.details, retry_after=retry_after
        )

    @app.exception_handler(TemporaryError)
    def temporary(exc: TemporaryError) -> Response[str]:
        logger.warning("temporary failure", error=exc.message, error_type=type(exc).__name__)
        code = "Throttled" if isinstance(exc, AwsThrottled) else "ServiceUnavailable"
        return error_response(503, code, exc.message, exc.details)

    @app.exception_handler(HypdError)
    def permanent(exc: HypdError) -> Response[str]:
        logger.error("request failed", error=exc.message, error_type=type(exc).__name__)
        return error_response(500, exc.code, exc.message, exc.details)

    @app.not_found
    def no_route(exc: RouteNotFound) -> Response[str]:
        return error_response(
            404, "NotFound", f"no route {app.current_event.http_method} {app.current_event.path}"
        )
