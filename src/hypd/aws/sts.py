"""STS: who the caller is."""

from __future__ import annotations

from typing import Any

from hypd.aws.errors import translated


def caller_arn(client: Any) -> str:
    """GetCallerIdentity's ``Arn``: an assumed-role session or a user."""
    return str(translated(lambda: client.get_caller_identity()["Arn"],
                          "reading the caller's identity (STS GetCallerIdentity)"))
