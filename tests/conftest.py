"""Fixtures of the integration and end-to-end tests: the real template on a local cloud."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hypd_cli.api_client import ApiClient
from tests.published_events import check_published_events

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cloud(request: pytest.FixtureRequest) -> Iterator[object]:
    """A fresh local cloud running the project's template.yaml (one per test: no shared state).

    Its virtual clock ticks with real time, unless the test is marked `frozen_clock`: then
    it moves only when something advances it (Wait states, back-off, task-token waits,
    `cloud.clock.advance`), so a test may compare virtual durations exactly, however long
    the machine takes meanwhile. A test marked `function_concurrency(n)` gets n execution
    environments per function (two requests served at once), instead of one.
    """
    from hypd_cli.local import local_parameters
    from hypd_local import LocalCloud
    from hypd_local.clock import VirtualClock

    template = ROOT / "template.yaml"
    clock = VirtualClock(ticking=request.node.get_closest_marker("frozen_clock") is None)
    environments = request.node.get_closest_marker("function_concurrency")
    with LocalCloud(template, parameters=local_parameters(template), clock=clock,
                    function_concurrency=environments.args[0] if environments else 1) as running:
        yield running
        running.wait_for_executions(timeout=60)
        # What hypd published matches what its records say (tests/published_events.py).
        check_published_events(running, ApiClient(running.api_url))


@pytest.fixture
def api(cloud: object) -> ApiClient:
    """A REST API client for the cloud's API front."""
    return ApiClient(cloud.api_url)  # type: ignore[attr-defined]
