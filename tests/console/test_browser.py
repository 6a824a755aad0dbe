"""The web console in a real browser (Debian's headless chromium through chromedriver) against
the local cloud: a cluster of two groups created through the form with every stage seen to
succeed; on the cluster page a group added, a feature toggled, a training job submitted, its
logs read and the job deleted, an endpoint deployed and invoked, a team's quota set and
deleted and the repair policy saved; the API's refusals shown to the user; clusters hypd did
not create imported and forgotten; a failed operation's error shown and retried from its
panel; and a teardown confirmed by typing the tag, after deletion protection was turned on
and off.

Every wait is on what the page shows (WebDriverWait, generous timeouts): the local cloud's
virtual clock runs the pipeline's waits by itself, however fast the machine is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from hypd_cli.api_client import ApiClient
from hypd_cli.console import ConsoleServer
from hypd_local.seed import ClusterSeed, seed_clusters
from tests.console.browser import (
    CREATE_STAGES,
    fill_create_form,
    find,
    operation_end,
    options,
    pick_type,
    type_into,
    wait,
)
from tests.e2e.capacity import BUCKET, TAG, created_cluster, run
from tests.support import fail_calls, group_body

TLS_BUCKET = "hyperpod-tls-console"


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
    # and with that type, training-plan capacity offers the zone's plans for it
    Select(browser.find_element(By.CSS_SELECTOR, "#create-type")).select_by_value(
        "ml.p5.48xlarge")
    find(browser, "#create-capacity-training-plan").click()
    plans = {p["name"]: p["arn"] for p in api.list_training_plans()["trainingPlans"]}
    assert options(browser, "#create-plan") == [plans["p5-active"]]  # us-west-2a, 4 x p5
    find(browser, "#create-capacity-on-demand").click()
    # and accelerated types come first when nothing is searched
    type_into(find(browser, "#create-type-search"), "")
    wait(browser).until(lambda d: len(options(d, "#create-type")) > 10)
    groups = [g.get_attribute("label") for g in
              browser.find_elements(By.CSS_SELECTOR, "#create-type optgroup")]
    assert groups[0] != "CPU only"
    assert groups[-1] == "CPU only"

    # When the form is filled in with a tag the API refuses, and sent
    fill_create_form(browser, tag="bad tag!", bucket=BUCKET)
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

    # When a second group is added, and a third added and removed again
    find(browser, "#create-add-group").click()
    wait(browser).until(lambda d: len(options(d, "#create-g2-type")) > 10)
    type_into(find(browser, "#create-g2-name"), "burst")
    pick_type(browser, "create-g2", "ml.g6.4xlarge")
    find(browser, "#create-g2-capacity-spot").click()
    find(browser, "#create-add-group").click()
    find(browser, "#create-g3-remove").click()
    wait(browser).until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#create-g3-block"))

    # Then the request has both groups
    assert json.loads(find(browser, "#create-preview").text)["instanceGroups"] == [
        {"name": "workers", "instanceType": "ml.g6.4xlarge", "count": 1,
         "capacity": {"type": "on-demand"}},
        {"name": "burst", "instanceType": "ml.g6.4xlarge", "count": 1,
         "capacity": {"type": "spot"}},
    ]
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
    capacity = {g["name"]: g["capacity"]["type"]
                for g in api.list_instance_groups("web")["instanceGroups"]}
    assert capacity == {"workers": "on-demand", "burst": "spot"}

    # and the clusters page lists it, ACTIVE, with a link to that operation
    browser.get(console.url + "#/clusters")
    row = find(browser, 'tr[data-cluster="web"]')
    assert row.get_attribute("data-cluster-status") == "ACTIVE"
    assert row.find_element(By.CSS_SELECTOR, f'a[href="#/operations/{operation_id}"]')


@pytest.fixture
def cluster_page(cloud: Any, api: ApiClient, console: ConsoleServer, browser: WebDriver
                 ) -> Callable[[str, str], None]:
    """An ACTIVE cluster (TAG, one group `workers`) made through the API; returns a function
    that opens one of its page's sections and waits until `ready` (CSS) is shown."""
    created_cluster(api, cloud, group_body(count=1))

    def open_section(section: str, ready: str) -> None:
        browser.get(console.url + f"#/clusters/{TAG}/{section}")
        find(browser, ready)

    return open_section


