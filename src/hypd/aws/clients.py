"""boto3 clients with hypd's client configuration.

botocore's standard retry mode already retries throttling and transient errors a few times
inside one call; what still fails reaches `hypd.aws.errors.translate` and, if temporary, the
state machine's Retry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import boto3
from botocore.config import Config

from hypd import __version__

CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 4},
    connect_timeout=5,
    read_timeout=20,
    user_agent_extra=f"hypd/{__version__}",
)


def client(service: str, region: str | None = None) -> Any:
    """A boto3 client for `service` (endpoint, credentials and region from the environment)."""
    return boto3.client(service, region_name=region, config=CLIENT_CONFIG)


def lazy_client(service: str, region: str | None = None) -> Callable[[], Any]:
    """A client created on first use, so a cold start pays only for the clients it needs."""

    @functools.cache
    def get() -> Any:
        return client(service, region)

    return get
