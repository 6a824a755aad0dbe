"""Patch formats: JSON merge patch (RFC 7386), strategic merge, JSON patch (RFC 6902).

Strategic merge follows the object's schema (`schemas`: the patch strategies and merge keys of
the Kubernetes types, the ones kubectl computes its patches from), see
`strategic_merge_patch`; an object without a schema falls back to merging lists of named items
on ``name``.
"""

from __future__ import annotations

import copy
from typing import Any

from hypd_local.kube.errors import KubeError
from hypd_local.kube.schemas import Resolve, Schema, resolve_node


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


def _strip(value: Any) -> Any:
    """A patch value with its directives (``$...`` keys) removed, to be stored as it is."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and v.get("$patch"))]
    return copy.deepcopy(value)


def _ordered(items: list[Any], order: Any, key: str | None) -> list[Any]:
    """``items`` in the order of ``$setElementOrder`` (those it does not name last)."""
    if not isinstance(order, list):
        return items
    ids = [o.get(key) if key and isinstance(o, dict) else o for o in order]
    rank = {repr(i): n for n, i in enumerate(ids)}
    return sorted(items, key=lambda item: rank.get(
        repr(item.get(key) if key and isinstance(item, dict) else item), len(rank)))


class _Schema:
    """Where the patch is in the object's schema (None: no schema, the named-list rule)."""

    def __init__(self, node: Any, resolve: Resolve | None) -> None:
        self.node = resolve_node(node, resolve) if isinstance(node, dict) and resolve else None
        self.resolve = resolve

    def child(self, key: str) -> _Schema:
        if self.node is None:
            return self
        properties = self.node.get("properties") or {}
        additional = self.node.get("additionalProperties")
        found = properties.get(key, additional if isinstance(additional, dict) else {})
        return _Schema(found, self.resolve)

    def items(self) -> _Schema:
        if self.node is None:
            return self
        return _Schema(self.node.get("items") or {}, self.resolve)


def _merge_list(current: Any, patch: list[Any], where: _Schema, order: Any) -> list[Any]:
    node = where.node
    replaced: list[Any] = _strip(patch)
    key: str | None
    if node is None:  # no schema: lists of named items merge on name
        if not (_named_items(patch) and _named_items(current)):
            return replaced
        strategy, key = "merge", "name"
    else:
        strategy = str(node.get("x-kubernetes-patch-strategy") or "")
        key = node.get("x-kubernetes-patch-merge-key")
    if "merge" not in strategy.split(","):
        return replaced
    merged = list(current) if isinstance(current, list) else []
    if not key:  # a set of scalars
        merged += [_strip(v) for v in patch if v not in merged and not isinstance(v, dict)]
        return _ordered(merged, order, None)
    index = {item.get(key): pos for pos, item in enumerate(merged) if isinstance(item, dict)}
    removed: set[Any] = set()
    for item in patch:
        if not isinstance(item, dict):
            continue
        if item.get("$patch") == "delete":
            removed.add(item.get(key))
        elif item.get(key) in index:
            pos = index[item.get(key)]
            merged[pos] = _merge(merged[pos], item, where.items())
        else:
            index[item.get(key)] = len(merged)
            merged.append(_merge({}, item, where.items()))
    kept = [item for item in merged
            if not (isinstance(item, dict) and item.get(key) in removed)]
    return _ordered(kept, order, key)


def _merge(target: Any, patch: Any, where: _Schema) -> Any:
    if not isinstance(patch, dict):
        return _strip(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, where.child(key),
                                      patch.get(f"$setElementOrder/{key}"))
        else:
            result[key] = _merge(result.get(key), value, where.child(key))
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def strategic_merge_patch(target: Any, patch: Any, schema: Schema | None = None,
                          resolve: Resolve | None = None) -> Any:
    """Strategic merge patch by the object's schema: lists merge on their
    ``x-kubernetes-patch-merge-key`` (``$patch: delete`` removes an item,
    ``$setElementOrder`` orders them, a merge strategy without a key is a set union), other lists
    are replaced; ``$patch: replace``, ``$retainKeys`` and ``$deleteFromPrimitiveList`` are
    honoured. Without a schema, lists of named items merge on ``name``."""
    return _merge(target, patch, _Schema(schema, resolve))


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
