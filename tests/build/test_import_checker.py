"""The static import check itself: it must catch what it is there to catch."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.build.support import check_import_closure, defines_top_level, static_imports

pytestmark = pytest.mark.build


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def closure(
    tmp_path: Path,
    function: dict[str, str],
    layer: dict[str, str],
    imported_by_name: tuple[str, ...] = (),
) -> list[str]:
    function_dir, layer_dir = tmp_path / "fn", tmp_path / "layer"
    write(function_dir, function)
    write(layer_dir, layer)
    report = check_import_closure(
        function_dir / "app.py", "app", function_dir, [layer_dir],
        imported_by_name=imported_by_name,
    )
    return [entry.split(" ")[0] for entry in report.unresolved]


LAYER = {
    "hypd/__init__.py": "",
    "hypd/api/__init__.py": "from . import models\n",
    "hypd/api/models.py": "import pydantic\nfrom ..errors import Problem\n",
    "hypd/errors.py": "import json\n",
    "pydantic/__init__.py": "",
}


def test_clean_closure(tmp_path: Path) -> None:
    app = "import os\nfrom hypd.api import models\nfrom helpers import x\n"
    assert closure(tmp_path, {"app.py": app, "helpers.py": "import hypd.errors\n"}, LAYER) == []


def test_third_party_missing_from_layer_deep_in_hypd(tmp_path: Path) -> None:
    layer = {**LAYER, "hypd/errors.py": "import moto\n"}
    assert closure(tmp_path, {"app.py": "from hypd.api import models\n"}, layer) == ["moto"]


def test_modules_imported_by_name_are_followed(tmp_path: Path) -> None:
    # app.py names no route module; the app imports them by a computed name
    layer = {**LAYER, "hypd/api/routes.py": "import moto\n"}
    app = "import importlib\nimportlib.import_module('hypd.api.' + 'routes')\n"
    assert closure(tmp_path, {"app.py": app}, layer) == []
    assert closure(tmp_path, {"app.py": app}, layer, ("hypd.api.routes",)) == ["moto"]
    assert closure(tmp_path, {"app.py": app}, layer, ("hypd.api.gone",)) == ["hypd.api.gone"]


def test_missing_hypd_submodule(tmp_path: Path) -> None:
    assert closure(tmp_path, {"app.py": "import hypd.nothing.here\n"}, LAYER) == ["hypd.nothing"]


def test_local_cloud_is_not_in_the_layer(tmp_path: Path) -> None:
    assert closure(tmp_path, {"app.py": "from hypd_local import cloud\n"}, LAYER) == ["hypd_local"]


def test_removed_stdlib_module_is_not_stdlib_for_312(tmp_path: Path) -> None:
    assert closure(tmp_path, {"app.py": "import distutils.util\n"}, LAYER) == ["distutils.util"]


def test_type_checking_and_optional_imports_are_skipped(tmp_path: Path) -> None:
    app = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import mypy_boto3_dynamodb\n"
        "try:\n    import orjson\nexcept ImportError:\n    orjson = None\n"
        "def later():\n    import yaml\n"
    )
    assert closure(tmp_path, {"app.py": app}, LAYER) == ["yaml"]


def test_relative_imports_resolve_against_the_package() -> None:
    imports = static_imports(
        "from ..errors import Problem\nfrom . import x\n", "hypd.api.models", False
    )
    assert [(i.module, i.names) for i in imports] == [
        ("hypd.errors", ("Problem",)),
        ("hypd.api", ("x",)),
    ]
    package = static_imports("from .models import M\n", "hypd.api", True)
    assert [i.module for i in package] == ["hypd.api.models"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def handler(event, context): ...\n", True),
        ("async def handler(event, context): ...\n", True),
        ("handler = make()\n", True),
        ("handler: Handler = make()\n", True),
        ("from hypd.api import handler\n", True),
        ("def main(): handler = 1\n", False),
        ("handler: Handler\n", False),
        ("", False),
    ],
)
def test_defines_top_level(source: str, expected: bool) -> None:
    assert defines_top_level(source, "handler") is expected
