"""The emulated cluster's Kubernetes API as the real kubectl (v1.37, from the pinned Lambda
layer) sees it: what a user types, and what the API refuses."""

from __future__ import annotations

import json
import re
from typing import Any, cast

from kubernetes import client as k8s

from hypd_local.clock import VirtualClock
from hypd_local.emulator.eks_catalog import access_policy_arn
from hypd_local.kube import VIEW, AccessDecision, AccessPolicy, KubeApiServer, karpenter
from tests.kube.conftest import CLUSTER, KubectlFactory, Principals, eks_token
from tests.kubectl import Kubectl


def test_version_is_the_clusters(kubectl: Kubectl, server: KubeApiServer) -> None:
    version = json.loads(kubectl.run("version", "-o", "json"))
    server_version = version["serverVersion"]
    assert (server_version["major"], server_version["minor"]) == ("1", "33")
    assert server_version["gitVersion"].startswith("v1.33.")
    assert "-eks-" in server_version["gitVersion"]
    assert server_version["platform"] == "linux/amd64"
    assert version["clientVersion"]["gitVersion"].startswith("v1.37.")
    server.kubernetes_version = "1.31"
    text = kubectl.run("version")
    assert "Server Version: v1.31." in text


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def test_watch_nodes_pods_and_custom_resources_by_name(
    kubectl: Kubectl, server: KubeApiServer, admin: k8s.ApiClient
) -> None:
    server.join_node("hyperpod-i-0aaa", {})
    with kubectl.watch("get", "nodes", "--watch", "-o", "name") as watch:
        watch.wait_for("node/hyperpod-i-0aaa")
        server.join_node("hyperpod-i-0bbb", {})
        watch.wait_for("node/hyperpod-i-0bbb")
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespaced_pod("default", _pod("first"))
    with kubectl.watch("get", "pods", "-n", "default", "--watch", "-o", "name") as watch:
        watch.wait_for("pod/first")
        core.create_namespaced_pod("default", _pod("second"))
        watch.wait_for("pod/second")
    server.ensure_crds(karpenter.CRDS, "hyperpod")
    custom: Any = k8s.CustomObjectsApi(admin)
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
            "spec": {"template": {"spec": {}}}}
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", pool)
    # kubectl lists, prints, then watches from the list's resourceVersion: what is created
    # after the first line is in the watch, however late the watch request comes
    with kubectl.watch("get", "nodepools.karpenter.sh", "--watch", "-o", "name") as watch:
        watch.wait_for("nodepool.karpenter.sh/gpu")
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools",
                                            {**pool, "metadata": {"name": "cpu"}})
        watch.wait_for("nodepool.karpenter.sh/cpu")


