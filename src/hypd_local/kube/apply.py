"""Field ownership (``metadata.managedFields``) and server-side apply.

A simplified model of the API server's structured-merge-diff: fields are leaf paths through
maps; lists are atomic (owned and replaced as a whole, unlike the real merge keys). An apply by
a manager sets the fields it applies, removes the fields it applied before and no longer applies
(unless another manager owns them too) and conflicts (409) when it would change a field another
manager owns, unless ``force`` is set, which takes the field over. Updates (PUT, PATCH) give the
fields they change to their manager.
"""

from __future__ import annotations

import copy
from typing import Any

from hypd_local.kube.errors import KubeError

Path = tuple[str, ...]
Ownership = dict[tuple[str, str], set[Path]]  # (manager, "Apply"|"Update") -> leaf paths

_MISSING = object()
_SYSTEM_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "managedFields",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "generateName",
    }
)


def leaf_paths(obj: Any, prefix: Path = ()) -> set[Path]:
    """The leaf paths of an object's fields (maps are walked, anything else is a leaf)."""
    paths: set[Path] = set()
    if not isinstance(obj, dict):
        return {prefix}
    if not obj and prefix:
        return {prefix}
    for key, value in obj.items():
        if not prefix and key in ("apiVersion", "kind"):
            continue
        if prefix == ("metadata",) and key in _SYSTEM_METADATA:
            continue
        paths |= leaf_paths(value, (*prefix, key))
    return paths


def get_path(obj: Any, path: Path) -> Any:
    current = obj
    for part in path:
        if not isinstance(current, dict) or part not in current:
            return _MISSING
        current = current[part]
    return current


def _remove_path(obj: dict[str, Any], path: Path) -> None:
    parents: list[tuple[dict[str, Any], str]] = []
    current: Any = obj
    for part in path[:-1]:
        if not isinstance(current, dict) or part not in current:
            return
        parents.append((current, part))
        current = current[part]
    if isinstance(current, dict):
        current.pop(path[-1], None)
    # prune maps the removal left empty (but not the top-level sections)
    for parent, key in reversed(parents[1:]):
        if parent[key] == {}:
            del parent[key]


def _merge(target: Any, applied: Any) -> Any:
    if isinstance(target, dict) and isinstance(applied, dict):
        result = dict(target)
        for key, value in applied.items():
            result[key] = _merge(result.get(key), value)
        return result
    return copy.deepcopy(applied)


def _dotted(path: Path) -> str:
    return "".join(f".{part}" for part in path)


class ApplyConflict(KubeError):
    """409: an apply would change fields other managers own (``paths``)."""

    def __init__(self, conflicts: list[tuple[str, Path]], resource: str, group: str,
                 name: str) -> None:
        causes = [
            {"reason": "FieldManagerConflict", "message": f'conflict with "{who}"',
             "field": _dotted(path)}
            for who, path in conflicts
        ]
        fields = ", ".join(f'conflict with "{who}": {_dotted(path)}' for who, path in conflicts)
        plural = "s" if len(conflicts) > 1 else ""
        super().__init__(409, "Conflict",
                         f"Apply failed with {len(conflicts)} conflict{plural}: {fields}",
                         name=name, group=group, kind=resource, causes=causes)
        self.conflicts = conflicts
        self.resource, self.group, self.name = resource, group, name

    def without(self, allowed: set[Path]) -> ApplyConflict | None:
        """The conflicts left when those on ``allowed`` fields are not conflicts."""
        left = [(who, path) for who, path in self.conflicts if path not in allowed]
        return ApplyConflict(left, self.resource, self.group, self.name) if left else None


def owned_by_last_applied(current: dict[str, Any], last_applied: Any) -> set[Path]:
    """The fields of a client-side apply's last-applied configuration that still hold the
    values it applied: what ``kubectl apply --server-side`` may take over from client-side
    apply without a conflict (kube-apiserver's upgrade path)."""
    if not isinstance(last_applied, dict):
        return set()
    return {path for path in leaf_paths(last_applied)
            if get_path(last_applied, path) == get_path(current, path)}


