"""hypd.snapstart: SnapStart's hooks are registered where the runtime has them, and a restored
environment keeps no client, session or random state from the snapshot."""

from __future__ import annotations

import random
import sys
import types
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from hypd import snapstart
from hypd.aws import clients


def test_without_the_runtimes_library_nothing_is_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # import fails
    assert snapstart.register(lambda: None) is False


def test_the_priming_runs_before_the_snapshot_and_the_cleanup_after_a_restore(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registered: dict[str, list[Callable[..., Any]]] = {"before": [], "after": []}
    library = types.ModuleType("snapshot_restore_py")
    library.register_before_snapshot = registered["before"].append  # type: ignore[attr-defined]
    library.register_after_restore = registered["after"].append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", library)

    def prime() -> None:
        pass

    assert snapstart.register(prime) is True
    assert registered == {"before": [prime], "after": [snapstart.restored]}


def test_a_restored_environment_makes_new_clients_and_draws_new_numbers(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a client (and the default session it signs with) and random's state in a snapshot
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    monkeypatch.setattr(clients, "_CLIENTS", {})
    made_before = clients.client("sts", "us-west-2")
    session_before = boto3.DEFAULT_SESSION
    state = random.getstate()
    drawn_in_one_environment = [random.random() for _ in range(4)]  # noqa: S311
    random.setstate(state)
    # When an environment is restored from it
    snapstart.restored()
    # Then nothing made before is used: a new session, a new client
    assert clients._CLIENTS == {}
    assert boto3.DEFAULT_SESSION is None
    assert clients.client("sts", "us-west-2") is not made_before
    assert boto3.DEFAULT_SESSION is not session_before
    # And random was seeded again: it does not repeat the snapshot's numbers
    assert [random.random() for _ in range(4)] != drawn_in_one_environment  # noqa: S311
