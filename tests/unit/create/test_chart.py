"""The dependency chart: its source setting (local directory or pinned archive, digest checked
before unpacking), rendering with helm, parsing, and the pure parts of applying it (order,
resource paths, rollout readiness)."""

from __future__ import annotations

import hashlib
import importlib
import io
import os
import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from hypd.create import chart
from hypd.create.chart import (
    ChartArchive,
    ChartDigestMismatch,
    ChartRegionUnknown,
    ChartRenderFailed,
    ChartSourceInvalid,
    HelmUnavailable,
    chart_source,
    chart_values,
    helm_binary,
    parse_chart_setting,
    parse_manifests,
    render_chart,
    verify_digest,
)
from hypd.errors import TemporaryError
from hypd.kubernetes.apply import (
    KubernetesAccessDenied,
    KubernetesApplyConflict,
    KubernetesApplyRejected,
    KubernetesUnavailable,
    ResourceType,
    _error,
    _not_ready,
    apply_order,
)

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "hyperpod-dependencies"
DIGEST = "ab" * 32


# ---------------------------------------------------------------------------- setting
def test_a_plain_or_file_url_setting_is_a_local_directory() -> None:
    assert parse_chart_setting("/opt/charts/deps") == Path("/opt/charts/deps")
    assert parse_chart_setting(" file:///opt/charts/my%20deps ") == Path("/opt/charts/my deps")


def test_an_https_setting_pins_the_archive_and_names_the_chart_path() -> None:
    setting = (
        "https://github.com/aws/sagemaker-hyperpod-cli/archive/refs/tags/v3.1.0.tar.gz"
        f"#sha256={DIGEST.upper()}&path=/helm_chart/HyperPodHelmChart/"
    )
    assert parse_chart_setting(setting) == ChartArchive(
        "https://github.com/aws/sagemaker-hyperpod-cli/archive/refs/tags/v3.1.0.tar.gz",
        DIGEST,
        "helm_chart/HyperPodHelmChart",
    )


def test_the_archive_of_a_git_commit_is_pinned_by_the_commit() -> None:
    commit = "40eb213ed5fe90a4d16f1664db07d174b9b3d69d"
    url = f"https://github.com/aws/sagemaker-hyperpod-cli/archive/{commit}.tar.gz"
    parsed = parse_chart_setting(f"{url}#path=helm_chart/HyperPodHelmChart")
    assert parsed == ChartArchive(url, "", "helm_chart/HyperPodHelmChart", commit)
    assert isinstance(parsed, ChartArchive)
    assert parsed.cache_key == f"commit-{commit}"


def test_the_template_default_chart_setting_is_accepted() -> None:
    import re

    template = (Path(__file__).resolve().parents[3] / "template.yaml").read_text()
    default = re.search(r'Default: "(https://github\.com/[^"]+)"', template)
    assert default is not None
    assert isinstance(parse_chart_setting(default.group(1)), ChartArchive)


@pytest.mark.parametrize(
    ("setting", "match"),
    [
        ("", "empty"),
        ("https://example.com/archive/main.tar.gz", "sha256"),
        ("https://example.com/c.tar.gz", "sha256"),
        ("https://example.com/c.tar.gz#sha256=abc", "sha256"),
        (f"http://example.com/c.tar.gz#sha256={DIGEST}", "must be https"),
        (f"s3://bucket/c.tar.gz#sha256={DIGEST}", "must be https"),
        (f"https://example.com/c.tar.gz#sha256={DIGEST}&path=../../etc", "inside the archive"),
        (f"https://example.com/c.tar.gz#sha256={DIGEST}&ref=main", "unknown"),
    ],
)
def test_bad_settings_are_refused(setting: str, match: str) -> None:
    with pytest.raises(ChartSourceInvalid, match=match):
        parse_chart_setting(setting)


def test_a_local_directory_must_hold_a_chart(tmp_path: Path) -> None:
    assert chart_source(str(CHART)) == CHART
    with pytest.raises(ChartSourceInvalid, match=r"no Chart\.yaml"):
        chart_source(str(tmp_path))


