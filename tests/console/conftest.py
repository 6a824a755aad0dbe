"""Fixtures of the web console's tests: a console on a free port in front of the local cloud
(`console`), and a headless chromium (`browser`) that, when its test fails, prints what the
page showed and what the browser logged."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from hypd_cli.console import ConsoleServer


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[_FAILED] = report.failed


_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def console(cloud: Any) -> Iterator[ConsoleServer]:
    """`hypd console` as `hypd local up` serves it: plain requests to the cloud's API."""
    with ConsoleServer(ApiClient(cloud.api_url), port=0) as server:
        yield server


@pytest.fixture
def browser(request: pytest.FixtureRequest) -> Iterator[Any]:
    from selenium.webdriver.common.by import By

    from tests.console.browser import chromium

    with chromium() as driver:
        yield driver
        if request.node.stash.get(_FAILED, False):
            print(f"--- the page at {driver.current_url}:")
            print(driver.find_element(By.TAG_NAME, "body").text[:4000])
            print("--- the browser's log:")
            for entry in driver.get_log("browser"):  # type: ignore[no-untyped-call]
                print(entry)
