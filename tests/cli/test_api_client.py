"""The API client: SigV4 signing (checked against the algorithm as AWS documents it, with a
fixed credential and clock), unsigned local requests, errors and the operation table."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import botocore.auth
import pytest
from botocore.credentials import Credentials

from hypd_cli.api_client import (
    ApiClient,
    ApiConfigError,
    ApiError,
    ApiUnreachable,
    SigV4Signer,
    endpoint_from_stack,
    is_local_endpoint,
    region_of_endpoint,
    started,
)
from tests.support import FakeApi, Received, serve_fake_api

ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
NOW = datetime(2026, 3, 4, 5, 6, 7)
REGION = "eu-central-1"


@pytest.fixture
def fake_api() -> Iterator[FakeApi]:
    with serve_fake_api() as api:
        yield api


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *args, **kwargs: NOW)


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def expected_signature(request: Received, signed_headers: list[str], secret: str) -> str:
    """SigV4 as AWS documents it (canonical request, string to sign, derived key), computed
    from what the server received."""
    target = urlsplit(request.target)
    query = "&".join(sorted(target.query.split("&"))) if target.query else ""
    canonical_headers = "".join(f"{name}:{request.headers[name].strip()}\n"
                                for name in signed_headers)
    canonical = "\n".join([
        request.method, target.path, query, canonical_headers, ";".join(signed_headers),
        hashlib.sha256(request.body).hexdigest(),
    ])
    amz_date = request.headers["x-amz-date"]
    scope = f"{amz_date[:8]}/{REGION}/execute-api/aws4_request"
    string_to_sign = "\n".join([
        "AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(("AWS4" + secret).encode(), amz_date[:8])
    for part in (REGION, "execute-api", "aws4_request"):
        key = _hmac(key, part)
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


def authorization(request: Received) -> dict[str, str]:
    algorithm, _, rest = request.headers["authorization"].partition(" ")
    assert algorithm == "AWS4-HMAC-SHA256"
    return dict(part.strip().split("=", 1) for part in rest.split(","))


def test_requests_are_signed_for_execute_api_over_the_body_sent(
    fake_api: FakeApi, fixed_clock: None
) -> None:
    signer = SigV4Signer(Credentials(ACCESS_KEY, SECRET_KEY), REGION)
    client = ApiClient(fake_api.url, signer=signer)
    body = {"tag": "demo", "instanceGroups": [], "storage": {"s3": {"bucket": "b"}}}

    client.create_cluster(body)
    client.create_cluster({**body, "tag": "other"})

    first, second = fake_api.received
    assert first.body == json.dumps(body).encode()
    assert first.headers["x-amz-date"] == "20260304T050607Z"
    auth = authorization(first)
    assert auth["Credential"] == f"{ACCESS_KEY}/20260304/{REGION}/execute-api/aws4_request"
    signed = auth["SignedHeaders"].split(";")
    assert signed == ["accept", "content-type", "host", "x-amz-date"]
    assert auth["Signature"] == expected_signature(first, signed, SECRET_KEY)
    # The body is part of the signature: another body, another signature.
    assert authorization(second)["Signature"] == expected_signature(second, signed, SECRET_KEY)
    assert authorization(second)["Signature"] != auth["Signature"]
    assert "x-amz-security-token" not in first.headers


def test_the_query_string_is_signed_canonically_and_temporary_credentials_send_their_token(
    fake_api: FakeApi, fixed_clock: None
) -> None:
    signer = SigV4Signer(Credentials(ACCESS_KEY, SECRET_KEY, "SESSION/TOKEN"), REGION)
    client = ApiClient(fake_api.url, signer=signer)

    client.list_operations(status="FAILED", cluster_tag="a b", next_token="eyJ9+/=")

    (request,) = fake_api.received
    assert request.method == "GET"
    assert request.target == (
        "/v1/operations?clusterTag=a%20b&status=FAILED&nextToken=eyJ9%2B%2F%3D")
    assert request.body == b""
    assert request.headers["x-amz-security-token"] == "SESSION/TOKEN"
    signed = authorization(request)["SignedHeaders"].split(";")
    assert signed == ["accept", "host", "x-amz-date", "x-amz-security-token"]
    assert authorization(request)["Signature"] == expected_signature(request, signed, SECRET_KEY)


def test_local_endpoints_get_unsigned_requests(fake_api: FakeApi) -> None:
    client = ApiClient.connect(fake_api.url)

    assert client.signer is None
    assert client.get("/clusters") == {"ok": True}
    assert "authorization" not in fake_api.received[0].headers


def test_remote_endpoints_are_signed_with_the_credential_chain(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_REGION", raising=False)
    config = tmp_path / "config"
    config.write_text("[profile ops]\nregion = ap-south-1\n"
                      "aws_access_key_id = AKIDPROFILE\naws_secret_access_key = s\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))

    from_host = ApiClient.connect("https://abc123.execute-api.us-east-2.amazonaws.com/v1")
    assert from_host.signer is not None
    assert from_host.signer.region == "us-east-2"
    assert from_host.signer.credentials.access_key == ACCESS_KEY

    from_profile = ApiClient.connect("https://api.example.com/v1", profile="ops")
    assert from_profile.signer is not None
    assert from_profile.signer.region == "ap-south-1"

    explicit = ApiClient.connect("https://api.example.com/v1", region="eu-west-3")
    assert explicit.signer is not None
    assert explicit.signer.region == "eu-west-3"

    with pytest.raises(ApiConfigError, match="no AWS Region"):
        ApiClient.connect("https://api.example.com/v1")
    with pytest.raises(ApiConfigError, match="could not be found"):
        ApiClient.connect("https://api.example.com/v1", profile="missing")
    assert ApiClient.connect("https://api.example.com/v1", sign=False).signer is None


def test_api_errors_carry_the_apis_code_message_and_details(fake_api: FakeApi) -> None:
    fake_api.reply = (400, {"Content-Type": "application/json"}, json.dumps({
        "code": "ValidationError", "message": "invalid request: tag: bad",
        "details": {"errors": [{"field": "tag"}]}}).encode())
    client = ApiClient(fake_api.url)

    with pytest.raises(ApiError) as raised:
        client.get_cluster("x")

    error = raised.value
    assert (error.status, error.code, error.message) == (400, "ValidationError",
                                                         "invalid request: tag: bad")
    assert error.details == {"errors": [{"field": "tag"}]}
    assert error.operation_id == "getCluster"
    assert not error.temporary


def test_api_gateways_own_errors_are_named_by_their_error_type(fake_api: FakeApi) -> None:
    fake_api.reply = (403, {"x-amzn-ErrorType": "IncompleteSignatureException:http://x"},
                      b'{"message": "Authorization header requires Credential"}')

    with pytest.raises(ApiError) as raised:
        ApiClient(fake_api.url).list_clusters()

    assert raised.value.code == "IncompleteSignatureException"
    assert raised.value.message == "Authorization header requires Credential"

    fake_api.reply = (503, {}, b"upstream down")
    with pytest.raises(ApiError) as unavailable:
        ApiClient(fake_api.url).list_clusters()
    assert (unavailable.value.code, unavailable.value.message) == ("HTTP503", "upstream down")
    assert unavailable.value.temporary


def test_an_endpoint_that_does_not_answer_is_named_in_the_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}/v1"

    with pytest.raises(ApiUnreachable) as raised:
        ApiClient(endpoint, timeout=5).list_clusters()

    assert raised.value.endpoint == endpoint
    assert f"cannot reach the hypd API at {endpoint}" in str(raised.value)


def test_call_checks_parameters_against_the_route(fake_api: FakeApi) -> None:
    client = ApiClient(fake_api.url)

    with pytest.raises(TypeError, match="needs operationId"):
        client.call("getOperation")
    with pytest.raises(TypeError, match="no parameter colour"):
        client.call("listClusters", colour="red")
    with pytest.raises(TypeError, match="takes no body"):
        client.call("listClusters", body={})
    with pytest.raises(ValueError, match="unknown operation"):
        client.call("deleteEverything")
    with pytest.raises(ApiConfigError, match=r"--endpoint: 'ftp://example\.com' is not a URL"):
        ApiClient("ftp://example.com")  # check_endpoint's message: the one endpoint check

    client.call("getCluster", tag="a/b")
    assert fake_api.received[-1].target == "/v1/clusters/a%2Fb"


@pytest.mark.parametrize(
    ("endpoint", "local", "region"),
    [
        ("http://127.0.0.1:8080/v1", True, None),
        ("http://localhost:8080/v1", True, None),
        ("http://[::1]:8080/v1", True, None),
        ("https://a1b2c3.execute-api.us-west-2.amazonaws.com/v1", False, "us-west-2"),
        ("https://api.example.com/v1", False, None),
    ],
)
def test_endpoints(endpoint: str, local: bool, region: str | None) -> None:
    assert is_local_endpoint(endpoint) is local
    assert region_of_endpoint(endpoint) == region


def _cloudformation(outputs: list[dict[str, str]] | None, error: str | None = None) -> Any:
    import botocore.session
    from botocore.stub import Stubber

    client = botocore.session.get_session().create_client(
        "cloudformation", region_name="us-west-2",
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret",
    )
    stubber = Stubber(client)
    if error:
        stubber.add_client_error("describe_stacks", service_error_code="ValidationError",
                                 service_message=error)
    else:
        stack: dict[str, Any] = {
            "StackName": "hypd", "CreationTime": "2026-11-30T00:00:00Z",
            "StackStatus": "CREATE_COMPLETE",
        }
        if outputs is not None:
            stack["Outputs"] = outputs
        stubber.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": "hypd"})
    stubber.activate()
    return client


def test_without_an_endpoint_the_deployed_stacks_api_url_is_used() -> None:
    url = "https://a1b2c3.execute-api.us-west-2.amazonaws.com/v1"
    client = _cloudformation([{"OutputKey": "ApiUrl", "OutputValue": url}])

    assert endpoint_from_stack("hypd", cloudformation=client) == url


@pytest.mark.parametrize(
    ("outputs", "error", "message"),
    [
        (None, "Stack with id hypd does not exist", "does not exist"),
        ([{"OutputKey": "TableName", "OutputValue": "t"}], None, "no ApiUrl output"),
    ],
)
def test_a_missing_stack_or_output_is_a_configuration_error(
    outputs: list[dict[str, str]] | None, error: str | None, message: str
) -> None:
    with pytest.raises(ApiConfigError, match=message):
        endpoint_from_stack("hypd", cloudformation=_cloudformation(outputs, error))


def test_the_capacity_methods_send_their_routes_with_their_bodies(fake_api: FakeApi) -> None:
    client = ApiClient(fake_api.url)
    group = {"name": "spot", "instanceType": "ml.g6.4xlarge", "count": 1,
             "capacity": {"type": "spot"}}

    client.list_instance_group_fields()
    client.list_instance_groups("demo")
    client.add_instance_group("demo", group)
    client.update_instance_group("demo", "spot", {"count": 2})
    client.delete_instance_group("demo", "spot")
    client.list_nodes("demo")
    client.list_nodes("demo", instance_group="spot")
    client.reboot_node("demo", "i-0123456789abcdef0")
    client.replace_node("demo", "i-0123456789abcdef0")
    client.delete_node("demo", "i-0123456789abcdef0")
    client.get_autoscaling("demo")
    client.set_autoscaling("demo", {"enabled": False})

    node = "/v1/clusters/demo/nodes/i-0123456789abcdef0"
    assert [(r.method, r.target, json.loads(r.body) if r.body else None)
            for r in fake_api.received] == [
        ("GET", "/v1/catalog/instance-group-fields", None),
        ("GET", "/v1/clusters/demo/instance-groups", None),
        ("POST", "/v1/clusters/demo/instance-groups", group),
        ("PATCH", "/v1/clusters/demo/instance-groups/spot", {"count": 2}),
        ("DELETE", "/v1/clusters/demo/instance-groups/spot", None),
        ("GET", "/v1/clusters/demo/nodes", None),
        ("GET", "/v1/clusters/demo/nodes?instanceGroup=spot", None),
        ("POST", f"{node}/reboot", None),
        ("POST", f"{node}/replace", None),
        ("DELETE", node, None),
        ("GET", "/v1/clusters/demo/autoscaling", None),
        ("PUT", "/v1/clusters/demo/autoscaling", {"enabled": False}),
    ]
    patch = fake_api.received[3]
    assert patch.headers["content-type"] == "application/json"


def test_a_change_answers_an_operation_or_changed_false(fake_api: FakeApi) -> None:
    client = ApiClient(fake_api.url)
    accepted = {"operationId": "op-" + "0" * 32, "status": "PENDING",
                "kind": "update-instance-group"}
    unchanged = {"changed": False, "instanceGroup": {"name": "spot", "count": 2}}

    fake_api.reply = (202, {"Content-Type": "application/json"}, json.dumps(accepted).encode())
    first = client.update_instance_group("demo", "spot", {"count": 2})
    fake_api.reply = (200, {"Content-Type": "application/json"}, json.dumps(unchanged).encode())
    second = client.update_instance_group("demo", "spot", {"count": 2})

    assert (first, started(first)) == (accepted, True)
    assert (second, started(second)) == (unchanged, False)
