"""Amazon Managed Service for Prometheus adapter: the workspace observability writes to."""

from __future__ import annotations

from typing import Any

from hypd.aws.errors import all_pages, code_in, translated, unless_not_found

_NOT_FOUND = code_in("ResourceNotFoundException")


def find_workspace(client: Any, alias: str, *, deleting: bool = False) -> dict[str, Any] | None:
    """The workspace (DescribeWorkspace's ``workspace``) with this alias, or None; one being
    deleted (DELETING) only with `deleting` (it still exists until AMP finishes)."""
    summaries = all_pages(
        client, "list_workspaces", "workspaces", f"listing Prometheus workspaces {alias}",
        alias=alias,
    )
    for summary in summaries:
        if summary.get("alias") == alias and (
                deleting or summary["status"]["statusCode"] != "DELETING"):
            return describe_workspace(client, str(summary["workspaceId"]))
    return None


def describe_workspace(client: Any, workspace_id: str) -> dict[str, Any] | None:
    workspace: dict[str, Any] | None = unless_not_found(
        lambda: client.describe_workspace(workspaceId=workspace_id)["workspace"],
        f"describing Prometheus workspace {workspace_id}",
        _NOT_FOUND,
    )
    return workspace


def create_workspace(client: Any, alias: str, tags: dict[str, str], token: str) -> str:
    """The new workspace's id."""
    answer = translated(
        lambda: client.create_workspace(alias=alias, tags=tags, clientToken=token),
        f"creating Prometheus workspace {alias}",
    )
    return str(answer["workspaceId"])


def delete_workspace(client: Any, workspace_id: str) -> None:
    unless_not_found(
        lambda: client.delete_workspace(workspaceId=workspace_id),
        f"deleting Prometheus workspace {workspace_id}",
        _NOT_FOUND,
    )
