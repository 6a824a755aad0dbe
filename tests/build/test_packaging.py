"""`pip install 'hypd[local]'` gives a working `hypd local up`: every third-party module the
local cloud (src/hypd_local) and the CLI's local commands import is a dependency of hypd or of
its `local` extra (pyproject.toml), moto exactly at the version requirements/dev.txt pins, and
the CLI's own list of the extra's modules (its "install hypd[local]" check) is complete; the
wheel carries the web console's page and the features' vendored IAM policies."""

from __future__ import annotations

import ast
import importlib.metadata
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from hypd_cli.local import LOCAL_COMMAND_MODULES, LOCAL_EXTRA_MODULES
from tests.build.support import ROOT, normalise, read_pins, static_imports

SRC = ROOT / "src"
OURS = frozenset({"hypd", "hypd_local", "hypd_cli"})
# Calls that import the module their literal first argument names.
_DYNAMIC_IMPORTS = frozenset({"import_module", "find_spec"})


def project() -> dict[str, object]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    section: dict[str, object] = data["project"]
    return section


def requirements(group: str | None) -> dict[str, Requirement]:
    section = project()
    raw = section["dependencies"] if group is None else section["optional-dependencies"][group]  # type: ignore[index]
    found = (Requirement(line) for line in raw)  # type: ignore[union-attr]
    return {normalise(r.name): r for r in found}


def _dynamic_imports(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        first = node.args[0]
        if called in _DYNAMIC_IMPORTS and isinstance(first, ast.Constant) and isinstance(
                first.value, str):
            names.append(first.value)
    return names


def module_files() -> list[tuple[str, Path]]:
    """(module, file) of every module of hypd_local and of the CLI's local commands."""
    found = []
    for path in sorted((SRC / "hypd_local").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append((module, path))
    for module in ("hypd_cli.local", *LOCAL_COMMAND_MODULES):
        found.append((module, SRC.joinpath(*module.split(".")).with_suffix(".py")))
    return found


def third_party_imports() -> dict[str, list[str]]:
    """{top-level module: [where it is imported]} of what is neither ours nor the stdlib."""
    found: dict[str, list[str]] = {}
    for module, path in module_files():
        source = path.read_text(encoding="utf-8")
        names = [i.module for i in static_imports(source, module, path.name == "__init__.py")]
        names += _dynamic_imports(ast.parse(source))
        for name in names:
            top = name.split(".", 1)[0]
            if top and top not in OURS and top not in sys.stdlib_module_names:
                found.setdefault(top, []).append(str(path.relative_to(ROOT)))
    return found


def test_the_walk_finds_the_local_clouds_imports() -> None:
    found = third_party_imports()

    # moto at module level, kubernetes through importlib, jsonpath_ng inside a function
    assert {"moto", "kubernetes", "jsonpath_ng", "werkzeug", "boto3"} <= set(found)


def test_every_import_of_the_local_cloud_is_a_declared_dependency() -> None:
    distributions = importlib.metadata.packages_distributions()
    declared = set(requirements(None)) | set(requirements("local"))

    undeclared = {}
    for top, where in sorted(third_party_imports().items()):
        owners = {normalise(d) for d in distributions.get(top, [])}
        assert owners, f"{top} (imported by {where[0]}) is not installed: run ./dev setup"
        if not owners & declared:
            undeclared[top] = (sorted(owners), where[0])

    assert undeclared == {}, (
        "imported by the local cloud but neither a dependency nor in the `local` extra of "
        f"pyproject.toml: {undeclared}")


def test_the_cli_checks_for_every_module_of_the_local_extra() -> None:
    # `hypd local up` without the extra says "install hypd[local]" instead of a traceback: it
    # must look for every module that only the extra brings.
    distributions = importlib.metadata.packages_distributions()
    base = set(requirements(None))
    extra_only = sorted(
        top for top in third_party_imports()
        if not {normalise(d) for d in distributions.get(top, [])} & base
    )

    assert sorted(LOCAL_EXTRA_MODULES) == extra_only


def test_moto_is_exactly_the_development_pin() -> None:
    # hypd_local patches moto's internals: the extra cannot float.
    moto = requirements("local")["moto"]
    pinned = read_pins(ROOT / "requirements" / "dev.txt")["moto"]

    assert str(moto.specifier) == f"=={pinned}"
    assert {"server", "stepfunctions"} <= moto.extras


def test_every_floor_admits_the_pinned_version() -> None:
    pins = read_pins(ROOT / "requirements" / "dev.lock")

    for name, requirement in {**requirements(None), **requirements("local")}.items():
        assert requirement.specifier.contains(pins[name]), (name, str(requirement), pins[name])


@pytest.fixture(scope="module")
def wheel_files(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The names in a wheel built from a copy of the sources (setuptools writes build/ and
    *.egg-info beside them)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    project = tmp_path / "project"
    shutil.copytree(SRC, project / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", project)
    shutil.copy(ROOT / "README.md", project)
    subprocess.run(  # noqa: S603 - this Python's pip on our own sources
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(project)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("hypd-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_the_wheel_carries_the_web_consoles_assets(wheel_files: set[str]) -> None:
    # `hypd console` serves its page from the package: a wheel without the files serves 404s.
    shipped = {name for name in wheel_files if "/console_assets/" in name}

    assets = SRC / "hypd_cli" / "console_assets"
    expected = {f"hypd_cli/console_assets/{p.name}" for p in assets.iterdir() if p.is_file()}
    assert {"hypd_cli/console_assets/index.html", "hypd_cli/console_assets/app.js"} <= expected
    assert shipped == expected


def test_the_wheel_carries_the_features_vendored_policies(wheel_files: set[str]) -> None:
    # The inference ALB role's policy is read from the package: without it the feature fails.
    policies = SRC / "hypd" / "features" / "policies"
    expected = {f"hypd/features/policies/{p.name}" for p in policies.iterdir() if p.is_file()}
    assert "hypd/features/policies/aws-load-balancer-controller.json" in expected
    assert {n for n in wheel_files if n.startswith("hypd/features/policies/")} == expected