def _columns(text: str) -> list[list[str]]:
    """kubectl's table output, split into cells (cells hold no double spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


def test_get_nodes_ready_and_the_wide_columns(kubectl: Kubectl, server: KubeApiServer,
                                              clock: VirtualClock) -> None:
    server.join_node("hyperpod-i-0ready", {"node.kubernetes.io/instance-type": "ml.g5.8xlarge"},
                     addresses=[{"type": "InternalIP", "address": "10.1.2.3"}])
    server.join_node("hyperpod-i-0booting", {}, ready=False)
    server.join_node("hyperpod-i-0drained", {"node-role.kubernetes.io/gpu": ""})
    server.store.mutate(server.store.builtin_type("", "nodes"), None, "hyperpod-i-0drained",
                        lambda node: node["spec"].update(unschedulable=True), "kubectl")
    clock.advance(5 * 60)
    table = _columns(kubectl.run("get", "nodes"))
    assert table[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = {row[0]: row for row in table[1:]}
    assert rows["hyperpod-i-0ready"][1:4] == ["Ready", "<none>", "5m"]
    assert rows["hyperpod-i-0ready"][4].startswith("v1.33.4-eks-")
    assert rows["hyperpod-i-0booting"][1] == "NotReady"
    assert rows["hyperpod-i-0drained"][1:3] == ["Ready,SchedulingDisabled", "gpu"]
    wide = _columns(kubectl.run("get", "nodes", "-o", "wide"))
    assert wide[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP",
                       "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
    row = next(r for r in wide if r[0] == "hyperpod-i-0ready")
    assert row[5:7] == ["10.1.2.3", "<none>"]
    # --sort-by wants whole objects in the rows (includeObject=Object)
    names = [r[0] for r in _columns(kubectl.run("get", "nodes", "--sort-by=.metadata.name"))[1:]]
    assert names == sorted(names)
    labelled = _columns(kubectl.run("get", "node", "hyperpod-i-0ready", "-L",
                                    "node.kubernetes.io/instance-type"))
    assert labelled[1][-1] == "ml.g5.8xlarge"


def test_get_pods_status_restarts_and_namespaces(kubectl: Kubectl, admin: k8s.ApiClient,
                                                 clock: VirtualClock) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespaced_pod("default", _pod("web"))
    core.create_namespace({"metadata": {"name": "jobs"}})
    crashing = core.create_namespaced_pod("jobs", _pod("crashing"))
    crashing_status = {
        "phase": "Running", "podIP": "10.0.0.7",
        "containerStatuses": [{
            "name": "main", "image": "busybox", "imageID": "", "ready": False,
            "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "finishedAt": clock.now().strftime(
                "%Y-%m-%dT%H:%M:%SZ")}}}]}
    core.patch_namespaced_pod_status("crashing", "jobs", {"status": crashing_status})
    core.patch_namespaced_pod("crashing", "jobs", {"spec": {"nodeName": "hyperpod-i-0aaa"}})
    assert crashing.metadata.name == "crashing"
    clock.advance(90)
    table = _columns(kubectl.run("get", "pods", "-A", "-o", "wide"))
    assert table[0] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                        "NOMINATED NODE", "READINESS GATES"]
    rows = {row[1]: row for row in table[1:]}
    assert rows["web"][0] == "default"
    assert rows["web"][2:5] == ["0/1", "Pending", "0"]
    assert rows["crashing"][0] == "jobs"
    assert rows["crashing"][2:5] == ["0/1", "CrashLoopBackOff", "3 (90s ago)"]
    assert rows["crashing"][6:8] == ["10.0.0.7", "hyperpod-i-0aaa"]


WIDGETS_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer"}, "color": {"type": "string"}}},
                "status": {"type": "object", "properties": {"conditions": {
                    "type": "array", "items": {"type": "object", "properties": {
                        "type": {"type": "string"}, "status": {"type": "string"}}}}}}}}},
            "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                {"name": "Ready", "type": "string",
                 "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
                {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
        }],
    },
}


def test_custom_resources_print_the_crds_columns(kubectl: Kubectl, admin: k8s.ApiClient,
                                                 server: KubeApiServer,
                                                 clock: VirtualClock) -> None:
    cast(Any, k8s.ApiextensionsV1Api(admin)).create_custom_resource_definition(WIDGETS_CRD)
    custom: Any = k8s.CustomObjectsApi(admin)
    custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", {
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
        "spec": {"size": 3, "color": "blue"}})
    custom.patch_namespaced_custom_object_status("example.com", "v1", "default", "widgets",
                                                 "w1", {"status": {"conditions": [
                                                     {"type": "Ready", "status": "True"}]}})
    clock.advance(120)
    assert _columns(kubectl.run("get", "widgets")) == [
        ["NAME", "SIZE", "READY", "AGE"], ["w1", "3", "True", "2m"]]
    assert _columns(kubectl.run("get", "widgets", "-o", "wide")) == [
        ["NAME", "SIZE", "READY", "COLOR", "AGE"], ["w1", "3", "True", "blue", "2m"]]
    # Karpenter's CRDs define no columns: Name and Age
    server.ensure_crds(karpenter.CRDS, "hyperpod")
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
        "spec": {"template": {"spec": {}}}})
    assert _columns(kubectl.run("get", "nodepools"))[0] == ["NAME", "AGE"]
    # a CRD itself: the default table
    assert _columns(kubectl.run("get", "crd", "widgets.example.com"))[0] == ["NAME",
                                                                            "CREATED AT"]


def test_watch_prints_table_rows_as_nodes_change(kubectl: Kubectl,
                                                 server: KubeApiServer) -> None:
    server.join_node("hyperpod-i-0aaa", {})
    with kubectl.watch("get", "nodes", "--watch") as watch:
        assert re.split(r"\s{2,}", watch.wait_for("NAME")) == ["NAME", "STATUS", "ROLES", "AGE",
                                                              "VERSION"]
        watch.wait_for(lambda line: line.startswith("hyperpod-i-0aaa") and " Ready " in line)
        server.set_node_ready("hyperpod-i-0aaa", False)
        watch.wait_for(lambda line: line.startswith("hyperpod-i-0aaa") and "NotReady" in line)
        server.join_node("hyperpod-i-0bbb", {})
        watch.wait_for(lambda line: line.startswith("hyperpod-i-0bbb") and " Ready " in line)


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: main
        image: nginx:1
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        ports: [{containerPort: 80}]
        resources: {limits: {cpu: 1, memory: 1Gi}}
"""


