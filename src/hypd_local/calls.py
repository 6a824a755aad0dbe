"""Watching the AWS calls of this process: every boto3 client's, wherever it was created.

botocore copies a session's event handlers into each client when the client is created, so a
`before-call` handler registered on the session later misses the clients the functions made at
import (the local cloud imports every handler when it starts). `watch_calls` hooks the one place
every client's calls pass instead. Benchmarks and the IAM tests count with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.client import BaseClient


@dataclass(frozen=True)
class Call:
    service: str
    """The client's service name (``dynamodb``, ``stepfunctions``, ...)."""
    signing_name: str
    """The service's IAM prefix (``states`` for Step Functions)."""
    operation: str
    """The API operation (``PutItem``)."""
    params: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """What the call was given (``{"TableName": ..., "Key": ...}``): which item it read."""

    @property
    def action(self) -> str:
        """The IAM action the call is authorised as, before any exception (``states:...``)."""
        return f"{self.signing_name}:{self.operation}"


_LOCK = threading.Lock()
_WATCHERS: list[Callable[[Call], None]] = []
_ORIGINAL = BaseClient._make_api_call


def _make_api_call(client: Any, operation_name: str, api_params: Any) -> Any:
    model = client.meta.service_model
    call = Call(model.service_name, model.signing_name, operation_name, api_params)
    for watcher in list(_WATCHERS):
        watcher(call)
    return _ORIGINAL(client, operation_name, api_params)


@contextmanager
def watch_calls(watcher: Callable[[Call], None]) -> Iterator[None]:
    """Call `watcher` (on the calling thread) before every AWS call of this process."""
    with _LOCK:
        _WATCHERS.append(watcher)
        BaseClient._make_api_call = _make_api_call
    try:
        yield
    finally:
        with _LOCK:
            _WATCHERS.remove(watcher)
            if not _WATCHERS:
                BaseClient._make_api_call = _ORIGINAL
