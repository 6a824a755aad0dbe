"""``hypd console``: the web console, a single page served on localhost (docs/console.md).

The page is static (``console_assets/``: HTML, CSS and ES modules, no build step) and calls the
REST API through this server's proxy: ``/api`` + an API path (``GET /api/clusters`` ->
``GET {endpoint}/clusters``). The proxy forwards only the requests that match a route of
`ROUTES` (method and path template), through the same `ApiClient` as the CLI, so requests to a
deployment are SigV4-signed with the user's credentials and the local cloud's go plain. The
API's status and JSON body come back unchanged; no answer is a 502.

Because the proxy signs with the user's credentials, it answers only to this machine's own
pages: it listens on 127.0.0.1, refuses (403) a Host header other than ``127.0.0.1:PORT`` or
``localhost:PORT`` (DNS rebinding) and an ``/api`` request without ``X-Hypd-Console: 1`` (a
page of another site cannot send that header without a CORS preflight, which is never granted)
or with a foreign ``Origin``; every answer forbids framing and script from elsewhere (CSP).
"""

from __future__ import annotations

import argparse
import http.server
import importlib.resources
import json
import re
import signal
import sys
import threading
import urllib.parse
import webbrowser
from collections.abc import Callable
from types import FrameType
from typing import Any

from hypd_cli.api_client import ROUTES, ApiClient, ApiConfigError, ApiUnreachable
from hypd_cli.cli import EXIT_USAGE, add_api_options, client_from_args

DEFAULT_PORT = 3099
HOST = "127.0.0.1"
API_PREFIX = "/api"
CONSOLE_HEADER = "X-Hypd-Console"
ASSETS = "console_assets"  # package data of hypd_cli
ASSET_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
MAX_BODY = 1 << 20  # the API's requests are small JSON documents
POLL_SECONDS = 0.1  # how soon a shutdown is noticed


def _template_pattern(path: str) -> re.Pattern[str]:
    # A path parameter is one segment (`forwardable` refuses "." and "..").
    parameter = r"[^/]+"
    segments = [parameter if re.fullmatch(r"{\w+}", s) else re.escape(s) for s in path.split("/")]
    return re.compile("^" + "/".join(segments) + "$")


# (method, pattern) for every REST operation: what the proxy may forward.
_ROUTE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (route.method, _template_pattern(route.path)) for route in ROUTES.values()
)


def forwardable(method: str, path: str) -> bool:
    """Whether ``method path`` (an API path, without ``/api``, as sent: percent-encoded) is one
    of `ROUTES`. A segment that is, or decodes to, ``.`` or ``..`` never is."""
    if any(urllib.parse.unquote(segment) in (".", "..") for segment in path.split("/")):
        return False
    return any(m == method and p.match(path) for m, p in _ROUTE_PATTERNS)


def _error_body(code: str, message: str, **details: Any) -> bytes:
    """The API's error shape, for the proxy's own refusals."""
    return json.dumps({"code": code, "message": message, "details": details}).encode()


