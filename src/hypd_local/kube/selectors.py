"""Label and field selectors, as ``kube-apiserver`` parses them.

Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` (exists),
``!k`` (does not exist), comma-separated (AND). Field selectors: ``path=v``, ``path==v``,
``path!=v`` on dotted paths (``metadata.name``, ``metadata.namespace``, ``spec.nodeName``,
``status.phase``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from hypd_local.kube.errors import KubeError

Matcher = Callable[[Mapping[str, Any]], bool]

_SET_RE = re.compile(r"^\s*(\S+)\s+(in|notin)\s+\((.*)\)\s*$")
_EQ_RE = re.compile(r"^\s*([^=!\s]+)\s*(==|=|!=)\s*(\S*)\s*$")
_KEY_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9][-A-Za-z0-9_./]*)\s*$")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part for part in (p.strip() for p in parts) if part]


def _bad(kind: str, text: str) -> KubeError:
    return KubeError(400, "BadRequest",
                     f'unable to parse requirement: invalid {kind} selector "{text}"')


def _in(key: str, values: frozenset[str], positive: bool, labels: Mapping[str, str]) -> bool:
    return (labels.get(key) in values) == positive


def _equals(key: str, value: str, positive: bool, labels: Mapping[str, str]) -> bool:
    return (labels.get(key) == value) == positive


def _exists(key: str, positive: bool, labels: Mapping[str, str]) -> bool:
    return (key in labels) == positive


def _field_equals(path: str, value: str, positive: bool, obj: Mapping[str, Any]) -> bool:
    return (_field_value(obj, path) == value) == positive


def parse_label_selector(text: str | None) -> Matcher:
    """A predicate on an object's ``metadata.labels``; ``None``/empty selects everything."""
    if not text:
        return lambda _obj: True
    tests: list[Callable[[Mapping[str, str]], bool]] = []
    for req in _split_top(text):
        if m := _SET_RE.match(req):
            key, op, values_text = m.group(1), m.group(2), m.group(3)
            values = frozenset(v.strip() for v in values_text.split(",") if v.strip())
            tests.append(partial(_in, key, values, op == "in"))
        elif m := _EQ_RE.match(req):
            key, op, value = m.group(1), m.group(2), m.group(3)
            tests.append(partial(_equals, key, value, op != "!="))
        elif m := _KEY_RE.match(req):
            negate, key = m.group(1) == "!", m.group(2)
            tests.append(partial(_exists, key, not negate))
        else:
            raise _bad("label", text)

    def match(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(test(labels) for test in tests)

    return match


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def parse_field_selector(text: str | None) -> Matcher:
    """A predicate on dotted field paths (``metadata.name=x,status.phase!=Running``)."""
    if not text:
        return lambda _obj: True
    tests: list[Matcher] = []
    for req in _split_top(text):
        m = _EQ_RE.match(req)
        if m is None:
            raise _bad("field", text)
        path, op, value = m.group(1), m.group(2), m.group(3)
        tests.append(partial(_field_equals, path, value, op != "!="))
    return lambda obj: all(test(obj) for test in tests)
