"""The JSONPath of CRD printer columns (``additionalPrinterColumns[].jsonPath``).

The API server accepts "simple" JSONPath there: fields (``.status.phase``, ``['a.b/c']``),
indexes (``[0]``), every item (``[*]``) and filters on a field (``[?(@.type=="Ready")]``, ``==``
or ``!=`` a string or number). A column shows the first value found; none is an empty cell.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Step = Callable[[Any], list[Any]]

_FIELD = re.compile(r"\.([A-Za-z0-9_\-$]+)")
_QUOTED = re.compile(r"\[\s*(['\"])(.*?)\1\s*\]")
_INDEX = re.compile(r"\[\s*(-?\d+)\s*\]")
_ALL = re.compile(r"\[\s*\*\s*\]|\.\*")
_FILTER = re.compile(
    r"\[\s*\?\(\s*@((?:\.[A-Za-z0-9_\-$]+)+)\s*(==|!=)\s*(?:(['\"])(.*?)\3|(-?\d+(?:\.\d+)?))\s*\)\s*\]"
)


class JsonPathError(ValueError):
    """Not a JSONPath this module understands."""


def _field(name: str) -> Step:
    return lambda value: [value[name]] if isinstance(value, dict) and name in value else []


def _index(position: int) -> Step:
    def step(value: Any) -> list[Any]:
        if isinstance(value, list) and -len(value) <= position < len(value):
            return [value[position]]
        return []

    return step


def _all(value: Any) -> list[Any]:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return list(value.values())
    return []


def _filter(path: list[str], equal: bool, literal: Any) -> Step:
    def lookup(item: Any) -> Any:
        for name in path:
            if not isinstance(item, dict) or name not in item:
                return _MISSING
            item = item[name]
        return item

    def step(value: Any) -> list[Any]:
        items = value if isinstance(value, list) else []
        found = []
        for item in items:
            got = lookup(item)
            if got is _MISSING:
                continue
            if (got == literal) == equal:
                found.append(item)
        return found

    return step


_MISSING = object()


def compile_path(path: str) -> list[Step]:
    """The steps of ``path`` (surrounding ``{...}`` allowed); `JsonPathError` if unsupported."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[Step] = []
    position = 0
    while position < len(text):
        for pattern in (_ALL, _FILTER, _QUOTED, _INDEX, _FIELD):
            match = pattern.match(text, position)
            if match is None:
                continue
            if pattern is _ALL:
                steps.append(_all)
            elif pattern is _FILTER:
                literal: Any = match.group(4) if match.group(3) else float(match.group(5))
                if not match.group(3) and float(literal).is_integer():
                    literal = int(literal)
                steps.append(_filter(match.group(1)[1:].split("."), match.group(2) == "==",
                                     literal))
            elif pattern is _QUOTED:
                steps.append(_field(match.group(2)))
            elif pattern is _INDEX:
                steps.append(_index(int(match.group(1))))
            else:
                steps.append(_field(match.group(1)))
            position = match.end()
            break
        else:
            raise JsonPathError(f"unsupported JSONPath {path!r} at {text[position:]!r}")
    return steps


def find(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` reaches in ``obj``, in order."""
    values = [obj]
    for step in compile_path(path):
        values = [found for value in values for found in step(value)]
    return values
