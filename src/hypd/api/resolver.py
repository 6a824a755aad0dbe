"""How a request reaches its route: the one place where malformed input becomes a 400.

`ApiResolver` is Powertools' REST resolver with two changes, so every route reads its request
the same way:

- Routing takes a path parameter as API Gateway does: any text between two slashes. Powertools'
  own rule admits only word characters and some punctuation, so a parameter with any other
  character (a control character, an accent mark, a quote) was a 404 "no route" for a route
  API Gateway had routed; now the parameter's own pattern judges it (a 400 naming it).
- Its request validation is `RequestValidation`.

Powertools validates a route's path, query and body parameters against its signature (pydantic)
and raises `RequestValidationError`, which `hypd.api.errors` answers with a 400 naming each
field. What it does not judge, or crashes on, `RequestValidation` judges, once for every route:

- query parameters the route does not take (a misspelt filter would silently list everything);
- the body's media type: every body of this API is JSON (`application/json`, or no
  Content-Type at all); a form or a multipart body, with or without a boundary, is refused
  instead of being parsed as form fields;
- the body's bytes: base64 (when API Gateway marks it so), UTF-8 (JSON's encoding, RFC 8259),
  then JSON itself: standard JSON only (no NaN or Infinity), integers of at most
  `MAX_INTEGER_DIGITS` digits, nesting the parser can follow;
- its shape: every body of this API is a JSON object; Powertools would otherwise take the
  first item of an array as the body (its form-field rule).
- on a mutating route, the `Idempotency-Key` header (`hypd.api.idempotency.read_key`), before
  anything else.

Each problem is a `RequestValidationError` whose error names the field (`body`, the header
`Content-Type`, or the query parameter), so it reaches the client like any validation error.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (
    OpenAPIRequestValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.types import EventHandlerInstance
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

from hypd.api.idempotency import MUTATING_METHODS, read_key

JSON_MEDIA_TYPE = "application/json"
MAX_INTEGER_DIGITS = 30
"""Longer than any count or size the API takes (Python itself refuses 4300 digits and more)."""
SIGV4_QUERY_PREFIX = "x-amz-"
"""A SigV4 request signed in its query string (X-Amz-Signature, ...) carries these."""
_ROUTE_PARAMETER = re.compile(r"<(\w+)>")


def _problem(kind: str, loc: tuple[str, ...], message: str) -> RequestValidationError:
    return RequestValidationError([{"type": kind, "loc": loc, "msg": message, "input": None}])


def unknown_query_parameters(query: dict[str, Any] | None, known: set[str]) -> list[str]:
    """The query parameters of a request that its route does not take, sorted."""
    return sorted(
        name
        for name in query or {}
        if name not in known and not name.lower().startswith(SIGV4_QUERY_PREFIX)
    )


def media_type(content_type: str | None) -> str | None:
    """`application/json; charset=utf-8` -> `application/json`; None when absent or blank."""
    value = (content_type or "").split(";", 1)[0].strip().lower()
    return value or None


def read_json_body(body: str | None, *, base64_encoded: bool, content_type: str | None) -> Any:
    """The JSON object a request carries, or None when it has no body.

    Raises:
        RequestValidationError: the Content-Type is not JSON's, the body is not valid base64
            (when marked so), not UTF-8, not standard JSON, or not a JSON object.
    """
    if not body:
        return None
    kind = media_type(content_type)
    if kind not in (None, JSON_MEDIA_TYPE):
        raise _problem(
            "content_type",
            ("header", "Content-Type"),
            f"the body must be JSON (Content-Type: {JSON_MEDIA_TYPE}), not {kind}",
        )
    text = _text(body, base64_encoded=base64_encoded)
    value = _parse(text)
    if value is not None and not isinstance(value, dict):
        raise _problem(
            "model_type", ("body",), f"a JSON object is expected, not {_json_kind(value)}"
        )
    return value


def _text(body: str, *, base64_encoded: bool) -> str:
    if not base64_encoded:
        return body
    try:
        raw = base64.b64decode(body, validate=True)
    except binascii.Error as exc:
        raise _problem("body_encoding", ("body",), f"not valid base64: {exc}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _problem(
            "body_encoding",
            ("body",),
            f"not UTF-8 text (JSON is UTF-8): byte {exc.start} is {raw[exc.start]:#04x}",
        ) from exc


def _not_a_number(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise ValueError(f"an integer of more than {MAX_INTEGER_DIGITS} digits")
    return int(digits)


def _parse(text: str) -> Any:
    try:
        value = json.loads(text, parse_constant=_not_a_number, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise _problem(
            "json_invalid", ("body",), f"not JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise _problem("json_invalid", ("body",), "JSON nested too deeply") from exc
    except ValueError as exc:  # from _not_a_number / _bounded_int
        raise _problem("json_invalid", ("body",), f"not JSON: {exc}") from exc
    return value


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


class RequestValidation(OpenAPIRequestValidationMiddleware):
    """Powertools' request validation, with the query checked for unknown parameters and the
    body read by `read_json_body` (instead of Powertools' JSON / form / multipart parser)."""

    def handler(self, app: EventHandlerInstance, next_middleware: NextMiddleware) -> Any:
        route = app.context["_route"]
        known = {param.alias for param in route.dependant.query_params}
        unknown = unknown_query_parameters(app.current_event.query_string_parameters, known)
        # Powertools' stand-in route for "no route matched" takes no parameters, and its 404
        # says more than any parameter could.
        registered = route in (*app._static_routes, *app._dynamic_routes)
        if registered and route.method.upper() in MUTATING_METHODS:
            # A malformed Idempotency-Key is refused first, whatever else the request holds:
            # its sender meant the request to be safe to repeat, and it would not be.
            read_key(app.current_event.raw_event)
        if unknown and registered:
            takes = ", ".join(sorted(known)) or "none"
            raise RequestValidationError(
                [
                    {
                        "type": "extra_forbidden",
                        "loc": ("query", name),
                        "msg": f"unknown query parameter {name!r} (this route takes: {takes})",
                        "input": None,
                    }
                    for name in unknown
                ]
            )
        return super().handler(app, next_middleware)

    def _get_body(self, app: EventHandlerInstance) -> Any:
        event: BaseProxyEvent = app.current_event
        return read_json_body(
            event.body,
            base64_encoded=bool(event.is_base64_encoded),
            content_type=event.headers.get("content-type"),
        )



class ApiResolver(APIGatewayRestResolver):
    """Powertools' REST resolver, routing as API Gateway does and validating with
    `RequestValidation`."""

    def __init__(self) -> None:
        super().__init__(enable_validation=True)
        # Powertools puts its request validation first in every route's chain, ahead of any
        # middleware of ours: ours takes its place.
        self._request_validation_middleware = RequestValidation()

    @staticmethod
    def _compile_regex(rule: str, base_regex: str = "^{}/*$") -> re.Pattern[str]:
        """A route's rule as a regex: `/clusters/<tag>` matches any one segment as `tag`
        (Powertools' REST resolver takes the same base, with a narrower segment)."""
        return re.compile(base_regex.format(_ROUTE_PARAMETER.sub(r"(?P<\1>[^/]+)", rule)))
