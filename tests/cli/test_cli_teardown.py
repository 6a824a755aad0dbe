"""``hypd clusters plan|delete|protect``: a cluster's teardown end to end against the local cloud
(every run checked to call only its own REST operation, see conftest.py): the plan as text and
JSON, ``delete --plan``, protection refusing a delete with the command that turns it off, the
typed confirmation, ``--yes --wait`` to the end, and a discovered cluster forgotten; then the
hints of every refusal, the requests and the usage errors against canned answers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from hypd_cli.api_client import ApiClient, ApiError
from hypd_cli.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tests.cli.conftest import OPERATION_ID, CannedApi, RunCli
from tests.cli.test_cli_capacity import stages_succeeded
from tests.cli.test_cli_local_cloud import FAST
from tests.e2e.capacity import BUCKET, created_cluster, discovered_cluster
from tests.e2e.teardown import TEARDOWN_STAGES

TAG = "gone"
SIDE_BY_SIDE = {"addons", "eks", "storage"}


def step_lines(out: str) -> list[tuple[str, str]]:
    """The plan's numbered steps: (marker, stage); ``||`` marks the steps run side by side."""
    return [(m[1], m[3]) for m in re.finditer(r"^(\|\||  )(\d+)\. (\w+)", out, re.M)]


def delete_operations(api: ApiClient, tag: str = TAG) -> list[str]:
    return [o["id"] for o in api.list_operations(cluster_tag=tag)["operations"]
            if o["kind"] == "delete-cluster"]


