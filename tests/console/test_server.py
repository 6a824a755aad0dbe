"""The web console's server without a browser: the proxy forwards exactly the API's routes
through ApiClient (signed or plain) and passes the answers through unchanged; every guard that
keeps other sites from using the user's credentials refuses as docs/console.md says; the
assets are served from the package with the security headers.

The API here is a fake HTTP server on loopback that records what reached it
(tests/support.py).
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from botocore.credentials import Credentials

from hypd_cli.api_client import ROUTES, ApiClient, SigV4Signer
from hypd_cli.console import (
    DEFAULT_PORT,
    MAX_BODY,
    SECURITY_HEADERS,
    ConsoleServer,
    forwardable,
    run_console,
)
from hypd_cli.main import build_parser
from tests.support import FakeApi, serve_fake_api

HEADER = {"X-Hypd-Console": "1"}
ASSETS_DIR = Path(__file__).parents[2] / "src" / "hypd_cli" / "console_assets"
DOCS_OPENAPI = Path(__file__).parents[2] / "docs" / "openapi.json"


@pytest.fixture
def stub() -> Iterator[FakeApi]:
    with serve_fake_api() as api:
        api.reply = (200, {"Content-Type": "application/json"},
                     b'{"clusters": [], "nextToken": null}')
        yield api


@pytest.fixture
def console(stub: FakeApi) -> Iterator[ConsoleServer]:
    with ConsoleServer(ApiClient(stub.url), port=0) as server:
        yield server


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request(console: ConsoleServer, method: str, path: str, *, headers: dict[str, str] | None
            = None, body: bytes | None = None, host: str | None = None) -> Answer:
    """One request to the console, with exactly the Host header given (default: its own)."""
    connection = http.client.HTTPConnection("127.0.0.1", console.port, timeout=30)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host if host is not None else f"127.0.0.1:{console.port}")
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()},
                      response.read())
    finally:
        connection.close()


# -- what is forwarded, and how -------------------------------------------------------------


def test_a_route_of_the_api_is_forwarded_and_its_answer_passed_through(
    console: ConsoleServer, stub: FakeApi
) -> None:
    # Given the API's answer to the listing
    stub.reply = (200, {"Content-Type": "application/json"},
                  b'{"operations": [{"id": "op-1"}], "nextToken": "t"}')

    # When the page lists a cluster's operations through the console
    answer = request(console, "GET", "/api/operations?clusterTag=demo&limit=5",
                     headers={**HEADER, "Cookie": "session=secret"})

    # Then the API got GET /v1/operations with the query, and nothing of the browser's own
    assert answer.status == 200
    assert answer.body == stub.reply[2]
    assert answer.headers["content-type"] == "application/json"
    (seen,) = stub.received
    assert (seen.method, seen.target) == ("GET", "/v1/operations?clusterTag=demo&limit=5")
    assert "cookie" not in seen.headers
    assert "x-hypd-console" not in seen.headers


def test_a_body_is_forwarded_as_sent_and_an_api_error_keeps_its_status_and_body(
    console: ConsoleServer, stub: FakeApi
) -> None:
    # Given an API that refuses the request, naming the field
    stub.reply = (400, {"Content-Type": "application/json"}, json.dumps({
        "code": "ValidationError", "message": "tag: bad", "details": {
            "errors": [{"field": "tag", "in": "body", "message": "bad"}]}}).encode())
    sent = b'{"tag": "bad tag", "instanceGroups": []}'

    # When a create is sent through the console
    answer = request(console, "POST", "/api/clusters",
                     headers={**HEADER, "Content-Type": "application/json"}, body=sent)

    # Then the API saw that very body, and the page gets the API's 400 unchanged
    assert stub.received[0].body == sent
    assert stub.received[0].headers["content-type"] == "application/json"
    assert answer.status == 400
    assert answer.body == stub.reply[2]


def test_against_a_deployment_the_proxy_signs_with_the_users_credentials(
    stub: FakeApi
) -> None:
    # Given a console whose client signs (as for a deployment's execute-api endpoint)
    signer = SigV4Signer(Credentials("AKIDEXAMPLE", "secret", "token"), "us-west-2")
    with ConsoleServer(ApiClient(stub.url, signer=signer), port=0) as console:
        # When the page changes a group
        request(console, "PATCH", "/api/clusters/demo/instance-groups/gpu",
                headers=HEADER, body=b'{"count": 2}')

    # Then the API got a SigV4 request for execute-api, with the session token
    headers = stub.received[0].headers
    assert headers["authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-west-2/execute-api/aws4_request" in headers["authorization"]
    assert headers["x-amz-security-token"] == "token"
    assert stub.received[0].target == "/v1/clusters/demo/instance-groups/gpu"


def test_an_unreachable_api_is_a_502_naming_the_endpoint() -> None:
    # Given a console in front of a port where nothing listens
    with ConsoleServer(ApiClient("http://127.0.0.1:9/v1", timeout=5), port=0) as console:
        answer = request(console, "GET", "/api/clusters", headers=HEADER)

    assert answer.status == 502
    assert answer.json()["code"] == "ApiUnreachable"
    assert "cannot reach the hypd API at http://127.0.0.1:9/v1" in answer.json()["message"]


def test_every_route_of_the_api_is_forwardable_and_nothing_else() -> None:
    for route in ROUTES.values():
        path = re.sub(r"{\w+}", "x-1", route.path)
        assert forwardable(route.method, path), (route.method, route.path)

    assert not forwardable("GET", "/_local/clock")
    assert not forwardable("POST", "/clusters/demo")  # no such method on that path
    assert not forwardable("GET", "/clusters/demo/extra/segments")
    assert not forwardable("GET", "/clusters/..")
    assert not forwardable("GET", "/clusters/./instance-groups")
    assert not forwardable("GET", "/clusters/%2e%2E")
    assert not forwardable("GET", "/clusters/%2E/instance-groups")
    assert forwardable("GET", "/clusters/a%2Fb")  # an encoded slash stays in its segment
    assert not forwardable("GET", "/clusters/a/b")  # a parameter is one segment


# -- the guards -------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1:1", "localhost",
                                  "127.0.0.1", "attacker.localhost:{port}", ""])
@pytest.mark.parametrize("path", ["/", "/api/clusters"])
def test_a_foreign_host_header_is_refused(
    console: ConsoleServer, stub: FakeApi, host: str, path: str
) -> None:
    # A DNS-rebinding page reaches 127.0.0.1 under its own host name.
    answer = request(console, "GET", path, headers=HEADER, host=host.format(port=console.port))

    assert answer.status == 403
    assert answer.json()["code"] == "Forbidden"
    assert stub.received == []


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}"])
def test_the_consoles_own_host_names_are_served(
    console: ConsoleServer, host: str
) -> None:
    answer = request(console, "GET", "/api/clusters", headers=HEADER,
                     host=host.format(port=console.port))

    assert answer.status == 200


@pytest.mark.parametrize("headers", [{}, {"X-Hypd-Console": "0"}, {"X-Hypd-Console": ""}])
def test_an_api_request_without_the_console_header_is_refused(
    console: ConsoleServer, stub: FakeApi, headers: dict[str, str]
) -> None:
    # A form or an <img> of another site can make the browser send a simple request, never
    # one with a custom header.
    answer = request(console, "POST", "/api/clusters", headers=headers, body=b"{}")

    assert answer.status == 403
    assert "X-Hypd-Console: 1" in answer.json()["message"]
    assert stub.received == []


def test_an_api_request_from_another_origin_is_refused(
    console: ConsoleServer, stub: FakeApi
) -> None:
    answer = request(console, "DELETE", "/api/clusters/demo",
                     headers={**HEADER, "Origin": "https://evil.example"})

    assert answer.status == 403
    assert stub.received == []
    # while the console's own origin is accepted
    own = request(console, "DELETE", "/api/clusters/demo",
                  headers={**HEADER, "Origin": f"http://127.0.0.1:{console.port}"})
    assert own.status == 200


def test_a_cors_preflight_is_never_granted(console: ConsoleServer, stub: FakeApi) -> None:
    answer = request(console, "OPTIONS", "/api/clusters", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-hypd-console"})

    assert answer.status == 403
    assert not [name for name in answer.headers if name.startswith("access-control-")]
    assert stub.received == []


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/api/_local/clock"),
    ("POST", "/api/_local/clock/advance"),
    ("POST", "/api/clusters/demo"),
    ("GET", "/api/clusters/../operations"),
    ("GET", "/api"),
])
def test_what_is_no_route_of_the_api_is_not_forwarded(
    console: ConsoleServer, stub: FakeApi, method: str, path: str
) -> None:
    answer = request(console, method, path, headers=HEADER, body=b"{}")

    assert answer.status == 404
    assert answer.json()["code"] == "NotFound"
    assert stub.received == []


def test_an_oversized_body_is_refused(console: ConsoleServer, stub: FakeApi) -> None:
    answer = request(console, "POST", "/api/clusters", headers=HEADER,
                     body=b" " * (MAX_BODY + 1))

    assert answer.status == 413
    assert stub.received == []


@pytest.mark.parametrize("length", ["-5", "ten"])
def test_a_body_length_that_is_no_length_is_refused(
    console: ConsoleServer, stub: FakeApi, length: str
) -> None:
    answer = request(console, "POST", "/api/clusters",
                     headers={**HEADER, "Content-Length": length})

    assert answer.status == 400
    assert stub.received == []


def test_every_answer_carries_the_security_headers_and_no_cors(
    console: ConsoleServer, stub: FakeApi
) -> None:
    answers = [
        request(console, "GET", "/"),
        request(console, "GET", "/app.js"),
        request(console, "GET", "/api/clusters", headers=HEADER),
        request(console, "GET", "/api/clusters"),
        request(console, "GET", "/no-such-page.js"),
        request(console, "GET", "/", host="evil.example"),
    ]

    for answer in answers:
        for name, value in SECURITY_HEADERS.items():
            assert answer.headers[name.lower()] == value
        assert "default-src 'self'" in answer.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert not [name for name in answer.headers if name.startswith("access-control-")]


# -- the page -------------------------------------------------------------------------------


def test_the_page_and_its_modules_are_served_from_the_package(console: ConsoleServer) -> None:
    page = request(console, "GET", "/")

    assert page.status == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    # every script and stylesheet the page loads is its own, served with its type
    html = page.body.decode()
    assert 'src="/app.js"' in html
    assert "http" not in re.sub(r'"https?://www\.w3\.org[^"]*"', "", html)  # no CDN
    script = request(console, "GET", "/app.js")
    assert script.status == 200
    assert script.headers["content-type"] == "text/javascript; charset=utf-8"
    imported = re.findall(r'from "\./([\w.]+)"', script.body.decode())
    assert imported
    for name in imported:
        assert request(console, "GET", f"/{name}").status == 200, name
    assert request(console, "GET", "/app.css").headers["content-type"].startswith("text/css")


@pytest.mark.parametrize("path", ["/console.py", "/../console.py", "/%2e%2e/console.py",
                                  "/sub/app.js", "/index.htm", "/app.js.map"])
def test_only_the_assets_are_served(console: ConsoleServer, path: str) -> None:
    assert request(console, "GET", path).status == 404


def test_a_page_is_only_read(console: ConsoleServer) -> None:
    assert request(console, "POST", "/", body=b"").status == 405


# -- the command ------------------------------------------------------------------------------


def test_hypd_console_takes_a_port_open_and_the_api_options() -> None:
    args = build_parser().parse_args(["console"])
    assert (args.port, args.open, args.endpoint) == (DEFAULT_PORT, False, None)

    args = build_parser().parse_args([
        "console", "--port", "0", "--open", "--endpoint", "https://x.execute-api.us-west-2."
        "amazonaws.com/v1", "--profile", "admin", "--region", "us-west-2"])
    assert (args.port, args.open, args.profile, args.region) == (0, True, "admin", "us-west-2")
    assert args.handler is run_console


def test_hypd_console_serves_until_stopped(
    stub: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given `hypd console --port 0` on the stub API, stopped as soon as it has answered
    args = build_parser().parse_args(["console", "--port", "0", "--endpoint", stub.url])
    answers: list[Answer] = []

    def on_ready(server: ConsoleServer) -> None:
        def use_then_stop() -> None:
            answers.append(request(server, "GET", "/api/clusters", headers=HEADER))
            server.shutdown()

        threading.Thread(target=use_then_stop).start()

    # Then it answered through the stub, said where it runs, and exits 0
    assert run_console(args, on_ready=on_ready) == 0
    assert answers[0].status == 200
    out = capsys.readouterr().out
    assert re.search(rf"hypd console on http://127\.0\.0\.1:\d+/ \(API {stub.url}\)", out)


def test_hypd_console_with_a_bad_endpoint_is_a_usage_error(
    capsys: pytest.CaptureFixture[str]
) -> None:
    args = build_parser().parse_args(
        ["console", "--endpoint", "ftp://nowhere", "--no-sign-request"])

    assert run_console(args) == 2
    assert "--endpoint: 'ftp://nowhere' is not a URL" in capsys.readouterr().err


# The fields the console reads straight off a GET answer: ``get(path`/clusters/${tag}/x`)).y``,
# ``get("/catalog/x")).y`` and ``get(...).then((b) => b.y``. A misspelt one reads as an empty
# list (``|| []``), which no error would show.
_READ = re.compile(r"get\((?:path)?[`\"]([^`\"]+)[`\"]\)(?:\)|\.then\(\(\w+\) => \w+)\.(\w+)")


def _answer_fields(openapi: dict[str, Any], route: str) -> set[str]:
    schema = openapi["paths"][route]["get"]["responses"]["200"]["content"][
        "application/json"]["schema"]
    name = schema["$ref"].rsplit("/", 1)[1]
    return set(openapi["components"]["schemas"][name]["properties"])


def test_every_field_the_console_reads_off_an_answer_is_in_the_answers_schema() -> None:
    openapi = json.loads(DOCS_OPENAPI.read_text())
    reads = [
        (script.name, re.sub(r"\$\{(\w+)\}", r"{\1}", route), field)
        for script in sorted(ASSETS_DIR.glob("*.js"))
        for route, field in _READ.findall(script.read_text())
        if "${" in route or route.startswith("/")
    ]
    assert len(reads) >= 7, reads  # the scanner still finds them
    missing = [(name, route, field) for name, route, field in reads
               if field not in _answer_fields(openapi, route)]
    assert missing == []
