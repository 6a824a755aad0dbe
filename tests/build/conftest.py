"""Fixtures of the build tests: the decoded template and one `sam build` per session."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hypd_local.template import read_template, resources_of_type
from tests.build.support import LAYER_TYPE, ROOT, SAM_VENV, TEMPLATE


def tool_environment(**extra: str) -> dict[str, str]:
    """The environment the external tools run in: no telemetry, a region, no stray venv."""
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    env.update(
        {
            "SAM_CLI_TELEMETRY": "0",
            "AWS_DEFAULT_REGION": env.get("AWS_DEFAULT_REGION", "us-east-1"),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
    )
    env.update(extra)
    return env


def run(
    args: list[str], *, timeout: float = 600, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - fixed argument lists built by the tests
        args,
        cwd=ROOT,
        env=tool_environment(**extra_env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def require_tool(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"{path} is missing: run ./dev setup")
    return path


@dataclass(frozen=True)
class SamBuild:
    build_dir: Path

    def artefact(self, logical_id: str) -> Path:
        return self.build_dir / logical_id

    def layer_python(self, logical_id: str) -> Path:
        return self.build_dir / logical_id / "python"


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return read_template(TEMPLATE)


@pytest.fixture(scope="session")
def sam_build(tmp_path_factory: pytest.TempPathFactory, template: dict[str, Any]) -> SamBuild:
    """`sam build` of the whole application into a temporary directory, once per session.

    The layer's Makefile cross-installs the runtime wheels with PYTHON's pip: the interpreter
    running the tests (the dev venv), which always has pip. `./dev build` does the same."""
    sam = require_tool(SAM_VENV / "bin" / "sam")
    build_dir = tmp_path_factory.mktemp("sam") / "build"
    result = run(
        [
            str(sam),
            "build",
            "--template-file",
            str(TEMPLATE),
            "--base-dir",
            str(ROOT),
            "--build-dir",
            str(build_dir),
        ],
        PYTHON=sys.executable,
        PYC_PYTHON="",  # the default build: no byte code (see test_layer_precompiled_...)
    )
    if result.returncode != 0:
        pytest.fail(f"sam build failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    assert (build_dir / "template.yaml").is_file(), result.stderr
    for logical_id in resources_of_type(template, LAYER_TYPE):
        assert (build_dir / logical_id / "python").is_dir(), f"{logical_id} has no python/ dir"
    return SamBuild(build_dir=build_dir)


@pytest.fixture(scope="session")
def transformed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """template.yaml after the SAM transform (the SAM CLI's translator), as CloudFormation
    JSON."""
    python = require_tool(SAM_VENV / "bin" / "python")
    target = tmp_path_factory.mktemp("transform") / "transformed.json"
    script = ROOT / "tests" / "build" / "sam_transform.py"
    result = run([str(python), str(script), str(TEMPLATE), str(target)])
    assert result.returncode == 0, result.stderr
    return target
