"""`Idempotency-Key`: a repeated request answers as the first one did (docs/api.md).

A client that cannot tell whether its request was served (a timeout, a dropped connection,
EventBridge's 5-second limit on an API Gateway target) sends it again with the same key. On
every mutating route (POST, PUT, PATCH, DELETE), one middleware of the app (`idempotency`)
makes the repeat harmless, as Stripe's API and draft-ietf-httpapi-idempotency-key-header do:

- The first request with a key claims it (`hypd.idempotency.store`), runs, and its answer
  (status, headers, body) is kept for a day.
- A repeat with the same fingerprint (method, path, query and JSON body, canonically) gets
  that answer again, with `Idempotent-Replayed: true`, and runs nothing.
- The same key on the same route with another fingerprint: 422 `IdempotencyKeyMismatch`.
- A repeat while the first is still being served: 429 `IdempotencyKeyInUse` with
  `Retry-After` (EventBridge retries 429 and 5xx, no other 4xx).
- A 5xx answer (or a crash) releases the claim: the failure was not the request's, and a
  repeat runs it again. A 4xx is kept: the same request gets the same refusal.
- Keys are the caller's own: scoped by the caller's principal and the route.

Without the header a request is served as before. On the other routes it is ignored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.types import EventHandlerInstance
from aws_lambda_powertools.shared.json_encoder import Encoder

from hypd.api.context import services
from hypd.idempotency.models import Claim, IdempotentRequest, StoredResponse

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MAX_KEY_LENGTH = 255
KEY_PATTERN = r"^[!-~]([ -~]*[!-~])?$"
"""Printable ASCII, spaces inside only: HTTP drops the spaces around a header's value, so a key
that began or ended with one would not arrive as it was sent."""
_KEY = re.compile(KEY_PATTERN)
ANONYMOUS = "anonymous"
"""The principal of an unsigned request (the local cloud's; on AWS every route needs SigV4)."""
_ASSUMED_ROLE = re.compile(r"^(arn:[\w-]+:sts::\d{12}:assumed-role/[^/]+)/.+$")


def _invalid_key(message: str) -> RequestValidationError:
    return RequestValidationError(
        [{"type": "idempotency_key", "loc": ("header", HEADER), "msg": message, "input": None}]
    )


def _header_values(event: Mapping[str, Any], name: str) -> list[str]:
    """Every value of header `name` (any case) in an API Gateway REST proxy event."""
    wanted = name.lower()
    multi = event.get("multiValueHeaders") or {}
    values = [v for k, vs in multi.items() if k.lower() == wanted for v in vs or []]
    return values or [v for k, v in (event.get("headers") or {}).items() if k.lower() == wanted]


def read_key(event: Mapping[str, Any]) -> str | None:
    """The request's `Idempotency-Key`, or None when it sends none.

    Raises:
        RequestValidationError: the key is empty, longer than `MAX_KEY_LENGTH`, not printable
            ASCII, or given more than once (a 400 naming the header).
    """
    values = _header_values(event, HEADER)
    if not values:
        return None
    if len(values) > 1:
        raise _invalid_key(f"send one {HEADER}, not {len(values)}")
    (key,) = values
    if not key:
        raise _invalid_key(f"{HEADER} is empty")
    if len(key) > MAX_KEY_LENGTH:
        raise _invalid_key(f"{HEADER} is {len(key)} characters long (at most {MAX_KEY_LENGTH})")
    if not _KEY.match(key):
        raise _invalid_key(
            f"{HEADER} must be printable ASCII (a UUID, say), with no space at either end"
        )
    return key


def principal(event: Mapping[str, Any]) -> str:
    """Who sent the request, as a key's owner: the IAM user or role that signed it.

    A role's session name is left out (the role is the principal): a service that signs with a
    role, as EventBridge does for an API Gateway target, may sign a retried delivery in a new
    session of it."""
    identity = (event.get("requestContext") or {}).get("identity") or {}
    arn = identity.get("userArn")
    if not isinstance(arn, str) or not arn:
        return ANONYMOUS
    assumed = _ASSUMED_ROLE.match(arn)
    return assumed.group(1) if assumed else arn


def _canonical_body(event: Mapping[str, Any]) -> str | None:
    body = event.get("body")
    if not body:
        return None
    text = str(body)
    if event.get("isBase64Encoded"):
        try:
            text = base64.b64decode(text, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return text  # a body the route refuses anyway: compared as sent
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(event: Mapping[str, Any]) -> str:
    """A digest of what makes a request the one it is: method, path, query (in any order) and
    body (JSON, in any key order and spacing)."""
    query = event.get("multiValueQueryStringParameters") or {
        name: [value] for name, value in (event.get("queryStringParameters") or {}).items()
    }
    parts = [
        str(event.get("httpMethod", "")).upper(),
        str(event.get("path", "")),
        sorted((name, sorted(values or [])) for name, values in query.items()),
        _canonical_body(event),
    ]
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()


def stored(response: Response[Any]) -> StoredResponse:
    """`response` as the store keeps it (its body serialised as the resolver would)."""
    body = response.body
    if isinstance(body, bytes):
        return StoredResponse(
            response.status_code,
            base64.b64encode(body).decode(),
            dict(response.headers),
            base64_encoded=True,
        )
    if body is None:
        text = ""
    elif isinstance(body, str):
        text = body
    else:
        # Powertools' own serialisation of a JSON body (ResponseBuilder's default).
        text = json.dumps(body, separators=(",", ":"), cls=Encoder)
    return StoredResponse(response.status_code, text, dict(response.headers))


def replayed(answer: StoredResponse) -> Response[Any]:
    """The kept answer, sent again and marked so."""
    headers = {**answer.headers, REPLAYED_HEADER: "true"}
    return Response(status_code=answer.status, body=answer.body_value(), headers=headers)


def idempotency(app: EventHandlerInstance, next_middleware: NextMiddleware) -> Response[Any]:
    """The app's middleware (`hypd.api.app.build_app`): see the module's doc."""
    route = app.context.get("_route")
    registered = route in (*app._static_routes, *app._dynamic_routes)
    event: Mapping[str, Any] = app.current_event.raw_event
    if route is None or not registered or route.method.upper() not in MUTATING_METHODS:
        return next_middleware(app)
    key = read_key(event)
    if key is None:
        return next_middleware(app)
    request = IdempotentRequest(
        principal(event), f"{route.method.upper()} {route.path}", key, fingerprint(event)
    )
    store = services().idempotency_store()
    outcome = store.claim(request)
    if isinstance(outcome, StoredResponse):
        return replayed(outcome)
    return _run(app, next_middleware, outcome)


def _run(app: EventHandlerInstance, next_middleware: NextMiddleware, claim: Claim) -> Response[Any]:
    store = services().idempotency_store()
    try:
        response = _answer(app, next_middleware)
    except BaseException:
        store.release(claim)
        raise
    if response.status_code >= 500:
        store.release(claim)
        return response
    answer = stored(response)
    store.complete(claim, answer)
    # The first answer's bytes are the ones a repeat gets.
    return Response(
        status_code=answer.status, body=answer.body_value(), headers=dict(answer.headers)
    )


def _answer(app: EventHandlerInstance, next_middleware: NextMiddleware) -> Response[Any]:
    """The route's answer, its errors answered as the app answers them (`hypd.api.errors`),
    so that a refusal is kept like any other answer."""
    try:
        return next_middleware(app)
    except Exception as exc:
        handler = app.exception_handler_manager.lookup_exception_handler(type(exc))
        if handler is None:
            raise
        response: Response[Any] = handler(exc)
        return response
