"""A WSGI middleware in front of moto: emulated operations go to the emulators, the rest to moto.

For each request it finds the service (json services such as SageMaker: ``X-Amz-Target:
<targetPrefix>.<Op>``; every other protocol: the SigV4 credential scope
``.../<region>/<signing name>/aws4_request`` in the ``Authorization`` header or
``X-Amz-Credential`` query parameter, else the Host ``<endpointPrefix>.<region>.amazonaws.com``;
SageMaker Runtime signs as ``sagemaker`` too: a ``sagemaker`` request without a target is
SageMaker Runtime's, rest-json ``POST /endpoints/{EndpointName}/invocations``)
and the operation (the protocol layer: the target, the method and path for rest-json / rest-xml,
``Action=`` in the query string or form body for query / ec2). Then:

1. an injected fault for (service, operation) answers with its error in the protocol's format,
   whether or not the operation is emulated;
2. if ``emulators[service]`` has a method named after the operation in snake_case
   (``create_cluster``), the request is parsed, validated against the model, passed to the method
   as a dict and its result serialised; ``AwsError`` becomes the protocol's error response, any
   other exception a 500 ``InternalFailure`` (logged with its traceback);
3. otherwise the request goes to moto unchanged (the body is replayed if it was read).

A query / ec2 request's body is read (to find ``Action=``) only while a fault is pending for its
service, or when the request must be authorised; then it is put back byte for byte for moto.

With an ``enforcer`` (``hypd_local.iam.enforce``), before faults and dispatch:

0. a request signed by a principal the local cloud issued (a function's role, a state
   machine's...) is authorised as IAM would (a denial is the service's AccessDenied error); a
   request of such a principal to a service this middleware does not know is refused, so that
   nothing passes unauthorised; the services' own checks of the roles a request hands them and
   of service-linked roles run for every caller.
"""

from __future__ import annotations

import functools
import io
import json
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
from hypd_local.iam.enforce import Enforcer, denial_error

LOG = logging.getLogger("hypd_local.emulator")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/]+)/([^/]+)/aws4_request")
_QUERY_SCOPE = re.compile(r"^[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request$")

# The services the control plane calls (faults can be injected into each of them, and their
# requests are authorised).
DEFAULT_SERVICES = ("sagemaker", "sagemaker-runtime", "eks", "cloudformation", "ec2", "s3", "sts",
                    "iam", "dynamodb", "stepfunctions", "fsx", "lambda", "sns", "sqs", "events",
                    "logs", "amp")
# Services whose own checks (roles handed to them, service-linked roles) the enforcer runs.
_CHECKED_SERVICES = frozenset({"eks", "sagemaker", "fsx", "cloudformation"})


@functools.cache
def _default_protocol(service: str) -> Protocol:
    """The protocol of ``service`` from botocore's default models (built once per process)."""
    return protocol_for(botocore.session.get_session().get_service_model(service))


class Emulators:
    """The emulators of one service, each answering its own operations (SageMaker: HyperPod's
    and the inference operator's endpoints)."""

    def __init__(self, *parts: object) -> None:
        self.parts = parts

    def __getattr__(self, name: str) -> Any:
        for part in self.parts:
            found = getattr(part, name, None)
            if callable(found):
                return found
        raise AttributeError(name)