def test_apply_validates_on_the_server_and_patches_by_the_schemas(kubectl: Kubectl) -> None:
    assert kubectl.run("apply", "-f", "-", stdin=DEPLOYMENT).strip() == (
        "deployment.apps/web created")
    assert kubectl.run("apply", "-f", "-", stdin=DEPLOYMENT).strip() == (
        "deployment.apps/web unchanged")
    changed = DEPLOYMENT.replace(', {name: B, value: "2"}', "").replace("nginx:1", "nginx:2")
    assert kubectl.run("apply", "-f", "-", stdin=changed).strip() == (
        "deployment.apps/web configured")
    container = kubectl.json("get", "deployment", "web")["spec"]["template"]["spec"][
        "containers"][0]
    # kubectl computed a strategic merge patch from the OpenAPI v3 schemas (env merges on
    # name: B is deleted, A kept) and the server applied it
    assert container["env"] == [{"name": "A", "value": "1"}]
    assert container["image"] == "nginx:2"
    assert container["resources"]["limits"] == {"cpu": 1, "memory": "1Gi"}
    # ports merge on containerPort, tolerations (no merge key) are replaced whole
    ported = changed.replace("[{containerPort: 80}]", "[{containerPort: 8080, name: http}]")
    ported += ("      tolerations: [{key: gpu, operator: Exists}]\n")
    assert "configured" in kubectl.run("apply", "-f", "-", stdin=ported)
    tolerated = ported.replace("{key: gpu, operator: Exists}", "{key: spot, operator: Exists}")
    assert "configured" in kubectl.run("apply", "-f", "-", stdin=tolerated)
    pod_spec = kubectl.json("get", "deployment", "web")["spec"]["template"]["spec"]
    assert pod_spec["containers"][0]["ports"] == [{"containerPort": 8080, "name": "http"}]
    assert pod_spec["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    typo = DEPLOYMENT.replace("replicas: 2", "replicas: 2\n  replica: 3")
    error = kubectl.fails("apply", "-f", "-", stdin=typo)
    assert 'strict decoding error: unknown field "spec.replica"' in error
    # without validation the server drops the field, as kube-apiserver does
    assert "configured" in kubectl.run("apply", "--validate=false", "-f", "-", stdin=typo)
    assert "replica" not in kubectl.json("get", "deployment", "web")["spec"]
    warned = kubectl.stderr("apply", "--validate=warn", "-f", "-", stdin=typo)
    assert 'Warning: unknown field "spec.replica"' in warned


WIDGET = """\
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: SIZE, color: blue}
"""


def test_custom_resources_are_checked_against_their_crds_schema(kubectl: Kubectl) -> None:
    assert "created" in kubectl.run("apply", "-f", "-", stdin=json.dumps(WIDGETS_CRD))
    error = kubectl.fails("apply", "-f", "-", stdin=WIDGET.replace("SIZE", '"three"'))
    assert ('The Widget "w1" is invalid: spec.size: Invalid value: "string": spec.size in body '
            'must be of type integer: "string"') in error
    assert "created" in kubectl.run("apply", "-f", "-", stdin=WIDGET.replace("SIZE", "3"))
    error = kubectl.fails("apply", "-f", "-",
                          stdin=WIDGET.replace("SIZE", "3").replace("blue", "blue, shape: x"))
    assert 'strict decoding error: unknown field "spec.shape"' in error
    assert "spec" in kubectl.run("explain", "widget.spec")
    assert "size\t<integer>" in kubectl.run("explain", "widget.spec")


def test_server_side_apply_twice_changes_nothing_the_second_time(kubectl: Kubectl) -> None:
    assert "created" in kubectl.run("apply", "-f", "-", stdin=json.dumps(WIDGETS_CRD))
    first = WIDGET.replace("SIZE", "3")
    assert "created" in kubectl.run("apply", "-f", "-", stdin=first)
    # from client-side to server-side apply with a changed value: kubectl takes over the
    # fields its last-applied annotation holds, no conflict
    second = WIDGET.replace("SIZE", "4")
    assert "serverside-applied" in kubectl.run("apply", "--server-side", "-f", "-", stdin=second)
    applied = kubectl.json("get", "widget", "w1", "--show-managed-fields")
    assert applied["spec"]["size"] == 4
    assert "serverside-applied" in kubectl.run("apply", "--server-side", "-f", "-", stdin=second)
    again = kubectl.json("get", "widget", "w1", "--show-managed-fields")
    assert again["metadata"]["resourceVersion"] == applied["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"] == applied["metadata"]["managedFields"]
    managers = {(m["manager"], m["operation"]) for m in again["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in managers
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", m["time"])
               for m in again["metadata"]["managedFields"])
    assert "serverside-applied" in kubectl.run("apply", "--server-side", "-f", "-",
                                               stdin=DEPLOYMENT)
    assert "serverside-applied" in kubectl.run("apply", "--server-side", "-f", "-",
                                               stdin=DEPLOYMENT)


def test_explain_reads_both_openapi_versions(kubectl: Kubectl) -> None:
    v3 = kubectl.run("explain", "pods.spec.containers.ports")
    assert "FIELD: ports <[]ContainerPort>" in v3
    assert "containerPort\t<integer> -required-" in v3
    # the v2 document, in the protobuf encoding kubectl asks for
    v2 = kubectl.run("explain", "deployment.spec", "--output=plaintext-openapiv2")
    assert "KIND:     Deployment" in v2
    assert "replicas\t<integer>" in v2


def test_commands_that_send_protobuf_are_refused_with_415(kubectl: Kubectl) -> None:
    # kubectl's typed commands (create configmap/namespace/secret...) send protobuf, which the
    # local API does not decode; the same objects go through apply
    error = kubectl.fails("create", "configmap", "typed", "--from-literal=a=b")
    assert "the body of the request was in an unknown format" in error
    manifest = kubectl.run("create", "configmap", "typed", "--from-literal=a=b",
                           "--dry-run=client", "-o", "yaml")
    assert "created" in kubectl.run("apply", "-f", "-", stdin=manifest)


def test_what_the_api_refuses_kubectl_reports(
    kubectl: Kubectl, kubectl_as: KubectlFactory, principals: Principals,
    access: dict[str, AccessDecision],
) -> None:
    # no valid token: 401
    anonymous = kubectl_as("k8s-aws-v1.not-a-token")
    assert "error: You must be logged in to the server" in anonymous.fails("get", "nodes")
    # an access entry without the policy for it: 403, naming the user and the resource
    arn, session = principals.role("viewer")
    access[arn] = AccessDecision("viewer", policies=(AccessPolicy(
        access_policy_arn("aws", VIEW)),))
    viewer = kubectl_as(eks_token(session, CLUSTER))
    assert viewer.run("get", "configmaps", "-n", "default", "-o", "name") == ""
    error = viewer.fails("apply", "-f", "-", stdin=DEPLOYMENT)
    assert 'User "viewer" cannot create resource "deployments" in API group "apps" in the ' \
           'namespace "default"' in error, error
    assert 'User "viewer" cannot list resource "secrets"' in viewer.fails(
        "get", "secrets", "-n", "default")
    # unknown types and objects: 404
    assert 'the server doesn\'t have a resource type "gizmos"' in kubectl.fails("get", "gizmos")
    assert 'configmaps "absent" not found' in kubectl.fails("get", "configmap", "absent")
    # an invalid name: 422
    bad = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name, namespace: default}\n'
    assert 'The ConfigMap "Bad_Name" is invalid: metadata.name' in kubectl.fails(
        "apply", "-f", "-", stdin=bad)


def test_a_server_dry_run_leaves_nothing_behind(kubectl: Kubectl) -> None:
    out = kubectl.run("apply", "--dry-run=server", "-f", "-", stdin=DEPLOYMENT)
    assert out.strip() == "deployment.apps/web created (server dry run)"
    assert "NotFound" in kubectl.fails("get", "deployment", "web")
    kubectl.run("apply", "-f", "-", stdin=DEPLOYMENT)
    before = kubectl.json("get", "deployment", "web")["metadata"]["resourceVersion"]
    changed = DEPLOYMENT.replace("replicas: 2", "replicas: 5")
    assert "configured (server dry run)" in kubectl.run("apply", "--dry-run=server", "-f", "-",
                                                        stdin=changed)
    assert kubectl.run("delete", "deployment", "web", "--dry-run=server").strip() == (
        'deployment.apps "web" deleted from default namespace (server dry run)')
    after = kubectl.json("get", "deployment", "web")
    assert (after["metadata"]["resourceVersion"], after["spec"]["replicas"]) == (before, 2)
