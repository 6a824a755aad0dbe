"""Prune the Kubernetes layer after pip installed it (run by layers/kubernetes/Makefile).

Removes every distribution that the hypd layer already ships (its lock's names), so the two
layers never hold two copies of a package, and the kubernetes client's asyncio half
(kubernetes/aio and the aiohttp stack only it imports): hypd uses the synchronous client, and
the layer must fit Lambda's 250 MB limit next to the hypd layer and helm.

    python prune.py LAYER_PYTHON_DIR RUNTIME_LOCK
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

ASYNC_ONLY = {
    "aiohttp", "aiohttp-retry", "aiohappyeyeballs", "aiosignal", "attrs", "frozenlist",
    "multidict", "propcache", "yarl",
}
"""Distributions that only kubernetes.aio imports."""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_names(lock: Path) -> set[str]:
    names = set()
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            names.add(canonical(line.split("==", 1)[0]))
    return names


def remove_distribution(site: Path, dist_info: Path) -> None:
    record = dist_info / "RECORD"
    tops: set[str] = set()
    if record.is_file():
        for row in record.read_text().splitlines():
            path = row.split(",", 1)[0]
            if path and not path.startswith(".."):
                tops.add(path.split("/", 1)[0])
    tops.add(dist_info.name)
    for top in tops:
        target = site / top
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()


def main(site_dir: str, runtime_lock: str) -> int:
    site = Path(site_dir)
    drop = locked_names(Path(runtime_lock)) | ASYNC_ONLY
    for dist_info in sorted(site.glob("*.dist-info")):
        name = canonical(dist_info.name.removesuffix(".dist-info").rsplit("-", 1)[0])
        if name in drop and name != "kubernetes":
            remove_distribution(site, dist_info)
    shutil.rmtree(site / "kubernetes" / "aio", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
