"""The template passes SAM's own validation (with its linter) and cfn-lint."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.build.conftest import require_tool, run
from tests.build.support import SAM_VENV, TEMPLATE

pytestmark = pytest.mark.build


def test_sam_validate_lint() -> None:
    sam = require_tool(SAM_VENV / "bin" / "sam")
    result = run([str(sam), "validate", "--lint", "--template-file", str(TEMPLATE)])
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert "is a valid SAM Template" in result.stdout + result.stderr


def test_cfn_lint() -> None:
    # The dev venv's cfn-lint: the version the local cloud decodes the template with.
    cfn_lint = require_tool(Path(sys.executable).with_name("cfn-lint"))
    result = run([str(cfn_lint), str(TEMPLATE)])
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
