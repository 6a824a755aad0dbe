"""The REST API over HTTP on the local cloud: every route, its errors and pagination."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from hypd_cli.api_client import ApiClient, ApiError
from hypd_local.seed import seed_clusters
from tests.conftest import ROOT

BAD_INPUT: list[tuple[str, str, Any, Any, str]] = [
    ("GET", "/clusters", {"limit": "0"}, None, "limit"),
    ("GET", "/clusters", {"limit": "many"}, None, "limit"),
    ("GET", "/clusters", {"nextToken": "not-a-token"}, None, "nextToken"),
    ("GET", "/clusters/-bad", None, None, "tag"),
    ("GET", "/operations", {"status": "DONE"}, None, "status"),
    ("GET", "/operations", {"clusterTag": "bad tag!"}, None, "clusterTag"),
    ("GET", "/operations", {"limit": "101"}, None, "limit"),
    ("GET", "/operations", {"nextToken": "Zm9v"}, None, "nextToken"),
    ("GET", "/operations/op-123", None, None, "operationId"),
    ("POST", "/clusters/discover", None, {"clusterNames": []}, "clusterNames"),
    ("POST", "/clusters/discover", None, {"clusterName": ["x"]}, "clusterName"),
    ("POST", "/clusters/discover", None, {"clusterNames": "x"}, "clusterNames"),
]


@pytest.mark.parametrize(("method", "path", "query", "body", "field"), BAD_INPUT)
def test_bad_input_gets_400_naming_the_field(
    api: ApiClient, method: str, path: str, query: Any, body: Any, field: str
) -> None:
    # When a client sends bad input
    with pytest.raises(ApiError) as error:
        api.request(method, path, query=query, body=body)

    # Then the API answers 400 with an error body that names the field
    assert error.value.status == 400
    assert error.value.code == "ValidationError"
    assert field in error.value.message


# A value of the right shape for each path parameter (nothing it names exists).
SAMPLE_PATH = {"tag": "nope", "name": "workers", "nodeId": "i-0123456789abcdef0", "team": "ml",
               "operationId": "op-" + "0" * 32}


def documented_routes(*methods: str) -> list[tuple[str, str, bool]]:
    """(method, path with SAMPLE_PATH filled in, whether it takes a body) of docs/openapi.json."""
    document = json.loads((ROOT / "docs" / "openapi.json").read_text())
    return [
        (method.upper(), path.format(**SAMPLE_PATH), "requestBody" in operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method.upper() in methods
    ]


def send(cloud: Any, method: str, path: str, data: bytes, content_type: str) -> Any:
    return requests.request(method, f"{cloud.api_url}{path}", data=data, timeout=30,
                            headers={"Content-Type": content_type})


def test_multipart_without_a_boundary_gets_400_on_every_route_with_a_body(cloud: Any) -> None:
    routes = [(m, p) for m, p, body in documented_routes("POST", "PUT", "PATCH") if body]
    assert len(routes) == 13
    for method, path in routes:
        # When a body is sent as multipart/form-data without a boundary (once a 502)
        answer = send(cloud, method, path, b'{"enabled": true}', "multipart/form-data")
        # Then 400 names the Content-Type header
        assert answer.status_code == 400, (method, path, answer.text)
        error = answer.json()
        assert set(error) == {"code", "message", "details"}
        assert "Content-Type" in error["message"], (method, path, error)


def test_a_body_that_is_not_utf8_never_fails_a_post_or_put(cloud: Any) -> None:
    routes = documented_routes("POST", "PUT", "PATCH")
    assert len(routes) == 17
    for method, path, takes_body in routes:
        # When a body is not UTF-8 (once a 502 on every route that reads one)
        answer = send(cloud, method, path, b'{"a": "\xff\xfe"}', "application/json")
        error = answer.json()
        assert set(error) == {"code", "message", "details"}, (method, path, error)
        if takes_body:
            # Then 400 names the body
            assert answer.status_code == 400, (method, path, error)
            assert "body: not UTF-8" in error["message"], (method, path, error)
        else:
            # Then a route that reads no body answers as without one (its resource is unknown)
            assert answer.status_code == 404, (method, path, error)


def test_malformed_json_body_gets_400(cloud: Any) -> None:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(  # noqa: S310 - loopback
        f"{cloud.api_url}/clusters/discover", data=b"{not json", method="POST"
    )
    request.add_header("Content-Type", "application/json")
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=10)  # noqa: S310
    assert error.value.code == 400
    assert b"ValidationError" in error.value.read()


@pytest.mark.parametrize(
    ("path", "code"),
    [("/clusters/nope", "NotFound"), ("/operations/op-" + "0" * 32, "NotFound")],
)
def test_unknown_resources_get_404(api: ApiClient, path: str, code: str) -> None:
    with pytest.raises(ApiError) as error:
        api.get(path)
    assert error.value.status == 404
    assert error.value.code == code
    assert error.value.message


def test_unknown_route_is_refused_like_api_gateway(api: ApiClient) -> None:
    with pytest.raises(ApiError) as error:
        api.get("/nowhere")
    assert error.value.status == 403
    assert "Missing Authentication Token" in error.value.message


def test_operations_are_listed_newest_first_page_by_page(cloud: Any, api: ApiClient) -> None:
    # Given three discover operations, one after the other
    seed_clusters(cloud)
    started = []
    for _ in range(3):
        started.append(api.post("/clusters/discover")["operationId"])
        cloud.wait_for_executions(timeout=60)

    # When a client lists them one per page
    seen: list[str] = []
    token = None
    while True:
        page = api.get("/operations", limit=1, nextToken=token, status="SUCCEEDED")
        seen += [op["id"] for op in page["operations"]]
        token = page["nextToken"]
        if not token:
            break

    # Then each appears exactly once, newest first
    assert seen == list(reversed(started))
    assert api.get("/operations", status="RUNNING")["operations"] == []


def test_a_discovered_cluster_is_served_by_tag(cloud: Any, api: ApiClient) -> None:
    seed_clusters(cloud)
    api.post("/clusters/discover")
    cloud.wait_for_executions(timeout=60)

    listed = api.get("/clusters")["clusters"]
    assert listed
    for cluster in listed:
        assert api.get(f"/clusters/{cluster['tag']}") == cluster
