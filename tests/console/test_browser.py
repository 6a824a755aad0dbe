"""The web console in a real browser (Debian's headless chromium through chromedriver) against
the local cloud: a cluster created through the form with every stage seen to succeed, a group
added and a feature toggled on the cluster page, and the API's refusals shown to the user.

Every wait is on what the page shows (WebDriverWait, generous timeouts): the local cloud's
virtual clock runs the pipeline's waits by itself, however fast the machine is.
"""

from __future__ import annotations

import json
from typing import Any

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

from hypd_cli.api_client import ApiClient
from hypd_cli.console import ConsoleServer
from tests.e2e.capacity import BUCKET, TAG, created_cluster
from tests.support import group_body

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


def test_a_cluster_is_created_through_the_form_and_every_stage_succeeds(
    cloud: Any, api: ApiClient, console: ConsoleServer, browser: WebDriver
) -> None:
    # Given the bucket the cluster mounts, and the console's create form
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region})
    browser.get(console.url + "#/create")
    wait(browser).until(lambda d: len(options(d, "#create-type")) > 10)
    Select(find(browser, "#create-zone")).select_by_value("us-west-2a")

    # When the user searches the instance types for "h100"
    type_into(find(browser, "#create-type-search"), "h100")

    # Then only the H100 types are offered, each with its GPUs, memory and EFA
    wait(browser).until(lambda d: set(options(d, "#create-type")) == {
        "ml.p5.48xlarge", "ml.p5.4xlarge"})
    p5 = browser.find_element(By.CSS_SELECTOR, '#create-type option[value="ml.p5.48xlarge"]')
    assert "8\N{MULTIPLICATION SIGN} H100" in p5.text
    assert "EFA" in p5.text
    assert "GiB memory" in p5.text
    # and accelerated types come first when nothing is searched
    type_into(find(browser, "#create-type-search"), "")
    wait(browser).until(lambda d: len(options(d, "#create-type")) > 10)
    groups = [g.get_attribute("label") for g in
              browser.find_elements(By.CSS_SELECTOR, "#create-type optgroup")]
    assert groups[0] != "CPU only"
    assert groups[-1] == "CPU only"

    # When the form is filled in with a tag the API refuses, and sent
    pick_type(browser, "create", "ml.g6.4xlarge")
    type_into(find(browser, "#create-count"), "1")
    type_into(find(browser, "#create-s3-bucket"), BUCKET)
    type_into(find(browser, "#create-tag"), "bad tag!")
    find(browser, "#create-submit").click()

    # Then the page shows the API's 400, naming the field
    error = find(browser, '#create-error [data-error-code="ValidationError"]')
    assert "HTTP 400" in error.text
    assert browser.find_element(By.CSS_SELECTOR, '#create-error [data-field="tag"]')

    # When the tag is corrected: the request shown is the one sent
    type_into(find(browser, "#create-tag"), "web")
    preview = json.loads(find(browser, "#create-preview").text)
    assert preview == {
        "tag": "web", "availabilityZone": "us-west-2a",
        "instanceGroups": [{"name": "workers", "instanceType": "ml.g6.4xlarge", "count": 1,
                            "capacity": {"type": "on-demand"}}],
        "storage": {"s3": {"bucket": BUCKET}},
    }
    find(browser, "#create-submit").click()

    # Then the progress panel follows the operation to its end, every stage SUCCEEDED
    wait(browser).until(lambda d: "#/operations/op-" in d.current_url)
    operation_id, status, shown = operation_end(browser)
    assert status == "SUCCEEDED"
    assert find(browser, "#op-status").text == "SUCCEEDED"
    operation = api.get_operation(operation_id)
    assert list(shown)[:len(CREATE_STAGES)] == CREATE_STAGES
    assert shown == {stage["name"]: "SUCCEEDED" for stage in operation["stages"]}
    # and the API says the operation succeeded and the cluster is ACTIVE
    assert operation["status"] == "SUCCEEDED"
    assert api.get_cluster("web")["status"] == "ACTIVE"

    # and the clusters page lists it, ACTIVE, with a link to that operation
    browser.get(console.url + "#/clusters")
    row = find(browser, 'tr[data-cluster="web"]')
    assert row.get_attribute("data-cluster-status") == "ACTIVE"
    assert row.find_element(By.CSS_SELECTOR, f'a[href="#/operations/{operation_id}"]')


def test_a_group_is_added_through_the_cluster_page(
    cloud: Any, api: ApiClient, console: ConsoleServer, browser: WebDriver
) -> None:
    # Given an ACTIVE cluster and its groups page
    created_cluster(api, cloud, group_body(count=1))
    browser.get(console.url + f"#/clusters/{TAG}/groups")
    find(browser, 'tr[data-group="workers"]')
    wait(browser).until(lambda d: len(options(d, "#add-group-type")) > 10)

    # When a spot group with a label is added through the form
    type_into(find(browser, "#add-group-name"), "burst")
    pick_type(browser, "add-group", "ml.g6.4xlarge")
    type_into(find(browser, "#add-group-count"), "1")
    find(browser, "#add-group-capacity-spot").click()
    type_into(find(browser, "#add-group-labels"), "team=research")
    assert json.loads(find(browser, "#add-group-preview").text) == {
        "name": "burst", "instanceType": "ml.g6.4xlarge", "count": 1,
        "capacity": {"type": "spot"}, "labels": {"team": "research"}}
    find(browser, "#add-group-submit").click()

    # Then its operation is followed to SUCCEEDED and the group is listed
    operation_id, status, stages = operation_end(browser, "[data-followed]")
    assert status == "SUCCEEDED"
    assert api.get_operation(operation_id)["kind"] == "add-instance-group"
    assert stages
    assert set(stages.values()) <= {"SUCCEEDED", "SKIPPED"}
    row = wait(browser).until(
        lambda d: d.find_element(By.CSS_SELECTOR, 'tr[data-group="burst"]').text)
    assert "spot" in row
    assert "team=research" in row
    # as the API says
    groups = {g["name"]: g for g in api.list_instance_groups(TAG)["instanceGroups"]}
    assert groups["burst"]["capacity"]["type"] == "spot"
    assert groups["burst"]["labels"] == {"team": "research"}


def test_a_feature_is_toggled_on_the_cluster_page(
    cloud: Any, api: ApiClient, console: ConsoleServer, browser: WebDriver
) -> None:
    # Given an ACTIVE cluster whose training operator is off
    created_cluster(api, cloud, group_body(count=1))
    browser.get(console.url + f"#/clusters/{TAG}/features")
    find(browser, '[data-feature="trainingOperator"][data-enabled="false"]')

    # When the user turns it on
    find(browser, '[data-toggle="trainingOperator"]').click()

    # Then its operation succeeds and the feature shows enabled, as the API says
    operation_id, status, _stages = operation_end(browser, "[data-followed]")
    assert status == "SUCCEEDED"
    assert api.get_operation(operation_id)["kind"] == "set-features"
    find(browser, '[data-feature="trainingOperator"][data-enabled="true"]')
    assert api.get_features(TAG)["features"]["trainingOperator"]["enabled"] is True
