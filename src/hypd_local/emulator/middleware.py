"""A WSGI middleware in front of moto: emulated operations go to the emulators, the rest to moto.

For each request it finds the service (SageMaker: ``X-Amz-Target: SageMaker.<Op>``; rest-json
services such as EKS: the SigV4 credential scope ``.../<region>/<signing name>/aws4_request`` in
the ``Authorization`` header or ``X-Amz-Credential`` query parameter, else the Host
``<endpointPrefix>.<region>.amazonaws.com``) and the operation (the protocol layer). Then:

1. an injected fault for (service, operation) answers with its error, whether or not the
   operation is emulated;
2. if ``emulators[service]`` has a method named after the operation in snake_case
   (``create_cluster``), the request is parsed, validated against the model, passed to the method
   as a dict and its result serialised; ``AwsError`` becomes the protocol's error response, any
   other exception a 500 ``InternalFailure`` (logged with its traceback);
3. otherwise the request goes to moto unchanged (the body is replayed if it was read).
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any

import botocore.session
from botocore import xform_name

from hypd_local.emulator.errors import AwsError
from hypd_local.emulator.faults import Faults
from hypd_local.emulator.protocol import (
    HttpRequest,
    HttpResponse,
    Protocol,
    header_items,
    new_request_id,
    protocol_for,
)
from hypd_local.emulator.validation import validate

LOG = logging.getLogger("hypd_local.emulator")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/]+)/([^/]+)/aws4_request")
_QUERY_SCOPE = re.compile(r"^[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request$")

DEFAULT_SERVICES = ("sagemaker", "eks")


class EmulatorMiddleware:
    """WSGI app: ``EmulatorMiddleware(moto_app, emulators={"sagemaker": hp, "eks": eks}, ...)``.

    ``services`` are the botocore service names whose requests are recognised (for faults and
    dispatch): by default SageMaker, EKS and every key of ``emulators``; only ``json`` and
    ``rest-json`` services are supported.
    """

    def __init__(
        self,
        app: WsgiApp,
        *,
        emulators: Mapping[str, object],
        faults: Faults | None = None,
        region: str,
        account_id: str,
        services: Iterable[str] | None = None,
        session: Any = None,
    ) -> None:
        self.app = app
        self.emulators = dict(emulators)
        self.faults = faults if faults is not None else Faults()
        self.region = region
        self.account_id = account_id
        session = session or botocore.session.get_session()
        names = list(services if services is not None else DEFAULT_SERVICES)
        names += [n for n in self.emulators if n not in names]
        self.protocols: dict[str, Protocol] = {}
        self._by_target: dict[str, str] = {}
        self._by_signing: dict[str, str] = {}
        self._by_prefix: dict[str, str] = {}
        for name in names:
            model = session.get_service_model(name)
            self.protocols[name] = protocol_for(model)
            if model.protocol == "json":
                self._by_target[str(model.metadata["targetPrefix"])] = name
            else:
                self._by_signing.setdefault(str(model.signing_name), name)
                self._by_prefix.setdefault(str(model.metadata.get("endpointPrefix", name)), name)

    # --- routing -------------------------------------------------------------------------------

    def service_of(self, request: HttpRequest) -> str | None:
        """The recognised service this request is for, or None."""
        target = request.headers.get("x-amz-target")
        if target:
            return self._by_target.get(target.rpartition(".")[0])
        scope = _SCOPE.search(request.headers.get("authorization", ""))
        if scope is None:
            for key, value in request.query:
                if key == "X-Amz-Credential":
                    scope = _QUERY_SCOPE.match(value)
        if scope is not None:
            return self._by_signing.get(scope.group(2))
        host = request.headers.get("host", "").split(":")[0]
        prefix = host.split(".")[0] if host.endswith(".amazonaws.com") else ""
        return self._by_prefix.get(prefix)

    def route(self, request: HttpRequest) -> tuple[str, str] | None:
        """``(service, operation)`` for a recognised request, else None."""
        service = self.service_of(request)
        if service is None:
            return None
        operation = self.protocols[service].identify(request)
        return (service, operation) if operation else None

    # --- WSGI --------------------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        request = HttpRequest.from_environ(environ)
        routed = self.route(request)
        if routed is None:
            return self.app(environ, start_response)
        service, operation = routed
        protocol = self.protocols[service]
        fault = self.faults.error_for(protocol.model, operation)
        emulator = self.emulators.get(service)
        method = getattr(emulator, xform_name(operation), None) if emulator is not None else None
        if fault is None and not callable(method):
            return self.app(environ, start_response)
        request.body = _read_body(environ)
        if fault is not None:
            LOG.info("fault injected: %s %s -> %s", service, operation, fault.code)
            return _respond(start_response, protocol.serialize_error(fault))
        assert method is not None
        return _respond(start_response, self.dispatch(service, operation, request, method))

    def dispatch(self, service: str, operation: str, request: HttpRequest,
                 method: Callable[[dict[str, Any]], Any]) -> HttpResponse:
        """Parse, validate, call the emulator's ``method`` and serialise its answer."""
        protocol = self.protocols[service]
        request_id = new_request_id()
        try:
            params = protocol.parse(request, operation)
            validate(protocol.model, operation, params)
            output = method(params)
            return protocol.serialize(operation, output, request_id)
        except AwsError as error:
            LOG.debug("%s %s -> %s: %s", service, operation, error.code, error.message)
            return protocol.serialize_error(error, request_id)
        except Exception:
            LOG.exception("emulator %s failed on %s (request %s)", service, operation, request_id)
            return protocol.serialize_error(
                AwsError("An internal error occurred.", code="InternalFailure", status=500),
                request_id,
            )


def _read_body(environ: dict[str, Any]) -> bytes:
    """Read the request body and put a replayable copy back into the environ."""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    stream = environ.get("wsgi.input")
    body = b""
    if stream is not None:
        if length > 0:
            body = stream.read(length)
        elif environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked" or environ.get(
            "wsgi.input_terminated"
        ):
            body = stream.read()
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return bytes(body)


def _respond(start_response: Callable[..., Any], response: HttpResponse) -> list[bytes]:
    try:
        reason = HTTPStatus(response.status).phrase
    except ValueError:
        reason = "Unknown"
    headers = [h for h in response.headers if h[0].lower() != "content-length"]
    headers.append(("Content-Length", str(len(response.body))))
    start_response(f"{response.status} {reason}", header_items(headers))
    return [response.body]