def test_a_group_is_added_through_the_cluster_page(
    api: ApiClient, browser: WebDriver, cluster_page: Callable[[str, str], None]
) -> None:
    # Given the groups page of an ACTIVE cluster
    cluster_page("groups", 'tr[data-group="workers"]')
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


def test_a_feature_is_toggled_on_the_cluster_page_and_its_events_shown(
    cloud: Any, api: ApiClient, browser: WebDriver, cluster_page: Callable[[str, str], None]
) -> None:
    # Given the features of an ACTIVE cluster, whose training operator is off
    cluster_page("features", '[data-feature="trainingOperator"][data-enabled="false"]')

    # When the user turns it on
    find(browser, '[data-toggle="trainingOperator"]').click()

    # Then its operation succeeds and the feature shows enabled, as the API says
    operation_id, status, _stages = operation_end(browser, "[data-followed]")
    assert status == "SUCCEEDED"
    assert api.get_operation(operation_id)["kind"] == "set-features"
    find(browser, '[data-feature="trainingOperator"][data-enabled="true"]')
    assert api.get_features(TAG)["features"]["trainingOperator"]["enabled"] is True

    # When its events are recorded (they show once 2 s old) and the operations tab is opened
    cloud.wait_for_executions(timeout=60)
    cloud.clock.advance(5)
    cluster_page("operations", "#events-list")

    # Then the tab lists the operation's events, as GET /events has them
    recorded = [e["id"] for e in api.list_events(cluster=TAG, limit=50)["events"]]

    def shown_events(driver: WebDriver) -> list[str | None]:
        return [r.get_attribute("data-event")
                for r in driver.find_elements(By.CSS_SELECTOR, "#events-list tr[data-event]")]

    # (the tab draws its rows after its own GET /events: wait for them, not for the table)
    wait(browser).until(lambda d: len(shown_events(d)) >= len(recorded))
    assert shown_events(browser) == recorded
    ours = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#events-list tr[data-event]")
            if operation_id in r.text]
    assert any("set-features: RUNNING" in text and "SUCCEEDED" in text for text in ours), ours


