"""FSx: creating, listing and deleting file systems."""

from __future__ import annotations

from typing import Any

from hypd.aws.errors import all_pages, code_in, translated, unless_not_found


def create_file_system(client: Any, params: dict[str, Any], action: str) -> dict[str, Any]:
    """CreateFileSystem's ``FileSystem`` (idempotent by the params' ClientRequestToken)."""
    created: dict[str, Any] = translated(
        lambda: dict(client.create_file_system(**params)["FileSystem"]), action)
    return created


def list_file_systems(client: Any) -> list[dict[str, Any]]:
    """Every file system of the account and Region (DescribeFileSystems' ``FileSystems``)."""
    return [dict(s) for s in all_pages(client, "describe_file_systems", "FileSystems",
                                       "listing FSx file systems")]


def delete_file_system(client: Any, file_system_id: str) -> None:
    """Start deleting the file system (already gone: nothing to do)."""
    unless_not_found(lambda: client.delete_file_system(FileSystemId=file_system_id),
                     f"deleting FSx file system {file_system_id}",
                     code_in("FileSystemNotFound"))
