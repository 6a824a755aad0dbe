"""The local cloud's own requests to its servers, served on the calling thread without HTTP.

A create makes a few hundred AWS requests from the functions and the Step Functions
interpreter, and a few dozen Kubernetes requests from the functions, all to servers in this
process. Over loopback each one cost a connection (werkzeug's servers close every connection:
a TLS handshake each for a cluster's Kubernetes API), a server thread, the request and response
written and parsed on both sides, and hand-overs of the interpreter lock between the two
threads at every step; that was about a fifth of the process's CPU time with fifty creates at
once, and the functions, one invocation at a time each, waited on it. So the requests the
cloud makes *itself* go straight into the WSGI application of the server they are addressed to
(the AWS endpoint: the emulators' middleware in front of moto; a cluster's Kubernetes API):
the same request, signed as before, becomes the WSGI environ werkzeug's server would have
built, and the application's answer becomes the response the client would have read from the
socket. Nothing between the request and the application changes: for AWS the middleware finds
the principal from the request's access key and authorises it against the principal's
policies (``hypd_local.iam``), runs the services' own checks, injects faults and dispatches to
the emulators or moto, exactly as for a request that came over HTTP, and a refusal is the same
error response; a Kubernetes API authenticates the request's bearer token as it does over TLS.

Which requests: those sent while a thread runs a function (`serving_in_process`, set by the
Lambda runtime around an import and an invocation), with botocore or urllib3 (the Kubernetes
client), and those of the clients the Step Functions interpreter uses
(`serve_in_process(client)`), when they are addressed to a server of the running cloud
(`serve`). Everything else (tests' clients, ``cloud.client``, kubectl, the CLIs, other
processes) still goes over the network, and so do streamed answers (a watch, followed logs).

TLS is not skipped where it decides anything: a request to a server behind TLS is served in
process only once the client's own TLS settings (urllib3's: verification on or off, the CA
files or data it trusts, the host name it checks) would have completed the handshake with that
server's certificate. That is an in-memory handshake (`ssl.MemoryBIO`) between a client
context built as urllib3 builds it and the server's own context, once per distinct setting;
a client that would have been refused (a wrong or missing CA, a name the certificate does not
carry) gets the error urllib3 raises for a failed handshake, as over the network.

The request is served as on a server thread of its own: the thread's per-request values (the
credentials it signs with, the timeline it waits on, the principal it acts as) are cleared
while it is served, and a fresh `contextvars` context is used, as a new thread starts with one.
"""

from __future__ import annotations

import contextvars
import hashlib
import importlib.metadata
import io
import logging
import ssl
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.endpoint import Endpoint
from urllib3 import HTTPHeaderDict, HTTPResponse, PoolManager
from urllib3.connection import _get_default_user_agent
from urllib3.exceptions import MaxRetryError, SSLError
from urllib3.util.ssl_ import create_urllib3_context, resolve_cert_reqs
from werkzeug.exceptions import InternalServerError

from hypd_local.clock import bound
from hypd_local.credentials import signing_as
from hypd_local.iam.principals import acting_as
from hypd_local.threadvalue import set_for_block

LOG = logging.getLogger("hypd_local.transport")

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_THREAD = threading.local()
_MARKED: weakref.WeakSet[Endpoint] = weakref.WeakSet()
_SERVED: dict[str, InProcessTransport] = {}
"""netloc (``127.0.0.1:4566``) -> the transport serving it (read without a lock: a dict
lookup is atomic)."""
_SERVED_LOCK = threading.Lock()
_ORIGINAL_SEND = Endpoint._send
_ORIGINAL_URLOPEN = PoolManager.urlopen
_INSTALL_LOCK = threading.Lock()
_installed = False

# How werkzeug's server names itself (``SERVER_SOFTWARE``; the ``Server`` header adds the
# Python version, as http.server does).
_SERVER_SOFTWARE = f"Werkzeug/{importlib.metadata.version('werkzeug')}"
_SERVER_HEADER = f"{_SERVER_SOFTWARE} {BaseHTTPRequestHandler.sys_version}"

# What http.client sends a Content-Length for when there is no body (urllib3 does the same).
_METHODS_EXPECTING_BODY = frozenset({"PATCH", "POST", "PUT"})

