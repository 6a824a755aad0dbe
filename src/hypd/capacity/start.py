"""Starting a capacity operation: the one path for the API and for automatic repair."""

from __future__ import annotations

from pydantic import BaseModel

from hypd.operations.models import Operation, OperationKind
from hypd.operations.starter import new_operation


def capacity_operation(kind: OperationKind, tag: str, request: BaseModel) -> Operation:
    """A new (not yet recorded) capacity operation of `kind` on cluster `tag`; start it with
    `Starter.launch` (under its cluster's lock, at its first stage)."""
    return new_operation(kind, request, cluster_tag=tag)
