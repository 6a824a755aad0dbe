"""The REST API front: API Gateway proxy events in, proxy results out."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from email.message import Message
from typing import Any

import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest

from hypd_local import LocalCloud


def call(
    url: str, method: str = "GET", body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Message, bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})  # noqa: S310 (loopback)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (loopback)
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def echoed(cloud: LocalCloud, path: str, **kwargs: Any) -> dict[str, Any]:
    status, _, body = call(cloud.api_url + path, **kwargs)
    assert status in (200, 201), body
    result: dict[str, Any] = json.loads(body)
    return result


def test_path_parameters_and_query_strings_reach_the_handler(cloud: LocalCloud) -> None:
    event = echoed(cloud, "/items/42?colour=red&size=s&size=m")

    assert event["resource"] == "/items/{itemId}"
    assert event["path"] == "/items/42"
    assert event["method"] == "GET"
    assert event["pathParameters"] == {"itemId": "42"}
    assert event["query"] == {"colour": "red", "size": "m"}  # the last value, as API Gateway
    assert event["multiQuery"] == {"colour": ["red"], "size": ["s", "m"]}
    context = event["requestContext"]
    assert context["stage"] == "v1"
    assert context["path"] == "/v1/items/42"
    assert context["resourcePath"] == "/items/{itemId}"
    assert context["identity"]["sourceIp"] == "127.0.0.1"
    assert context["identity"]["accessKey"] is None  # unsigned requests are accepted locally


def test_a_json_body_and_the_response_headers(cloud: LocalCloud) -> None:
    status, headers, body = call(cloud.api_url + "/items", method="POST",
                                 body=b'{"name": "x"}',
                                 headers={"Content-Type": "application/json"})

    assert status == 201
    event = json.loads(body)
    assert event["body"] == '{"name": "x"}'
    assert event["isBase64Encoded"] is False
    assert event["query"] is None
    assert event["pathParameters"] is None
    assert headers["X-Fixture"] == "yes"
    assert headers.get_all("X-Multi") == ["a", "b"]
    assert headers["Content-Type"] == "application/json"


def test_binary_bodies_are_base64_encoded(cloud: LocalCloud) -> None:
    data = bytes(range(256))

    event = echoed(cloud, "/files/a/b.bin", method="PUT", body=data,
                   headers={"Content-Type": "application/octet-stream"})

    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == data
    # a greedy path parameter takes the rest of the path; ANY matches every method
    assert event["pathParameters"] == {"proxy": "a/b.bin"}
    assert event["resource"] == "/files/{proxy+}"


def test_a_literal_segment_wins_over_a_parameter(cloud: LocalCloud) -> None:
    assert echoed(cloud, "/items/special")["resource"] == "/items/special"


@pytest.mark.parametrize(
    ("path", "method"),
    [("/nowhere", "GET"), ("/items", "DELETE"), ("/items/1/extra", "GET"), ("", "GET")],
)
def test_unknown_routes_get_missing_authentication_token(
    cloud: LocalCloud, path: str, method: str
) -> None:
    status, headers, body = call(cloud.api_url + path, method=method)

    assert status == 403
    assert json.loads(body) == {"message": "Missing Authentication Token"}
    assert headers["x-amzn-ErrorType"] == "MissingAuthenticationTokenException"


def test_paths_outside_the_stage_get_missing_authentication_token(cloud: LocalCloud) -> None:
    status, _, _ = call(cloud.local_url + "/items")

    assert status == 403


@pytest.mark.parametrize("path", ["/crash", "/malformed"])
def test_a_crashing_or_malformed_handler_gives_502(cloud: LocalCloud, path: str) -> None:
    status, _, body = call(cloud.api_url + path)

    assert status == 502
    assert json.loads(body) == {"message": "Internal server error"}


def test_a_sigv4_signature_puts_the_caller_into_the_identity(cloud: LocalCloud) -> None:
    # Given a request signed for execute-api (the signature is not verified locally)
    url = cloud.api_url + "/items"
    request = botocore.awsrequest.AWSRequest(method="GET", url=url)
    credentials = botocore.credentials.Credentials("AKIDLOCALTEST", "secret")
    botocore.auth.SigV4Auth(credentials, "execute-api", cloud.region).add_auth(request)

    # When it is sent
    event = echoed(cloud, "/items", headers=dict(request.headers.items()))

    # Then the handler sees the access key and a caller identity
    identity = event["requestContext"]["identity"]
    assert identity["accessKey"] == "AKIDLOCALTEST"
    assert identity["userArn"].startswith("arn:aws:")
    assert identity["caller"]


def test_many_requests_at_once(cloud: LocalCloud) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: echoed(cloud, f"/items/{i}"), range(24)))

    assert [r["pathParameters"]["itemId"] for r in results] == [str(i) for i in range(24)]


def test_the_virtual_clock_over_http(cloud: LocalCloud) -> None:
    status, _, body = call(cloud.local_url + "/_local/clock")
    before = json.loads(body)["now"]

    status, _, body = call(cloud.local_url + "/_local/clock/advance", method="POST",
                           body=json.dumps({"seconds": 86400}).encode())

    assert status == 200
    after = datetime.fromisoformat(json.loads(body)["now"])
    assert after - datetime.fromisoformat(before) >= timedelta(days=1)
    status, _, _ = call(cloud.local_url + "/_local/clock/advance", method="POST",
                        body=b'{"seconds": -1}')
    assert status == 400
    status, _, _ = call(cloud.local_url + "/_local/clock", method="POST", body=b"{}")
    assert status == 405
