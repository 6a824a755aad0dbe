"""Helpers shared by the integration and end-to-end tests (fault injection, raw table reads)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.eks.models import EKSBackend
from moto.sagemaker.models import SageMakerModelBackend

_BACKENDS: dict[str, type] = {"eks": EKSBackend, "sagemaker": SageMakerModelBackend}


@contextlib.contextmanager
def fail_calls(
    cloud: Any,
    service: str,
    method: str,
    error_code: str | None,
    *,
    times: int,
    block: threading.Event | None = None,
) -> Iterator[list[int]]:
    """Make the next `times` calls of `service`.`method` on the local cloud fail with
    `error_code` (an AWS error code), or, with `block`, wait until the event is set and then
    answer normally. Yields a one-item list counting the calls seen."""
    backend = _BACKENDS[service]
    original = getattr(backend, method)
    seen = [0]
    lock = threading.Lock()

    def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            seen[0] += 1
            affected = seen[0] <= times
        if affected and block is not None:
            if not block.wait(timeout=60):
                raise TimeoutError("the test never released the blocked call")
        elif affected and error_code is not None:
            raise JsonRESTError(error_code, f"injected {error_code} on {service}.{method}")
        return original(self, *args, **kwargs)

    setattr(backend, method, patched)
    try:
        yield seen
    finally:
        setattr(backend, method, original)


def records_in_table(cloud: Any, pk_prefix: str) -> list[str]:
    """The partition keys in the hypd table that start with `pk_prefix` (a test may Scan)."""
    client = cloud.client("dynamodb")
    table = cloud.resources["HypdTable"]
    keys: list[str] = []
    for page in client.get_paginator("scan").paginate(TableName=table):
        keys.extend(
            item["PK"]["S"] for item in page["Items"] if item["PK"]["S"].startswith(pk_prefix)
        )
    return sorted(keys)
