"""The REST API front: API Gateway (REST, v1 proxy integration) in front of in-process Lambda.

Routes come from the template (function events of ``Type: Api``). Each request under the stage
path becomes the proxy event API Gateway would send; the handler's proxy result becomes the HTTP
response. Behaviour copied from API Gateway:

- an unknown path or method answers 403 ``{"message":"Missing Authentication Token"}``;
- a handler that raises, or returns something that is not a proxy result, answers 502
  ``{"message": "Internal server error"}``;
- the most specific resource wins (literal segment > ``{param}`` > ``{proxy+}``).

Routes need SigV4 (AWS_IAM) on AWS. When a SigV4 ``Authorization`` header is present (not
verified), its access key and the identity moto's STS associates with it go into
``requestContext.identity``. `hypd_local.apiaccess` makes API Gateway's IAM checks: a principal
the local cloud issued (a role session, an IAM user's key) needs ``execute-api:Invoke`` on the
method (else 403 ``AccessDeniedException``), and the method's integration must be allowed to
invoke the function with the credentials the SAM transform gives it (else 500 ``Internal server
error``). Unsigned requests and keys the local cloud did not issue are the administrator's and
accepted, except in requests the local cloud makes itself (EventBridge's API Gateway targets,
`ApiFront.request`), where an unsigned request to an ``AWS_IAM`` method is 403 ``Missing
Authentication Token`` as on AWS.

The front also serves the local cloud's own endpoints outside the stage path (``/_local/...``):
the handlers it is given as ``admin`` (the clock, info and faults; see `LocalCloud`).
"""

from __future__ import annotations

import base64
import fnmatch
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from hypd_local.apiaccess import ApiAccess, Refusal
from hypd_local.clock import VirtualClock
from hypd_local.lambdas import LambdaRuntime
from hypd_local.template import ApiSpec, RouteSpec

LOG = logging.getLogger(__name__)

AdminHandler = Callable[[Any], tuple[int, Any]]
"""A `/_local/...` endpoint: the decoded JSON body (or None) -> (status, JSON-able body)."""

_JSON = "application/json"


class ApiResponse(Response):
    """A response of the front, with the (virtual) seconds its answer took beyond the handler:
    a `SlowAnswer`'s delay."""

    latency_seconds: float = 0.0


@dataclass
class SlowAnswer:
    """The next ``times`` requests matching ``method`` and the stage-relative ``path`` pattern
    (fnmatch: ``*`` may span segments) are answered ``seconds`` late on the
    virtual clock, after their handler ran: a slow function as a caller sees it."""

    method: str
    path: str
    seconds: float
    times: int | None = 1

    def matches(self, method: str, path: str) -> bool:
        return (self.method in ("*", method.upper())
                and fnmatch.fnmatchcase(path, self.path) and self.times != 0)


@dataclass(frozen=True)
class _Compiled:
    route: RouteSpec
    segments: tuple[str, ...]

    def match(self, parts: list[str]) -> tuple[tuple[int, ...], dict[str, str]] | None:
        """(specificity key, path parameters) when the path matches; lower key = more specific."""
        params: dict[str, str] = {}
        rank: list[int] = []
        for index, segment in enumerate(self.segments):
            if segment.startswith("{") and segment.endswith("+}"):
                if index >= len(parts):
                    return None
                params[segment[1:-2]] = "/".join(parts[index:])
                rank.append(2)
                return tuple(rank), params
            if index >= len(parts):
                return None
            if segment.startswith("{") and segment.endswith("}"):
                params[segment[1:-1]] = parts[index]
                rank.append(1)
            elif segment == parts[index]:
                rank.append(0)
            else:
                return None
        if len(parts) != len(self.segments):
            return None
        return tuple(rank), params


