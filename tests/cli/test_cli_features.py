"""``hypd features`` and ``hypd teams``: end to end against the local cloud on a cluster each test
creates (every run checked to call only its own REST operation, see conftest.py), then the
request bodies, usage errors and rendering against canned answers."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hypd.clusters.feature_request import FEATURE_NAMES
from hypd_cli.api_client import ApiClient, ApiError
from hypd_cli.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from hypd_cli.features import FEATURES
from hypd_cli.main import build_parser
from tests.cli.conftest import ACCEPTED, OPERATION_ID, CannedApi, RunCli
from tests.cli.test_cli_capacity import stages_succeeded
from tests.cli.test_cli_local_cloud import FAST, header, row
from tests.e2e.capacity import created_cluster

INSTANCE_TYPE = "ml.g6.4xlarge"  # created_cluster's group


def local_cluster(api: ApiClient, cloud: Any, tag: str) -> str:
    """Cluster `tag` created on the local cloud; the endpoint the CLI is given."""
    created_cluster(api, cloud, tag=tag)
    return str(cloud.api_url)


def test_features_get_and_set_on_the_local_cloud(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    tag = "feat"
    url = local_cluster(api, cloud, tag)

    off = run_cli("features", "get", tag, endpoint=url)
    assert off.code == EXIT_OK, off.text
    table = off.out.split("\n", 1)[1]
    assert header(table) == ["FEATURE", "ENABLED", "STATUS", "VERSION", "REQUIRED BY",
                             "SETTINGS"]
    for name in FEATURES:
        assert row(table, name)[1:3] == ["no", "DISABLED"]
    assert re.search(r"^  trainingOperator:\s+cert-manager, eks-pod-identity-agent$", off.out,
                     re.M)
    assert row(off.out, "eks-pod-identity-agent")[1:2] + row(
        off.out, "eks-pod-identity-agent")[4:] == ["yes", "other", "-"]

    # Turn the training operator on (a kebab-case alias), following the operation.
    enabled = run_cli("features", "set", tag, "--enable", "training-operator", "--wait", *FAST,
                      endpoint=url)
    assert enabled.code == EXIT_OK, enabled.text
    assert enabled.calls[0] == "setFeatures"
    assert f"Setting features of cluster {tag} (trainingOperator on): operation op-" in (
        enabled.out)
    assert f"(set-features, cluster {tag}): SUCCEEDED" in enabled.out
    assert stages_succeeded(enabled.out, "prerequisites", "addons", "verify", "cleanup")
    on = run_cli("features", "get", tag, endpoint=url)
    training = row(on.out, "trainingOperator")
    assert training[1:3] == ["yes", "ACTIVE"]
    assert training[3].startswith("v")
    assert row(on.out, "tieredCheckpointing")[1:3] == ["no", "DISABLED"]
    # hypd installed cert-manager for it; the pod identity agent was there already.
    assert row(on.out, "cert-manager")[4:] == ["hypd", "trainingOperator"]
    assert row(on.out, "eks-pod-identity-agent")[4:] == ["other", "trainingOperator"]

    # The same request again matches the cluster: nothing starts, even with --wait.
    again = run_cli("features", "set", tag, "--enable", "trainingOperator", "--wait",
                    endpoint=url)
    assert again.code == EXIT_OK, again.text
    assert again.calls == ["setFeatures"]
    assert (f"no change: features of cluster {tag} unchanged (trainingOperator on, ACTIVE); "
            "nothing was started.") in again.out
    as_json = run_cli("features", "set", tag, "--enable", "trainingOperator", "-o", "json",
                      endpoint=url)
    answer = json.loads(as_json.out)
    assert answer["changed"] is False
    assert answer["features"] == api.get_features(tag)

    # A setting of a feature that is off: the API's 400 naming the field, and what to add.
    refused = run_cli("features", "set", tag, "--set", "tieredCheckpointing.memoryPercent=20",
                      endpoint=url)
    assert refused.code == EXIT_FAILED
    assert refused.out == ""
    assert ("An error occurred (ValidationError) when calling the setFeatures operation "
            "(HTTP 400): invalid request: tieredCheckpointing.memoryPercent: ") in refused.err
    assert ("Turn tieredCheckpointing on with its settings: add --enable tieredCheckpointing"
            in refused.err)

    as_api = run_cli("features", "get", tag, "-o", "json", endpoint=url)
    assert json.loads(as_api.out) == api.get_features(tag)
    assert as_api.err == ""


def example(command: str, word: str) -> list[str]:
    """The words of `command`'s help example that names `word` (without ``hypd``)."""
    parser = build_parser()
    for name in command.split():
        parser = next(a for a in parser._actions
                      if isinstance(a, argparse._SubParsersAction)).choices[name]
    (line,) = [line for line in (parser.epilog or "").splitlines() if word in line]
    return shlex.split(line)[1:]


