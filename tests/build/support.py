"""Shared helpers of the build tests: paths, environments, static imports and artefacts."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hypd_local.template import FunctionSpec

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
DEV_VENV = ROOT / ".venv"
# The pinned helm wheel ./dev setup downloads (tools/helm.py): copied where a test's helm would
# be fetched from, so that the download is not repeated.
HELM_WHEELS = ROOT / ".cache" / "helm"
SAM_VENV = ROOT / ".venv-sam"
CHECKOV_VENV = ROOT / ".venv-checkov"

FUNCTION_TYPE = "AWS::Serverless::Function"
LAYER_TYPE = "AWS::Serverless::LayerVersion"
STATE_MACHINE_TYPE = "AWS::Serverless::StateMachine"

# sys.stdlib_module_names of the interpreter running the tests (3.11 or 3.12), adjusted to
# python3.12, the Lambda runtime: 3.12 removed these modules (PEP 594, PEP 632, imp).
_REMOVED_IN_312 = frozenset({"asynchat", "asyncore", "distutils", "imp", "smtpd"})


def stdlib_312() -> frozenset[str]:
    return frozenset(sys.stdlib_module_names) - _REMOVED_IN_312


# ----------------------------------------------------------------------------------- template
# Reading the template and resolving its functions is hypd_local.template's job
# (read_template, resources_of_type, describe_functions): the local cloud uses the same code.


def lambda_environment(function: FunctionSpec) -> dict[str, str]:
    """The whole environment of a Lambda process for the function: hypd_local's
    `standalone_environment` (Lambda's variables, the template's with intrinsics resolved, a
    region, fake credentials) and the runtime's locale, time zone and PATH."""
    return {
        **function.standalone_environment(),
        "TZ": ":UTC",
        "LANG": "en_US.UTF-8",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }


# ---------------------------------------------------------------- copies of the checkout, demos


def copy_checkout(destination: Path) -> Path:
    """Copies the checkout's files as a commit would hold them (tracked, and new but not
    ignored: no environment, cache or build output) into `destination`, modes kept."""
    listing = ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
               "--exclude-standard"]
    names = subprocess.run(  # noqa: S603 - git on our own checkout
        listing, check=True, capture_output=True,
    ).stdout.decode().split("\0")
    for name in filter(None, names):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def seed_helm_wheel(cache: Path) -> bool:
    """Copies the pinned helm wheel of `HELM_WHEELS` into `cache` (where hypd_cli.helm looks
    before downloading); False when ./dev setup has not downloaded it."""
    wheels = sorted(HELM_WHEELS.glob("*.whl"))
    cache.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        shutil.copy2(wheel, cache)
    return bool(wheels)


def demo_summary_problems(out: str, tag: str) -> list[str]:
    """What the end of a successful `hypd local demo --tag <tag>` (its summary) lacks."""
    expected = {
        "the operation succeeded": r"Operation op-[0-9a-f]{32} \(create-cluster\): SUCCEEDED",
        "the EKS cluster is active": rf"EKS cluster\s+hypd-{tag}\s+ACTIVE",
        "the HyperPod cluster is in service": rf"HyperPod cluster\s+hypd-{tag}\s+InService",
        "its node is ready": r"node\s+hyperpod-i-[0-9a-f]+\s+Ready, Schedulable",
        "the storage claim is bound": r"Storage claim\s+default/hypd-shared\s+Bound",
        "IAM denied nothing": r"IAM: \d+ AWS calls, each authorised as .*; none denied",
        "the demo is done": rf"Done: cluster {tag} created in \d+m\d{{2}}s of virtual time",
    }
    return [what for what, pattern in expected.items() if not re.search(pattern, out)]


# ---------------------------------------------------------------------------- static imports


@dataclass(frozen=True)
class Import:
    module: str  # absolute dotted name
    names: tuple[str, ...]  # for `from module import a, b`; empty for `import module`
    line: int


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _catches_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        caught = handler.type
        names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        for name in names:
            if isinstance(name, ast.Name) and name.id in {"ImportError", "ModuleNotFoundError"}:
                return True
    return False


