"""`sam build` succeeds offline and its artefacts are what Lambda (python3.12, x86_64) can run.

The import check is static: it reads the handler module and follows its imports through the
function's own modules and the hypd package in the layer, so it needs no python3.12. When a
CPython 3.12 is found on the machine, the handlers are also imported for real from the artefacts.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from hypd.api.app import ROUTE_MODULES
from hypd_local.template import (
    FunctionSpec,
    describe_functions,
    read_template,
    resources_of_type,
)
from tests.build.conftest import SamBuild, run
from tests.build.support import (
    LAYER_TYPE,
    ROOT,
    TEMPLATE,
    check_import_closure,
    defines_top_level,
    elf_machine,
    installed_distributions,
    lambda_environment,
    read_pins,
    wheel_tags,
)

pytestmark = pytest.mark.build

FUNCTIONS = {f.logical_id: f for f in describe_functions(TEMPLATE)}
LAYERS = sorted(resources_of_type(read_template(TEMPLATE), LAYER_TYPE))
HYPD_LAYER = "HypdLayer"
KUBERNETES_LAYER = "KubernetesLayer"

# What a handler imports by a computed name, which the static import check cannot read: the
# API's route modules, loaded on a route's first request.
IMPORTED_BY_NAME = {"ApiFunction": tuple(f"hypd.api.{name}" for name in ROUTE_MODULES)}
# Lambda's limit for a function and all its layers, unzipped.
LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024
EM_X86_64 = 0x3E
EXTENSION_SUFFIX = re.compile(r"\.(cpython-312-x86_64-linux-gnu|abi3)\.so$")


def size_of(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def layer_dirs(sam_build: SamBuild, function: FunctionSpec) -> list[Path]:
    return [sam_build.layer_python(layer) for layer in function.layer_ids]


def test_template_has_functions_and_a_layer() -> None:
    assert FUNCTIONS
    assert LAYERS
    for function in FUNCTIONS.values():
        assert function.layer_ids, f"{function.logical_id} uses none of the template's layers"


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_function_artefact_is_its_own_modules_only(sam_build: SamBuild, logical_id: str) -> None:
    function = FUNCTIONS[logical_id]
    built = sorted(p.name for p in sam_build.artefact(logical_id).iterdir())
    source = sorted(p.name for p in function.code_dir.glob("*.py"))
    assert built == source


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_handler_attribute_exists(sam_build: SamBuild, logical_id: str) -> None:
    function = FUNCTIONS[logical_id]
    module = sam_build.artefact(logical_id) / function.handler_path
    assert module.is_file(), f"handler module {function.handler_path} is not in the artefact"
    assert defines_top_level(module.read_text(encoding="utf-8"), function.handler_attribute), (
        f"{function.handler_path} defines no top-level {function.handler_attribute!r}"
    )


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_handler_imports_resolve_in_artefacts(sam_build: SamBuild, logical_id: str) -> None:
    function = FUNCTIONS[logical_id]
    function_dir = sam_build.artefact(logical_id)
    report = check_import_closure(
        function_dir / function.handler_path,
        function.handler_module,
        function_dir,
        layer_dirs(sam_build, function),
        imported_by_name=IMPORTED_BY_NAME.get(logical_id, ()),
    )
    assert report.unresolved == [], (
        f"{logical_id}: modules neither the function, its layer nor the python3.12 standard "
        f"library provide (read: {sorted(report.visited)})"
    )


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_function_and_layers_fit_lambda_limit(sam_build: SamBuild, logical_id: str) -> None:
    function = FUNCTIONS[logical_id]
    total = size_of(sam_build.artefact(logical_id)) + sum(
        size_of(d.parent) for d in layer_dirs(sam_build, function)
    )
    assert total < LAMBDA_UNZIPPED_LIMIT, f"{total / 2**20:.0f} MB unzipped"


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_wheels_target_cp312_manylinux_x86_64(sam_build: SamBuild, layer: str) -> None:
    layer_dir = sam_build.layer_python(layer)
    tags = list(wheel_tags(layer_dir))
    assert tags, "no installed distributions in the layer"
    wrong = [
        (dist, tag)
        for dist, tag in tags
        if not tag.endswith("-none-any")
        and not (
            ("cp312-cp312" in tag or "-abi3-" in tag) and "manylinux" in tag and "x86_64" in tag
        )
    ]
    assert wrong == []


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_extensions_are_cp312_x86_64(sam_build: SamBuild, layer: str) -> None:
    layer_dir = sam_build.layer_python(layer)
    extensions = [p for p in layer_dir.rglob("*.so") if ".libs" not in p.parent.name]
    if layer == HYPD_LAYER:
        pydantic_core = list(layer_dir.glob("pydantic_core/_pydantic_core.*.so"))
        assert [p.name for p in pydantic_core] == [
            "_pydantic_core.cpython-312-x86_64-linux-gnu.so"
        ]
    for path in extensions:
        assert EXTENSION_SUFFIX.search(path.name), f"{path.relative_to(layer_dir)}: wrong ABI"
    for path in layer_dir.rglob("*.so*"):
        assert elf_machine(path) == EM_X86_64, f"{path.relative_to(layer_dir)} is not x86-64"


def test_layer_holds_exactly_the_locked_runtime(sam_build: SamBuild) -> None:
    installed = installed_distributions(sam_build.layer_python(HYPD_LAYER))
    locked = read_pins(ROOT / "requirements" / "runtime.lock")
    assert installed == locked
    direct = read_pins(ROOT / "requirements" / "runtime.txt")
    assert {name: installed.get(name) for name in direct} == direct


def test_layer_ships_hypd_source_without_build_debris(sam_build: SamBuild) -> None:
    layer_dir = sam_build.layer_python(HYPD_LAYER)
    source = sorted(
        p.relative_to(ROOT / "src").as_posix()
        for p in (ROOT / "src" / "hypd").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in {".pyc", ".pyo"}
    )
    shipped = sorted(
        p.relative_to(layer_dir).as_posix() for p in (layer_dir / "hypd").rglob("*") if p.is_file()
    )
    assert shipped == source
    assert not (layer_dir / "bin").exists()
    assert not list(sam_build.build_dir.rglob("__pycache__"))
    assert not list(sam_build.build_dir.rglob("*.pyc"))
    # The local cloud and the CLI never ship.
    assert not (layer_dir / "hypd_local").exists()
    assert not (layer_dir / "hypd_cli").exists()


def test_kubernetes_layer_adds_only_what_the_hypd_layer_lacks(sam_build: SamBuild) -> None:
    # Lambda merges every layer's python/ into /opt/python: the Kubernetes layer must not
    # carry a second copy of anything the hypd layer pins, nor the asyncio client hypd never
    # imports, and it pins what it does carry like the development environment does.
    layer_dir = sam_build.layer_python(KUBERNETES_LAYER)
    installed = installed_distributions(layer_dir)
    runtime = read_pins(ROOT / "requirements" / "runtime.lock")
    dev = read_pins(ROOT / "requirements" / "dev.lock")
    assert "kubernetes" in installed
    assert "pyyaml" in installed
    assert set(installed) & set(runtime) == set()
    assert {name: dev.get(name) for name in installed} == installed
    assert not (layer_dir / "kubernetes" / "aio").exists()
    assert not (layer_dir / "aiohttp").exists()
    assert not (layer_dir / "hypd").exists()


def test_kubernetes_layer_ships_helm_for_x86_64(sam_build: SamBuild) -> None:
    # /opt/helm/helm, where hypd.create.chart looks for it on Lambda.
    helm = sam_build.layer_python(KUBERNETES_LAYER).parent / "helm" / "helm"
    assert helm.is_file()
    assert os.access(helm, os.X_OK)
    assert elf_machine(helm) == EM_X86_64


# ------------------------------------------------------------- real import under python3.12


def find_python312() -> str | None:
    """A CPython 3.12 on this machine: $HYPD_PYTHON312, python3.12 on PATH, or pyenv's."""
    candidates = [
        os.environ.get("HYPD_PYTHON312"),
        shutil.which("python3.12"),
        *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12"))),
        "/usr/bin/python3.12",
        "/usr/local/bin/python3.12",
    ]
    for candidate in candidates:
        if not candidate or not Path(candidate).exists():
            continue
        probe = subprocess.run(  # noqa: S603 - probing a local interpreter
            [candidate, "-c", "import sys; print(sys.implementation.name, *sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        if probe.returncode == 0 and probe.stdout.split() == ["cpython", "3", "12"]:
            return candidate
    return None


IMPORT_HANDLER = """
import sys, types
sys.path[:0] = sys.argv[1:]
# Lambda's runtime gives SnapStart's hooks library to every function; this stand-in keeps the
# hooks, then runs them as Lambda does: before the snapshot (in reverse order of registration),
# then after a restore.
hooks = {{"before": [], "after": []}}
library = types.ModuleType("snapshot_restore_py")
library.register_before_snapshot = lambda f, *a, **k: hooks["before"].append((f, a, k))
library.register_after_restore = lambda f, *a, **k: hooks["after"].append((f, a, k))
sys.modules["snapshot_restore_py"] = library
module, attribute = {handler!r}.rsplit(".", 1)
handler = getattr(__import__(module, fromlist=[attribute]), attribute)
assert callable(handler), handler
for f, a, k in reversed(hooks["before"]):
    f(*a, **k)
clients = sys.modules.get("hypd.aws.clients")
assert not (hooks["before"] and clients and clients._CLIENTS), "a client in the snapshot"
for f, a, k in hooks["after"]:
    f(*a, **k)
print(len(hooks["before"]), len(hooks["after"]))
"""


@pytest.mark.parametrize("logical_id", sorted(FUNCTIONS))
def test_handler_imports_under_python312(sam_build: SamBuild, logical_id: str) -> None:
    python = find_python312()
    if python is None:
        pytest.skip("no CPython 3.12 found (set HYPD_PYTHON312 to run this check)")
    function = replace(FUNCTIONS[logical_id], code_dir=sam_build.artefact(logical_id))
    # -I: isolated like Lambda's runtime (no user site, no PYTHON* variables, no cwd on the
    # path); -B: leave the artefacts as built. sys.path: /var/task, then /opt/python.
    result = subprocess.run(  # noqa: S603 - fixed arguments
        [
            python,
            "-I",
            "-B",
            "-c",
            IMPORT_HANDLER.format(handler=function.handler),
            str(function.code_dir),
            *map(str, layer_dirs(sam_build, function)),
        ],
        cwd=function.code_dir,
        env=lambda_environment(function),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    # A SnapStart function primes itself before the snapshot and cleans up after a restore
    # (hypd.snapstart); the hooks ran above, from the artefacts, under python3.12.
    hooks = result.stdout.split()
    # FUNCTIONS are resolved in us-east-1, where Lambda offers SnapStart (the template's
    # SnapStartRegion condition): the API function registers its hooks.
    assert hooks == (["1", "1"] if function.snap_start else ["0", "0"]), result.stdout


def test_layer_precompiled_for_312_on_request(tmp_path: Path) -> None:
    """PYC_PYTHON=<a CPython 3.12> makes the layer ship python3.12 byte code (docs/build.md)."""
    python = find_python312()
    if python is None:
        pytest.skip("no CPython 3.12 found (set HYPD_PYTHON312 to run this check)")
    artefacts = tmp_path / "HypdLayer"
    result = run(
        [
            "make",
            "--makefile",
            str(ROOT / "layers" / "hypd" / "Makefile"),
            "build-HypdLayer",
            f"ARTIFACTS_DIR={artefacts}",
            f"PYTHON={sys.executable}",
            f"PYC_PYTHON={python}",
        ]
    )
    assert result.returncode == 0, result.stderr
    layer_dir = artefacts / "python"
    sources = list((layer_dir / "hypd").rglob("*.py"))
    assert sources
    for source in sources:
        assert (source.parent / "__pycache__" / f"{source.stem}.cpython-312.pyc").is_file(), source
    tags = {p.name.split(".")[-2] for p in layer_dir.rglob("*.pyc")}
    assert tags == {"cpython-312"}
