"""The Kubernetes API surface through the official client: CRUD, selectors, patches, apply, CRDs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from hypd_local.clock import VirtualClock


def _fails(code: int, call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    with pytest.raises(ApiException) as caught:
        call(*args, **kwargs)
    assert caught.value.status == code
    body: dict[str, Any] = json.loads(caught.value.body or "{}")
    assert (body["kind"], body["apiVersion"], body["status"], body["code"]) == (
        "Status", "v1", "Failure", code)
    return body


def _cm(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": {"k": "v"}}


def test_configmap_crud_and_status_bodies(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    created = core.create_namespaced_config_map("default", _cm("one"))
    assert created.metadata.uid
    assert created.metadata.resource_version
    assert created.metadata.creation_timestamp is not None
    body = _fails(409, core.create_namespaced_config_map, "default", _cm("one"))
    assert body["reason"] == "AlreadyExists"
    assert body["details"] == {"name": "one", "kind": "configmaps"}
    assert body["message"] == 'configmaps "one" already exists'
    got = core.read_namespaced_config_map("one", "default")
    assert got.data == {"k": "v"}
    got.data = {"k": "w"}
    replaced = core.replace_namespaced_config_map("one", "default", got)
    assert int(replaced.metadata.resource_version) > int(got.metadata.resource_version)
    got.data = {"k": "stale"}
    body = _fails(409, core.replace_namespaced_config_map, "one", "default", got)
    assert body["reason"] == "Conflict"
    core.delete_namespaced_config_map("one", "default")
    body = _fails(404, core.read_namespaced_config_map, "one", "default")
    assert body["reason"] == "NotFound"
    assert body["details"] == {"name": "one", "kind": "configmaps"}
    _fails(404, core.delete_namespaced_config_map, "one", "default")
    _fails(404, core.create_namespaced_config_map, "nowhere", _cm("x"))
    body = _fails(422, core.create_namespaced_config_map, "default", _cm("Bad_Name"))
    assert body["reason"] == "Invalid"


def test_label_and_field_selectors(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespaced_config_map("default", _cm("a", {"app": "x", "tier": "web"}))
    core.create_namespaced_config_map("default", _cm("b", {"app": "y", "tier": "db"}))
    core.create_namespaced_config_map("default", _cm("c", {"app": "z"}))

    def names(**kwargs: str) -> list[str]:
        items = core.list_namespaced_config_map("default", **kwargs).items
        return sorted(i.metadata.name for i in items)

    assert names(label_selector="app=x") == ["a"]
    assert names(label_selector="app==y") == ["b"]
    assert names(label_selector="app!=x") == ["b", "c"]
    assert names(label_selector="app in (x, z)") == ["a", "c"]
    assert names(label_selector="app notin (x,z)") == ["b"]
    assert names(label_selector="tier") == ["a", "b"]
    assert names(label_selector="!tier") == ["c"]
    assert names(label_selector="tier,app in (y,z)") == ["b"]
    assert names(field_selector="metadata.name=c") == ["c"]
    assert names(field_selector="metadata.name!=c,metadata.namespace=default") == ["a", "b"]
    across = core.list_config_map_for_all_namespaces(label_selector="app=x").items
    assert [i.metadata.name for i in across] == ["a"]
    first = core.list_namespaced_config_map("default", limit=2, label_selector="app")
    assert len(first.items) == 2
    assert first.metadata._continue
    rest = core.list_namespaced_config_map("default", limit=2, label_selector="app",
                                           _continue=first.metadata._continue)
    assert [i.metadata.name for i in rest.items] == ["c"]


def test_patches(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    apps: Any = k8s.AppsV1Api(admin)
    core.create_namespaced_config_map("default", _cm("p", {"a": "1"}))
    merged = core.patch_namespaced_config_map(
        "p", "default", {"metadata": {"labels": {"b": "2", "a": None}}},
        _content_type="application/merge-patch+json")
    assert merged.metadata.labels == {"b": "2"}
    patched = core.patch_namespaced_config_map(
        "p", "default", [{"op": "add", "path": "/data/extra", "value": "e"},
                         {"op": "remove", "path": "/data/k"}])
    assert patched.data == {"extra": "e"}
    _fails(422, core.patch_namespaced_config_map, "p", "default",
           [{"op": "remove", "path": "/data/missing"}])
    deployment = {
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "a", "image": "a:1"},
                                                      {"name": "b", "image": "b:1"}]}}},
    }
    created = apps.create_namespaced_deployment("default", deployment)
    assert created.metadata.generation == 1
    strategic = apps.patch_namespaced_deployment(
        "web", "default",
        {"spec": {"replicas": 3,
                  "template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}})
    images = [c.image for c in strategic.spec.template.spec.containers]
    assert images == ["a:1", "b:2"]
    assert strategic.spec.replicas == 3
    assert strategic.metadata.generation == 2
    _fails(404, apps.patch_namespaced_deployment, "nope", "default", {"spec": {}})


def test_server_side_apply_create_update_conflict(admin: k8s.ApiClient) -> None:
    core: Any = k8s.CoreV1Api(admin)
    manifest = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "ssa", "namespace": "default", "labels": {"x": "1"}},
                "data": {"a": "1", "b": "2"}}
    apply = "application/apply-patch+yaml"
    first = core.patch_namespaced_config_map("ssa", "default", manifest, field_manager="hypd",
                                             _content_type=apply)
    assert first.data == {"a": "1", "b": "2"}
    managers = {(m.manager, m.operation) for m in first.metadata.managed_fields}
    assert ("hypd", "Apply") in managers
    manifest["data"] = {"a": "10"}  # b no longer applied: removed
    second = core.patch_namespaced_config_map("ssa", "default", manifest, field_manager="hypd",
                                              _content_type=apply)
    assert second.data == {"a": "10"}
    assert second.metadata.uid == first.metadata.uid
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"},
             "data": {"a": "other"}}
    body = _fails(409, core.patch_namespaced_config_map, "ssa", "default", other,
                  field_manager="someone-else", _content_type=apply)
    assert body["reason"] == "Conflict"
    assert body["details"]["causes"][0]["field"] == ".data.a"
    forced = core.patch_namespaced_config_map("ssa", "default", other,
                                              field_manager="someone-else", force=True,
                                              _content_type=apply)
    assert forced.data == {"a": "other"}
    _fails(400, core.patch_namespaced_config_map, "ssa", "default", other, _content_type=apply)


def test_unchanged_apply_is_a_no_op_and_every_managed_field_has_a_time(
    admin: k8s.ApiClient, clock: VirtualClock
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    apply = "application/apply-patch+yaml"
    core.create_namespaced_config_map("default", _cm("owned"), field_manager="creator")
    clock.advance(90)
    manifest = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "owned", "namespace": "default"}, "data": {"k": "v"}}
    # the same values under a second manager: the object is unchanged, the fields are shared
    shared = core.patch_namespaced_config_map("owned", "default", manifest,
                                              field_manager="applier", _content_type=apply)
    entries = {(m.manager, m.operation): m for m in shared.metadata.managed_fields}
    assert set(entries) == {("creator", "Update"), ("applier", "Apply")}
    assert all(m.time is not None and m.time.tzinfo for m in entries.values())
    assert entries[("applier", "Apply")].time > entries[("creator", "Update")].time
    clock.advance(90)
    again = core.patch_namespaced_config_map("owned", "default", manifest,
                                             field_manager="applier", _content_type=apply)
    assert again.metadata.resource_version == shared.metadata.resource_version
    assert again.metadata.managed_fields == shared.metadata.managed_fields


def test_crd_then_custom_objects(admin: k8s.ApiClient, tmp_path: Path) -> None:
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "hyperpodnodeclasses.karpenter.sagemaker.amazonaws.com"},
        "spec": {
            "group": "karpenter.sagemaker.amazonaws.com", "scope": "Cluster",
            "names": {"plural": "hyperpodnodeclasses", "singular": "hyperpodnodeclass",
                      "kind": "HyperpodNodeClass", "listKind": "HyperpodNodeClassList"},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {
                              "type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                          "subresources": {"status": {}}}],
        },
    }
    ext: Any = k8s.ApiextensionsV1Api(admin)
    created = ext.create_custom_resource_definition(crd)
    established = {c.type: c.status for c in created.status.conditions}
    assert established["Established"] == "True"
    custom: Any = k8s.CustomObjectsApi(admin)
    group, version, plural = "karpenter.sagemaker.amazonaws.com", "v1", "hyperpodnodeclasses"
    obj = {"apiVersion": f"{group}/{version}", "kind": "HyperpodNodeClass",
           "metadata": {"name": "default", "labels": {"team": "ml"}},
           "spec": {"instanceGroups": ["workers"]}}
    made = custom.create_cluster_custom_object(group, version, plural, obj)
    assert made["metadata"]["generation"] == 1
    listed = custom.list_cluster_custom_object(group, version, plural, label_selector="team=ml")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["default"]
    patched = custom.patch_cluster_custom_object(
        group, version, plural, "default", {"spec": {"instanceGroups": ["a", "b"]}})
    assert patched["spec"]["instanceGroups"] == ["a", "b"]
    assert patched["metadata"]["generation"] == 2
    status = custom.patch_cluster_custom_object_status(
        group, version, plural, "default", {"status": {"ready": True}, "spec": {"x": 1}})
    assert status["status"] == {"ready": True}
    assert "x" not in status["spec"]
    _fails(409, custom.create_cluster_custom_object, group, version, plural, obj)
    resources: Any = k8s.CustomObjectsApi(admin).get_api_resources(group, version)
    assert {r.name for r in resources.resources} == {plural, f"{plural}/status"}
    cache = str(tmp_path / "discovery.json")
    dynamic: Any = DynamicClient(admin, cache_file=cache)  # type: ignore[no-untyped-call]
    api = dynamic.resources.get(api_version=f"{group}/{version}", kind="HyperpodNodeClass")
    assert api.get(name="default").spec.instanceGroups == ["a", "b"]
    ext.delete_custom_resource_definition(crd["metadata"]["name"])
    _fails(404, custom.list_cluster_custom_object, group, version, plural)


def test_namespaced_crd_validation_and_namespace_cascade(admin: k8s.ApiClient) -> None:
    ext: Any = k8s.ApiextensionsV1Api(admin)
    bad: dict[str, Any] = {"metadata": {"name": "wrong.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True}]}}
    _fails(422, ext.create_custom_resource_definition, bad)
    bad["metadata"]["name"] = "widgets.example.com"
    ext.create_custom_resource_definition(bad)
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespace({"metadata": {"name": "team"}})
    assert core.read_namespace("team").status.phase == "Active"
    custom: Any = k8s.CustomObjectsApi(admin)
    custom.create_namespaced_custom_object(
        "example.com", "v1", "team", "widgets",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert custom.get_namespaced_custom_object("example.com", "v1", "team", "widgets", "w")
    core.create_namespaced_config_map("team", _cm("c"))
    core.delete_namespace("team")
    _fails(404, core.read_namespace, "team")
    _fails(404, custom.get_namespaced_custom_object, "example.com", "v1", "team", "widgets", "w")


def test_discovery_and_other_kinds(admin: k8s.ApiClient) -> None:
    groups = {g.name for g in k8s.ApisApi(admin).get_api_versions().groups}
    assert {"apps", "rbac.authorization.k8s.io", "apiextensions.k8s.io"} <= groups
    core_resources = {r.name for r in cast(Any, k8s.CoreV1Api(admin)).get_api_resources().resources}
    assert {"pods", "nodes", "secrets", "persistentvolumes", "events"} <= core_resources
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespaced_secret("default", {"metadata": {"name": "s"},
                                              "stringData": {"password": "pw"}})
    assert core.read_namespaced_secret("s", "default").data == {"password": "cHc="}
    core.create_namespaced_service_account("kube-system", {"metadata": {"name": "hypd"}})
    rbac: Any = k8s.RbacAuthorizationV1Api(admin)
    rbac.create_cluster_role({"metadata": {"name": "reader"},
                              "rules": [{"apiGroups": [""], "resources": ["pods"],
                                         "verbs": ["get"]}]})
    assert rbac.read_cluster_role("reader").rules[0].verbs == ["get"]
    apps: Any = k8s.AppsV1Api(admin)
    apps.create_namespaced_daemon_set("kube-system", {
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    assert [d.metadata.name for d in apps.list_daemon_set_for_all_namespaces().items] == ["agent"]
    core.create_persistent_volume({"metadata": {"name": "pv1"},
                                   "spec": {"capacity": {"storage": "1Gi"},
                                            "accessModes": ["ReadWriteOnce"],
                                            "hostPath": {"path": "/x"}}})
    assert core.read_persistent_volume("pv1").spec.capacity == {"storage": "1Gi"}
    _fails(404, core.read_namespaced_pod, "ghost", "default")


@pytest.mark.parametrize("body", [
    '{"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1", "n": 2}}',  # JSON
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: '1'\n  n: 2\n",  # block YAML
    "{apiVersion: v1, kind: ConfigMap, data: {a: '1', n: 2}}",  # flow YAML, not JSON
])
def test_an_apply_body_reads_the_same_as_json_or_yaml(body: str) -> None:
    from hypd_local.kube.store_base import load_yaml, yaml

    assert load_yaml(body) == yaml.safe_load(body) == {
        "apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1", "n": 2}}