class ConsoleServer:
    """The console on ``127.0.0.1:port`` (0: a free port), proxying to ``client``'s API.

    ``start()`` serves on a daemon thread (``hypd local up``, tests); ``serve_forever()`` in
    the calling thread (``hypd console``); ``close()`` stops either.
    """

    def __init__(self, client: ApiClient, port: int = DEFAULT_PORT) -> None:
        self.client = client
        self._httpd = http.server.ThreadingHTTPServer((HOST, port), _handler_for(self))
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    @property
    def allowed_hosts(self) -> frozenset[str]:
        return frozenset({f"{HOST}:{self.port}", f"localhost:{self.port}"})

    def start(self) -> ConsoleServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(POLL_SECONDS,),
                                        name="hypd-console", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until `shutdown` (from another thread)."""
        self._httpd.serve_forever(POLL_SECONDS)

    def shutdown(self) -> None:
        """Stop the serving loop (from any thread but the serving one)."""
        self._httpd.shutdown()

    def close(self) -> None:
        """Stop serving (from any thread but the serving one) and release the port."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=10)
        self._httpd.server_close()

    def __enter__(self) -> ConsoleServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler_for(console: ConsoleServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(_ConsoleHandler):
        server_console = console

    return Handler


class _ConsoleHandler(http.server.BaseHTTPRequestHandler):
    """One request: the guards, then a static asset or a forwarded API call."""

    server_console: ConsoleServer
    server_version = "hypd-console"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_OPTIONS(self) -> None:
        # A CORS preflight: never granted (no Access-Control-* header, ever).
        self._refuse(403, "Forbidden", "the hypd console grants no cross-origin requests")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the API logs what matters; a console in a terminal stays quiet

    def _dispatch(self) -> None:
        console = self.server_console
        if self.headers.get("Host", "") not in console.allowed_hosts:
            self._refuse(403, "Forbidden", "the hypd console answers only to "
                         f"http://127.0.0.1:{console.port} or http://localhost:{console.port}")
            return
        path, _, query = self.path.partition("?")
        if path == API_PREFIX or path.startswith(API_PREFIX + "/"):
            self._proxy(path[len(API_PREFIX):], query)
        elif self.command == "GET":
            self._asset(path)
        else:
            self._refuse(405, "MethodNotAllowed", f"{self.command} {path}: the console's pages "
                         "are read with GET")

    def _proxy(self, path: str, query: str) -> None:
        if self.headers.get(CONSOLE_HEADER) != "1":
            self._refuse(403, "Forbidden", f"API requests through the console need the header "
                         f"{CONSOLE_HEADER}: 1")
            return
        origin = self.headers.get("Origin")
        if origin is not None and f"{urllib.parse.urlsplit(origin).netloc}" not in \
                self.server_console.allowed_hosts:
            self._refuse(403, "Forbidden", f"requests from {origin} are not accepted")
            return
        if not forwardable(self.command, path):
            self._refuse(404, "NotFound", f"{self.command} {path} is no route of the hypd API")
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self._refuse(400, "BadRequest", "the Content-Length header is not a length")
            return
        if length > MAX_BODY:
            self._refuse(413, "PayloadTooLarge", f"the request body is over {MAX_BODY} bytes")
            return
        data = self.rfile.read(length) if length else None
        params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        try:
            answer = self.server_console.client.send(self.command, path, query=params,
                                                     data=data)
        except ApiUnreachable as exc:
            self._refuse(502, "ApiUnreachable", str(exc), endpoint=exc.endpoint)
            return
        except ApiConfigError as exc:
            self._refuse(502, "ApiConfigError", f"the console cannot sign the request: {exc}")
            return
        content_type = answer.headers.get("Content-Type") or "application/json"
        self._send(answer.status, answer.body, content_type)

    def _asset(self, path: str) -> None:
        name = "index.html" if path == "/" else path.lstrip("/")
        suffix = "." + name.rpartition(".")[2]
        if "/" in name or suffix not in ASSET_TYPES:
            self._refuse(404, "NotFound", f"no page {path}")
            return
        resource = importlib.resources.files("hypd_cli").joinpath(ASSETS).joinpath(name)
        if not resource.is_file():
            self._refuse(404, "NotFound", f"no page {path}")
            return
        self._send(200, resource.read_bytes(), ASSET_TYPES[suffix])

    def _refuse(self, status: int, code: str, message: str, **details: Any) -> None:
        self._send(status, _error_body(code, message, **details), "application/json")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def register(subparsers: Any) -> None:
    console = subparsers.add_parser(
        "console", help=f"serve the web console on localhost (default port {DEFAULT_PORT})",
        description="Serve the web console on http://127.0.0.1:PORT until Ctrl+C. Its pages "
        "call the REST API through this process, with the connection options below: signed "
        "with your AWS credentials against a deployment, plain against the local cloud.",
    )
    console.add_argument("--port", type=int, default=DEFAULT_PORT,
                         help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)")
    console.add_argument("--open", action="store_true",
                         help="open the console in the default browser")
    add_api_options(console, output=False)
    console.set_defaults(handler=run_console)


def run_console(args: argparse.Namespace, *,
                on_ready: Callable[[ConsoleServer], None] | None = None) -> int:
    """Serve until SIGINT or SIGTERM (or ``on_ready``'s caller closes the server)."""
    try:
        client = client_from_args(args)
    except ApiConfigError as exc:
        print(f"hypd console: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        server = ConsoleServer(client, args.port)
    except OSError as exc:
        print(f"hypd console: cannot listen on {HOST}:{args.port}: {exc}", file=sys.stderr)
        return 1
    print(f"hypd console on {server.url} (API {client.endpoint}"
          f"{', signed' if client.signer else ''}); Ctrl+C stops it", flush=True)
    restore = _stop_on_signals(server)
    try:
        if args.open:
            webbrowser.open(server.url)
        if on_ready is not None:
            on_ready(server)
        server.serve_forever()
    finally:
        restore()
        server.close()
    print("Stopped.", flush=True)
    return 0


def _stop_on_signals(server: ConsoleServer) -> Callable[[], None]:
    """Let SIGINT/SIGTERM stop ``server`` (only possible from the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handle(signum: int, frame: FrameType | None) -> None:
        # shutdown() waits for serve_forever, which runs in this thread: stop from another.
        threading.Thread(target=server.shutdown, daemon=True).start()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
