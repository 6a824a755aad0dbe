"""Patch formats: JSON merge patch (RFC 7386), strategic merge (approximated), JSON patch
(RFC 6902).

Strategic merge is merge patch plus one rule of the real thing: two lists whose items are all
objects with a ``name`` merge item by item on ``name`` (containers, volumes, env, ports with
names...). Other patch directives (``$patch``, ``$retainKeys``, ``$setElementOrder``) are not
interpreted; a ``$patch: delete`` item is dropped.
"""

from __future__ import annotations

import copy
from typing import Any

from hypd_local.kube.errors import KubeError


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` removes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _named_items(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, dict) and "name" in item for item in value)
    )


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if isinstance(patch, list) and _named_items(patch) and _named_items(target):
        merged = [dict(item) for item in target]
        index = {item["name"]: pos for pos, item in enumerate(merged)}
        removed: set[str] = set()
        for item in patch:
            directive = item.get("$patch")
            if directive == "delete":
                removed.add(item["name"])
                continue
            if item["name"] in index:
                pos = index[item["name"]]
                merged[pos] = strategic_merge_patch(merged[pos], item)
            else:
                index[item["name"]] = len(merged)
                merged.append(strategic_merge_patch({}, item))
        return [item for item in merged if item["name"] not in removed]
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise KubeError(422, "Invalid", f"invalid JSON pointer {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> Any:
    current = doc
    for part in parts[:-1]:
        if isinstance(current, list):
            try:
                current = current[int(part)]
            except (ValueError, IndexError) as exc:
                raise KubeError(422, "Invalid", f"path element {part!r} not found") from exc
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            raise KubeError(422, "Invalid", f"path element {part!r} not found")
    return current


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent = _parent(doc, parts)
    key = parts[-1]
    if isinstance(parent, list):
        try:
            return parent[int(key)]
        except (ValueError, IndexError) as exc:
            raise KubeError(422, "Invalid", f"index {key!r} out of range") from exc
    if isinstance(parent, dict) and key in parent:
        return parent[key]
    raise KubeError(422, "Invalid", f"path element {key!r} not found")


def _remove(doc: Any, parts: list[str]) -> Any:
    parent = _parent(doc, parts)
    key = parts[-1]
    if isinstance(parent, list):
        try:
            return parent.pop(int(key))
        except (ValueError, IndexError) as exc:
            raise KubeError(422, "Invalid", f"index {key!r} out of range") from exc
    if isinstance(parent, dict) and key in parent:
        return parent.pop(key)
    raise KubeError(422, "Invalid", f"unable to remove nonexistent key: {key}")


def _add(doc: Any, parts: list[str], value: Any, *, replace: bool) -> Any:
    if not parts:
        return value
    parent = _parent(doc, parts)
    key = parts[-1]
    if isinstance(parent, list):
        if key == "-" and not replace:
            parent.append(value)
            return doc
        try:
            index = int(key)
        except ValueError as exc:
            raise KubeError(422, "Invalid", f"invalid array index {key!r}") from exc
        if replace:
            if not 0 <= index < len(parent):
                raise KubeError(422, "Invalid", f"index {key!r} out of range")
            parent[index] = value
        else:
            if not 0 <= index <= len(parent):
                raise KubeError(422, "Invalid", f"index {key!r} out of range")
            parent.insert(index, value)
    elif isinstance(parent, dict):
        if replace and key not in parent:
            raise KubeError(422, "Invalid",
                            f"replace operation does not apply: doc is missing key: {key}")
        parent[key] = value
    else:
        raise KubeError(422, "Invalid", f"cannot add to {type(parent).__name__}")
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 on a copy of ``target``; errors are 422 Invalid as the API server answers."""
    if not isinstance(operations, list):
        raise KubeError(400, "BadRequest", "json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise KubeError(400, "BadRequest", f"invalid json patch operation {op!r}")
        kind = op["op"]
        parts = _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")), replace=False)
        elif kind == "replace":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")), replace=True)
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "test":
            if _get(doc, parts) != op.get("value"):
                raise KubeError(422, "Invalid", f"testing value {op['path']} failed")
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = _remove(doc, source) if kind == "move" else copy.deepcopy(_get(doc, source))
            doc = _add(doc, parts, value, replace=False)
        else:
            raise KubeError(400, "BadRequest", f"unknown json patch operation {kind!r}")
    return doc
