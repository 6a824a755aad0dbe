"""Screenshots of the web console for the README and docs/console.md (docs/images/).

Starts the local cloud on the project's template, serves the console in front of it, creates
a cluster through the console's form in headless chromium (tests/console/browser.py) and saves
PNGs of the create form, the progress panel once every stage succeeded, the clusters, and the
cluster page's groups, features and workloads (the job form open).

    PYTHONPATH=$PWD/src:$PWD .venv/bin/python tools/console_screenshot.py [OUT_DIR]
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from hypd_cli.api_client import ApiClient
from hypd_cli.console import ConsoleServer
from hypd_cli.local import local_parameters, quiet_known_gaps
from tests.console.browser import chromium, fill_create_form, find, operation_end, wait

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 1280
TAG = "research"
BUCKET = "research-data"


def full_page(driver: WebDriver, path: Path) -> None:
    """A PNG of the whole page, beyond the window (chromium's DevTools screenshot)."""
    height = int(driver.execute_script(
        "return Math.ceil(document.querySelector('main').getBoundingClientRect().bottom"
        " + window.scrollY)"))
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {  # type: ignore[attr-defined]
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": WIDTH, "height": max(height, 480), "scale": 1},
    })
    path.write_bytes(base64.b64decode(shot["data"]))
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def main(out: Path) -> int:
    from hypd_local import LocalCloud

    quiet_known_gaps()
    out.mkdir(parents=True, exist_ok=True)
    template = ROOT / "template.yaml"
    with LocalCloud(template, parameters=local_parameters(template)) as cloud, \
            ConsoleServer(ApiClient(cloud.api_url), port=0) as console, \
            chromium((WIDTH, 900)) as driver:
        cloud.client("s3").create_bucket(
            Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region})
        driver.get(console.url + "#/create")
        fill_create_form(driver, tag=TAG, bucket=BUCKET, count=2)
        find(driver, '#create-feature-trainingOperator').click()
        driver.execute_script("window.scrollTo(0, 0)")
        full_page(driver, out / "console-create.png")

        find(driver, "#create-submit").click()
        wait(driver).until(lambda d: "#/operations/op-" in d.current_url)
        _operation, status, _stages = operation_end(driver)
        if status != "SUCCEEDED":
            print(f"the create ended {status}", file=sys.stderr)
            return 1
        full_page(driver, out / "console-operation.png")

        driver.get(console.url + "#/clusters")
        wait(driver).until(lambda d: "us-west-2a" in find(d, f'tr[data-cluster="{TAG}"]').text)
        full_page(driver, out / "console-clusters.png")

        for section, ready in (("groups", 'tr[data-group="workers"]'),
                               ("features", '[data-feature="trainingOperator"]'),
                               ("workloads", "#job-form")):
            driver.get(console.url + f"#/clusters/{TAG}/{section}")
            find(driver, ready)
            if section == "groups":
                wait(driver).until(lambda d: d.find_elements(By.CSS_SELECTOR,
                                                             "#add-group-type option"))
            if section == "workloads":
                find(driver, "#job-details > summary").click()
            full_page(driver, out / f"console-cluster-{section}.png")
        cloud.wait_for_executions(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images"))