# Query parameters that make a Kubernetes answer a stream with no end (left to the network).
_STREAMING = (("watch", "true"), ("watch", "1"), ("follow", "true"), ("follow", "1"))


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    headers: HTTPHeaderDict
    body: bytes


class InProcessTransport:
    """Serves requests addressed to ``host:port`` (and each alias of ``host``) with ``app``,
    on the calling thread, as werkzeug's server on that address would (``scheme`` https for a
    server behind TLS)."""

    def __init__(self, app: WsgiApp, host: str, port: int, *, scheme: str = "http",
                 aliases: Iterable[str] = (), server_tls: ssl.SSLContext | None = None
                 ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.scheme = scheme
        self.netlocs = frozenset(f"{name}:{port}" for name in (host, *aliases))
        self.server_tls = server_tls
        """The server's TLS context (``https``): a client's settings are checked against it."""
        self._handshakes: dict[tuple[Any, ...], str | None] = {}
        self._handshakes_lock = threading.Lock()

    def check_tls(self, manager: PoolManager, host: str) -> str | None:
        """Why a TLS handshake with this server would fail under ``manager``'s settings (None:
        it would succeed, or the server has no TLS). Decided once per distinct setting."""
        if self.server_tls is None:
            return None
        settings = manager.connection_pool_kw
        ca_file = settings.get("ca_certs")
        key = (host, settings.get("cert_reqs"), ca_file, _digest(ca_file),
               settings.get("ca_cert_dir"), settings.get("ca_cert_data"),
               settings.get("assert_hostname"), settings.get("server_hostname"))
        with self._handshakes_lock:
            if key in self._handshakes:
                return self._handshakes[key]
        failure = _handshake(self.server_tls, settings, host)
        with self._handshakes_lock:
            self._handshakes[key] = failure
        return failure

    def respond(self, method: str, url: str, headers: Iterable[tuple[str, Any]],
                body: bytes) -> Answer:
        """The application's answer to a request, as the client reads it from the socket."""
        environ = wsgi_environ(self, method, url, headers, body)
        status = ""
        received: list[tuple[str, str]] = []
        chunks: list[bytes] = []

        def start_response(line: str, response_headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Callable[[bytes], None]:
            nonlocal status, received
            if exc_info and chunks:
                raise exc_info[1].with_traceback(exc_info[2])
            status, received = line, list(response_headers)
            return chunks.append

        def serve() -> None:
            with _as_server_thread():
                try:
                    _run(self.app, environ, start_response, chunks)
                except Exception:
                    # As werkzeug's server: the traceback is logged, the client gets a 500.
                    LOG.exception("Error on request %s %s", method, url)
                    chunks.clear()
                    _run(InternalServerError(), environ, start_response, chunks)

        # A new thread starts with an empty context (Flask's request context, the handlers'
        # context variables): so does the request.
        contextvars.Context().run(serve)
        return _answer(method, status, received, b"".join(chunks))

    def send(self, request: AWSPreparedRequest) -> AWSResponse:
        """botocore's request answered (``Endpoint._send``)."""
        answer = self.respond(request.method, request.url, request.headers.items(),
                              _body_bytes(request.body))
        raw = _raw(answer, request.method, request.url)
        response = AWSResponse(request.url, answer.status, answer.headers, raw)
        if not request.stream_output:
            response.content  # noqa: B018 - read at once, as botocore's HTTP session does
        return response

    def urlopen(self, method: str, url: str, headers: Mapping[str, Any] | None,
                body: Any, preload_content: bool) -> HTTPResponse:
        """urllib3's request answered (``PoolManager.urlopen``)."""
        answer = self.respond(method, url, (headers or {}).items(), _body_bytes(body))
        raw = _raw(answer, method, url)
        if preload_content:
            raw.data  # noqa: B018 - read at once, as urllib3 does when asked to preload
        return raw


def _run(app: WsgiApp, environ: dict[str, Any], start_response: Callable[..., Any],
         chunks: list[bytes]) -> None:
    body = app(environ, start_response)
    try:
        chunks.extend(body)
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()


def wsgi_environ(transport: InProcessTransport, method: str, url: str,
                 headers: Iterable[tuple[str, Any]], body: bytes) -> dict[str, Any]:
    """The environ werkzeug's server on the transport's address builds for this request sent
    by urllib3 (``werkzeug.serving.WSGIRequestHandler.make_environ``)."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    environ: dict[str, Any] = {
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": transport.scheme,
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "SERVER_SOFTWARE": _SERVER_SOFTWARE,
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": _latin1(unquote(parts.path)),
        "QUERY_STRING": _latin1(parts.query),
        "REQUEST_URI": _latin1(target),
        "RAW_URI": _latin1(target),
        "REMOTE_ADDR": "127.0.0.1",
        "REMOTE_PORT": 0,
        "SERVER_NAME": transport.host,
        "SERVER_PORT": str(transport.port),
        "SERVER_PROTOCOL": "HTTP/1.1",
    }
    for key, value in _sent_headers(method, parts.netloc, headers, body):
        if "_" in key:  # werkzeug drops them (they could pass for another header)
            continue
        name = key.upper().replace("-", "_")
        if name not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            name = f"HTTP_{name}"
            if name in environ:
                value = f"{environ[name]},{value}"
        environ[name] = value.replace("\r\n", "")
    return environ


def _sent_headers(method: str, netloc: str, headers: Iterable[tuple[str, Any]], body: bytes
                  ) -> list[tuple[str, str]]:
    """The headers on the wire: the client's, and what urllib3 and http.client add (Host,
    Accept-Encoding, User-Agent, a Content-Length for a body or a method expecting one)."""
    sent = [(str(k), v.decode("latin-1") if isinstance(v, bytes) else str(v))
            for k, v in headers]
    names = {k.lower() for k, _ in sent}
    added = [("Host", netloc)] if "host" not in names else []
    if "accept-encoding" not in names:
        added.append(("Accept-Encoding", "identity"))
    if "user-agent" not in names:
        sent.append(("User-Agent", _get_default_user_agent()))
    if "content-length" not in names and "transfer-encoding" not in names and (
            body or method.upper() in _METHODS_EXPECTING_BODY):
        sent.append(("Content-Length", str(len(body))))
    return added + sent


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


def _digest(path: str | None) -> str | None:
    """The CA file's contents, as a digest (a file rewritten under one name is another CA)."""
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _handshake(server: ssl.SSLContext, settings: Mapping[str, Any], host: str) -> str | None:
    """Complete a TLS handshake in memory between the server's context and a client context
    made from urllib3's pool settings as ``urllib3.util.ssl_.ssl_wrap_socket`` makes it; the
    error text when it fails, else None."""
    try:
        cert_reqs = resolve_cert_reqs(settings.get("cert_reqs"))
        client = create_urllib3_context(cert_reqs=cert_reqs)
        ca_file, ca_dir, ca_data = (settings.get("ca_certs"), settings.get("ca_cert_dir"),
                                    settings.get("ca_cert_data"))
        if ca_file or ca_dir or ca_data:
            client.load_verify_locations(ca_file, ca_dir, ca_data)
        elif cert_reqs != ssl.CERT_NONE:
            client.load_default_certs()
        # urllib3 matches the name itself (assert_hostname False turns that off); ssl's own
        # matching gives the same verdict for a DNS name or an IP address in the certificate.
        client.check_hostname = (cert_reqs != ssl.CERT_NONE
                                 and settings.get("assert_hostname") is not False)
        name = settings.get("server_hostname") or host
    except (OSError, ssl.SSLError, ValueError) as exc:  # an unreadable CA file, bad settings
        return str(exc)
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    client_end = client.wrap_bio(to_client, to_server, server_hostname=name)
    server_end = server.wrap_bio(to_server, to_client, server_side=True)
    client_done = server_done = False
    for _ in range(10):  # TLS 1.3 completes in two round trips, TLS 1.2 in three
        try:
            if not client_done:
                client_end.do_handshake()
                client_done = True
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLError as exc:
            return str(exc)
        try:
            if not server_done:
                server_end.do_handshake()
                server_done = True
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLError:
            pass  # the client's side says why (an alert it sent or would send)
        if client_done and server_done:
            return None
    return "the TLS handshake did not complete"


def _answer(method: str, status: str, headers: list[tuple[str, str]], body: bytes) -> Answer:
    """What the client reads: the headers werkzeug's server adds included."""
    code_text, _, reason = status.partition(" ")
    code = int(code_text)
    bodiless = method == "HEAD" or code in (204, 304) or 100 <= code < 200
    received = HTTPHeaderDict()
    received.add("Server", _SERVER_HEADER)
    received.add("Date", formatdate(usegmt=True))
    for key, value in headers:
        received.add(key, value)
    if "content-length" not in received and not bodiless:
        received.add("Transfer-Encoding", "chunked")
    received.add("Connection", "close")
    # http.client reads no body for these, whatever the server wrote
    return Answer(code, reason, received, b"" if bodiless else body)


def _raw(answer: Answer, method: str, url: str) -> HTTPResponse:
    """The answer as urllib3's response, unread (its body is streamed as from a socket)."""
    return HTTPResponse(body=io.BytesIO(answer.body), headers=answer.headers,
                        status=answer.status, reason=answer.reason, preload_content=False,
                        decode_content=False, request_method=method, request_url=url)


@contextmanager
def _as_server_thread() -> Iterator[None]:
    """The calling thread's per-request values as on a server thread of its own: no signing
    override, no timeline, no principal, not serving in process itself."""
    with signing_as(None), bound(None), acting_as(None), \
            set_for_block(_THREAD, "serving", False):
        yield


# ------------------------------------------------------------------ routing
def serve(transport: InProcessTransport) -> None:
    """Serve the requests addressed to the transport's server in process from now on."""
    install()
    with _SERVED_LOCK:
        for netloc in transport.netlocs:
            _SERVED[netloc] = transport


def stop_serving(transport: InProcessTransport) -> None:
    """Its server stops: requests to it go over the network again (and fail there)."""
    with _SERVED_LOCK:
        for netloc in transport.netlocs:
            if _SERVED.get(netloc) is transport:
                del _SERVED[netloc]


@contextmanager
def serving_in_process() -> Iterator[None]:
    """Serve the requests the calling thread sends to the running cloud's servers in process
    until the block ends (a function's import or invocation)."""
    with set_for_block(_THREAD, "serving", True):
        yield


def serve_in_process(client: Any) -> None:
    """Serve every request of ``client`` (a boto3 client of the local cloud's own, such as the
    Step Functions interpreter's) to the running cloud in process."""
    _MARKED.add(client._endpoint)


def _serving() -> bool:
    return bool(getattr(_THREAD, "serving", False))


def _send(endpoint: Endpoint, request: AWSPreparedRequest) -> AWSResponse:
    if _SERVED and (_serving() or endpoint in _MARKED):
        transport = _SERVED.get(urlsplit(request.url).netloc)
        if transport is not None:
            return transport.send(request)
    return _ORIGINAL_SEND(endpoint, request)


def _urlopen(manager: PoolManager, method: str, url: str, redirect: bool = True,
             **kw: Any) -> Any:
    if _SERVED and _serving():
        parts = urlsplit(url)
        transport = _SERVED.get(parts.netloc)
        if transport is not None and not any(
                pair in _STREAMING for pair in parse_qsl(parts.query)):
            refused = transport.check_tls(manager, parts.hostname or transport.host)
            if refused is not None:
                # What urllib3 raises once its retries of a failed handshake are spent.
                raise MaxRetryError(None, url, SSLError(refused))  # type: ignore[arg-type]
            headers = kw.get("headers")
            return transport.urlopen(method, url, manager.headers if headers is None else headers,
                                     kw.get("body"), kw.get("preload_content", True))
    return _ORIGINAL_URLOPEN(manager, method, url, redirect, **kw)


def install() -> None:
    """Route botocore's and urllib3's requests through `_send` and `_urlopen` (once per
    process; with nothing served every request goes over the network as before)."""
    global _installed
    with _INSTALL_LOCK:
        if not _installed:
            Endpoint._send = _send
            PoolManager.urlopen = _urlopen  # type: ignore[method-assign,assignment]
            _installed = True
