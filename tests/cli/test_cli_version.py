"""`hypd --version` names the installed distribution's version, as the aws CLI does."""

from __future__ import annotations

import importlib.metadata
import platform

import pytest

from hypd_cli.main import main


def test_version_prints_the_installed_version_and_exits_0(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])

    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == (
        f"hypd {importlib.metadata.version('hypd')} (Python {platform.python_version()}, "
        f"botocore {importlib.metadata.version('botocore')})")
