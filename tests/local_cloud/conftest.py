"""Fixtures of the local cloud's own tests: one fixture-template cloud per test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hypd_local import LocalCloud

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE_TEMPLATE = FIXTURES / "template.yaml"
REAL_TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    """The fixture stack on a running local cloud (shared by the tests of one module)."""
    with LocalCloud(FIXTURE_TEMPLATE) as running:
        yield running


@pytest.fixture
def idle_cloud(cloud: LocalCloud) -> Iterator[LocalCloud]:
    """The module's cloud, checked to be quiet after the test (no work left running)."""
    yield cloud
    cloud.wait_for_executions(timeout=30)
