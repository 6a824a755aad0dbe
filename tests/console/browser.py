"""Debian's chromium, headless, driven through its chromedriver (selenium): the web console's
browser tests and tools/console_screenshot.py.

The browser must be there: without /usr/bin/chromium or /usr/bin/chromedriver the tests fail
(``./dev setup`` installs them), they never skip.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WINDOW = (1400, 1000)
# A closed network, as root: no sandbox, nothing that phones home.
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", f"--window-size={WINDOW[0]},{WINDOW[1]}",
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