def test_a_job_is_submitted_an_endpoint_deployed_and_the_job_deleted_on_the_cluster_page(
    cloud: Any, api: ApiClient, browser: WebDriver, cluster_page: Callable[[str, str], None]
) -> None:
    # Given an ACTIVE cluster with the training and the inference operators on
    cloud.client("s3").create_bucket(
        Bucket=TLS_BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region})
    features = run(api, cloud, api.set_features(TAG, {
        "trainingOperator": {"enabled": True},
        "inferenceOperator": {"enabled": True, "tlsCertificateBucket": TLS_BUCKET}}))
    assert features["status"] == "SUCCEEDED", features.get("error")
    cluster_page("workloads", "#job-form")

    # When a training job is filled in: the types offered are the cluster's groups'
    assert options(browser, "#job-type") == ["ml.g6.4xlarge"]
    find(browser, "#job-details > summary").click()
    type_into(find(browser, "#job-name"), "llama")
    type_into(find(browser, "#job-image"), "repo/train:1")
    type_into(find(browser, "#job-command"), "bash\n-c\nsleep 600")
    type_into(find(browser, "#job-env"), "NCCL_DEBUG=INFO")
    type_into(find(browser, "#job-volumes"), "hypd-shared:/shared")

    # Then the request shown is the one the API takes
    assert json.loads(find(browser, "#job-preview").text) == {
        "name": "llama", "image": "repo/train:1", "instanceType": "ml.g6.4xlarge",
        "nodeCount": 1, "command": ["bash", "-c", "sleep 600"],
        "env": {"NCCL_DEBUG": "INFO"},
        "volumes": [{"claim": "hypd-shared", "mountPath": "/shared"}]}

    # When it is submitted: its operation succeeds and the job is listed, running
    find(browser, "#job-submit").click()
    operation_id, status, _stages = operation_end(browser, "#job-result")
    assert status == "SUCCEEDED"
    assert api.get_operation(operation_id)["kind"] == "submit-training-job"
    find(browser, 'tr[data-job="llama"]')
    job = api.get_training_job(TAG, "llama")
    assert job["instanceType"] == "ml.g6.4xlarge"

    # When its pod runs, the user reads its logs: the lines the API has
    for _ in range(60):  # at most 30 virtual minutes
        if api.get_training_job(TAG, "llama")["pods"]:
            break
        cloud.clock.advance(30)
        cloud.emulation.tick(wait=True)
    else:
        pytest.fail("the job's pod never started")
    find(browser, '[data-logs-job="llama"]').click()
    assert "pod llama-pod-0" in find(browser, "#workload-detail h3").text
    shown = find(browser, "#job-logs").text.splitlines()
    every = api.get_training_job_logs(TAG, "llama", tail=10000)["logs"].splitlines()
    assert shown[0].startswith("Starting pod llama-pod-0 on node ")
    assert "+ bash -c sleep 600" in shown
    assert set(shown) <= set(every)

    # When a JumpStart model is deployed, registered with SageMaker
    find(browser, "#endpoint-details > summary").click()
    type_into(find(browser, "#endpoint-name"), "falcon")
    type_into(find(browser, "#endpoint-model-id"), "huggingface-llm-falcon-7b-bf16")
    find(browser, "#endpoint-eula").click()
    type_into(find(browser, "#endpoint-sagemaker"), "falcon")
    assert json.loads(find(browser, "#endpoint-preview").text) == {
        "name": "falcon", "instanceType": "ml.g6.4xlarge", "replicas": 1,
        "jumpStart": {"modelId": "huggingface-llm-falcon-7b-bf16", "acceptEula": True},
        "sageMakerEndpointName": "falcon"}
    find(browser, "#endpoint-submit").click()

    # Then it is deployed and listed, as the API says
    operation_id, status, _stages = operation_end(browser, "#endpoint-result")
    assert status == "SUCCEEDED"
    assert api.get_operation(operation_id)["kind"] == "deploy-endpoint"
    find(browser, 'tr[data-endpoint="falcon"]')
    assert api.get_inference_endpoint(TAG, "falcon")["ready"] is True

    # When it is invoked from the page, with a JSON request
    find(browser, '[data-invoke-endpoint="falcon"]').click()
    type_into(find(browser, "#invoke-body"), '{"inputs": "What is HyperPod?"}')
    find(browser, "#invoke-send").click()

    # Then the model's answer is shown: the emulated model echoes what it was sent
    answer = json.loads(find(browser, "#invoke-result").text)
    assert answer["input"] == {"inputs": "What is HyperPod?"}

    # When the job is deleted, once the user has said yes
    find(browser, '[data-delete-job="llama"]').click()
    wait(browser).until(lambda d: d.switch_to.alert).accept()

    # Then the delete operation is followed and the job leaves the list
    operation_id, status, _stages = operation_end(browser, "#workloads-progress")
    assert status == "SUCCEEDED"
    assert api.get_operation(operation_id)["kind"] == "delete-training-job"
    wait(browser).until(lambda d: not d.find_elements(By.CSS_SELECTOR, 'tr[data-job="llama"]'))
    assert api.list_training_jobs(TAG)["jobs"] == []


