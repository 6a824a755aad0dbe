"""Debian's chromium, headless, driven through its chromedriver (selenium), and the console's
pages driven as a user does: the web console's browser tests and tools/console_screenshot.py.

The browser must be there: without /usr/bin/chromium or /usr/bin/chromedriver the tests fail
(``./dev setup`` installs them), they never skip.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WINDOW = (1400, 1000)
# A closed network, as root: no sandbox, nothing that phones home.
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
)


@contextlib.contextmanager
def chromium(window: tuple[int, int] = WINDOW) -> Iterator[webdriver.Chrome]:
    """A headless chromium with a fresh profile, closed (and its profile removed) on exit."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        raise RuntimeError(f"the browser tests need {' and '.join(missing)}: run ./dev setup "
                           "(apt-get install chromium chromium-driver)")
    with tempfile.TemporaryDirectory(prefix="hypd-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--window-size={window[0]},{window[1]}")
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
        try:
            yield driver
        finally:
            driver.quit()


# -- the console's pages, as a user drives them -------------------------------------------

OPERATION_TIMEOUT = 300  # seconds of real time for a create on a slow, busy machine
PAGE_TIMEOUT = 60
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
CREATE_STAGES = ["network", "eks", "dependencies", "hyperpod", "storage", "verify"]


def wait(driver: WebDriver, timeout: float = PAGE_TIMEOUT) -> WebDriverWait[WebDriver]:
    # The progress panel redraws itself on every poll: an element found a moment ago may be
    # gone, so a wait looks again.
    return WebDriverWait(driver, timeout, poll_frequency=0.2,
                         ignored_exceptions=[NoSuchElementException,
                                             StaleElementReferenceException])


def find(driver: WebDriver, css: str) -> WebElement:
    """The element once it is on the page."""
    return wait(driver).until(lambda d: d.find_element(By.CSS_SELECTOR, css))


def type_into(element: WebElement, text: str) -> None:
    """Replace the field's text as a user does (select all, delete, type): each key fires the
    input events the page listens to, which WebElement.clear() does not."""
    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(Keys.DELETE)
    if text:
        element.send_keys(text)


def options(driver: WebDriver, select_css: str) -> list[str]:
    return [o.get_attribute("value") or "" for o in
            driver.find_elements(By.CSS_SELECTOR, f"{select_css} option")]


def pick_type(driver: WebDriver, prefix: str, instance_type: str) -> None:
    """Search for the type, then choose it in the list the search left."""
    type_into(find(driver, f"#{prefix}-type-search"), instance_type)
    wait(driver).until(lambda d: options(d, f"#{prefix}-type") == [instance_type])
    Select(driver.find_element(By.CSS_SELECTOR, f"#{prefix}-type")).select_by_value(
        instance_type)


def operation_end(driver: WebDriver, within: str = "") -> tuple[str, str, dict[str, str]]:
    """(operation id, final status, {stage: status}) of the progress panel (`within` a
    container) once the operation has ended, as one drawing of the panel shows them."""
    header_css = f"{within} [data-operation-status]".strip()
    rows_css = f"{within} tr[data-stage]".strip()

    def ended(d: WebDriver) -> tuple[str, str, dict[str, str]] | bool:
        header = d.find_element(By.CSS_SELECTOR, header_css)
        status = header.get_attribute("data-operation-status") or ""
        if status not in TERMINAL:
            return False
        stages = {r.get_attribute("data-stage") or "": r.get_attribute("data-stage-status") or ""
                  for r in d.find_elements(By.CSS_SELECTOR, rows_css)}
        return header.get_attribute("data-operation") or "", status, stages

    found = wait(driver, OPERATION_TIMEOUT).until(ended)
    assert isinstance(found, tuple)
    return found


def fill_create_form(driver: WebDriver, *, tag: str, bucket: str, zone: str = "us-west-2a",
                     instance_type: str = "ml.g6.4xlarge", count: int = 1) -> None:
    """On #/create, once the catalogue is loaded: one on-demand group of ``count``
    ``instance_type`` in ``zone``, the S3 bucket ``bucket`` (the form's other defaults)."""
    wait(driver).until(lambda d: len(options(d, "#create-type")) > 1)
    Select(find(driver, "#create-zone")).select_by_value(zone)
    wait(driver).until(lambda d: f"offered in {zone}" in find(d, "#create-type-info").text)
    pick_type(driver, "create", instance_type)
    type_into(find(driver, "#create-count"), str(count))
    type_into(find(driver, "#create-s3-bucket"), bucket)
    type_into(find(driver, "#create-tag"), tag)