# ---------------------------------------------------------------------------- archives
def tarball(path: Path, files: dict[str, bytes]) -> str:
    """A .tar.gz of `files` at `path`; its sha256."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


CHART_FILES = {
    "sagemaker-hyperpod-cli-3.1.0/README.md": b"cli\n",
    "sagemaker-hyperpod-cli-3.1.0/helm_chart/HyperPodHelmChart/Chart.yaml": (
        b"apiVersion: v2\nname: hyperpod-helm-chart\nversion: 0.1.0\n"
    ),
}


class FakeDownload:
    """Stands in for the https download: copies a local file, counts calls."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.urls: list[str] = []

    def __call__(self, url: str, destination: Path) -> None:
        self.urls.append(url)
        shutil.copyfile(self.source, destination)


def test_verify_digest_accepts_the_pinned_file_only(tmp_path: Path) -> None:
    archive = tmp_path / "c.tar.gz"
    digest = tarball(archive, CHART_FILES)
    verify_digest(archive, digest.upper())
    with pytest.raises(ChartDigestMismatch, match=digest):
        verify_digest(archive, DIGEST)


def test_a_pinned_archive_is_downloaded_once_checked_and_unpacked(tmp_path: Path) -> None:
    archive = tmp_path / "v3.1.0.tar.gz"
    digest = tarball(archive, CHART_FILES)
    download = FakeDownload(archive)
    setting = f"https://example.com/v3.1.0.tar.gz#sha256={digest}&path=helm_chart/HyperPodHelmChart"

    first = chart_source(setting, cache_dir=tmp_path / "cache", download=download)
    second = chart_source(setting, cache_dir=tmp_path / "cache", download=download)

    # path is relative to the archive's single top directory (GitHub's archive layout)
    assert first == second
    assert first.name == "HyperPodHelmChart"
    assert first.parent.parent.name == "sagemaker-hyperpod-cli-3.1.0"
    assert (first / "Chart.yaml").is_file()
    assert download.urls == ["https://example.com/v3.1.0.tar.gz"]  # cached the second time


def test_an_archive_with_another_digest_is_never_unpacked(tmp_path: Path) -> None:
    archive = tmp_path / "v3.1.0.tar.gz"
    tarball(archive, CHART_FILES)
    cache = tmp_path / "cache"

    with pytest.raises(ChartDigestMismatch):
        chart_source(
            f"https://example.com/v3.1.0.tar.gz#sha256={DIGEST}&path=helm_chart",
            cache_dir=cache,
            download=FakeDownload(archive),
        )
    assert not (cache / DIGEST / "src").exists()
    assert not any(p.name.endswith(".yaml") for p in cache.rglob("*"))


def test_an_archive_escaping_its_directory_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    digest = tarball(archive, {"../outside/Chart.yaml": b"apiVersion: v2\n"})
    with pytest.raises(ChartSourceInvalid, match="cannot be unpacked"):
        chart_source(
            f"https://example.com/evil.tar.gz#sha256={digest}",
            cache_dir=tmp_path / "cache",
            download=FakeDownload(archive),
        )
    assert not (tmp_path / "outside").exists()


def test_a_path_without_a_chart_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "c.tar.gz"
    digest = tarball(archive, CHART_FILES)
    with pytest.raises(ChartSourceInvalid, match=r"no Chart\.yaml"):
        chart_source(
            f"https://example.com/c.tar.gz#sha256={digest}&path=docs",
            cache_dir=tmp_path / "cache",
            download=FakeDownload(archive),
        )


# ---------------------------------------------------------------------------- helm
def test_helm_binary_prefers_helm_binary_then_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "helm"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("HELM_BINARY", str(fake))
    assert helm_binary() == str(fake)
    monkeypatch.setenv("HELM_BINARY", str(tmp_path / "missing"))
    with pytest.raises(HelmUnavailable, match="HELM_BINARY"):
        helm_binary()
    monkeypatch.delenv("HELM_BINARY")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert helm_binary() == str(fake)