def apply(
    current: dict[str, Any] | None,
    applied: dict[str, Any],
    ownership: Ownership,
    manager: str,
    *,
    force: bool,
    resource: str,
    group: str,
    name: str,
) -> dict[str, Any]:
    """The object after ``manager`` applies ``applied``; updates ``ownership`` in place."""
    applied_paths = leaf_paths(applied)
    mine = (manager, "Apply")
    if current is None:
        ownership[mine] = applied_paths
        return dict(copy.deepcopy(applied))
    conflicts: list[tuple[str, Path]] = []
    for path in sorted(applied_paths):
        if get_path(current, path) == get_path(applied, path):
            continue
        for key, owned in ownership.items():
            if key != mine and key[0] != manager and path in owned:
                conflicts.append((key[0], path))
    if conflicts and not force:
        raise ApplyConflict(conflicts, resource, group, name)
    for _, path in conflicts:
        for key, owned in ownership.items():
            if key != mine:
                owned.discard(path)
    result = copy.deepcopy(current)
    previous = ownership.get(mine, set())
    others: set[Path] = set()
    for key, owned in ownership.items():
        if key != mine:
            others |= owned
    for path in previous - applied_paths - others:
        _remove_path(result, path)
    merged: dict[str, Any] = _merge(result, applied)
    ownership[mine] = applied_paths
    _prune(ownership)
    return merged


def record_update(
    old: dict[str, Any] | None, new: dict[str, Any], ownership: Ownership, manager: str
) -> None:
    """Give the fields an update changed to ``manager`` (operation Update)."""
    new_paths = leaf_paths(new)
    old_paths = leaf_paths(old) if old is not None else set()
    changed = {p for p in new_paths if old is None or get_path(old, p) != get_path(new, p)}
    gone = old_paths - new_paths
    mine = (manager, "Update")
    for key, owned in ownership.items():
        if key != mine:
            owned -= changed
        owned -= gone
    if changed:
        ownership.setdefault(mine, set()).update(changed)
    _prune(ownership)


def _prune(ownership: Ownership) -> None:
    for key in [k for k, owned in ownership.items() if not owned]:
        del ownership[key]


def fields_v1(paths: set[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        for part in path:
            node = node.setdefault(f"f:{part}", {})
    return tree


def managed_fields(ownership: Ownership, api_version: str, times: dict[tuple[str, str], str],
                   default_time: str) -> list[dict[str, Any]]:
    """``metadata.managedFields``: one entry per manager and operation, each with the RFC 3339
    time of its last change (``default_time``, the creation time, if none was recorded)."""
    return [
        {
            "manager": manager,
            "operation": operation,
            "apiVersion": api_version,
            "time": times.get((manager, operation)) or default_time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(paths),
        }
        for (manager, operation), paths in sorted(ownership.items())
    ]


def _paths_of(tree: Any, prefix: Path = ()) -> set[Path]:
    if not isinstance(tree, dict) or not tree:
        return {prefix} if prefix else set()
    paths: set[Path] = set()
    for key, value in tree.items():
        if key.startswith("f:"):
            paths |= _paths_of(value, (*prefix, key[2:]))
        elif prefix:  # ".", or a list item ("k:", "v:", "i:"): the list is owned whole here
            paths.add(prefix)
    return paths


def parse_managed_fields(entries: Any) -> tuple[Ownership, dict[tuple[str, str], str]]:
    """The ownership and times ``metadata.managedFields`` says (as a client may set it: kubectl
    moves client-side-apply fields to server-side apply so); 400 when it is malformed."""
    if not isinstance(entries, list):
        raise KubeError(400, "BadRequest", "metadata.managedFields must be a list")
    ownership: Ownership = {}
    times: dict[tuple[str, str], str] = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("operation") not in ("Apply", "Update"):
            raise KubeError(400, "BadRequest", "metadata.managedFields: every entry needs a "
                            'manager and an operation "Apply" or "Update"')
        key = (str(entry.get("manager") or ""), str(entry["operation"]))
        ownership.setdefault(key, set()).update(_paths_of(entry.get("fieldsV1") or {}))
        if entry.get("time"):
            times[key] = str(entry["time"])
    _prune(ownership)
    return ownership, times
