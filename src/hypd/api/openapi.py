"""Generate docs/openapi.json from the code: `python -m hypd.api.openapi [PATH]`.

tests/unit/test_openapi.py fails when the committed document is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hypd.api.app import build_app, openapi_document
from hypd.api.services import ApiServices


class _Unused:
    """Stands in for the stores and clients: generating the document calls none of them."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the OpenAPI generator must not call {name}")


def render() -> str:
    unused: Any = _Unused()
    app = build_app(
        ApiServices(
            operations=unused,
            clusters=unused,
            locks=unused,
            sfn_client=unused,
            ec2_client=unused,
            sagemaker_client=unused,
        )
    )
    return json.dumps(openapi_document(app), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else Path("docs/openapi.json")
    target.write_text(render())
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