class EmulatorMiddleware:
    """WSGI app: ``EmulatorMiddleware(moto_app, emulators={"sagemaker": hp, "eks": eks}, ...)``.

    ``services`` are the botocore service names whose requests are recognised (for faults and
    dispatch): by default ``DEFAULT_SERVICES`` and every key of ``emulators``. Services of every
    protocol can be faulted; only ``json`` and ``rest-json`` ones can be emulated.
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
        after_dispatch: Callable[[], None] | None = None,
        enforcer: Enforcer | None = None,
    ) -> None:
        self.app = app
        self.enforcer = enforcer
        self.after_dispatch = after_dispatch
        self.emulators = dict(emulators)
        self.faults = faults if faults is not None else Faults()
        self.region = region
        self.account_id = account_id
        names = list(services if services is not None else DEFAULT_SERVICES)
        names += [n for n in self.emulators if n not in names]
        self.protocols: dict[str, Protocol] = {}
        self._by_target: dict[str, str] = {}
        self._by_signing: dict[str, str] = {}
        self._by_prefix: dict[str, str] = {}
        for name in names:
            protocol = (protocol_for(session.get_service_model(name)) if session is not None
                        else _default_protocol(name))
            if name in self.emulators and not protocol.dispatchable:
                raise ValueError(f"{name} ({protocol.name} protocol) cannot be emulated, only "
                                 "faulted")
            self.protocols[name] = protocol
            model = protocol.model
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
        service = self.service_of(request)
        principal = self.enforcer.principal_of(request) if self.enforcer is not None else None
        if service is None:
            if principal is not None:
                return _respond(start_response, _unknown_service(request, principal.caller_arn))
            return self.app(environ, start_response)
        protocol = self.protocols[service]
        emulator = self.emulators.get(service)
        checked = self.enforcer is not None and (principal is not None
                                                 or service in _CHECKED_SERVICES)
        if protocol.reads_body or checked:
            if emulator is None and not self.faults.has(service) and not checked:
                return self.app(environ, start_response)
            request.body = _read_body(environ)
        operation = protocol.identify(request)
        if operation is None:
            return self.app(environ, start_response)
        if checked:
            refused = self._authorize(service, operation, request, principal)
            if refused is not None:
                return _respond(start_response, refused)
        fault = self.faults.error_for(protocol.model, operation)
        method = getattr(emulator, xform_name(operation), None) if emulator is not None else None
        if fault is None and not callable(method):
            if self.enforcer is not None and principal is not None:
                # moto's services act for the caller (CloudFormation without a stack role)
                with self.enforcer.acting(principal):
                    return self.app(environ, start_response)
            return self.app(environ, start_response)
        if not protocol.reads_body:
            request.body = _read_body(environ)
        if fault is not None:
            LOG.info("fault injected: %s %s -> %s", service, operation, fault.code)
            response = protocol.serialize_error(fault)
            if request.method == "HEAD":  # no body: botocore takes the code from the status
                response.body = b""
            return _respond(start_response, response)
        assert method is not None
        try:
            if self.enforcer is not None:
                with self.enforcer.acting(principal):
                    response = self.dispatch(service, operation, request, method)
            else:
                response = self.dispatch(service, operation, request, method)
        finally:
            if self.after_dispatch is not None:
                self.after_dispatch()
        return _respond(start_response, response)

    def _authorize(self, service: str, operation: str, request: HttpRequest,
                   principal: Any) -> HttpResponse | None:
        """The response refusing the request (IAM's denial or the service's own check), or
        None when it may go on."""
        assert self.enforcer is not None
        protocol = self.protocols[service]
        try:
            params = protocol.parse(request, operation)
        except AwsError as error:  # malformed: the service answers it
            LOG.debug("%s %s not parsed for authorisation: %s", service, operation, error)
            return None
        try:
            if principal is not None:
                denial = self.enforcer.authorize(principal, service,
                                                 str(protocol.model.signing_name), operation,
                                                 params)
                if denial is not None:
                    LOG.info("denied: %s", denial.message)
                    return self._error(protocol, request,
                                       denial_error(service, protocol.name, denial))
            self.enforcer.before(service, operation, params, principal)
        except AwsError as error:
            return self._error(protocol, request, error)
        except LookupError as exc:  # Unresolvable / UnknownAction: refused, loudly
            LOG.error("not authorised (%s %s): %s", service, operation, exc)
            return self._error(protocol, request, AwsError(
                str(exc), code=_DENIAL_CODE.get(protocol.name, "AccessDenied"), status=403))
        return None

    @staticmethod
    def _error(protocol: Protocol, request: HttpRequest, error: AwsError) -> HttpResponse:
        response = protocol.serialize_error(error)
        if request.method == "HEAD":  # no body: botocore takes the code from the status
            response.body = b""
        return response

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


_DENIAL_CODE = {"json": "AccessDeniedException", "rest-json": "AccessDeniedException",
                "ec2": "UnauthorizedOperation"}


def _unknown_service(request: HttpRequest, caller_arn: str) -> HttpResponse:
    scope = _SCOPE.search(request.headers.get("authorization", ""))
    name = scope.group(2) if scope else "an unknown service"
    body = json.dumps({"__type": "AccessDeniedException", "message": (
        f"User: {caller_arn} is not authorized: the local cloud does not authorise requests "
        f"to {name} (add the service to hypd_local.emulator.middleware.DEFAULT_SERVICES)")})
    return HttpResponse(403, [("Content-Type", "application/x-amz-json-1.1")], body.encode())


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
    if body or environ.get("CONTENT_LENGTH"):
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
