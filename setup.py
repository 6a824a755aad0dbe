"""The wheel carries the project a local cloud runs (docs/build.md, "The wheel").

`pip install 'hypd[local]'` then `hypd local up` outside a checkout needs what the local cloud
reads beside its template: template.yaml, the functions' handlers, the layers' build files, the
state machines' definitions and the dependency chart. The checkout keeps them at the top level
(the project's fixed layout); the build copies them into the package `hypd_local` as
`hypd_local/project/`, where `hypd_local.template.find_template` finds them. The metadata is
pyproject.toml's; this file only adds that copy to setuptools' build_py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PROJECT_FILES = ("template.yaml",)
PROJECT_DIRS = ("functions", "layers", "statemachines", "charts")
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "generate.py")


class BuildWithProject(build_py):
    """build_py, plus the project's files under hypd_local/project/."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "hypd_local" / "project"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name in PROJECT_FILES:
            shutil.copy2(ROOT / name, target / name)
        for name in PROJECT_DIRS:
            shutil.copytree(ROOT / name, target / name, ignore=SKIPPED)


setup(cmdclass={"build_py": BuildWithProject})