def _split(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


class ApiFront:
    """A threaded HTTP server for one REST API stage (plus the ``/_local`` endpoints)."""

    def __init__(
        self,
        api: ApiSpec,
        *,
        lambdas: LambdaRuntime,
        clock: VirtualClock,
        account_id: str,
        region: str,
        host: str = "127.0.0.1",
        port: int = 0,
        admin: Mapping[tuple[str, str], AdminHandler] | None = None,
        access: ApiAccess | None = None,
    ) -> None:
        self.api = api
        self.access = access
        """API Gateway's IAM checks; None checks nothing (a front without IAM)."""
        self._slow: list[SlowAnswer] = []
        self.refusals: list[Refusal] = []
        """The requests the checks refused, in order (API Gateway's execution log)."""
        self._refusals_lock = threading.Lock()
        self._admin = dict(admin or {})
        self._lambdas = lambdas
        self._clock = clock
        self._account_id = account_id
        self._region = region
        self._routes = [_Compiled(route, tuple(_split(route.path))) for route in api.routes]
        self._server: BaseWSGIServer = make_server(
            host, port, self._wsgi, threaded=True, request_handler=_QuietHandler
        )
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_port)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The API's base URL, stage included (what the template's ApiUrl output is on AWS)."""
        return f"{self.base_url}/{self.api.stage}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
            name=f"api-{self.api.logical_id}", daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()

    def slow_answers(self, method: str, path: str, seconds: float,
                     times: int | None = 1) -> SlowAnswer:
        """Answer matching requests ``seconds`` late (see `SlowAnswer`); ``times`` None: all."""
        if seconds < 0 or (times is not None and times < 1):
            raise ValueError("seconds must be >= 0 and times >= 1 (or None)")
        slow = SlowAnswer(method.upper(), "/" + path.lstrip("/"), float(seconds), times)
        with self._refusals_lock:
            self._slow.append(slow)
        return slow

    def _delay_for(self, method: str, path: str) -> float:
        with self._refusals_lock:
            for slow in self._slow:
                if slow.matches(method, path):
                    if slow.times is not None:
                        slow.times -= 1
                    return slow.seconds
        return 0.0

    def request(
        self, method: str, path: str, *, query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None, body: bytes = b"",
    ) -> ApiResponse:
        """A request made inside the local cloud, through the same routing, checks and proxy
        code as a client's; an unsigned request to an ``AWS_IAM`` method is 403 ``Missing
        Authentication Token``, as API Gateway answers it."""
        from werkzeug.test import EnvironBuilder

        builder = EnvironBuilder(path=path, method=method, query_string=dict(query or {}),
                                 headers=list((headers or {}).items()), data=body,
                                 base_url=self.base_url)
        try:
            request = builder.get_request()
        finally:
            builder.close()
        parts = _split(request.path)
        resolved = (self._resolve(parts[1:], request.method.upper())
                    if parts and parts[0] == self.api.stage else None)
        if (resolved is not None and self._auth_of(resolved[0]) == "AWS_IAM"
                and not _sigv4_access_key(request.headers.get("Authorization", ""))):
            return _missing_token()
        return self._dispatch(request)

    def _auth_of(self, route: RouteSpec) -> str | None:
        """The route's authoriser: its own, else the API's default (``NONE``: none)."""
        auth = route.auth or self.api.auth
        return None if auth in (None, "NONE") else auth

    # ------------------------------------------------------------------ WSGI
    def _wsgi(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        request = Request(environ)
        try:
            response = self._dispatch(request)
        except Exception:
            LOG.exception("API front failed on %s %s", request.method, request.path)
            response = _message(500, "Internal server error", "InternalServerErrorException")
        return response(environ, start_response)

    def _dispatch(self, request: Request) -> ApiResponse:
        path = request.path
        if path.startswith("/_local/"):
            return self._local(request)
        parts = _split(path)
        if not parts or parts[0] != self.api.stage:
            return _missing_token()
        return self._proxy(request, parts[1:])

    def _local(self, request: Request) -> ApiResponse:
        handler = self._admin.get((request.method.upper(), request.path))
        if handler is not None:
            data = request.get_data()
            try:
                body = json.loads(data or b"null")
            except ValueError:
                return _json(400, {"message": "the body is not JSON"})
            if not data and request.method.upper() == "GET" and request.args:
                body = request.args.to_dict()  # a GET endpoint's query (`/_local/events`)
            status, payload = handler(body)
            return _json(status, payload)
        if any(path == request.path for _, path in self._admin):
            return _json(405, {"message": "Method not allowed"})
        return _json(404, {"message": f"no local endpoint {request.path}"})

    def _resolve(self, parts: list[str], method: str) -> tuple[RouteSpec, dict[str, str]] | None:
        best_key: tuple[int, ...] | None = None
        candidates: list[tuple[RouteSpec, dict[str, str]]] = []
        for compiled in self._routes:
            matched = compiled.match(parts)
            if matched is None:
                continue
            key, params = matched
            if best_key is None or key < best_key:
                best_key, candidates = key, [(compiled.route, params)]
            elif key == best_key:
                candidates.append((compiled.route, params))
        # The most specific resource is chosen first; only then its method (no fallback).
        for wanted in (method, "ANY"):
            for route, params in candidates:
                if route.method == wanted:
                    return route, params
        return None

    def _proxy(self, request: Request, parts: list[str]) -> ApiResponse:
        resolved = self._resolve(parts, request.method.upper())
        if resolved is None:
            return _missing_token()
        route, params = resolved
        request_id = str(uuid.uuid4())
        function = self._lambdas.find(route.function_logical_id)
        refused = self._check(request, route, parts, function.invoked_arn)
        if refused is not None:
            return refused
        event = self._event(request, route, params, request_id)
        result = self._lambdas.invoke(function, event)
        if result.error:
            LOG.warning("%s %s: %s failed: %s", request.method, request.path,
                        function.logical_id, result.payload[:500])
            return _message(502, "Internal server error", "InternalServerErrorException",
                            request_id)
        response = _proxy_response(result.result, request_id)
        if response is None:
            LOG.warning("%s %s: %s returned a malformed proxy result: %s", request.method,
                        request.path, function.logical_id, result.payload[:500])
            return _message(502, "Internal server error", "InternalServerErrorException",
                            request_id)
        delay = self._delay_for(request.method, "/" + "/".join(parts))
        if delay:
            LOG.info("%s %s: answering %s s late (virtual)", request.method, request.path, delay)
            self._clock.sleep(delay)
            response.latency_seconds = delay
        return response

    def _check(self, request: Request, route: RouteSpec, parts: list[str],
               function_arn: str) -> ApiResponse | None:
        """API Gateway's IAM checks of the request (`hypd_local.apiaccess`): the response that
        refuses it, or None."""
        if self.access is None:
            return None
        auth = self._auth_of(route)
        method_arn = self.access.method_arn(request.method, "/".join(parts))
        caller = self.access.principal(_sigv4_access_key(request.headers.get("Authorization",
                                                                             "")))
        if auth == "AWS_IAM" and caller is not None:
            denial = self.access.invoke_denial(caller, method_arn)
            if denial is not None:
                self._refused(Refusal(403, denial, "AccessDeniedException", denial))
                response = _json(403, {"Message": denial})
                response.headers.set("x-amzn-ErrorType", "AccessDeniedException")
                return response
        refusal = self.access.integration_refusal(route, auth, function_arn, method_arn, caller)
        if refusal is None:
            return None
        self._refused(refusal)
        return _message(refusal.status, refusal.message, refusal.error_type)

    def _refused(self, refusal: Refusal) -> None:
        with self._refusals_lock:
            self.refusals.append(refusal)

    def _event(
        self, request: Request, route: RouteSpec, params: dict[str, str], request_id: str
    ) -> dict[str, Any]:
        multi_headers: dict[str, list[str]] = {}
        for name, value in request.headers.items():
            multi_headers.setdefault(name, []).append(value)
        multi_query = request.args.to_dict(flat=False)
        body, is_base64 = self._body(request)
        now = self._clock.now()
        resource_path = route.path
        return {
            "resource": resource_path,
            "path": request.path[len(self.api.stage) + 1:] or "/",
            "httpMethod": request.method.upper(),
            "headers": {k: v[-1] for k, v in multi_headers.items()} or None,
            "multiValueHeaders": multi_headers or None,
            "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
            "multiValueQueryStringParameters": multi_query or None,
            "pathParameters": params or None,
            "stageVariables": None,
            "requestContext": {
                "accountId": self._account_id,
                "apiId": self.api.api_id,
                "resourceId": resource_path,
                "resourcePath": resource_path,
                "httpMethod": request.method.upper(),
                "extendedRequestId": request_id,
                "requestId": request_id,
                "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
                "requestTimeEpoch": int(now.timestamp() * 1000),
                "path": request.path,
                "protocol": request.environ.get("SERVER_PROTOCOL", "HTTP/1.1"),
                "stage": self.api.stage,
                "domainName": request.host,
                "domainPrefix": request.host.split(".")[0],
                "identity": self._identity(request),
            },
            "body": body,
            "isBase64Encoded": is_base64,
        }

    def _body(self, request: Request) -> tuple[str | None, bool]:
        data = request.get_data()
        if not data:
            return None, False
        content_type = (request.mimetype or "").lower()
        binary = any(fnmatch.fnmatch(content_type, pattern.lower())
                     for pattern in self.api.binary_media_types)
        if not binary:
            try:
                return data.decode("utf-8"), False
            except UnicodeDecodeError:
                pass
        return base64.b64encode(data).decode(), True

    def _identity(self, request: Request) -> dict[str, Any]:
        identity: dict[str, Any] = {
            "cognitoIdentityPoolId": None,
            "cognitoIdentityId": None,
            "cognitoAuthenticationType": None,
            "cognitoAuthenticationProvider": None,
            "principalOrgId": None,
            "accountId": None,
            "caller": None,
            "user": None,
            "userArn": None,
            "accessKey": None,
            "sourceIp": request.remote_addr or "127.0.0.1",
            "userAgent": request.headers.get("User-Agent"),
        }
        access_key = _sigv4_access_key(request.headers.get("Authorization", ""))
        if access_key:
            user_id, arn, account = self._caller(access_key)
            identity.update(accessKey=access_key, caller=user_id, user=user_id, userArn=arn,
                            accountId=account)
        return identity

    def _caller(self, access_key: str) -> tuple[str, str, str]:
        """Who moto's STS says owns the access key (a made-up user for unknown keys)."""
        from moto.sts.models import sts_backends

        backend = sts_backends[self._account_id]["global"]
        user_id, arn, account = backend.get_caller_identity(access_key, self._region)
        return str(user_id), str(arn), str(account)


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        LOG.debug("%s %s %s", self.command, self.path, code)