def test_the_hints_that_turn_the_inference_operator_on_work_as_printed(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    tag = "infer"
    url = local_cluster(api, cloud, tag)
    deploy = ("endpoints", "deploy", tag, "falcon", "--instance-type", INSTANCE_TYPE,
              "--jumpstart", "huggingface-llm-falcon-7b-bf16", "--accept-eula")

    # The endpoint is refused while the operator is off, with the command that turns it on:
    # run as printed, it does (hypd makes the TLS bucket; none is named).
    off = run_cli(*deploy, endpoint=url)
    assert off.code == EXIT_FAILED
    hint = re.search(r"^Turn inference operator on first: (hypd .*)$", off.err, re.M)
    assert hint is not None, off.err
    on = run_cli(*shlex.split(hint.group(1))[1:], *FAST)
    assert on.code == EXIT_OK, on.text
    assert f"(set-features, cluster {tag}): SUCCEEDED" in on.out
    inference = api.get_features(tag)["features"]["inferenceOperator"]
    assert inference["status"] == "ACTIVE"
    assert inference["tlsCertificateBucket"].startswith(f"hyperpod-tls-{tag}-")

    # `features set --help`'s example, for this cluster: already so, nothing started.
    printed = example("features set", "inference-operator")
    assert printed == ["features", "set", "demo", "--enable", "inference-operator", "--wait"]
    again = run_cli(*[tag if w == "demo" else w for w in printed], endpoint=url)
    assert again.code == EXIT_OK, again.text
    assert f"no change: features of cluster {tag} unchanged" in again.out

    deployed = run_cli(*deploy, "--wait", *FAST, endpoint=url)
    assert deployed.code == EXIT_OK, deployed.text


def test_teams_set_get_and_delete_after_enabling_task_governance(
    run_cli: RunCli, cloud: Any, api: ApiClient
) -> None:
    tag = "gov"
    url = local_cluster(api, cloud, tag)
    team = ("teams", "set", tag, "ml", "--resource", f"{INSTANCE_TYPE}=1",
            "--fair-share-weight", "50", "--borrow-limit", "50")

    # Task governance is off: the API's 409, and the command that turns it on.
    off = run_cli(*team, endpoint=url)
    assert off.code == EXIT_FAILED
    assert "(Conflict) when calling the setTeam operation (HTTP 409): task governance is off" in (
        off.err)
    assert (f"Turn task governance on first: hypd features set {tag} --enable taskGovernance "
            f"--wait --endpoint {url}") in off.err
    assert "has no team" in run_cli("teams", "list", tag, endpoint=url).out

    governed = run_cli("features", "set", tag, "--enable", "task-governance", "--set",
                       "taskGovernance.fairShare=true", "--wait", *FAST, endpoint=url)
    assert governed.code == EXIT_OK, governed.text
    assert row(run_cli("features", "get", tag, endpoint=url).out, "taskGovernance")[1:3] == [
        "yes", "ACTIVE"]

    made = run_cli(*team, "--wait", *FAST, endpoint=url)
    assert made.code == EXIT_OK, made.text
    assert f"Setting team ml of cluster {tag}: operation op-" in made.out
    assert f"(set-team, cluster {tag}): SUCCEEDED" in made.out
    got = run_cli("teams", "get", tag, "ml", endpoint=url)
    assert got.code == EXIT_OK, got.text
    for key, value in (("Team", "ml"), ("Status", "Created"),
                       ("Resources", f"{INSTANCE_TYPE} x1"), ("Fair-share weight", "50"),
                       ("Sharing", r"LendAndBorrow \(borrow up to 50%\)"),
                       ("Preempt team tasks", "LowerPriority"), ("Active", "yes"),
                       ("Queue", "hyperpod-ns-ml-localqueue")):
        assert re.search(rf"^{key}:\s+{value}$", got.out, re.M), (key, got.out)
    listed = run_cli("teams", "list", tag, endpoint=url)
    assert header(listed.out) == ["TEAM", "STATUS", "RESOURCES", "WEIGHT", "SHARING",
                                  "PREEMPT", "ACTIVE", "QUEUE"]
    assert row(listed.out, "ml")[1:3] == ["Created", f"{INSTANCE_TYPE} x1"]
    same = run_cli(*team, endpoint=url)
    assert same.calls == ["setTeam"]
    assert (f"no change: team ml of cluster {tag} already has this quota ({INSTANCE_TYPE} x1); "
            "nothing was started.") in same.out
    assert json.loads(run_cli("teams", "get", tag, "ml", "-o", "json", endpoint=url).out) == (
        api.get_team(tag, "ml"))

    # Task governance stays while the team has a quota: the 409, and how to delete the team.
    kept = run_cli("features", "set", tag, "--disable", "taskGovernance", endpoint=url)
    assert kept.code == EXIT_FAILED
    assert (f"Delete the teams first: hypd teams delete {tag} ml --wait --endpoint {url}"
            in kept.err)

    deleted = run_cli("teams", "delete", tag, "ml", "--wait", *FAST, endpoint=url)
    assert deleted.code == EXIT_OK, deleted.text
    assert f"(delete-team, cluster {tag}): SUCCEEDED" in deleted.out
    assert json.loads(run_cli("teams", "list", tag, "-o", "json", endpoint=url).out) == {
        "tag": tag, "teams": []}
    absent = run_cli("teams", "delete", tag, "ml", endpoint=url)
    assert absent.code == EXIT_FAILED
    assert "(NotFound) when calling the deleteTeam operation (HTTP 404)" in absent.err


# -- against canned answers -----------------------------------------------------------------------
UNCHANGED = {"changed": False, "features": {"tag": "demo", "features": {}, "prerequisites": {},
                                            "kubernetesReadable": True}}


def test_the_clis_features_are_the_apis() -> None:
    assert FEATURES == FEATURE_NAMES


def test_features_set_sends_only_the_features_and_fields_given(
    run_cli: RunCli, canned: Callable[..., CannedApi], tmp_path: Path
) -> None:
    client = canned(ACCEPTED, UNCHANGED)

    changed = run_cli(
        "features", "set", "demo", "--enable", "training-operator", "--disable", "OBSERVABILITY",
        "--enable", "taskGovernance", "--set", "task-governance.fair-share=true",
        "--set", 'taskGovernance.priorityClasses=[{"name": "training", "weight": 50}]',
        "--set", "tieredCheckpointing.memoryPercent=20",
        "--set", "inference_operator.tlsCertificateBucket=hyperpod-tls-a",
        "--set", "tieredCheckpointing.extra=NaN")
    metrics = run_cli("features", "set", "demo", "--set", "observability.metrics.training=ADVANCED",
                      "--set", "observability.metrics.node=BASIC", "--set",
                      'observability.ampWorkspaceArn="12"')

    assert [r.code for r in (changed, metrics)] == [EXIT_OK, EXIT_OK]
    path = "/clusters/demo/features"
    assert client.sent == [
        ("PATCH", path, {}, {
            "trainingOperator": {"enabled": True}, "observability": {"enabled": False},
            "taskGovernance": {"enabled": True, "fairShare": True,
                               "priorityClasses": [{"name": "training", "weight": 50}]},
            "tieredCheckpointing": {"memoryPercent": 20, "extra": "NaN"},
            "inferenceOperator": {"tlsCertificateBucket": "hyperpod-tls-a"},
        }),
        ("PATCH", path, {}, {"observability": {"metrics": {"training": "ADVANCED",
                                                           "node": "BASIC"},
                                               "ampWorkspaceArn": "12"}}),
    ]
    assert ("Setting features of cluster demo (trainingOperator on; taskGovernance on "
            "fairShare=true priorityClasses=training:50; observability off; tieredCheckpointing "
            "memoryPercent=20 extra=NaN; inferenceOperator tlsCertificateBucket=hyperpod-tls-a)"
            f": operation {OPERATION_ID} (PENDING)") in changed.out
    assert f"Follow it: hypd ops watch {OPERATION_ID}" in changed.out
    assert "no change: features of cluster demo unchanged (as asked)" in metrics.out

    body = {"taskGovernance": {"enabled": True, "idleResourceSharing": False}}
    (tmp_path / "features.json").write_text(json.dumps(body))
    from_file = run_cli("features", "set", "demo", "--from-file", str(tmp_path / "features.json"),
                        "-o", "json")
    assert json.loads(from_file.out) == ACCEPTED
    assert client.sent[-1][3] == body


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "give at least one of --enable, --disable, --set (or --from-file)"),
        (("--enable", "karpenter"), "unknown feature 'karpenter': one of trainingOperator,"),
        (("--set", "trainingOperator"), "'trainingOperator': expected FEATURE.FIELD=VALUE"),
        (("--set", "tieredCheckpointing.=1"), "expected FEATURE.FIELD=VALUE"),
        (("--set", "trainingOperator.enabled=true"), "use --enable or --disable"),
        (("--set", "tieredCheckpointing.memoryPercent=null"), "null is no value"),
        (("--enable", "observability", "--disable", "observability"),
         "observability: both --enable and --disable"),
        (("--set", "observability.logging=true", "--set", "observability.logging=false"),
         "--set observability.logging is given twice"),
        (("--set", "observability.metrics=1", "--set", "observability.metrics.node=BASIC"),
         "metrics is given a value already"),
        (("--from-file", "-", "--enable", "observability"),
         "--from-file gives the whole request; drop --enable"),
    ],
)
def test_bad_features_flags_are_usage_errors(
    run_cli: RunCli, canned: Callable[..., CannedApi], argv: tuple[str, ...], message: str
) -> None:
    client = canned()

    run = run_cli("features", "set", "demo", *argv)

    assert run.code == EXIT_USAGE
    assert message in run.err
    assert client.sent == []


