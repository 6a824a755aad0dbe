"""FSx: creating a file system."""

from __future__ import annotations

from typing import Any

from hypd.aws.errors import translated


def create_file_system(client: Any, params: dict[str, Any], action: str) -> dict[str, Any]:
    """CreateFileSystem's ``FileSystem`` (idempotent by the params' ClientRequestToken)."""
    created: dict[str, Any] = translated(
        lambda: dict(client.create_file_system(**params)["FileSystem"]), action)
    return created