def test_a_team_quota_is_set_and_deleted_and_the_repair_policy_saved_on_the_cluster_page(
    cloud: Any, api: ApiClient, browser: WebDriver, cluster_page: Callable[[str, str], None]
) -> None:
    # Given an ACTIVE cluster with task governance on, and its teams page
    features = run(api, cloud, api.set_features(TAG, {"taskGovernance": {"enabled": True}}))
    assert features["status"] == "SUCCEEDED", features.get("error")
    cluster_page("teams", "#team-form")
    # (the hint is filled in once the page has read the cluster's groups)
    wait(browser).until(lambda d: find(d, "#team-quota-hint").text)
    assert "ml.g6.4xlarge (workers, 1)" in find(browser, "#team-quota-hint").text

    # When a team's quota is filled in and set
    type_into(find(browser, "#team-name"), "ml")
    type_into(find(browser, "#team-quota"), "ml.g6.4xlarge=1")
    type_into(find(browser, "#team-weight"), "10")
    assert json.loads(find(browser, "#team-preview").text) == {
        "resources": [{"instanceType": "ml.g6.4xlarge", "count": 1}],
        "sharing": {"strategy": "LendAndBorrow"}, "fairShareWeight": 10,
        "preemptTeamTasks": "LowerPriority"}
    find(browser, "#team-submit").click()

    # Then its operation succeeds and the team is listed with its quota, as the API says
    operation_id, status, _stages = operation_end(browser, "#team-result")
    assert status == "SUCCEEDED"
    assert api.get_operation(operation_id)["kind"] == "set-team"
    row = wait(browser).until(lambda d: d.find_element(By.CSS_SELECTOR, 'tr[data-team="ml"]').text)
    assert "1 \N{MULTIPLICATION SIGN} ml.g6.4xlarge" in row
    assert api.get_team(TAG, "ml")["resources"] == [{"instanceType": "ml.g6.4xlarge", "count": 1}]

    # When the team is deleted, once the user has said yes
    find(browser, '[data-delete-team="ml"]').click()
    wait(browser).until(lambda d: d.switch_to.alert).accept()
    _id, status, _stages = operation_end(browser, "#teams-progress")
    assert status == "SUCCEEDED"
    wait(browser).until(lambda d: not d.find_elements(By.CSS_SELECTOR, 'tr[data-team="ml"]'))
    assert api.list_teams(TAG)["teams"] == []

    # When the repair policy is set to replace, at most 3 an hour, on the nodes page
    cluster_page("nodes", "#policy-action")
    assert find(browser, "#policy-state").get_attribute("data-default") == "true"
    Select(find(browser, "#policy-action")).select_by_value("replace")
    type_into(find(browser, "#policy-per-hour"), "3")
    find(browser, "#policy-save").click()

    # Then the page says the cluster has its own policy, and the API has it
    wait(browser).until(lambda d: find(d, "#policy-state").get_attribute("data-default")
                        == "false")
    assert api.get_health_policy(TAG)["policy"] == {
        "action": "replace", "maxActionsPerHour": 3, "nodeCooldownMinutes": 60}


def test_clusters_hypd_did_not_create_are_imported_and_then_forgotten(
    cloud: Any, api: ApiClient, console: ConsoleServer, browser: WebDriver
) -> None:
    # Given an EKS and a HyperPod cluster that hypd did not create, and the clusters page
    seed_clusters(cloud, [ClusterSeed("theirs")])
    browser.get(console.url + "#/clusters")
    find(browser, "#clusters-list p")

    # When the user imports the account's clusters
    find(browser, "#discover-details > summary").click()
    find(browser, "#discover-submit").click()

    # Then the discover operation succeeds and the cluster is listed
    operation_id, status, _stages = operation_end(browser, "#discover-progress")
    assert status == "SUCCEEDED"
    assert api.get_operation(operation_id)["kind"] == "discover"
    (tag,) = [c["tag"] for c in api.list_clusters()["clusters"]]
    find(browser, f'tr[data-cluster="{tag}"]')

    # When its teardown page is opened: hypd deletes none of it, it can only be forgotten
    browser.get(console.url + f"#/clusters/{tag}/teardown")
    forget = find(browser, "#teardown-delete")
    assert forget.text == f"Forget {tag}"
    assert "NotCreatedByHypd" in find(browser, "#teardown-plan").text
    type_into(find(browser, "#teardown-confirm"), tag)
    wait(browser).until(lambda d: find(d, "#teardown-delete").is_enabled())
    find(browser, "#teardown-delete").click()

    # Then hypd's record is gone, back on the clusters page, and the clusters are untouched
    wait(browser).until(lambda d: d.current_url.endswith("#/clusters"))
    assert api.list_clusters()["clusters"] == []
    names = cloud.client("sagemaker").list_clusters()["ClusterSummaries"]
    assert [c["ClusterName"] for c in names] == ["theirs"]