def test_features_get_shows_settings_problems_and_an_unreadable_kubernetes_api(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    view = {
        "tag": "demo",
        "features": {
            "observability": {"enabled": True, "status": "DEGRADED", "version": "v1.0.0",
                              "metrics": {"training": "ADVANCED"}, "logging": True,
                              "requires": ["eks-pod-identity-agent", "amp-workspace"],
                              "requiredBy": [], "problems": ["Kubernetes API not readable: "
                                                             "timed out"]},
            "taskGovernance": {"enabled": True, "status": "ACTIVE",
                               "priorityClasses": [{"name": "a", "weight": 9}],
                               "fairShare": False, "requires": [], "requiredBy": ["team:ml"]},
        },
        "prerequisites": {"eks-pod-identity-agent": {
            "installed": True, "status": "ACTIVE", "version": "v1.3.8", "installedBy": "other",
            "requiredBy": ["observability"]}},
        "kubernetesReadable": False,
    }
    canned(view)

    run = run_cli("features", "get", "demo")

    assert run.code == EXIT_OK, run.text
    assert row(run.out, "observability") == [
        "observability", "yes", "DEGRADED", "v1.0.0", "-",
        "metrics.training=ADVANCED, logging=true"]
    assert row(run.out, "taskGovernance")[4:] == [
        "team:ml", "priorityClasses=a:9, fairShare=false"]
    assert "  observability:  eks-pod-identity-agent, amp-workspace" in run.out
    assert "Problems:\n  observability:  Kubernetes API not readable: timed out" in run.out
    assert "Kubernetes API could not be read: CRDs and controllers were not checked" in run.out
    assert row(run.out, "eks-pod-identity-agent") == [
        "eks-pod-identity-agent", "yes", "ACTIVE", "v1.3.8", "other", "observability"]


def test_teams_set_sends_the_quota_from_flags_or_a_file(
    run_cli: RunCli, canned: Callable[..., CannedApi], tmp_path: Path
) -> None:
    client = canned()

    full = run_cli("teams", "set", "demo", "ml", "--resource", "ml.g6.4xlarge=2",
                   "--resource", "ml.c5.2xlarge=0", "--fair-share-weight", "0",
                   "--strategy", "LendAndBorrow", "--borrow-limit", "50",
                   "--preempt", "Never", "--inactive")
    least = run_cli("teams", "set", "demo", "ml", "--resource", "ml.g6.4xlarge=1",
                    "--strategy", "DontLend")
    body = {"resources": [{"instanceType": "ml.g6.4xlarge", "count": 1}], "active": True}
    (tmp_path / "team.json").write_text(json.dumps(body))
    from_file = run_cli("teams", "set", "demo", "ml", "--from-file", str(tmp_path / "team.json"))
    deleted = run_cli("teams", "delete", "demo", "ml")

    assert [r.code for r in (full, least, from_file, deleted)] == [EXIT_OK] * 4
    team = "/clusters/demo/teams/ml"
    assert client.sent == [
        ("PUT", team, {}, {
            "resources": [{"instanceType": "ml.g6.4xlarge", "count": 2},
                          {"instanceType": "ml.c5.2xlarge", "count": 0}],
            "fairShareWeight": 0, "sharing": {"strategy": "LendAndBorrow", "borrowLimit": 50},
            "preemptTeamTasks": "Never", "active": False}),
        ("PUT", team, {}, {"resources": [{"instanceType": "ml.g6.4xlarge", "count": 1}],
                           "sharing": {"strategy": "DontLend"}}),
        ("PUT", team, {}, body),
        ("DELETE", team, {}, None),
    ]
    assert f"Setting team ml of cluster demo: operation {OPERATION_ID}" in full.out
    assert f"Deleting team ml of cluster demo: operation {OPERATION_ID}" in deleted.out

    for argv, message in (
        ((), "give at least one --resource TYPE=COUNT (or --from-file)"),
        (("--resource", "ml.g6.4xlarge"), "expected TYPE=COUNT"),
        (("--resource", "ml.g6.4xlarge=two"), "expected TYPE=COUNT"),
        (("--from-file", "-", "--inactive"), "--from-file gives the whole request; drop "
                                              "--inactive"),
    ):
        run = run_cli("teams", "set", "demo", "ml", *argv)
        assert (run.code, message in run.err) == (EXIT_USAGE, True), (argv, run.err)
    assert len(client.sent) == 4


def test_a_refusal_the_cli_cannot_say_more_of_is_the_apis_error_alone(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    canned(ApiError(400, "ValidationError", "invalid request: tieredCheckpointing."
                    "memoryPercent: must be 100 or less",
                    {"errors": [{"field": "tieredCheckpointing.memoryPercent"}]}, "setFeatures"),
           ApiError(404, "NotFound", "cluster demo has no team ml", {"team": "ml"}, "deleteTeam"))

    too_much = run_cli("features", "set", "demo", "--enable", "tieredCheckpointing",
                       "--set", "tieredCheckpointing.memoryPercent=200")
    absent = run_cli("teams", "delete", "demo", "ml")

    assert too_much.code == absent.code == EXIT_FAILED
    assert too_much.err.splitlines() == [
        "An error occurred (ValidationError) when calling the setFeatures operation (HTTP 400): "
        "invalid request: tieredCheckpointing.memoryPercent: must be 100 or less"]
    assert absent.err.splitlines() == [
        "An error occurred (NotFound) when calling the deleteTeam operation (HTTP 404): cluster "
        "demo has no team ml"]
