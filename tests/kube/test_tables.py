"""Tables and partial object metadata as the API server serves them (the JSON kubectl reads)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from hypd_local.kube import KubeApiServer
from hypd_local.kube.jsonpath import JsonPathError, find
from hypd_local.kube.tables import human_duration
from tests.kube.conftest import Http

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL_ACCEPT = f"{TABLE},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"


@pytest.mark.parametrize(("seconds", "said"), [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (200, "3m20s"),
    (600, "10m"), (179 * 60, "179m"), (3 * 3600, "3h"), (5 * 3600 + 600, "5h10m"),
    (20 * 3600, "20h"), (3 * 86400 + 4 * 3600, "3d4h"), (3 * 86400, "3d"),
    (120 * 86400, "120d"), (730 * 86400 + 30 * 86400, "2y30d"), (9 * 365 * 86400, "9y"),
])
def test_ages_read_as_kubectl_writes_them(seconds: int, said: str) -> None:
    assert human_duration(seconds) == said


def test_printer_column_jsonpath() -> None:
    obj = {"status": {"conditions": [{"type": "A", "status": "False"},
                                     {"type": "Ready", "status": "True"}],
                      "n": [1, 2]},
           "metadata": {"labels": {"a.b/c": "x"}}}
    assert find(obj, '.status.conditions[?(@.type=="Ready")].status') == ["True"]
    assert find(obj, '{.status.conditions[?(@.type!="Ready")].status}') == ["False"]
    assert find(obj, ".status.conditions[*].type") == ["A", "Ready"]
    assert find(obj, ".status.n[1]") == [2]
    assert find(obj, ".metadata.labels['a.b/c']") == ["x"]
    assert find(obj, ".spec.missing") == []
    with pytest.raises(JsonPathError):
        find(obj, ".status.conditions[?(@.type ~ 'x')]")


def test_a_table_of_nodes_with_metadata_rows(http_admin: Http, server: KubeApiServer) -> None:
    server.join_node("hyperpod-i-0aaa", {"team": "ml"})
    status, table = http_admin.get("/api/v1/nodes", Accept=KUBECTL_ACCEPT)
    assert status == 200
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert table["metadata"]["resourceVersion"]
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:5] == ["Name", "Status", "Roles", "Age", "Version"]
    assert {c["priority"] for c in table["columnDefinitions"][5:]} == {1}
    assert table["columnDefinitions"][0]["format"] == "name"
    (row,) = table["rows"]
    assert row["cells"][:2] == ["hyperpod-i-0aaa", "Ready"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["apiVersion"] == "meta.k8s.io/v1"
    assert row["object"]["metadata"]["labels"]["team"] == "ml"
    status, whole = http_admin.get("/api/v1/nodes?includeObject=Object", Accept=TABLE)
    assert whole["rows"][0]["object"]["kind"] == "Node"
    status, bare = http_admin.get("/api/v1/nodes?includeObject=None", Accept=TABLE)
    assert "object" not in bare["rows"][0]
    status, single = http_admin.get("/api/v1/nodes/hyperpod-i-0aaa", Accept=TABLE)
    assert [r["cells"][0] for r in single["rows"]] == ["hyperpod-i-0aaa"]
    status, old = http_admin.get("/api/v1/nodes",
                                 Accept="application/json;as=Table;v=v1beta1;g=meta.k8s.io")
    assert old["apiVersion"] == "meta.k8s.io/v1beta1"


def test_what_cannot_be_served_is_refused(http_admin: Http) -> None:
    status, body = http_admin.get("/api/v1/nodes?includeObject=Everything", Accept=TABLE)
    assert (status, body["reason"]) == (400, "BadRequest")
    assert "includeObject" in body["message"]
    status, body = http_admin.get("/api/v1/nodes", Accept="application/vnd.kubernetes.protobuf")
    assert (status, body["kind"], body["reason"]) == (406, "Status", "NotAcceptable")
    status, body = http_admin.get(
        "/api/v1/nodes", Accept="application/json;as=Table;v=v2;g=meta.k8s.io")
    assert status == 406
    # a client that accepts protobuf or JSON gets JSON
    status, body = http_admin.get(
        "/api/v1/nodes", Accept="application/vnd.kubernetes.protobuf,application/json")
    assert (status, body["kind"]) == (200, "NodeList")


def test_partial_object_metadata(http_admin: Http, admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespaced_config_map("default", {"metadata": {"name": "m", "labels": {"a": "b"}},
                                                  "data": {"secret": "stays on the server"}})
    meta = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    status, listed = http_admin.get("/api/v1/namespaces/default/configmaps", Accept=meta)
    assert (status, listed["kind"]) == (200, "PartialObjectMetadataList")
    (item,) = listed["items"]
    assert item == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": item["metadata"]}
    assert item["metadata"]["labels"] == {"a": "b"}
    status, one = http_admin.get(
        "/api/v1/namespaces/default/configmaps/m",
        Accept="application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")
    assert "data" not in one
    assert one["metadata"]["name"] == "m"
