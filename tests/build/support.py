"""Shared helpers of the build tests: paths, the template, environments and static imports."""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
DEV_VENV = ROOT / ".venv"
SAM_VENV = ROOT / ".venv-sam"
CHECKOV_VENV = ROOT / ".venv-checkov"

REGION = "us-east-1"
ACCOUNT = "123456789012"

FUNCTION_TYPE = "AWS::Serverless::Function"
LAYER_TYPE = "AWS::Serverless::LayerVersion"
STATE_MACHINE_TYPE = "AWS::Serverless::StateMachine"

# sys.stdlib_module_names of the interpreter running the tests (3.11 or 3.12), adjusted to
# python3.12, the Lambda runtime: 3.12 removed these modules (PEP 594, PEP 632, imp).
_REMOVED_IN_312 = frozenset({"asynchat", "asyncore", "distutils", "imp", "smtpd"})


def stdlib_312() -> frozenset[str]:
    return frozenset(sys.stdlib_module_names) - _REMOVED_IN_312


# ----------------------------------------------------------------------------------- template


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """The template as cfn-lint decodes it (short-form intrinsics become {"Fn::...": ...})."""
    template, matches = decode(str(path))
    if matches or template is None:
        raise AssertionError(f"{path} does not parse: {matches}")
    return dict(template)


def resources_of_type(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template.get("Resources", {}).items()
        if resource.get("Type") == resource_type
    }


@dataclass(frozen=True)
class Function:
    """What the build tests need to know about one AWS::Serverless::Function."""

    logical_id: str
    code_uri: str
    handler: str
    environment: dict[str, Any] = field(default_factory=dict)
    layers: tuple[str, ...] = ()  # logical ids of the template's own layers (Ref)

    @property
    def handler_module(self) -> str:
        return self.handler.rsplit(".", 1)[0]

    @property
    def handler_attribute(self) -> str:
        return self.handler.rsplit(".", 1)[1]

    @property
    def handler_path(self) -> str:
        """The handler module's path relative to the function's code directory."""
        return self.handler_module.replace(".", "/") + ".py"


def functions(template: Mapping[str, Any]) -> list[Function]:
    global_function = template.get("Globals", {}).get("Function", {})
    global_env = global_function.get("Environment", {}).get("Variables", {})
    found = []
    for logical_id, resource in resources_of_type(template, FUNCTION_TYPE).items():
        props = resource.get("Properties", {})
        env = {**global_env, **props.get("Environment", {}).get("Variables", {})}
        layers = [*global_function.get("Layers", []), *props.get("Layers", [])]
        found.append(
            Function(
                logical_id=logical_id,
                code_uri=str(props.get("CodeUri", global_function.get("CodeUri"))),
                handler=str(props.get("Handler", global_function.get("Handler"))),
                environment=env,
                layers=tuple(
                    str(layer["Ref"])
                    for layer in layers
                    if isinstance(layer, Mapping) and "Ref" in layer
                ),
            )
        )
    return sorted(found, key=lambda f: f.logical_id)


def _dummy(value: Any, template: Mapping[str, Any]) -> str:
    """A plausible stand-in for an intrinsic that only CloudFormation can resolve."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref":
            parameter = template.get("Parameters", {}).get(arg)
            if parameter is not None:
                return str(parameter.get("Default", f"dummy-{arg}"))
            resource_type = template.get("Resources", {}).get(arg, {}).get("Type", "")
            if resource_type.endswith("StateMachine"):
                return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{arg}"
            if resource_type == "AWS::SQS::Queue":
                return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{arg}"
            return f"hypd-test-{arg}"
        if key == "Fn::GetAtt":
            target = arg if isinstance(arg, str) else ".".join(map(str, arg))
            return f"arn:aws:dummy:{REGION}:{ACCOUNT}:{target}"
    return "dummy"


def lambda_environment(function: Function, template: Mapping[str, Any]) -> dict[str, str]:
    """The variables Lambda would give the function: the template's (intrinsics replaced by
    dummies) plus the runtime's own. Fake credentials keep botocore off the network."""
    env = {name: _dummy(value, template) for name, value in function.environment.items()}
    env.update(
        {
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_LAMBDA_FUNCTION_NAME": function.logical_id,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
            "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
            "TZ": ":UTC",
            "LANG": "en_US.UTF-8",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        }
    )
    return env


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
) -> ImportReport:
    """Follows the imports of the handler module (recursively through the function's own modules
    and the first-party packages in the layer) and reports every imported top-level module that
    neither the function artefact, the layer nor the python3.12 standard library provides, and
    every first-party submodule that does not exist."""
    stdlib = stdlib_312()
    report = ImportReport()
    queue: list[tuple[str, Path]] = [(entry_module, entry)]
    seen: set[str] = {entry_module}

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