def static_imports(source: str, module: str, is_package: bool) -> list[Import]:
    """Every import a module executes, resolved to absolute names. Skips `if TYPE_CHECKING:`
    blocks and optional imports (`try: import x / except ImportError:`); follows imports inside
    functions, which run at call time."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for branch in node.orelse:
                visit(branch)
            return
        if isinstance(node, ast.Try) and _catches_import_error(node):
            for part in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(part)
            return
        if isinstance(node, ast.Import):
            found.extend(Import(alias.name, (), node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                if node.level - 1 > len(parts):
                    raise AssertionError(
                        f"{module}:{node.lineno}: relative import beyond top level"
                    )
                base = parts[: len(parts) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.append(Import(target, tuple(a.name for a in node.names), node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def module_file(root: Path, module: str) -> Path | None:
    """The source file of a pure-Python module under root, or None."""
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def top_level_resolves(name: str, roots: list[Path]) -> Path | None:
    """Where a top-level module would be found under any of roots (module, package,
    namespace package or extension module)."""
    for root in roots:
        if (root / f"{name}.py").is_file() or (root / name).is_dir():
            return root
        if any(root.glob(f"{name}.*.so")) or (root / f"{name}.so").is_file():
            return root
    return None


@dataclass
class ImportReport:
    unresolved: list[str] = field(default_factory=list)  # "module (imported by x:line)"
    visited: list[str] = field(default_factory=list)  # first-party modules whose imports were read


def check_import_closure(
    entry: Path,
    entry_module: str,
    function_dir: Path,
    layer_dirs: list[Path],
    first_party: tuple[str, ...] = ("hypd",),
    imported_by_name: Sequence[str] = (),
) -> ImportReport:
    """Follows the imports of the handler module (recursively through the function's own modules
    and the first-party packages in the layer) and reports every imported top-level module that
    neither the function artefact, the layer nor the python3.12 standard library provides, and
    every first-party submodule that does not exist.

    `imported_by_name`: first-party modules the code imports by a computed name
    (`importlib.import_module`), which no import statement shows; they are followed too."""
    stdlib = stdlib_312()
    report = ImportReport()
    queue: list[tuple[str, Path]] = [(entry_module, entry)]
    seen: set[str] = {entry_module}
    for module in imported_by_name:
        root = top_level_resolves(module.split(".")[0], layer_dirs)
        file = module_file(root, module) if root is not None else None
        if file is None:
            report.unresolved.append(f"{module} (imported by name)")
        elif module not in seen:
            seen.add(module)
            queue.append((module, file))

    def enqueue(module: str, path: Path) -> None:
        if module not in seen:
            seen.add(module)
            queue.append((module, path))

    def first_party_root(module: str) -> Path | None:
        top = module.split(".")[0]
        if module_file(function_dir, top) is not None:
            return function_dir
        if top in first_party:
            return top_level_resolves(top, layer_dirs)
        return None

    while queue:
        module, path = queue.pop()
        report.visited.append(module)
        is_package = path.name == "__init__.py"
        for imp in static_imports(path.read_text(encoding="utf-8"), module, is_package):
            where = f"{imp.module} (imported by {module}:{imp.line})"
            top = imp.module.split(".")[0]
            if top == "__future__" or top in stdlib:
                continue
            if top_level_resolves(top, [function_dir, *layer_dirs]) is None:
                report.unresolved.append(where)
                continue
            root = first_party_root(imp.module)
            if root is None:
                continue  # third party in the layer: trust pip's resolution
            # Importing a.b.c executes a/__init__, a/b/__init__ and a/b/c.
            parts = imp.module.split(".")
            for depth in range(1, len(parts) + 1):
                name = ".".join(parts[:depth])
                file = module_file(root, name)
                if file is None:
                    report.unresolved.append(f"{name} (imported by {module}:{imp.line})")
                    break
                enqueue(name, file)
            else:
                # `from pkg import sub` imports pkg.sub when sub is a submodule.
                for name in imp.names:
                    sub = module_file(root, f"{imp.module}.{name}")
                    if sub is not None:
                        enqueue(f"{imp.module}.{name}", sub)
    return report


def defines_top_level(source: str, name: str) -> bool:
    """Whether a module binds name at top level: def, class, assignment or import."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
            node.name == name
        ):
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return True
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
            and node.value is not None
        ):
            return True
        if isinstance(node, ast.Import | ast.ImportFrom) and any(
            (a.asname or a.name.split(".")[0]) == name for a in node.names
        ):
            return True
    return False


# --------------------------------------------------------------------------------- artefacts

_WHEEL_TAG = re.compile(r"^Tag:\s*(\S+)-(\S+)-(\S+)\s*$", re.MULTILINE)


def wheel_tags(layer_dir: Path) -> Iterator[tuple[str, str]]:
    """(distribution, tag) for every WHEEL tag of the distributions installed in the layer."""
    for wheel in sorted(layer_dir.glob("*.dist-info/WHEEL")):
        for python, abi, platform in _WHEEL_TAG.findall(wheel.read_text(encoding="utf-8")):
            yield wheel.parent.name, f"{python}-{abi}-{platform}"


def installed_distributions(layer_dir: Path) -> dict[str, str]:
    """{normalised name: version} of the distributions installed in the layer."""
    found = {}
    for dist_info in layer_dir.glob("*.dist-info"):
        name, _, version = dist_info.name.removesuffix(".dist-info").rpartition("-")
        found[normalise(name)] = version
    return found


def normalise(name: str) -> str:
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict[str, str]:
    """{normalised name: version} of the `name==version` lines of a requirements/lock file."""
    pins = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[normalise(name.split("[", 1)[0])] = version.split(";", 1)[0].strip()
    return pins


def elf_machine(path: Path) -> int:
    """e_machine of an ELF file (0x3E is x86-64)."""
    header = path.read_bytes()[:20]
    if header[:4] != b"\x7fELF":
        raise AssertionError(f"{path} is not an ELF file")
    return int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")