def test_no_helm_anywhere_is_helm_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HELM_BINARY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(chart, "LAYER_HELM", tmp_path / "opt-helm")
    with pytest.raises(HelmUnavailable, match="Lambda layer") as missing:
        render_chart(CHART, release="deps", namespace="kube-system", values={})
    assert "./dev setup" in missing.value.message


def test_helm_is_found_next_to_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    # ./dev setup extracts it from the locked kubectl/helm layer package into .venv/bin
    monkeypatch.delenv("HELM_BINARY", raising=False)
    monkeypatch.setenv("PATH", "")
    assert helm_binary() == str(Path(sys.executable).parent / "helm")


def test_the_project_chart_renders_with_the_hyperpod_charts_shape() -> None:
    manifests = render_chart(
        CHART, release="hyperpod-dependencies", namespace="kube-system", values={}
    )
    by_kind: dict[str, set[str]] = {}
    for manifest in manifests:
        by_kind.setdefault(manifest["kind"], set()).add(manifest["metadata"]["name"])
    assert by_kind["Namespace"] == {"aws-hyperpod", "kubeflow", "mpi-operator"}
    assert by_kind["CustomResourceDefinition"] == {
        "pytorchjobs.kubeflow.org",
        "mpijobs.kubeflow.org",
    }
    assert by_kind["DaemonSet"] == {"health-monitoring-agent", "nvidia-device-plugin"}
    assert by_kind["Deployment"] == {"training-operator", "mpi-operator"}
    assert "deep-health-check-service-account" in by_kind["ServiceAccount"]
    assert "job-auto-restart" in by_kind["ClusterRoleBinding"]
    agent = next(
        m
        for m in manifests
        if m["kind"] == "DaemonSet" and m["metadata"]["name"] == "health-monitoring-agent"
    )
    assert agent["metadata"]["namespace"] == "aws-hyperpod"


def _agent_image(manifests: list[dict[str, Any]]) -> str:
    (agent,) = [m for m in manifests if m["kind"] == "DaemonSet"
                and m["metadata"]["name"] == "health-monitoring-agent"]
    (container,) = agent["spec"]["template"]["spec"]["containers"]
    return str(container["image"])


def test_the_chart_values_set_the_health_agents_region() -> None:
    assert chart_values("eu-west-1") == {"health-monitoring-agent": {"region": "eu-west-1"}}
    with pytest.raises(ChartRegionUnknown):
        chart_values(None)


def test_the_project_chart_keeps_the_hyperpod_charts_value_names() -> None:
    # HyperPodHelmChart (at the pinned commit): global.region in the parent's values, the
    # health-monitoring-agent subchart's own region value, which wins over it.
    yaml = importlib.import_module("yaml")
    parent = yaml.safe_load((CHART / "values.yaml").read_text())
    agent = yaml.safe_load((CHART / "charts/health-monitoring-agent/values.yaml").read_text())
    assert parent["global"] == {"region": ""}
    assert parent["health-monitoring-agent"] == {"enabled": True}
    assert agent["region"] == ""


def test_the_health_agents_image_follows_the_region_value() -> None:
    def image(values: dict[str, Any]) -> str:
        return _agent_image(render_chart(CHART, release="d", namespace="kube-system",
                                         values=values))

    # Without a Region the chart falls back to us-east-1, as the real one does.
    assert ".dkr.ecr.us-east-1.amazonaws.com/" in image({})
    assert ".dkr.ecr.ap-south-1.amazonaws.com/" in image(chart_values("ap-south-1"))
    assert ".dkr.ecr.eu-west-1.amazonaws.com/" in image({"global": {"region": "eu-west-1"}})
    assert ".dkr.ecr.ap-south-1.amazonaws.com/" in image(
        {"global": {"region": "eu-west-1"}, **chart_values("ap-south-1")}
    )


