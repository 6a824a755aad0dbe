"""The local cloud's own AWS requests served on the calling thread, without HTTP.

A create makes a few hundred AWS requests from the functions and the Step Functions
interpreter, all in this process. Over loopback HTTP each one costs a TCP connection (moto's
werkzeug server closes every connection), a server thread, the HTTP request and response
written and parsed on both sides, and a hand-over of the interpreter lock between the two
threads at every step; that was about a fifth of the process's CPU time with fifty creates at
once. So the requests made *by the cloud itself* go straight into the WSGI application the
moto server serves (the emulators' middleware in front of moto): the same request, signed by
botocore as before, becomes the WSGI environ the server would have built, and the
application's answer becomes the response botocore would have read from the socket. Nothing
between the signature and moto changes: the middleware finds the principal from the request's
access key and authorises it against the principal's policies (``hypd_local.iam``), runs the
services' own checks, injects faults and dispatches to the emulators or moto, exactly as for a
request that came over HTTP; a refusal is the same error response.

Which requests: those sent while a thread runs a function (`serving_in_process`, set by the
Lambda runtime around an import and an invocation) and those of the clients the Step Functions
interpreter uses (`serve_in_process(client)`), when they are addressed to the running cloud's
moto server. Everything else (tests' clients, ``cloud.client``, the CLIs, other processes)
still goes over HTTP.

The request is served as on a server thread of its own: the thread's per-request values (the
credentials it signs with, the timeline it waits on, the principal it acts as) are cleared
while it is served, and a fresh `contextvars` context is used, as a new thread starts with one.
"""

from __future__ import annotations

import contextvars
import importlib.metadata
import io
import logging
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote, urlsplit

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.endpoint import Endpoint
from urllib3 import HTTPHeaderDict, HTTPResponse
from werkzeug.exceptions import InternalServerError

from hypd_local.clock import bound
from hypd_local.credentials import signing_as
from hypd_local.iam.principals import acting_as
from hypd_local.threadvalue import set_for_block

LOG = logging.getLogger("hypd_local.transport")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_THREAD = threading.local()
_MARKED: weakref.WeakSet[Endpoint] = weakref.WeakSet()
_ORIGINAL_SEND = Endpoint._send
_INSTALL_LOCK = threading.Lock()
_installed = False
_active: InProcessTransport | None = None

# How moto's werkzeug server names itself (``SERVER_SOFTWARE``; the ``Server`` header adds
# the Python version, as http.server does).
_SERVER_SOFTWARE = f"Werkzeug/{importlib.metadata.version('werkzeug')}"
_SERVER_HEADER = f"{_SERVER_SOFTWARE} {BaseHTTPRequestHandler.sys_version}"


