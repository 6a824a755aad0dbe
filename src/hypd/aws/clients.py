"""boto3 clients with hypd's client configuration, one per service and Region per process.

botocore's standard retry mode already retries throttling and transient errors a few times
inside one call; what still fails reaches `hypd.aws.errors.translate` and, if temporary, the
state machine's Retry.

A client is made once per execution environment and kept: creating one costs tens of
milliseconds of botocore set-up, which a task invocation would otherwise pay for every client
it uses. Clients are thread-safe; their creation from boto3's default session is not, so it is
serialised. A client is kept per boto3 default session and per endpoint named by
``AWS_ENDPOINT_URL`` (none on Lambda): a process that moves to another endpoint or session (the
local cloud and the unit tests do) gets clients of that one.

Nothing here makes a client at import: `lazy_client`, `regional_clients` and `service_client`
make (or find) it when a call needs it, so a function's init holds no client and no credentials.
`forget_clients` drops them all (a SnapStart execution environment restored from a snapshot:
`hypd.snapstart`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, cast

import boto3
from botocore.config import Config

from hypd import __version__

CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 4},
    connect_timeout=5,
    read_timeout=20,
    user_agent_extra=f"hypd/{__version__}",
)


_CLIENTS: dict[tuple[boto3.session.Session, str, str | None, str | None], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def client(service: str, region: str | None = None) -> Any:
    """The boto3 client for `service` (endpoint, credentials and region from the environment
    when it is first made)."""
    with _CLIENTS_LOCK:
        if boto3.DEFAULT_SESSION is None:
            boto3.setup_default_session()
        session = cast(boto3.session.Session, boto3.DEFAULT_SESSION)
        key = (session, service, region, os.environ.get("AWS_ENDPOINT_URL"))
        made = _CLIENTS.get(key)
        if made is None:
            made = _CLIENTS[key] = session.client(service, region_name=region,
                                                  config=CLIENT_CONFIG)
        return made


def regional_clients(region: str | None) -> Callable[[str], Any]:
    """``clients(service)``: the client of each service in `region`, made on first use (what
    the task and event handlers are given, so a task pays only for the clients it needs)."""
    return lambda service: client(service, region)


def lazy_client(service: str, region: str | None = None) -> Callable[[], Any]:
    """A client made on first use, so a cold start pays only for the clients it needs."""
    return lambda: client(service, region)


class ServiceClient:
    """Stands for the client of `service` in `region`: each attribute is looked up on
    `client(service, region)` when used, so whoever holds this (the stores' table) never keeps
    a client made before `forget_clients`, nor makes one at init."""

    def __init__(self, service: str, region: str | None = None) -> None:
        self.service = service
        self.region = region

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle, mocks...: not the client's to answer
            raise AttributeError(name)
        return getattr(client(self.service, self.region), name)

    def __repr__(self) -> str:
        return f"ServiceClient({self.service!r}, {self.region!r})"


def service_client(service: str, region: str | None = None) -> Any:
    """The client of `service` in `region`, made on first use (`ServiceClient`)."""
    return ServiceClient(service, region)


def forget_clients() -> None:
    """Drop every client made so far and boto3's default session, whose credentials they were
    signed with: the next `client()` makes a new session (credentials read again) and new
    clients. Called when a SnapStart snapshot is restored (`hypd.snapstart`)."""
    with _CLIENTS_LOCK:
        _CLIENTS.clear()
        boto3.DEFAULT_SESSION = None
