"""CloudWatch Logs adapter: the log groups AWS services write for a cluster."""

from __future__ import annotations

from typing import Any

from hypd.aws.errors import all_pages


def log_groups(client: Any, prefix: str) -> list[dict[str, Any]]:
    """DescribeLogGroups' ``logGroups`` whose names start with `prefix`, every page."""
    groups: list[dict[str, Any]] = all_pages(
        client, "describe_log_groups", "logGroups", f"listing the log groups {prefix}*",
        logGroupNamePrefix=prefix,
    )
    return groups