def _sigv4_access_key(authorization: str) -> str | None:
    if not authorization.startswith("AWS4-HMAC-SHA256"):
        return None
    for part in authorization[len("AWS4-HMAC-SHA256"):].split(","):
        key, _, value = part.strip().partition("=")
        if key == "Credential" and value:
            return value.split("/", 1)[0] or None
    return None


def _proxy_response(result: Any, request_id: str) -> ApiResponse | None:
    """The HTTP response for a proxy result, or None when the result is malformed."""
    if not isinstance(result, dict) or "statusCode" not in result:
        return None
    try:
        status = int(result["statusCode"])
    except (TypeError, ValueError):
        return None
    if not 100 <= status <= 599:
        return None
    body = result.get("body")
    if body is not None and not isinstance(body, str):
        return None
    data = b""
    if body:
        data = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
    response = ApiResponse(data, status=status)
    response.headers.remove("Content-Type")
    for name, values in (result.get("multiValueHeaders") or {}).items():
        for value in values or []:
            response.headers.add(name, str(value))
    for name, value in (result.get("headers") or {}).items():
        response.headers.set(name, str(value))
    if "Content-Type" not in response.headers:
        response.headers.set("Content-Type", _JSON)
    response.headers.set("x-amzn-RequestId", request_id)
    return response


def _json(status: int, body: Any, request_id: str | None = None) -> ApiResponse:
    response = ApiResponse(json.dumps(body), status=status, content_type=_JSON)
    response.headers.set("x-amzn-RequestId", request_id or str(uuid.uuid4()))
    return response


def _message(
    status: int, message: str, error_type: str, request_id: str | None = None
) -> ApiResponse:
    response = _json(status, {"message": message}, request_id)
    response.headers.set("x-amzn-ErrorType", error_type)
    return response


def _missing_token() -> ApiResponse:
    return _message(403, "Missing Authentication Token", "MissingAuthenticationTokenException")