class InProcessTransport:
    """Serves botocore requests addressed to ``127.0.0.1:port`` or ``localhost:port`` with
    ``app``, on the calling thread."""

    def __init__(self, app: WsgiApp, port: int) -> None:
        self.app = app
        self.port = port
        self.netlocs = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})

    def serves(self, request: AWSPreparedRequest) -> bool:
        return urlsplit(request.url).netloc in self.netlocs

    def send(self, request: AWSPreparedRequest) -> AWSResponse:
        """The application's answer to ``request``, as botocore reads it from a socket."""
        environ = wsgi_environ(request, self.port)
        status = ""
        headers: list[tuple[str, str]] = []
        chunks: list[bytes] = []

        def start_response(line: str, response_headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Callable[[bytes], None]:
            nonlocal status, headers
            if exc_info and chunks:
                raise exc_info[1].with_traceback(exc_info[2])
            status, headers = line, list(response_headers)
            return chunks.append

        def serve() -> None:
            with _as_server_thread():
                try:
                    _run(self.app, environ, start_response, chunks)
                except Exception:
                    # As werkzeug's server: the traceback is logged, the client gets a 500.
                    LOG.exception("Error on request %s %s", request.method, request.url)
                    chunks.clear()
                    _run(InternalServerError(), environ, start_response, chunks)

        # A new thread starts with an empty context (Flask's request context, the handlers'
        # context variables): so does the request.
        contextvars.Context().run(serve)
        return _response(request, status, headers, b"".join(chunks))


def _run(app: WsgiApp, environ: dict[str, Any], start_response: Callable[..., Any],
         chunks: list[bytes]) -> None:
    body = app(environ, start_response)
    try:
        chunks.extend(body)
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()


def wsgi_environ(request: AWSPreparedRequest, port: int) -> dict[str, Any]:
    """The environ werkzeug's server builds for ``request`` received on 127.0.0.1:``port``
    from urllib3 (``werkzeug.serving.WSGIRequestHandler.make_environ``)."""
    url = urlsplit(request.url)
    target = url.path + (f"?{url.query}" if url.query else "")
    body = _body_bytes(request.body)
    environ: dict[str, Any] = {
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "SERVER_SOFTWARE": _SERVER_SOFTWARE,
        "REQUEST_METHOD": request.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": _latin1(unquote(url.path)),
        "QUERY_STRING": _latin1(url.query),
        "REQUEST_URI": _latin1(target),
        "RAW_URI": _latin1(target),
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": 0,
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": str(port),
        "SERVER_PROTOCOL": "HTTP/1.1",
    }
    for key, value in _sent_headers(request, url.netloc, body):
        if "_" in key:  # werkzeug drops them (they could pass for another header)
            continue
        name = key.upper().replace("-", "_")
        if name not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            name = f"HTTP_{name}"
            if name in environ:
                value = f"{environ[name]},{value}"
        environ[name] = value.replace("\r\n", "")
    return environ


def _sent_headers(request: AWSPreparedRequest, netloc: str, body: bytes
                  ) -> list[tuple[str, str]]:
    """The headers on the wire: botocore's, and what http.client adds (Host,
    Accept-Encoding, a Content-Length for a body-carrying method without one)."""
    headers = [(str(k), v.decode("latin-1") if isinstance(v, bytes) else str(v))
               for k, v in request.headers.items()]
    names = {k.lower() for k, _ in headers}
    added = [("Host", netloc)] if "host" not in names else []
    if "accept-encoding" not in names:
        added.append(("Accept-Encoding", "identity"))
    if "content-length" not in names and "transfer-encoding" not in names and (
            body or request.method.upper() in ("POST", "PUT", "PATCH")):
        headers.append(("Content-Length", str(len(body))))
    return added + headers


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    if hasattr(body, "read"):
        data = body.read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return b"".join(part.encode("utf-8") if isinstance(part, str) else bytes(part)
                    for part in body)


def _latin1(text: str) -> str:
    return text.encode().decode("latin1")


def _response(request: AWSPreparedRequest, status: str, headers: list[tuple[str, str]],
              body: bytes) -> AWSResponse:
    """What botocore's HTTP session makes of the server's answer (the headers werkzeug's
    server adds included)."""
    code = int(status.split(None, 1)[0])
    bodiless = request.method == "HEAD" or code in (204, 304) or 100 <= code < 200
    received = HTTPHeaderDict()
    received.add("Server", _SERVER_HEADER)
    received.add("Date", formatdate(usegmt=True))
    for key, value in headers:
        received.add(key, value)
    if "content-length" not in received and not bodiless:
        received.add("Transfer-Encoding", "chunked")
    received.add("Connection", "close")
    if bodiless:
        body = b""  # http.client reads no body for these, whatever the server wrote
    raw = HTTPResponse(body=io.BytesIO(body), headers=received, status=code,
                       reason=status.split(None, 1)[1] if " " in status else "",
                       preload_content=False, decode_content=False,
                       request_method=request.method, request_url=request.url)
    response = AWSResponse(request.url, code, received, raw)
    if not request.stream_output:
        response.content  # noqa: B018 - read at once, as botocore's HTTP session does
    return response


@contextmanager
def _as_server_thread() -> Iterator[None]:
    """The calling thread's per-request values as on a server thread of its own: no signing
    override, no timeline, no principal, not serving in process itself."""
    with signing_as(None), bound(None), acting_as(None), \
            set_for_block(_THREAD, "serving", False):
        yield


# ------------------------------------------------------------------ routing
@contextmanager
def serving_in_process() -> Iterator[None]:
    """Serve the AWS requests the calling thread sends to the running cloud in process until
    the block ends (a function's import or invocation)."""
    with set_for_block(_THREAD, "serving", True):
        yield


def serve_in_process(client: Any) -> None:
    """Serve every request of ``client`` (a boto3 client of the local cloud's own, such as the
    Step Functions interpreter's) to the running cloud in process."""
    _MARKED.add(client._endpoint)


def _send(endpoint: Endpoint, request: AWSPreparedRequest) -> AWSResponse:
    transport = _active
    if transport is not None and (getattr(_THREAD, "serving", False) or endpoint in _MARKED) \
            and transport.serves(request):
        return transport.send(request)
    return _ORIGINAL_SEND(endpoint, request)


def install() -> None:
    """Route botocore's requests through `_send` (once per process; with no cloud running
    every request goes over HTTP as before)."""
    global _installed
    with _INSTALL_LOCK:
        if not _installed:
            Endpoint._send = _send
            _installed = True


def activate(transport: InProcessTransport | None) -> None:
    """The running cloud's transport (None: none runs)."""
    global _active
    _active = transport