def test_a_failed_operation_shows_its_error_and_is_retried_from_the_panel(
    cloud: Any, api: ApiClient, console: ConsoleServer, browser: WebDriver
) -> None:
    # Given a discover that failed: the role could not list the HyperPod clusters
    seed_clusters(cloud)
    with fail_calls(cloud, "sagemaker", "list_clusters", "AccessDeniedException", times=100):
        operation_id = api.discover_clusters()["operationId"]
        cloud.wait_for_executions(timeout=60)
    assert api.get_operation(operation_id)["status"] == "FAILED"

    # When its panel is opened
    browser.get(console.url + f"#/operations/{operation_id}")

    # Then it shows FAILED with the error's code, the failed stage, and a Retry button
    _id, status, stages = operation_end(browser)
    assert status == "FAILED"
    assert stages["hyperpod-clusters"] == "FAILED"
    error = find(browser, "[data-operation-error]")
    assert error.get_attribute("data-operation-error") == "AccessDeniedException"
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-action="cancel"]')

    # When the user retries it
    find(browser, '[data-action="retry"]').click()

    # Then the panel follows the new attempt to SUCCEEDED, as the API says
    wait(browser).until(lambda d: find(d, "[data-operation-status]").get_attribute(
        "data-operation-status") != "FAILED")
    _id, status, stages = operation_end(browser)
    assert status == "SUCCEEDED"
    assert set(stages.values()) == {"SUCCEEDED"}
    assert api.get_operation(operation_id)["status"] == "SUCCEEDED"


def test_a_cluster_is_torn_down_after_its_plan_and_a_typed_confirmation(
    api: ApiClient, browser: WebDriver, cluster_page: Callable[[str, str], None]
) -> None:
    # Given the teardown page of an ACTIVE cluster: its plan, and a delete button that is off
    cluster_page("teardown", "#teardown-confirm")
    plan = find(browser, "#teardown-plan").text
    assert f"EksCluster hypd-{TAG}" in plan
    assert BUCKET in plan  # among what is kept: the user's data
    delete = find(browser, "#teardown-delete")
    assert not delete.is_enabled()

    # When deletion protection is turned on, the plan is blocked and the button stays off
    find(browser, "#teardown-protect").click()
    wait(browser).until(lambda d: find(d, "#teardown-protection").get_attribute(
        "data-protected") == "true")
    assert "DeletionProtected" in find(browser, "#teardown-plan").text
    type_into(find(browser, "#teardown-confirm"), TAG)
    assert not find(browser, "#teardown-delete").is_enabled()
    # and turned off again
    find(browser, "#teardown-protect").click()
    wait(browser).until(lambda d: find(d, "#teardown-protection").get_attribute(
        "data-protected") == "false")

    # When the user types something other than the tag, the button stays off
    type_into(find(browser, "#teardown-confirm"), TAG + "x")
    assert not find(browser, "#teardown-delete").is_enabled()

    # When the tag is typed and the delete pressed
    type_into(find(browser, "#teardown-confirm"), TAG)
    wait(browser).until(lambda d: find(d, "#teardown-delete").is_enabled())
    find(browser, "#teardown-delete").click()

    # Then the delete operation is followed to SUCCEEDED and the cluster is DELETED
    operation_id, status, _stages = operation_end(browser, "#teardown-progress")
    assert status == "SUCCEEDED"
    assert api.get_operation(operation_id)["kind"] == "delete-cluster"
    assert api.get_cluster(TAG)["status"] == "DELETED"