def test_the_kubernetes_version_reaches_the_templates() -> None:
    manifests = render_chart(CHART, release="d", namespace="kube-system", values={},
                             kube_version="1.31")
    (namespace,) = [m for m in manifests if m["kind"] == "Namespace"
                    and m["metadata"]["name"] == "aws-hyperpod"]
    assert namespace["metadata"]["annotations"]["hypd.dev/rendered-for-kubernetes"] == "v1.31"


def test_values_reach_the_templates() -> None:
    manifests = render_chart(
        CHART,
        release="deps",
        namespace="kube-system",
        values={"namespace": {"create": False}, "trainingOperators": {"enabled": False}},
    )
    names = {(m["kind"], m["metadata"]["name"]) for m in manifests}
    assert ("Namespace", "aws-hyperpod") not in names
    assert ("Deployment", "training-operator") not in names
    assert ("CustomResourceDefinition", "pytorchjobs.kubeflow.org") not in names


def test_a_template_error_is_chart_render_failed(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: broken\nversion: 0.1.0\n")
    (tmp_path / "templates" / "cm.yaml").write_text("{{ .Values.missing.field }}\n")
    with pytest.raises(ChartRenderFailed, match=r"helm template of .* failed"):
        render_chart(tmp_path, release="x", namespace="default", values={})


def fake_helm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A helm that records its arguments and prints one ConfigMap; returns the record file."""
    record = tmp_path / "argv"
    helm = tmp_path / "fake-helm"
    helm.write_text(f"""#!/bin/sh
printf '%s\\n' "$@" > {record}
printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: rendered\\n'
""")
    helm.chmod(0o755)
    monkeypatch.setenv("HELM_BINARY", str(helm))
    return record


def test_remote_subcharts_missing_from_charts_are_fetched_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = fake_helm(tmp_path, monkeypatch)
    real_like = tmp_path / "HyperPodHelmChart"
    (real_like / "charts" / "health-monitoring-agent").mkdir(parents=True)
    (real_like / "Chart.yaml").write_text("""apiVersion: v2
name: hyperpod-helm-chart
version: 0.1.0
dependencies:
  - name: cert-manager
    version: v1.18.2
    repository: oci://quay.io/jetstack/charts
    condition: cert-manager.enabled
  - name: health-monitoring-agent
    version: 0.1.0
    repository: file://charts/health-monitoring-agent
""")
    assert chart.missing_dependencies(real_like) == ["cert-manager"]
    assert chart.missing_dependencies(CHART) == []

    rendered = render_chart(
        real_like,
        release="dependencies",
        namespace="kube-system",
        values={"cert-manager": {"enabled": False}},
        kube_version="1.33",
    )

    assert rendered == [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rendered"}}]
    argv = record.read_text().split("\n")
    assert argv[:3] == ["template", "dependencies", str(real_like)]
    assert {"--include-crds", "--skip-tests", "--dependency-update"} <= set(argv)
    assert argv[argv.index("--namespace") + 1] == "kube-system"
    assert argv[argv.index("--kube-version") + 1] == "1.33"
    render_chart(CHART, release="d", namespace="n", values={})
    assert "--dependency-update" not in record.read_text().split("\n")


def test_helms_homes_go_to_a_temporary_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    env = chart._helm_environment("/tmp/h")
    assert env["HELM_CACHE_HOME"] == os.path.join("/tmp/h", "cache")
    monkeypatch.setenv("HELM_DATA_HOME", "/data")
    assert chart._helm_environment("/tmp/h")["HELM_DATA_HOME"] == "/data"


# ---------------------------------------------------------------------------- parsing
def test_parsing_drops_empty_documents_and_flattens_lists() -> None:
    text = """
---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
  - {apiVersion: v1, kind: Secret, metadata: {name: c}}
"""
    assert [m["metadata"]["name"] for m in parse_manifests(text)] == ["a", "b", "c"]


@pytest.mark.parametrize("text", ["- just\n- a list\n", "kind: ConfigMap\n", "a: [b\n"])
def test_documents_that_are_not_objects_are_render_failures(text: str) -> None:
    with pytest.raises(ChartRenderFailed):
        parse_manifests(text)


# ---------------------------------------------------------------------------- applying
def obj(kind: str, name: str, api_version: str = "v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}


def test_namespaces_and_crds_are_applied_first_in_a_stable_order() -> None:
    crd = obj("CustomResourceDefinition", "x.example.com", "apiextensions.k8s.io/v1")
    manifests = [
        obj("ConfigMap", "a"),
        crd,
        obj("Namespace", "n1"),
        obj("Secret", "b"),
        obj("Namespace", "n2"),
    ]
    assert [m["metadata"]["name"] for m in apply_order(manifests)] == [
        "n1",
        "n2",
        "x.example.com",
        "a",
        "b",
    ]


def test_resource_paths_follow_group_and_scope() -> None:
    assert (
        ResourceType("v1", "configmaps", "ConfigMap", True).path("a", "ns")
        == "/api/v1/namespaces/ns/configmaps/a"
    )
    assert (
        ResourceType("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False).path(
            "r", "ignored"
        )
        == "/apis/rbac.authorization.k8s.io/v1/clusterroles/r"
    )


@pytest.mark.parametrize(
    ("kind", "body", "reason"),
    [
        (
            "Deployment",
            {"spec": {"replicas": 2}, "status": {"availableReplicas": 1}},
            "1/2 replicas available",
        ),
        ("Deployment", {"spec": {}, "status": {"availableReplicas": 1}}, None),
        (
            "Deployment",
            {
                "metadata": {"generation": 3},
                "status": {"observedGeneration": 2, "availableReplicas": 1},
            },
            "controller has not seen generation 3 yet",
        ),
        (
            "DaemonSet",
            {"status": {"desiredNumberScheduled": 3, "numberAvailable": 0}},
            "0/3 pods available",
        ),
        ("DaemonSet", {"status": {"desiredNumberScheduled": 0}}, None),
        ("StatefulSet", {"spec": {"replicas": 1}, "status": {"replicas": 1}}, "0/1 replicas ready"),
        (
            "CustomResourceDefinition",
            {"status": {"conditions": [{"type": "Established", "status": "False"}]}},
            "not Established",
        ),
        (
            "CustomResourceDefinition",
            {"status": {"conditions": [{"type": "Established", "status": "True"}]}},
            None,
        ),
        ("Deployment", {"spec": {"replicas": 1}}, None),  # no status: no controller to judge by
    ],
)
def test_rollout_readiness(kind: str, body: dict[str, Any], reason: str | None) -> None:
    assert _not_ready(body, kind) == reason


class _Api:
    class configuration:  # noqa: N801 - stands in for ApiClient.configuration
        host = "https://127.0.0.1:6443"


@pytest.mark.parametrize(
    ("status", "error", "words"),
    [
        (401, KubernetesAccessDenied, "no EKS access entry"),
        (403, KubernetesAccessDenied, "AmazonEKSClusterAdminPolicy"),
        (409, KubernetesApplyConflict, "conflict"),
        (422, KubernetesApplyRejected, "Invalid"),
        (429, KubernetesUnavailable, "TooManyRequests"),
        (503, KubernetesUnavailable, "ServiceUnavailable"),
    ],
)
def test_api_statuses_map_to_named_errors(status: int, error: type[Exception], words: str) -> None:
    reasons = {
        401: "Unauthorized",
        403: "Forbidden",
        409: "Conflict",
        422: "Invalid",
        429: "TooManyRequests",
        503: "ServiceUnavailable",
    }
    body = {"kind": "Status", "reason": reasons[status], "message": "details here"}
    raised = _error(status, body, "PATCH", "/api/v1/namespaces/x", _Api())  # type: ignore[arg-type]
    assert isinstance(raised, error)
    assert words in str(raised)
    assert isinstance(raised, TemporaryError) == (status in (429, 503))
