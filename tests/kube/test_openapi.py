"""/openapi/v2 and /openapi/v3, and what the server checks of the objects it is sent."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from kubernetes import client as k8s

from tests.kube.conftest import Http
from tests.kube.test_kubectl import WIDGETS_CRD

WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


@pytest.fixture
def widgets(admin: k8s.ApiClient) -> None:
    cast(Any, k8s.ApiextensionsV1Api(admin)).create_custom_resource_definition(WIDGETS_CRD)


def _v3(http: Http, gv: str) -> dict[str, Any]:
    status, root = http.get("/openapi/v3")
    assert status == 200
    url = root["paths"][gv]["serverRelativeURL"]
    assert url.startswith(f"/openapi/v3/{gv}?hash=")
    status, document = http.get(url)
    assert status == 200
    return dict(document)


def _patch(document: dict[str, Any], path: str) -> dict[str, Any]:
    return dict(document["paths"][path]["patch"])


def test_v3_says_fields_are_validated_and_how_kinds_are_patched(
    http_admin: Http, widgets: None
) -> None:
    core = _v3(http_admin, "api/v1")
    assert core["openapi"].startswith("3.")
    patch = _patch(core, "/api/v1/namespaces/{namespace}/configmaps/{name}")
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "ConfigMap",
                                                        "version": "v1"}
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    schemas = core["components"]["schemas"]
    container = schemas["io.k8s.api.core.v1.Container"]
    assert container["required"] == ["name"]
    env = container["properties"]["env"]
    assert (env["x-kubernetes-patch-merge-key"], env["x-kubernetes-patch-strategy"]) == (
        "name", "merge")
    assert schemas["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    custom = _v3(http_admin, "apis/example.com/v1")
    patch = _patch(custom, f"{WIDGETS}/{{name}}".replace("default", "{namespace}"))
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    assert "application/merge-patch+json" in patch["requestBody"]["content"]
    widget = custom["components"]["schemas"]["com.example.v1.Widget"]
    assert widget["properties"]["spec"]["properties"]["size"] == {"type": "integer"}
    assert widget["properties"]["metadata"] == {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}


def test_a_documents_hash_follows_its_crds(http_admin: Http, admin: k8s.ApiClient,
                                           widgets: None) -> None:
    _status, root = http_admin.get("/openapi/v3")
    before = root["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    unchanged = http_admin.get("/openapi/v3")[1]["paths"]["apis/example.com/v1"]
    assert unchanged["serverRelativeURL"] == before
    ext: Any = k8s.ApiextensionsV1Api(admin)
    crd = ext.read_custom_resource_definition("widgets.example.com")
    crd.spec.versions[0].additional_printer_columns = []  # not in the document: same hash
    ext.replace_custom_resource_definition("widgets.example.com", crd)
    same = http_admin.get("/openapi/v3")[1]["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    assert same == before
    crd = ext.read_custom_resource_definition("widgets.example.com")
    crd.spec.versions[0].var_schema.open_apiv3_schema.properties["spec"].properties["shape"] = (
        k8s.V1JSONSchemaProps(type="string"))
    ext.replace_custom_resource_definition("widgets.example.com", crd)
    after = http_admin.get("/openapi/v3")[1]["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    assert after != before
    status, headers, _body = http_admin.request("GET", before)
    assert status == 301
    assert headers["Location"] == after
    status, headers, _body = http_admin.request("GET", after)
    assert (status, headers["Cache-Control"]) == (200, "public, immutable")
    assert http_admin.get("/openapi/v3/apis/nothing.example.com/v1")[0] == 404


def test_v2_as_json_and_as_protobuf(http_admin: Http, widgets: None) -> None:
    status, document = http_admin.get("/openapi/v2", Accept="application/json")
    assert (status, document["swagger"]) == (200, "2.0")
    definitions = document["definitions"]
    assert {"io.k8s.api.core.v1.Pod", "com.example.v1.Widget"} <= set(definitions)
    spec = definitions["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]
    assert spec["$ref"] == "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
    patch = document["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    assert patch["x-kubernetes-action"] == "patch"
    status, headers, body = http_admin.request("GET", "/openapi/v2", headers={
        "Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert status == 200
    assert headers["Content-Type"] == (
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    assert body[:5] == b"\n\x032.0"  # Document.swagger = "2.0", field 1
    assert b"io.k8s.api.core.v1.Pod" in body


def _send(http: Http, method: str, path: str, body: Any,
          content_type: str = "application/json") -> tuple[int, Any, Any]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    status, headers, answer = http.request(method, path, raw, {"Content-Type": content_type})
    return status, headers, json.loads(answer)


def test_field_validation_strict_warn_ignore(http_admin: Http) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    body = {"metadata": {"name": "one", "colour": "red"}, "data": {"a": "b"}, "extra": 1}
    status, _headers, answer = _send(http_admin, "POST", f"{path}?fieldValidation=Strict", body)
    assert (status, answer["reason"]) == (400, "BadRequest")
    assert answer["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "metadata.colour", unknown field "extra"')
    status, headers, answer = _send(http_admin, "POST", path, body)  # Warn, the default
    assert status == 201
    assert sorted(headers.get_all("Warning")) == [
        '299 - "unknown field \\"extra\\""', '299 - "unknown field \\"metadata.colour\\""']
    assert "extra" not in answer
    assert "colour" not in answer["metadata"]
    status, headers, answer = _send(http_admin, "POST", f"{path}?fieldValidation=Ignore",
                                    {**body, "metadata": {"name": "two"}})
    assert status == 201
    assert headers.get_all("Warning") is None
    duplicated = b'{"metadata": {"name": "three"}, "data": {"a": "1", "a": "2"}}'
    status, _headers, answer = _send(http_admin, "POST", f"{path}?fieldValidation=Strict",
                                     duplicated)
    assert status == 400
    assert 'duplicate field "a"' in answer["message"]
    status, _headers, answer = _send(http_admin, "POST", f"{path}?fieldValidation=Loud", body)
    assert status == 400
    assert "fieldValidation" in answer["message"]
    apply = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "four"},
             "data": {"a": "b"}, "extra": 1}
    status, _headers, answer = _send(
        http_admin, "PATCH", f"{path}/four?fieldManager=me&fieldValidation=Strict", apply,
        "application/apply-patch+yaml")
    assert status == 400
    assert answer["message"] == ("failed to create typed patch object (/v1, Kind=ConfigMap): "
                                 ".extra: field not declared in schema")


def test_custom_resources_are_pruned_defaulted_and_checked(
    http_admin: Http, admin: k8s.ApiClient
) -> None:
    crd = json.loads(json.dumps(WIDGETS_CRD))
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["required"] = ["size"]
    spec_schema["properties"].update({
        "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "port": {"x-kubernetes-int-or-string": True},
    })
    cast(Any, k8s.ApiextensionsV1Api(admin)).create_custom_resource_definition(crd)
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
              "spec": {"size": 1, "port": "http", "unknown": True, "extra": {"any": ["x"]}}}
    status, _headers, created = _send(http_admin, "POST", WIDGETS, widget)
    assert status == 201
    assert created["spec"] == {"size": 1, "port": "http", "mode": "slow",
                               "extra": {"any": ["x"]}}
    bad = {**widget, "metadata": {"name": "bad"},
           "spec": {"mode": "medium", "replicas": 9, "name": "Bad-Name", "port": 1.5}}
    status, _headers, answer = _send(http_admin, "POST", WIDGETS, bad)
    assert (status, answer["reason"]) == (422, "Invalid")
    assert answer["message"].startswith('Widget.example.com "bad" is invalid: [')
    causes = {(c["field"], c["reason"]) for c in answer["details"]["causes"]}
    assert causes == {
        ("spec.size", "FieldValueRequired"), ("spec.mode", "FieldValueNotSupported"),
        ("spec.replicas", "FieldValueInvalid"), ("spec.name", "FieldValueInvalid"),
        ("spec.port", "FieldValueInvalid")}
    assert 'spec.mode: Unsupported value: "medium": supported values: "fast", "slow"' in (
        answer["message"])
    assert "spec.replicas: Invalid value: 9: spec.replicas in body should be less than or " \
           "equal to 5" in answer["message"]
    status, _headers, answer = _send(http_admin, "PATCH", f"{WIDGETS}/w",
                                     {"spec": {"size": "big"}}, "application/merge-patch+json")
    assert status == 422
    assert answer["details"]["causes"][0]["field"] == "spec.size"


def test_strategic_merge_follows_the_schemas_merge_keys() -> None:
    from hypd_local.kube.patch import strategic_merge_patch
    from hypd_local.kube.schemas import builtin_definitions, builtin_root

    definitions = builtin_definitions()
    pod = definitions[builtin_root("", "v1", "Pod") or ""]
    current = {"metadata": {"finalizers": ["a"]}, "spec": {
        "containers": [{"name": "main", "image": "x:1",
                        "ports": [{"containerPort": 80}, {"containerPort": 81}],
                        "env": [{"name": "A", "value": "1"}]}],
        "tolerations": [{"key": "a"}],
        "volumes": [{"name": "data", "emptyDir": {}}]}}
    patch = {"metadata": {"finalizers": ["b"], "$deleteFromPrimitiveList/finalizers": ["a"]},
             "spec": {
                 "$setElementOrder/containers": [{"name": "main"}],
                 "containers": [{"name": "main", "image": "x:2",
                                 "$setElementOrder/ports": [{"containerPort": 81},
                                                            {"containerPort": 90}],
                                 "ports": [{"containerPort": 90},
                                           {"containerPort": 80, "$patch": "delete"}]}],
                 "tolerations": [{"key": "b"}],
                 "volumes": [{"name": "data", "$retainKeys": ["name", "hostPath"],
                              "hostPath": {"path": "/d"}}]}}
    merged = strategic_merge_patch(current, patch, pod, definitions.get)
    container = merged["spec"]["containers"][0]
    assert container["image"] == "x:2"
    assert container["ports"] == [{"containerPort": 81}, {"containerPort": 90}]
    assert container["env"] == [{"name": "A", "value": "1"}]
    assert merged["spec"]["tolerations"] == [{"key": "b"}]
    assert merged["spec"]["volumes"] == [{"name": "data", "hostPath": {"path": "/d"}}]
    assert merged["metadata"]["finalizers"] == ["b"]
