"""`./dev demo`, the README's first command, sets up only what the demo uses: no system package
(apt-get, sudo), no Node.js (npm), no SAM CLI or checkov environment touched."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.build.support import ROOT

BASH = shutil.which("bash") or "/bin/bash"
# The commands the demo must not run: each shim records its call and fails.
FORBIDDEN = ("apt-get", "sudo", "npm", "node", "chromium", "chromedriver")


def test_dev_demo_runs_the_demo_without_system_packages_node_or_a_browser(
        tmp_path: Path) -> None:
    # Given shims that record any call of apt-get, sudo, npm, node or the browser
    shims, calls = tmp_path / "bin", tmp_path / "calls.log"
    shims.mkdir()
    for name in FORBIDDEN:
        shim = shims / name
        shim.write_text(f'#!/bin/sh\necho "{name} $*" >> "{calls}"\nexit 1\n')
        shim.chmod(0o755)
    sam_before = _stamp(".venv-sam")
    checkov_before = _stamp(".venv-checkov")

    # When ./dev demo runs, traced (its environments are set up already: a stamp that matches
    # skips the install)
    result = subprocess.run(  # noqa: S603 - bash on the project's own script
        [BASH, "-x", str(ROOT / "dev"), "demo", "--tag", "devdemo"], cwd=ROOT,
        capture_output=True,
        text=True, timeout=600, check=False,
        env={**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"},
    )

    # Then the demo ran to the end and nothing of the rest was called or changed
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Done: cluster devdemo created" in result.stdout
    assert not calls.exists(), calls.read_text()
    # (on a machine that has the browser and the Node.js clients, the old set-up skipped them
    # too: the trace shows it never looked)
    traced = [line for line in result.stderr.splitlines() if line.startswith("+")]
    assert not [line for line in traced
                if "install_browser" in line or "install_node_clients" in line]
    assert "+ setup_envs dev" in traced
    assert (_stamp(".venv-sam"), _stamp(".venv-checkov")) == (sam_before, checkov_before)


def _stamp(venv: str) -> str | None:
    stamp = ROOT / venv / ".hypd-setup-stamp"
    return stamp.read_text() if stamp.is_file() else None
