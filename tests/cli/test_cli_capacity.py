"""The capacity commands (``hypd groups``, ``hypd nodes``, ``hypd autoscaling``) end to end
against the local cloud, on one cluster the test creates: each command in table and JSON form,
each run checked to call only its own REST operation (see conftest.py)."""

from __future__ import annotations

import json
import re
from typing import Any

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import demo_request, follow
from tests.cli.conftest import RunCli, piped
from tests.cli.test_cli_local_cloud import BUCKET, FAST, header, make_bucket, row

TAG = "cap"
OPERATION = re.compile(r"op-[0-9a-f]{32}")


def stages_succeeded(out: str, *stages: str) -> bool:
    """The final stage table of a watched operation: every stage SUCCEEDED at attempt 1."""
    return all(re.search(rf"^{stage}\s+SUCCEEDED\s+1\s", out, re.M) for stage in stages)


def test_groups_nodes_and_autoscaling_commands_on_one_cluster(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    url = cloud.api_url
    make_bucket(cloud)
    request = demo_request(api, TAG, BUCKET)  # `clusters create` has its own tests
    zone = request["availabilityZone"]
    created = follow(api, cloud, api.create_cluster(request)["operationId"])
    assert created["status"] == "SUCCEEDED", created.get("error")

    # What a PATCH may change, and why not the rest.
    fields = run_cli("groups", "fields", endpoint=url)
    assert fields.code == 0, fields.text
    assert header(fields.out) == ["FIELD", "PATCH MAY CHANGE", "SAGEMAKER", "NOTE"]
    assert row(fields.out, "instanceType") == [
        "instanceType", "no (create-time)", "InstanceType", "it is fixed at creation"]
    assert row(fields.out, "count")[:3] == ["count", "yes", "InstanceCount"]
    assert "To change a create-time field: add a group with the value you want" in fields.out

    # The groups as HyperPod describes them.
    listed = run_cli("groups", "list", TAG, endpoint=url)
    assert listed.code == 0, listed.text
    assert listed.out.startswith(f"Instance groups of cluster {TAG} (HyperPod cluster "
                                 "InService):\n")
    table = listed.out.split("\n", 1)[1]
    assert header(table) == ["NAME", "TYPE", "COUNT", "CAPACITY", "ZONE", "SUBNET", "STATUS",
                             "FLAGS"]
    gpu = row(table, "gpu")
    assert gpu[:5] == ["gpu", "ml.g6.4xlarge", "1/1", "on-demand", zone]
    assert gpu[5].startswith("subnet-")
    assert gpu[6:] == ["InService", "-"]

    # Add a spot group with a label and a taint, and follow its operation.
    added = run_cli("groups", "add", TAG, "--group", "name=spot,type=ml.g6.4xlarge,count=1,"
                    "capacity=spot", "--label", "team=ml", "--taint", "dedicated=ml:NoSchedule",
                    "--wait", *FAST, endpoint=url)
    assert added.code == 0, added.text
    assert added.calls[0] == "addInstanceGroup"
    assert f"Adding instance group spot to cluster {TAG}: operation op-" in added.out
    assert f"(add-instance-group, cluster {TAG}): SUCCEEDED" in added.out
    assert stages_succeeded(added.out, "network", "hyperpod", "verify")
    spot = row(run_cli("groups", "list", TAG, endpoint=url).out, "spot")
    assert spot[1:5] == ["ml.g6.4xlarge", "1/1", "spot", zone]
    assert spot[6:] == ["InService", "1 label, 1 taint"]

    # Scale it; the same count again changes nothing (200 changed: false).
    scaled = run_cli("groups", "scale", TAG, "spot", "2", "--wait", *FAST, endpoint=url)
    assert scaled.code == 0, scaled.text
    assert f"(update-instance-group, cluster {TAG}): SUCCEEDED" in scaled.out
    again = run_cli("groups", "scale", TAG, "spot", "2", "--wait", endpoint=url)
    assert again.code == 0, again.text
    assert again.calls == ["updateInstanceGroup"]
    assert (f"no change: instance group spot of cluster {TAG} already matches the request "
            "(count 2, 2 up); nothing was started.") in again.out
    same = run_cli("groups", "update", TAG, "spot", "--count", "2", "-o", "json", endpoint=url)
    assert json.loads(same.out) == api.update_instance_group(TAG, "spot", {"count": 2})
    assert json.loads(same.out)["changed"] is False

    relabelled = run_cli("groups", "update", TAG, "spot", "--label", "team=research", "--wait",
                         *FAST, endpoint=url)
    assert relabelled.code == 0, relabelled.text
    group = next(g for g in api.list_instance_groups(TAG)["instanceGroups"]
                 if g["name"] == "spot")
    assert (group["labels"], group["count"]) == ({"team": "research"}, 2)

    # A create-time field cannot change: the API's 400, exit 1.
    immutable = run_cli("groups", "update", TAG, "spot", "--from-file", "-",
                        stdin='{"instanceType": "ml.g5.8xlarge"}', endpoint=url)
    assert immutable.code == 1
    assert immutable.out == ""
    assert ("An error occurred (ImmutableField) when calling the updateInstanceGroup operation "
            "(HTTP 400): instanceType of instance group spot cannot be changed") in immutable.err

    # Nodes: list, then reboot, replace (JSON, followed with ops watch) and delete one.
    nodes = run_cli("nodes", "list", TAG, "--group", "spot", endpoint=url)
    assert nodes.code == 0, nodes.text
    assert header(nodes.out) == ["NODE", "GROUP", "TYPE", "STATUS", "MESSAGE", "LAUNCHED"]
    first, second = (n["nodeId"] for n in api.list_nodes(TAG, "spot")["nodes"])
    assert row(nodes.out, first)[1:5] == ["spot", "ml.g6.4xlarge", "Running", "-"]
    assert len(nodes.out.splitlines()) == 4  # header, rule, two nodes

    rebooted = run_cli("nodes", "reboot", TAG, first, "--wait", *FAST, endpoint=url)
    assert rebooted.code == 0, rebooted.text
    assert f"Rebooting node {first} of cluster {TAG}" in rebooted.out
    assert stages_succeeded(rebooted.out, "hyperpod", "verify")
    replaced = run_cli("nodes", "replace", TAG, first, "-o", "json", endpoint=url)
    accepted = json.loads(replaced.out)
    assert accepted["kind"] == "replace-node"
    # The execution may have begun before the 202 was written.
    assert accepted["status"] in {"PENDING", "RUNNING"}
    assert run_cli("ops", "watch", accepted["operationId"], *FAST, endpoint=url).code == 0
    deleted = run_cli("nodes", "delete", TAG, second, "--wait", "-o", "json", *FAST,
                      endpoint=url)
    assert deleted.code == 0, deleted.text
    assert json.loads(deleted.out)["status"] == "SUCCEEDED"  # the final getOperation
    assert f"Deleting node {second} of cluster {TAG}" in deleted.err
    remaining = api.list_nodes(TAG, "spot")["nodes"]
    assert len(remaining) == 1
    assert first not in {n["nodeId"] for n in remaining}

    # Autoscaling: off, on for the spot group, on again (no change), then off.
    off = run_cli("autoscaling", "get", TAG, endpoint=url)
    assert re.search(r"^Autoscaling:\s+off$", off.out, re.M)
    enabled = run_cli("autoscaling", "enable", TAG, "--group", "spot", "--consolidate-after",
                      "10m", "--wait", *FAST, endpoint=url)
    assert enabled.code == 0, enabled.text
    assert stages_succeeded(enabled.out, "role", "hyperpod", "kubernetes")
    assert re.search(r"^prerequisites\s+SUCCEEDED\s+1\s.*warning: instance group spot has",
                     enabled.out, re.M)
    on = run_cli("autoscaling", "get", TAG, endpoint=url)
    for key, value in (("Autoscaling", "on"), ("HyperPod", "Enable, InService"),
                       ("Instance groups", "spot"), ("Consolidate after", "10m"),
                       ("Consolidation policy", "WhenEmptyOrUnderutilized"),
                       ("Node pool", "hypd")):
        assert re.search(rf"^{key}:\s+{value}$", on.out, re.M), (key, on.out)
    assert json.loads(run_cli("autoscaling", "get", TAG, "-o", "json", endpoint=url).out) == (
        api.get_autoscaling(TAG))
    unchanged = run_cli("autoscaling", "enable", TAG, "--group", "spot", endpoint=url)
    assert unchanged.calls == ["setAutoscaling"]
    assert (f"no change: autoscaling of cluster {TAG} is already on (instance groups spot; "
            "consolidate after 10m, WhenEmptyOrUnderutilized); nothing was started.") in (
        unchanged.out)
    autoscaled = run_cli("groups", "delete", TAG, "spot", endpoint=url)
    assert autoscaled.code == 1
    assert "(InstanceGroupAutoscaled) when calling the deleteInstanceGroup operation" in (
        autoscaled.err)

    disabled = run_cli("autoscaling", "disable", TAG, "--wait", *FAST, endpoint=url)
    assert disabled.code == 0, disabled.text
    assert stages_succeeded(disabled.out, "kubernetes", "hyperpod", "role")
    disabled_again = run_cli("autoscaling", "disable", TAG, "-o", "json", endpoint=url)
    assert json.loads(disabled_again.out) == api.set_autoscaling(TAG, {"enabled": False})
    assert json.loads(disabled_again.out)["changed"] is False

    # Delete the spot group; the last group stays.
    gone = run_cli("groups", "delete", TAG, "spot", "--wait", *FAST, endpoint=url)
    assert gone.code == 0, gone.text
    assert f"(delete-instance-group, cluster {TAG}): SUCCEEDED" in gone.out
    last = run_cli("groups", "delete", TAG, "gpu", endpoint=url)
    assert last.code == 1
    assert "(LastInstanceGroup) when calling the deleteInstanceGroup operation (HTTP 409)" in (
        last.err)

    # --output json prints the API's response as it came; options may come first.
    same_as_api = [
        (["groups", "list", TAG], api.list_instance_groups(TAG)),
        (["groups", "fields"], api.list_instance_group_fields()),
        (["nodes", "list", TAG], api.list_nodes(TAG)),
    ]
    for argv, answer in same_as_api:
        run = run_cli("--endpoint", url, "-o", "json", *argv)
        assert run.code == 0, run.text
        assert json.loads(run.out) == answer, argv
        assert run.err == ""
    assert [g["name"] for g in same_as_api[0][1]["instanceGroups"]] == ["gpu"]
    # Create, add, scale, relabel, reboot, replace, delete a node, enable, disable, delete the
    # group: the requests that matched the cluster started nothing.
    operations = run_cli("ops", "list", "--cluster", TAG, endpoint=url).out
    assert len(OPERATION.findall(operations)) == 10


def test_groups_add_without_flags_finds_ml_p5_48xlarge_by_typing_h100_and_adds_it_on_a_plan(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    # Given a cluster in the zone of the training plan p5-active (ml.p5.48xlarge)
    url = cloud.api_url
    make_bucket(cloud)
    request = demo_request(api, TAG, BUCKET)
    zone = request["availabilityZone"]
    plan = next(p for p in api.get("/catalog/training-plans")["trainingPlans"]
                if p["name"] == "p5-active")
    assert plan["availabilityZones"] == [zone]
    created = follow(api, cloud, api.create_cluster(request)["operationId"])
    assert created["status"] == "SUCCEEDED", created.get("error")
    answers = [
        "trainers",
        "",             # zone: the default, the cluster's
        "h100",         # narrows the types to the H100 ones, numbered afresh:
        "2",            # 1) ml.p5.4xlarge, 2) ml.p5.48xlarge
        "2",            # instances
        "3",            # capacity: 1) on-demand, 2) spot, 3) the plan p5-active
        "y",
    ]

    # When `groups add` asks and the answers are piped
    added = run_cli("groups", "add", TAG, "--wait", *FAST, stdin=piped(answers),
                    endpoint=url)

    # Then the group was added as answered, on the plan, in the cluster's zone
    assert added.code == 0, added.text
    assert added.calls[:5] == ["listInstanceGroups", "listAvailabilityZones",
                               "listInstanceTypes", "listTrainingPlans", "addInstanceGroup"]
    asked = added.err
    assert re.search(rf"^ +\d+\) {zone} \(\S+\): groups gpu$", asked, re.M)
    assert re.search(r"^    2\) ml\.p5\.48xlarge +8 x NVIDIA H100 .*training plan p5-active",
                     asked, re.M)
    assert (f"hypd groups add {TAG} --group name=trainers,type=ml.p5.48xlarge,count=2,"
            f"capacity=training-plan,training-plan={plan['arn']} --zone {zone} "
            f"--endpoint {url}") in asked
    assert f"(add-instance-group, cluster {TAG}): SUCCEEDED" in added.out
    operation_id = OPERATION.findall(added.out)[0]
    sent = api.get(f"/operations/{operation_id}")["input"]
    group = sent["group"]
    assert (group["name"], group["instanceType"], group["count"]) == (
        "trainers", "ml.p5.48xlarge", 2)
    assert group["capacity"]["trainingPlanArn"] == plan["arn"]
    assert (sent["availabilityZone"], sent["availabilityZoneSource"]) == (zone, "request")
    trainers = next(g for g in api.list_instance_groups(TAG)["instanceGroups"]
                    if g["name"] == "trainers")
    assert (trainers["instanceType"], trainers["count"], trainers["availabilityZone"]) == (
        "ml.p5.48xlarge", 2, zone)
