"""The ``hypd`` CLI end to end against the local cloud: the real template, state machines and
handlers behind the REST API, the CLI run in-process (see conftest.py)."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import demo_request
from hypd_local.seed import seed_clusters
from tests.cli.conftest import RunCli, piped
from tests.support import fail_calls

BUCKET = "hypd-cli-data"
STAGES = ["network", "eks", "dependencies", "hyperpod", "storage", "verify", "features"]
FAST = ("--interval", "0.05")


def make_bucket(cloud: Any) -> None:
    cloud.client("s3").create_bucket(
        Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": cloud.region}
    )


def create_flags(api: ApiClient, tag: str = "e2e") -> list[str]:
    zone = demo_request(api, tag, BUCKET)["availabilityZone"]
    return ["clusters", "create", "--tag", tag, "--zone", zone,
            "--group", "name=gpu,type=ml.g6.4xlarge,count=1,capacity=on-demand",
            "--s3-bucket", BUCKET]


def header(table: str) -> list[str]:
    return re.split(r"\s{2,}", table.splitlines()[0].strip())


def row(table: str, first: str) -> list[str]:
    for line in table.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in\n{table}")


def test_read_commands_print_tables_and_exactly_the_apis_json(
    run_cli: RunCli, cloud: Any, api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = cloud.api_url
    seed_clusters(cloud)
    discovered = run_cli("clusters", "discover", "--wait", *FAST, endpoint=url)
    assert discovered.code == 0, discovered.text
    assert re.search(r"^record\s+SUCCEEDED\s+1\s.*recorded inference, training", discovered.out,
                     re.M)
    operation_id = re.findall(r"op-[0-9a-f]{32}", discovered.out)[0]

    listing = run_cli("clusters", "list", endpoint=url)
    assert listing.code == 0, listing.text
    assert header(listing.out) == ["TAG", "STATUS", "SOURCE", "EKS", "HYPERPOD", "NODES",
                                   "UPDATED"]
    assert row(listing.out, "training")[1:6] == [
        "-", "discovered", "training-eks (ACTIVE 1.31)", "training (InService)", "3/3"]

    one = run_cli("clusters", "get", "training", endpoint=url)
    assert one.code == 0, one.text
    assert re.search(r"^EKS cluster:\s+training-eks \(ACTIVE 1\.31\)$", one.out, re.M)
    assert row(one.out, "gpu-workers") == ["gpu-workers", "ml.g5.8xlarge", "2/2", "InService"]

    zones = run_cli("catalog", "zones", endpoint=url)
    assert row(zones.out, "us-west-2a")[2] == "available"
    types = run_cli("catalog", "instance-types", "--zone", "us-west-2a", endpoint=url)
    assert row(types.out, "ml.p5.48xlarge")[1:5] == [
        "192", "2048 GiB", "8 x NVIDIA H100 (80 GiB)", "yes (32 cards)"]
    plans = run_cli("catalog", "training-plans", endpoint=url)
    assert row(plans.out, "p5-active")[1:4] == [
        "Active", "4/4 ml.p5.48xlarge available", "us-west-2a"]

    monkeypatch.setenv("HYPD_ENDPOINT", url)  # the endpoint from the environment
    operations = run_cli("ops", "list")
    assert operations.code == 0, operations.text
    assert row(operations.out, operation_id)[1:5] == ["discover", "-", "SUCCEEDED", "3/3"]
    operation = run_cli("ops", "get", operation_id)
    assert f"Operation {operation_id} (discover): SUCCEEDED" in operation.out
    assert re.search(r"^eks-clusters\s+SUCCEEDED\s+1\s", operation.out, re.M)

    # --output json prints the API's response, as it came.
    same_as_api = [
        (["clusters", "list"], "/clusters", {}),
        (["clusters", "get", "training"], "/clusters/training", {}),
        (["ops", "list", "--status", "SUCCEEDED"], "/operations", {"status": "SUCCEEDED"}),
        (["ops", "get", operation_id], f"/operations/{operation_id}", {}),
        (["catalog", "zones"], "/catalog/availability-zones", {}),
        (["catalog", "instance-types", "--zone", "us-west-2b"], "/catalog/instance-types",
         {"availabilityZone": "us-west-2b"}),
        (["catalog", "training-plans"], "/catalog/training-plans", {}),
    ]
    for argv, path, query in same_as_api:
        run = run_cli(*argv, "--output", "json")
        assert run.code == 0, run.text
        assert json.loads(run.out) == api.get(path, **query), argv
        assert run.err == ""


def test_pages_and_api_errors(run_cli: RunCli, cloud: Any, api: ApiClient) -> None:
    url = cloud.api_url
    seed_clusters(cloud)
    assert run_cli("clusters", "discover", "--wait", *FAST, endpoint=url).code == 0

    first = run_cli("clusters", "list", "--limit", "1", "-o", "json", endpoint=url)
    token = json.loads(first.out)["nextToken"]
    assert token
    table = run_cli("clusters", "list", "--limit", "1", endpoint=url)
    assert f"hypd clusters list --limit 1 --next-token {token} --endpoint {url}" in table.err
    second = run_cli("clusters", "list", "--limit", "1", "--next-token", token, "-o", "json",
                     endpoint=url)
    assert json.loads(second.out) == api.get("/clusters", limit=1, nextToken=token)

    # A 4xx: the API's code and message, exit 1.
    missing = run_cli("clusters", "get", "nope", endpoint=url)
    assert missing.code == 1
    assert missing.out == ""
    assert ("An error occurred (NotFound) when calling the getCluster operation (HTTP 404): "
            "cluster nope does not exist") in missing.err

    refused = run_cli(*create_flags(api, tag="bad_tag"), endpoint=url)
    assert refused.code == 1
    assert "(ValidationError) when calling the createCluster operation (HTTP 400)" in refused.err
    assert "tag" in refused.err

    taken = run_cli("ops", "retry", "op-" + "0" * 32, endpoint=url)
    assert taken.code == 1
    assert "(NotFound)" in taken.err


def test_create_with_flags_and_wait_follows_the_pipeline_to_success(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    make_bucket(cloud)

    created = run_cli(*create_flags(api), "--wait", *FAST, endpoint=cloud.api_url)

    assert created.code == 0, created.text
    assert created.calls[0] == "createCluster"
    assert set(created.calls[1:]) == {"getOperation"}
    operation_id = re.findall(r"Creating cluster e2e: operation (op-[0-9a-f]{32})",
                              created.out)[0]
    assert f"Operation {operation_id} (create-cluster, cluster e2e): SUCCEEDED" in created.out
    for stage in STAGES:  # one line per change, then the final table
        assert re.search(rf"^  {stage}\s+SUCCEEDED\s+attempt 1, took ", created.out, re.M)
        assert re.search(rf"^{stage}\s+SUCCEEDED\s+1\s+\S+", created.out, re.M)
    record = run_cli("clusters", "get", "e2e", "-o", "json", endpoint=cloud.api_url)
    assert json.loads(record.out)["status"] == "ACTIVE"
    group = api.get(f"/operations/{operation_id}")["input"]["instanceGroups"][0]
    assert (group["name"], group["instanceType"], group["count"], group["capacity"]) == (
        "gpu", "ml.g6.4xlarge", 1, {"type": "on-demand"})


def test_the_interactive_create_asks_with_catalogue_choices_answered_through_stdin(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    make_bucket(cloud)
    zones = [z["name"] for z in api.get("/catalog/availability-zones")["availabilityZones"]]
    zone = demo_request(api, "e2e", BUCKET)["availabilityZone"]
    answers = [
        "bad_tag",                     # refused: asked again
        "e2e",
        str(zones.index(zone) + 1),    # a zone by its number
        "ml.g6.4xlarge",               # an instance type by its name
        "2",
        "",                            # capacity: the default, on-demand
        "1",                           # storage: an S3 bucket
        BUCKET,
        "y",
    ]

    created = run_cli("clusters", "create", "--wait", *FAST, stdin=piped(answers),
                      endpoint=cloud.api_url)

    assert created.code == 0, created.text
    assert created.calls[:4] == ["listAvailabilityZones", "listInstanceTypes",
                                 "listTrainingPlans", "createCluster"]
    asked = created.err
    assert "letters, digits and hyphens" in asked  # the refused tag
    for number, name in enumerate(zones, start=1):
        assert f"  {number}) {name} (" in asked
    assert re.search(r"\d+\) ml\.g6\.4xlarge\s+1 x NVIDIA L4 \(22\.4 GiB\), 16 vCPU, 64 GiB",
                     asked)
    assert "1) on-demand" in asked
    assert "2) spot" in asked
    assert "Create this cluster? [y/N]:" in asked
    assert (f"hypd clusters create --tag e2e --zone {zone} --group name=gpu,type=ml.g6.4xlarge,"
            f"count=2,capacity=on-demand --s3-bucket {BUCKET}") in asked
    assert re.search(r"\(create-cluster, cluster e2e\): SUCCEEDED", created.out)
    operation_id = re.findall(r"op-[0-9a-f]{32}", created.out)[0]
    request = api.get(f"/operations/{operation_id}")["input"]
    assert request["availabilityZone"] == zone
    assert request["instanceGroups"][0]["count"] == 2
    assert api.get("/clusters/e2e")["status"] == "ACTIVE"


def test_the_interactive_create_finds_ml_p5_48xlarge_by_typing_h100_and_sends_it_on_a_plan(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    make_bucket(cloud)
    plans = api.get("/catalog/training-plans")["trainingPlans"]
    plan = next(p for p in plans if p["name"] == "p5-active")
    (zone,) = plan["availabilityZones"]
    answers = [
        "p5",
        zone,                          # a zone by its name
        "h100",                        # narrows the types to the H100 ones, numbered afresh:
        "2",                           # 1) ml.p5.4xlarge, 2) ml.p5.48xlarge
        "2",                           # instances
        "p5-active",                   # capacity: the zone's plan for the type, by its name
        "1",                           # storage: an S3 bucket
        BUCKET,
        "y",
    ]

    created = run_cli("clusters", "create", "--wait", *FAST, stdin=piped(answers),
                      endpoint=cloud.api_url)

    assert created.code == 0, created.text
    asked = created.err
    # The whole list first: accelerated types under their accelerator, CPU-only ones summed up
    assert re.search(r"^  NVIDIA H100 \(80 GiB\)\n\s+\d+\) ml\.p5\.4xlarge ", asked, re.M)
    assert re.search(r"^  \d+ CPU-only types: type cpu to list them$", asked, re.M)
    assert "ml.c5.large" not in asked
    narrowed = asked.split("2 types match 'h100':\n", 1)[1]
    assert narrowed.startswith("  NVIDIA H100 (80 GiB)\n    1) ml.p5.4xlarge ")
    assert re.search(r"^    2\) ml\.p5\.48xlarge +8 x NVIDIA H100 \(80 GiB\), 192 vCPU, 2048 GiB, "
                     r"EFA \(32 network cards\); training plan p5-active \(Active, 4/4 "
                     "available", narrowed, re.M)
    assert "3) training plan p5-active (Active, 4/4 available" in narrowed  # capacity
    assert (f"--group name=gpu,type=ml.p5.48xlarge,count=2,capacity=training-plan,"
            f"training-plan={plan['arn']}") in asked
    assert re.search(r"\(create-cluster, cluster p5\): SUCCEEDED", created.out)
    operation_id = re.findall(r"op-[0-9a-f]{32}", created.out)[0]
    request = api.get(f"/operations/{operation_id}")["input"]
    assert request["availabilityZone"] == zone
    group = request["instanceGroups"][0]
    assert (group["name"], group["instanceType"], group["count"], group["capacity"]) == (
        "gpu", "ml.p5.48xlarge", 2, {"type": "training-plan", "trainingPlanArn": plan["arn"]})


def test_the_interactive_create_offers_the_zones_training_plans_and_can_be_declined(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    plans = api.get("/catalog/training-plans")["trainingPlans"]
    plan = next(p for p in plans if p["name"] == "p5-active")
    (zone,) = plan["availabilityZones"]
    answers = ["plan", zone, "ml.p5.48xlarge", "4", "3", "2", "", "n"]

    declined = run_cli("clusters", "create", stdin=piped(answers),
                       endpoint=cloud.api_url)

    assert declined.code == 1
    assert "createCluster" not in declined.calls
    assert "3) training plan p5-active (Active, 4/4 available" in declined.err
    assert "p4d-next-week" not in declined.err  # another zone's plan is not offered
    assert f'"trainingPlanArn": "{plan["arn"]}"' in declined.err
    assert '"storageCapacityGiB": 1200' in declined.err
    assert "Nothing was created." in declined.err
    assert api.get("/clusters")["clusters"] == []

    # Answers that run out: a usage error, nothing created.
    short = run_cli("clusters", "create", stdin="plan\n", endpoint=cloud.api_url)
    assert short.code == 2
    assert "end of input" in short.err


def test_watch_on_a_failing_operation_exits_1_with_the_stage_and_error_then_retry_succeeds(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    url = cloud.api_url
    created = run_cli(*create_flags(api), "-o", "json", endpoint=url)  # no bucket yet
    assert created.code == 0, created.text
    accepted = json.loads(created.out)
    # PENDING, or RUNNING when the execution's first task ran before the answer was read back
    assert accepted["status"] in {"PENDING", "RUNNING"}
    operation_id = accepted["operationId"]

    watched = run_cli("ops", "watch", operation_id, *FAST, endpoint=url)

    assert watched.code == 1
    assert re.search(r"^storage\s+FAILED\s+1\s.*NoSuchBucket", watched.out, re.M)
    assert f"Operation {operation_id} FAILED at stage storage (attempt 1):" in watched.out
    assert re.search(rf"^  NoSuchBucket: .*{BUCKET}", watched.out, re.M)
    assert f"hypd ops retry {operation_id} --wait --endpoint {url}" in watched.out

    # The watch ends when the record says FAILED; the execution may still be recording what
    # stopped beside it (the EKS branch's cancelled attempt): compare once it has ended.
    cloud.wait_for_executions(timeout=60)
    as_json = run_cli("ops", "watch", operation_id, "-o", "json", endpoint=url)
    assert as_json.code == 1
    assert json.loads(as_json.out) == api.get(f"/operations/{operation_id}")
    assert "NoSuchBucket" in as_json.err

    make_bucket(cloud)
    retried = run_cli("ops", "retry", operation_id, "--wait", *FAST, endpoint=url)

    assert retried.code == 0, retried.text
    # The EKS side, stopped when the storage failed beside it, resumes first.
    assert "(retry 1): resumes at stage eks." in retried.out
    assert re.search(r"^storage\s+SUCCEEDED\s+2\s", retried.out, re.M)
    # the failed first attempt, under its stage
    assert re.search(r"^storage\s+SUCCEEDED\s+2\s.*\n  attempt 1\s+FAILED\s+\S+\s+1\s+"
                     r"NoSuchBucket: ", retried.out, re.M)
    assert re.search(r"^hyperpod\s+SUCCEEDED\s+1\s", retried.out, re.M)
    again = run_cli("ops", "watch", operation_id, *FAST, endpoint=url)
    assert again.code == 0
    # ops get: the timeline in start order, the eks wait it recorded
    got = run_cli("ops", "get", operation_id, endpoint=url)
    timeline = got.out.split("Timeline (UTC):\n", 1)[1]
    # eks: its first attempt stopped when the storage failed beside it, the retry's waited
    assert re.search(r"\seks\s+1\s+CANCELLED\s", timeline)
    assert re.search(r"\seks\s+2\s+SUCCEEDED\s.*waited for: EKS cluster hypd-e2e is CREATING",
                     timeline)
    assert [m.group(1) for m in re.finditer(r"\sstorage\s+(\d)\s", timeline)] == ["1", "2"]


def test_cancel_stops_a_running_create_and_watch_exits_1(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    url = cloud.api_url
    make_bucket(cloud)  # the storage, checked beside the EKS side, succeeds
    release, entered = threading.Event(), threading.Event()
    with fail_calls(cloud, "eks", "create_cluster", None, times=1, block=release,
                    entered=entered):
        created = run_cli(*create_flags(api), "-o", "json", endpoint=url)
        operation_id = json.loads(created.out)["operationId"]
        assert entered.wait(timeout=60)  # inside the eks stage, CreateCluster held
        cancelled = run_cli("ops", "cancel", operation_id, endpoint=url)
        release.set()
        cloud.wait_for_executions(timeout=60)

    assert cancelled.code == 0, cancelled.text
    assert f"Cancel requested for operation {operation_id}" in cancelled.out
    watched = run_cli("ops", "watch", operation_id, endpoint=url)
    assert watched.code == 1
    assert f"Operation {operation_id} CANCELLED at stage eks" in watched.out
    assert re.search(r"^network\s+SUCCEEDED\s+1\s", watched.out, re.M)


def test_connection_and_output_options_may_come_before_the_command(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    # As with the AWS CLI: `hypd --endpoint URL -o json clusters list`.
    listing = run_cli("--endpoint", cloud.api_url, "-o", "json", "clusters", "list")

    assert listing.code == 0, listing.text
    assert json.loads(listing.out) == api.get("/clusters")
