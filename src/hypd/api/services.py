"""What the API routes depend on, built once per function instance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypd.clusters.store import ClusterStore
from hypd.operations.locks import LockStore
from hypd.operations.store import OperationStore


@dataclass(frozen=True)
class ApiServices:
    operations: OperationStore
    clusters: ClusterStore
    locks: LockStore
    sfn_client: Callable[[], Any]
    discover_state_machine_arn: str | None
    # The catalogue routes' clients: created on first use (a cold start pays only for its own).
    ec2_client: Callable[[], Any]
    sagemaker_client: Callable[[], Any]
