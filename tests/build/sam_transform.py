"""Transforms template.yaml into plain CloudFormation with the SAM translator, offline.

Runs under .venv-sam's python (the translator ships with the SAM CLI):
    .venv-sam/bin/python tests/build/sam_transform.py template.yaml out.json

checkov reads SAM resources only partly (functions and APIs, with Globals merged): the IAM roles,
permissions, queues, API stages and state machines SAM generates exist only after the transform.
Local CodeUri/ContentUri become dummy S3 locations; local state-machine definitions are inlined.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from samtranslator.translator.transform import (  # type: ignore[import-not-found,unused-ignore]
    transform,
)
from samtranslator.yaml_helper import yaml_parse  # type: ignore[import-not-found,unused-ignore]


class NoManagedPolicies:
    """The translator asks for the account's managed-policy map only for policies named
    without an ARN; an empty map keeps it offline."""

    def load(self) -> dict[str, str]:
        return {}


def localise(template: dict[str, Any], base: Path) -> None:
    for resource in template.get("Resources", {}).values():
        props = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str):
                props[key] = f"s3://hypd-build-test/{props[key]}"
        uri = props.get("DefinitionUri")
        if isinstance(uri, str):
            path = base / uri
            if path.is_file():
                props["Definition"] = json.loads(path.read_text(encoding="utf-8"))
                del props["DefinitionUri"]
            else:
                props["DefinitionUri"] = f"s3://hypd-build-test/{uri}"


def main(source: str, target: str) -> None:
    path = Path(source)
    template = yaml_parse(path.read_text(encoding="utf-8"))
    localise(template, path.parent)
    result = transform(template, {}, NoManagedPolicies())
    Path(target).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:3])