def test_plan_protection_and_the_typed_confirmation_on_the_local_cloud(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    url = cloud.api_url
    created_cluster(api, cloud, tag=TAG)
    planned = api.get_teardown_plan(TAG)

    # The plan: every step in the operation's order, each resource it deletes with its ARN,
    # what stays and why, and nothing blocking.
    shown = run_cli("clusters", "plan", TAG, endpoint=url)
    assert shown.code == EXIT_OK, shown.text
    assert shown.calls == ["getTeardownPlan"]
    assert shown.out.startswith(f"Teardown of cluster {TAG}:\n")
    assert step_lines(shown.out) == [("||" if stage in SIDE_BY_SIDE else "  ", stage)
                                     for stage in TEARDOWN_STAGES]
    assert "||4. addons  (|| side by side: addons -> eks beside storage)\n" in shown.out
    for step in planned["steps"]:
        for resource in step["resources"]:
            where = f"  {resource['arn']}" if resource.get("arn") else ""
            assert f"delete {resource['type']} {resource['name']}{where}\n" in shown.out
    assert f"  delete HyperPodCluster hypd-{TAG}  arn:aws:sagemaker:" in shown.out
    assert f"  keep S3Bucket {BUCKET}: " in shown.out
    assert shown.out.endswith("Nothing blocks it.\n")
    as_json = run_cli("clusters", "plan", TAG, "-o", "json", endpoint=url)
    assert as_json.code == EXIT_OK, as_json.text
    assert json.loads(as_json.out) == planned

    # delete --plan is the plan, and deletes nothing.
    dry = run_cli("clusters", "delete", TAG, "--plan", endpoint=url)
    assert (dry.code, dry.out, dry.calls) == (EXIT_OK, shown.out, ["getTeardownPlan"])

    # Protection on: the plan is blocked and the delete refused, each with the command that
    # turns it off.
    on = run_cli("clusters", "protect", TAG, "--on", endpoint=url)
    assert (on.code, on.out) == (EXIT_OK, f"Deletion protection of cluster {TAG} is on.\n")
    assert api.get_cluster(TAG)["protection"] is True
    turn_off = f"hypd clusters protect {TAG} --off --endpoint {url}"
    blocked = run_cli("clusters", "delete", TAG, "--plan", endpoint=url)
    assert blocked.code == EXIT_FAILED
    assert (f"Blocked now:\n  DeletionProtected: cluster {TAG} has deletion protection on"
            in blocked.out)
    assert blocked.out.endswith(f"turn it off first: {turn_off}\n")
    refused = run_cli("clusters", "delete", TAG, "--yes", endpoint=url)
    assert (refused.code, refused.out, refused.calls) == (EXIT_FAILED, "", ["deleteCluster"])
    assert refused.err.startswith("An error occurred (DeletionProtected) when calling the "
                                  "deleteCluster operation (HTTP 409): ")
    assert refused.err.endswith(f"turn it off first: {turn_off}\n")
    off = run_cli("clusters", "protect", TAG, "--off", "-o", "json", endpoint=url)
    assert json.loads(off.out) == {"tag": TAG, "enabled": False}

    # Without --yes the tag must be typed: not from a pipe, and not another word.
    piped = run_cli("clusters", "delete", TAG, stdin=f"{TAG}\n", endpoint=url)
    assert (piped.code, piped.calls) == (EXIT_USAGE, [])
    assert "give --yes to delete without typing the tag (stdin is not a terminal)" in piped.err
    wrong = run_cli("clusters", "delete", TAG, stdin="gone-not\n", typed=True, endpoint=url)
    assert (wrong.code, wrong.calls) == (EXIT_USAGE, [])
    assert f"Type the cluster's tag ({TAG}) to delete it: " in wrong.err
    assert "not confirmed: nothing was deleted" in wrong.err
    assert api.get_cluster(TAG)["status"] == "ACTIVE"
    assert delete_operations(api) == []

    # The tag typed: the teardown starts; ops watch follows it to the end.
    typed = run_cli("clusters", "delete", TAG, stdin=f"{TAG}\n", typed=True, endpoint=url)
    assert (typed.code, typed.calls) == (EXIT_OK, ["deleteCluster"]), typed.text
    assert (f"This deletes cluster {TAG} and everything hypd made for it; hypd clusters plan "
            f"{TAG} --endpoint {url} lists it.") in typed.out
    (operation,) = delete_operations(api)
    assert f"Deleting cluster {TAG}: operation {operation} (" in typed.out
    assert f"Follow it: hypd ops watch {operation} --endpoint {url}" in typed.out
    watched = run_cli("ops", "watch", operation, *FAST, endpoint=url)
    assert watched.code == EXIT_OK, watched.text
    assert f"(delete-cluster, cluster {TAG}): SUCCEEDED" in watched.out
    assert stages_succeeded(watched.out, *TEARDOWN_STAGES)
    assert re.search(r"^Status:\s+DELETED$", run_cli("clusters", "get", TAG, endpoint=url).out,
                     re.M)


def test_yes_wait_deletes_to_the_end_then_the_record_is_forgotten(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    url = cloud.api_url
    created_cluster(api, cloud, tag=TAG)

    deleted = run_cli("clusters", "delete", TAG, "--yes", "--wait", *FAST, endpoint=url)

    assert deleted.code == EXIT_OK, deleted.text
    assert deleted.calls[0] == "deleteCluster"
    (operation,) = delete_operations(api)
    assert f"Deleting cluster {TAG}: operation {operation} (" in deleted.out
    assert f"Operation {operation} (delete-cluster, cluster {TAG}): SUCCEEDED" in deleted.out
    assert stages_succeeded(deleted.out, *TEARDOWN_STAGES)
    assert api.get_cluster(TAG)["status"] == "DELETED"
    assert cloud.client("sagemaker").list_clusters()["ClusterSummaries"] == []
    assert cloud.client("eks").list_clusters()["clusters"] == []

    # Deleted already: the 409 says how to remove the record, which --forget does.
    again = run_cli("clusters", "delete", TAG, "--yes", endpoint=url)
    assert again.code == EXIT_FAILED
    assert "An error occurred (ClusterDeleted) when calling the deleteCluster operation" in (
        again.err)
    assert again.err.endswith(
        f"remove its record: hypd clusters delete {TAG} --forget --endpoint {url}\n")
    forgot = run_cli("clusters", "delete", TAG, "--forget", "-o", "json", endpoint=url)
    assert forgot.code == EXIT_OK, forgot.text
    assert json.loads(forgot.out) == {"tag": TAG, "forgotten": True}
    assert api.list_clusters()["clusters"] == []


def test_a_discovered_cluster_is_forgotten_never_deleted(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    url = cloud.api_url
    seeded, tag = discovered_cluster(api, cloud)
    forget = f"hypd clusters delete {tag} --forget --endpoint {url}"

    plan = run_cli("clusters", "plan", tag, "--force", endpoint=url)
    assert plan.code == EXIT_FAILED
    assert plan.out.startswith(f"Teardown of cluster {tag} (with --force):\n")
    assert "  keep HyperPodCluster theirs: " in plan.out
    assert f"  keep EksCluster {seeded.eks_name}: " in plan.out
    assert f"Blocked now:\n  NotCreatedByHypd: cluster {tag} was discovered" in plan.out
    assert plan.out.endswith(f"remove its record only (every resource stays): {forget}\n")
    refused = run_cli("clusters", "delete", tag, "--yes", "--force", endpoint=url)
    assert refused.code == EXIT_FAILED
    assert "An error occurred (NotCreatedByHypd) when calling the deleteCluster operation" in (
        refused.err)
    assert refused.err.endswith(f"{forget}\n")

    forgot = run_cli("clusters", "delete", tag, "--forget", endpoint=url)

    assert (forgot.code, forgot.calls) == (EXIT_OK, ["deleteCluster"]), forgot.text
    assert forgot.out == f"Forgot cluster {tag}: its resources are as they were.\n"
    assert api.list_clusters()["clusters"] == []
    assert [c["ClusterName"] for c in cloud.client("sagemaker").list_clusters()[
        "ClusterSummaries"]] == ["theirs"]
    assert cloud.client("eks").list_clusters()["clusters"] == [seeded.eks_name]


def test_each_reason_a_delete_is_refused_comes_with_the_command_that_clears_it(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    running = {"operationId": OPERATION_ID, "kind": "submit-training-job", "status": "RUNNING"}
    blockers = [
        {"code": "DeletionProtected", "message": "cluster demo has deletion protection on"},
        {"code": "WorkloadsRunning", "message": "cluster demo runs 1 workload(s)",
         "details": {"workloads": ["HyperPodPyTorchJob/default/llama"]}},
        {"code": "OperationRunning", "message": f"operation {OPERATION_ID} is RUNNING",
         "details": running},
    ]
    canned(ApiError(409, "DeletionProtected", "cluster demo has deletion protection on",
                    {"blockers": blockers}, "deleteCluster"))

    refused = run_cli("clusters", "delete", "demo", "--yes")

    assert refused.code == EXIT_FAILED
    assert refused.err.splitlines() == [
        "An error occurred (DeletionProtected) when calling the deleteCluster operation "
        "(HTTP 409): cluster demo has deletion protection on",
        "Deletion protection is on; if the cluster may go, turn it off first: hypd clusters "
        "protect demo --off",
        "Delete the jobs and endpoints first, or stop them with the cluster: hypd clusters "
        "delete demo --force",
        f"Follow it to its end, then delete: hypd ops watch {OPERATION_ID} (or stop it: hypd "
        f"ops cancel {OPERATION_ID})",
    ]


def test_a_cluster_being_deleted_names_its_teardown_to_follow_or_resume(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    deleting = {"tag": "demo", "status": "DELETING", "operationId": OPERATION_ID}
    message = f"cluster demo is being deleted by operation {OPERATION_ID}"
    canned(ApiError(409, "ClusterDeleting", message, deleting, "deleteCluster"),
           ApiError(409, "ClusterDeleting", message, deleting, "setProtection"),
           ApiError(409, "ClusterDeleted", "cluster demo was deleted",
                    {**deleting, "status": "DELETED"}, "setProtection"))
    hint = (f"Follow the teardown: hypd ops watch {OPERATION_ID}; if it FAILED, resume it: "
            f"hypd ops retry {OPERATION_ID} --wait")

    again = run_cli("clusters", "delete", "demo", "--yes")
    protect = run_cli("clusters", "protect", "demo", "--on")
    deleted = run_cli("clusters", "protect", "demo", "--off")

    assert (again.code, protect.code, deleted.code) == (EXIT_FAILED,) * 3
    assert again.err.splitlines()[1:] == [hint]
    assert protect.err.splitlines()[1:] == [hint]
    assert deleted.err.splitlines()[1:] == [
        "It is deleted; remove its record: hypd clusters delete demo --forget"]


def test_a_refusal_with_nothing_to_clear_is_the_apis_error_alone(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    canned(ApiError(404, "NotFound", "cluster demo does not exist", {"tag": "demo"},
                    "deleteCluster"),
           ApiError(400, "ValidationError", "forget: cluster demo was created by hypd",
                    {"field": "forget"}, "deleteCluster"))

    absent = run_cli("clusters", "delete", "demo", "--yes")
    created = run_cli("clusters", "delete", "demo", "--forget")

    assert (absent.code, created.code) == (EXIT_FAILED, EXIT_FAILED)
    assert absent.err.splitlines() == [
        "An error occurred (NotFound) when calling the deleteCluster operation (HTTP 404): "
        "cluster demo does not exist"]
    assert created.err.splitlines() == [
        "An error occurred (ValidationError) when calling the deleteCluster operation "
        "(HTTP 400): forget: cluster demo was created by hypd"]


def test_the_teardown_requests_and_usage_errors(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    client = canned({"operationId": OPERATION_ID, "status": "PENDING", "kind": "delete-cluster"},
                    {"tag": "demo", "forgotten": True},
                    {"tag": "demo", "enabled": True})

    assert run_cli("clusters", "delete", "demo", "--yes", "--force").code == EXIT_OK
    assert run_cli("clusters", "delete", "demo", "--forget").code == EXIT_OK
    assert run_cli("clusters", "protect", "demo", "--on").code == EXIT_OK
    assert client.sent == [
        ("DELETE", "/clusters/demo", {"force": True}, None),
        ("DELETE", "/clusters/demo", {"forget": True}, None),
        ("PUT", "/clusters/demo/protection", {}, {"enabled": True}),
    ]

    for argv, message in (
        (("delete", "demo", "--plan", "--forget"), "--forget deletes nothing"),
        (("protect", "demo"), "one of the arguments --on --off is required"),
        (("protect", "demo", "--on", "--off"), "not allowed with argument"),
    ):
        run = run_cli("clusters", *argv)
        assert (run.code, message in run.err) == (EXIT_USAGE, True), (argv, run.err)
    assert len(client.sent) == 3
