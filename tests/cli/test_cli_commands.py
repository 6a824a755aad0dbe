"""The CLI without a cloud: argument handling, exit codes, and ``ops watch`` against a scripted
client (live redraw on a terminal, temporary failures, timeout, Ctrl+C)."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hypd_cli.api_client import ApiError, ApiUnreachable
from hypd_cli.cli import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    Context,
    run_command,
)
from hypd_cli.clusters import create_cluster
from hypd_cli.group_flags import parse_group
from hypd_cli.main import build_parser
from hypd_cli.operations import watch_command
from hypd_cli.output import stage_note
from tests.cli.conftest import (
    ACCEPTED,
    OPERATION_ID,
    CannedApi,
    RunCli,
    ThreadStream,
    piped,
)


def free_endpoint() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def stage(name: str, status: str = "PENDING", attempts: int = 0, **extra: Any) -> dict[str, Any]:
    return {"name": name, "status": status, "attempts": attempts, **extra}


def operation(status: str, *stages: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": OPERATION_ID, "kind": "create-cluster", "clusterTag": "demo", "status": status,
        "stages": list(stages), "input": {}, "createdAt": "2026-01-01T00:00:00Z",
        "updatedAt": "2026-01-01T00:05:00Z", "version": 1,
    }


RUNNING = operation(
    "RUNNING",
    stage("network", "SUCCEEDED", 1, attemptStartedAt="2026-01-01T00:00:00Z",
          endedAt="2026-01-01T00:01:00Z"),
    stage("eks", "RUNNING", 1, attemptStartedAt="2026-01-01T00:01:00Z"),
)
FAILED = operation(
    "FAILED",
    stage("network", "SUCCEEDED", 1, attemptStartedAt="2026-01-01T00:00:00Z",
          endedAt="2026-01-01T00:01:00Z"),
    stage("eks", "FAILED", 2, attemptStartedAt="2026-01-01T00:01:00Z",
          endedAt="2026-01-01T00:11:00Z",
          error={"code": "AccessDeniedException", "message": "not allowed"}),
)
SUCCEEDED = operation(
    "SUCCEEDED",
    stage("network", "SUCCEEDED", 1, attemptStartedAt="2026-01-01T00:00:00Z",
          endedAt="2026-01-01T00:01:00Z"),
    stage("eks", "SUCCEEDED", 1, attemptStartedAt="2026-01-01T00:01:00Z",
          endedAt="2026-01-01T00:11:00Z"),
)


class ScriptedClient:
    """Answers getOperation from a script: an operation to return or an exception to raise."""

    def __init__(self, *script: dict[str, Any] | Exception) -> None:
        self.script = list(script)
        self.created: list[dict[str, Any]] = []

    def get_operation(self, operation_id: str) -> dict[str, Any]:
        item = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(item, Exception):
            raise item
        return item

    def create_cluster(self, body: dict[str, Any]) -> dict[str, Any]:
        self.created.append(body)
        return {"operationId": OPERATION_ID, "status": "PENDING", "kind": "create-cluster"}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def context(argv: list[str], client: ScriptedClient, out: io.StringIO | None = None,
            stdin: str = "", sleep: Callable[[float], None] = lambda seconds: None) -> Context:
    args = build_parser().parse_args([*argv, "--endpoint", "http://127.0.0.1:9/v1"])
    return Context(args, out=out or io.StringIO(), err=io.StringIO(), stdin=io.StringIO(stdin),
                   _client=client, sleep=sleep)  # type: ignore[arg-type]


def run_watch(ctx: Context) -> int:
    return run_command(ctx, "ops watch", watch_command)


def test_watch_redraws_in_place_on_a_terminal_and_exits_1_on_failure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "120")  # the width of a terminal with no descriptor
    terminal = Terminal()
    ctx = context(["ops", "watch", OPERATION_ID], ScriptedClient(RUNNING, RUNNING, FAILED),
                  out=terminal)

    code = run_watch(ctx)

    assert code == EXIT_FAILED
    screen = terminal.getvalue()
    assert screen.count("\x1b[J") == 2  # drawn once, redrawn twice in place
    assert "\x1b[5F\x1b[J" in screen  # up over the title, header, rule and two stages
    final = screen.rsplit("\x1b[J", 1)[1]
    assert final.startswith(f"Operation {OPERATION_ID} (create-cluster, cluster demo): FAILED")
    # (no timeline in these answers: the LOOKS column stays empty)
    assert "eks      FAILED     2         10m00s          AccessDeniedException: not allowed" \
        in final
    assert "FAILED at stage eks (attempt 2):\n  AccessDeniedException: not allowed" in final
    assert (f"hypd ops retry {OPERATION_ID} --wait --endpoint http://127.0.0.1:9/v1"
            in final)


def test_watch_cuts_its_lines_to_a_narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    terminal = Terminal()
    run_watch(context(["ops", "watch", OPERATION_ID], ScriptedClient(RUNNING, FAILED),
                      out=terminal))
    drawn = terminal.getvalue().rsplit("\x1b[J", 1)[1].split("\n\n")[0]
    lines = drawn.splitlines()  # the view; the failure summary after it is not cut
    assert lines[0] == f"Operation {OPERATION_ID} (create-cluster"[:39]
    assert max(len(line) for line in lines) == 39


def test_watch_prints_one_line_per_change_when_not_a_terminal() -> None:
    ctx = context(["ops", "watch", OPERATION_ID],
                  ScriptedClient(RUNNING, RUNNING, SUCCEEDED))

    assert run_watch(ctx) == EXIT_OK

    out = ctx.out.getvalue()  # type: ignore[attr-defined]
    lines = out.split("\n\n")[0].splitlines()
    assert lines == [
        f"{OPERATION_ID}  RUNNING",
        "  network  SUCCEEDED  attempt 1, took 1m00s",
        "  eks      RUNNING    attempt 1",
        "  eks      SUCCEEDED  attempt 1, took 10m00s",
        f"{OPERATION_ID}  SUCCEEDED",
    ]
    assert f"Operation {OPERATION_ID} (create-cluster, cluster demo): SUCCEEDED after 5m00s" in out


def test_watch_rides_out_temporary_failures_and_gives_up_after_too_many() -> None:
    throttled = ApiError(429, "TooManyRequestsException", "slow down", {})
    pauses: list[float] = []
    ctx = context(["ops", "watch", OPERATION_ID, "--interval", "1"], ScriptedClient(
        ApiUnreachable("http://x", "refused"), throttled, SUCCEEDED), sleep=pauses.append)

    assert run_watch(ctx) == EXIT_OK
    assert pauses == [1.0, 2.0]
    assert "poll failed" in ctx.err.getvalue()  # type: ignore[attr-defined]

    down = context(["ops", "watch", OPERATION_ID],
                   ScriptedClient(ApiUnreachable("http://127.0.0.1:9/v1", "refused")))
    assert run_watch(down) == EXIT_UNREACHABLE

    missing = context(["ops", "watch", OPERATION_ID],
                      ScriptedClient(ApiError(404, "NotFound", "no such operation", {},
                                              "getOperation")))
    assert run_watch(missing) == EXIT_FAILED
    assert "(NotFound) when calling the getOperation operation (HTTP 404): no such operation" \
        in missing.err.getvalue()  # type: ignore[attr-defined]


def test_watch_timeout_exits_4_and_ctrl_c_exits_130() -> None:
    ctx = context(["ops", "watch", OPERATION_ID, "--timeout", "0.01"], ScriptedClient(RUNNING))
    ctx.clock = iter([0.0, 1.0]).__next__

    assert run_watch(ctx) == EXIT_TIMEOUT
    assert f"Still RUNNING after 0.0s; keep watching: hypd ops watch {OPERATION_ID}" in \
        ctx.err.getvalue()  # type: ignore[attr-defined]

    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    stopped = context(["ops", "watch", OPERATION_ID], ScriptedClient(RUNNING), sleep=interrupt)
    assert run_watch(stopped) == EXIT_INTERRUPTED
    assert "Stopped watching; the operation goes on" in \
        stopped.err.getvalue()  # type: ignore[attr-defined]


def test_create_sends_the_body_from_flags_or_a_file(tmp_path: Path) -> None:
    client = ScriptedClient(SUCCEEDED)
    flags = ["clusters", "create", "--tag", "demo", "--zone", "us-west-2a",
             "--group", "name=gpu,type=ml.g6.4xlarge,count=2,capacity=spot,efa-only=true",
             "--group", "name=plan,instance-type=ml.p5.48xlarge,training-plan="
             "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5",
             "--fsx-capacity", "2400", "--kubernetes-version", "1.33"]
    ctx = context(flags, client)

    assert run_command(ctx, "clusters create", create_cluster) == EXIT_OK
    assert client.created == [{
        "tag": "demo",
        "availabilityZone": "us-west-2a",
        "kubernetesVersion": "1.33",
        "instanceGroups": [
            {"name": "gpu", "instanceType": "ml.g6.4xlarge", "count": 2,
             "capacity": {"type": "spot"}, "efaOnly": True},
            {"name": "plan", "instanceType": "ml.p5.48xlarge", "count": 1,
             "capacity": {"type": "training-plan", "trainingPlanArn":
                          "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5"}},
        ],
        "storage": {"fsx": {"storageCapacityGiB": 2400}},
    }]
    assert f"Follow it: hypd ops watch {OPERATION_ID}" in ctx.out.getvalue()  # type: ignore[attr-defined]

    body = {"tag": "x", "instanceGroups": [{"labels": {"team": "a"}}], "storage": {}}
    (tmp_path / "body.json").write_text(json.dumps(body))
    from_file = ScriptedClient(SUCCEEDED)
    assert run_command(context(["clusters", "create", "--from-file", str(tmp_path / "body.json"),
                                "-o", "json"], from_file),
                       "clusters create", create_cluster) == EXIT_OK
    assert from_file.created == [body]
    from_stdin = ScriptedClient(SUCCEEDED)
    assert run_command(context(["clusters", "create", "--from-file", "-"], from_stdin,
                               stdin=json.dumps(body)), "clusters create", create_cluster) == 0
    assert from_stdin.created == [body]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("name=gpu", "missing type="),
        ("type=ml.g6.4xlarge", "missing name="),
        ("name=gpu,type=t,count=two", "count must be a whole number"),
        ("name=gpu,type=t,capacity=reserved", "capacity must be one of"),
        ("name=gpu,type=t,capacity=training-plan", "needs training-plan=ARN"),
        ("name=gpu,type=t,capacity=spot,training-plan=arn:x", "goes with capacity=training-plan"),
        ("name=gpu,type=t,colour=red", "unknown key 'colour'"),
        ("name=gpu,name=cpu,type=t", "name given twice"),
        ("name=gpu,type", "expected KEY=VALUE"),
        ("name=gpu,type=t,efa-only=maybe", "efa-only must be true or false"),
    ],
)
def test_bad_group_specs_are_usage_errors(spec: str, message: str) -> None:
    from hypd_cli.cli import UsageError

    with pytest.raises(UsageError, match=message):
        parse_group(spec)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["clusters", "create", "--tag", "x"], "missing --group, --s3-bucket or --fsx-capacity"),
        (["clusters", "create", "--tag", "x", "--group", "name=a,type=b", "--s3-bucket", "b",
          "--from-file", "f.json"], "--from-file gives the whole request; drop --tag, --group"),
        (["clusters", "create", "--tag", "x", "--group", "name=a,type=b", "--fsx-capacity",
          "1200", "--s3-prefix", "p/"], "--s3-prefix needs --s3-bucket"),
        (["clusters", "create", "--from-file", "/nonexistent/body.json"], "--from-file:"),
        (["clusters", "create", "--tag", "x", "--group", "name=a", "--s3-bucket", "b"],
         "missing type="),
    ],
)
def test_incomplete_create_flags_exit_2_without_calling_the_api(
    run_cli: RunCli, argv: list[str], message: str
) -> None:
    run = run_cli(*argv, endpoint=free_endpoint())

    assert run.code == EXIT_USAGE
    assert message in run.err
    assert run.calls == []


def test_usage_errors_exit_2(run_cli: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_cli("clusters", "list", "--output", "xml").code == EXIT_USAGE
    assert run_cli("ops", "watch").code == EXIT_USAGE  # no ID
    assert run_cli("ops", "watch", OPERATION_ID, "--interval", "0").code == EXIT_USAGE
    assert run_cli("widgets").code == EXIT_USAGE
    assert run_cli("nodes").code == EXIT_USAGE  # a group without its command: its help

    monkeypatch.delenv("HYPD_ENDPOINT", raising=False)
    no_endpoint = run_cli("clusters", "list")
    assert no_endpoint.code == EXIT_USAGE
    assert "no endpoint: give --endpoint URL or set HYPD_ENDPOINT" in no_endpoint.err


def test_an_unreachable_endpoint_exits_3_naming_it(run_cli: RunCli) -> None:
    endpoint = free_endpoint()

    run = run_cli("clusters", "list", endpoint=endpoint)

    assert run.code == EXIT_UNREACHABLE
    assert f"cannot reach the hypd API at {endpoint}" in run.err
    assert run.out == ""


def test_the_console_script_exits_with_the_commands_code() -> None:
    script = Path(sys.executable).parent / "hypd"
    if not script.exists():
        pytest.skip("the hypd console script is not installed next to the interpreter")
    endpoint = free_endpoint()
    env = {**os.environ, "HYPD_ENDPOINT": endpoint}

    unreachable = subprocess.run(  # noqa: S603 - our own console script
        [str(script), "catalog", "zones", "-o", "json"], capture_output=True, text=True,
        env=env, timeout=60, check=False,
    )
    usage = subprocess.run(  # noqa: S603
        [str(script), "clusters", "get"], capture_output=True, text=True, env=env, timeout=60,
        check=False,
    )

    assert unreachable.returncode == EXIT_UNREACHABLE
    assert endpoint in unreachable.stderr
    assert unreachable.stdout == ""
    assert usage.returncode == EXIT_USAGE


def test_thread_stream_keeps_only_the_owner_threads_writes() -> None:
    import threading

    stream = ThreadStream()
    stream.write("mine\n")
    other = threading.Thread(target=lambda: stream.write("theirs\n"))
    other.start()
    other.join()

    assert stream.getvalue() == "mine\n"


# -- capacity commands against canned answers ------------------------------------------------------
NODE = "i-0123456789abcdef0"


def test_groups_add_sends_the_group_from_flags_or_a_file(
    run_cli: RunCli, canned: Callable[..., CannedApi], tmp_path: Path
) -> None:
    client = canned()

    added = run_cli("groups", "add", "demo", "--group",
                    "name=spot,type=ml.g6.4xlarge,count=2,capacity=spot,dedicated-subnet=true",
                    "--zone", "us-west-2b", "--label", "team=ml", "--label", "tier=a",
                    "--taint", "dedicated=ml:NoSchedule", "--taint", "spot:NoExecute",
                    "--deep-health-check", "InstanceStress")

    assert added.code == EXIT_OK, added.text
    assert client.sent == [("POST", "/clusters/demo/instance-groups", {}, {
        "name": "spot", "instanceType": "ml.g6.4xlarge", "count": 2,
        "capacity": {"type": "spot"}, "dedicatedSubnet": True,
        "labels": {"team": "ml", "tier": "a"},
        "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
                   {"key": "spot", "effect": "NoExecute"}],
        "deepHealthChecks": ["InstanceStress"], "availabilityZone": "us-west-2b",
    })]
    assert (f"Adding instance group spot to cluster demo: operation {OPERATION_ID} (PENDING)"
            in added.out)
    assert f"Follow it: hypd ops watch {OPERATION_ID}" in added.out

    body = {"name": "cpu", "instanceType": "ml.c5.2xlarge", "count": 1,
            "capacity": {"type": "on-demand"}}
    (tmp_path / "group.json").write_text(json.dumps(body))
    as_json = run_cli("groups", "add", "demo", "--from-file", str(tmp_path / "group.json"),
                      "-o", "json")
    assert json.loads(as_json.out) == ACCEPTED  # exactly the API's answer
    assert client.sent[-1][3] == body

    both = run_cli("groups", "add", "demo", "--from-file", "-", "--label", "a=b")
    assert both.code == EXIT_USAGE
    assert "--from-file gives the whole request; drop --label" in both.err
    assert run_cli("groups", "add", "demo", "--zone", "us-west-2a").code == EXIT_USAGE
    assert len(client.sent) == 2


def test_groups_add_without_flags_asks_in_the_clusters_zone_and_can_be_declined(
    run_cli: RunCli, canned: Callable[..., CannedApi], region_types: list[dict[str, Any]]
) -> None:
    # Given a cluster whose group is in us-west-2b, and a training plan there for ml.trn1
    groups = {"tag": "demo", "clusterStatus": "InService", "instanceGroups": [
        {"name": "gpu", "instanceType": "ml.g6.4xlarge", "availabilityZone": "us-west-2b",
         "count": 1, "currentCount": 1, "capacity": {"type": "on-demand"}}]}
    zones = {"region": "us-west-2", "availabilityZones": [
        {"name": "us-west-2a", "zoneId": "usw2-az2", "state": "available"},
        {"name": "us-west-2b", "zoneId": "usw2-az1", "state": "available"}]}
    types = {"availabilityZone": "us-west-2b", "instanceTypes": [
        t for t in region_types if "us-west-2b" in t["availabilityZones"]]}
    arn = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/trn"
    plans = {"trainingPlans": [{
        "name": "trn", "arn": arn, "status": "Scheduled", "instanceTypes": ["ml.trn1.32xlarge"],
        "availabilityZones": ["us-west-2b"], "totalInstanceCount": 8,
        "availableInstanceCount": 8, "startTime": "2026-02-01T00:00:00Z",
        "endTime": "2026-02-08T00:00:00Z", "reservedCapacities": []}]}
    client = canned(groups, zones, types, plans)
    answers = [
        "gpu",          # taken: asked again
        "neuron",
        "",             # zone: the default, the one the cluster's group is in
        "trainium",     # the only Trainium type there: picked
        "4",
        "trn",          # capacity: the zone's plan for the type, by its name
        "n",            # declined
    ]

    # When `groups add` is given no flag but the tag
    declined = run_cli("groups", "add", "demo", stdin=piped(answers))

    # Then it asked, read the cluster's groups and the catalogue, and sent nothing
    assert declined.code == EXIT_FAILED, declined.text
    assert [(method, path) for method, path, _, _ in client.sent] == [
        ("GET", "/clusters/demo/instance-groups"), ("GET", "/catalog/availability-zones"),
        ("GET", "/catalog/instance-types"), ("GET", "/catalog/training-plans")]
    assert client.sent[2][2] == {"availabilityZone": "us-west-2b"}
    asked = declined.err
    assert "  cluster demo has a group gpu already (its groups: gpu)" in asked
    assert "  2) us-west-2b (usw2-az1): groups gpu\nChoose 1-2 [2]: \n" in asked
    assert "Instance type (offered in us-west-2b):\n" in asked
    assert re.search(r"  the only match: ml\.trn1\.32xlarge +16 x AWS Trainium \(32 GiB\), "
                     r"128 vCPU, 512 GiB, EFA \(8 network cards\); training plan trn "
                     r"\(Scheduled, 8/8 available, ", asked)
    assert "  3) training plan trn (Scheduled, 8/8 available" in asked
    assert "POST /clusters/demo/instance-groups\n" in asked
    body = json.loads(asked.split("POST /clusters/demo/instance-groups\n", 1)[1]
                      .split("\n(the same", 1)[0])
    assert body == {"name": "neuron", "instanceType": "ml.trn1.32xlarge", "count": 4,
                    "capacity": {"type": "training-plan", "trainingPlanArn": arn},
                    "availabilityZone": "us-west-2b"}
    assert ("(the same without questions: hypd groups add demo --group name=neuron,"
            f"type=ml.trn1.32xlarge,count=4,capacity=training-plan,training-plan={arn} "
            "--zone us-west-2b)") in asked
    assert asked.endswith("Add this group? [y/N]: n\nNothing was added.\n")
    assert declined.out == ""

    # Answers that run out: a usage error naming the command, nothing sent
    client = canned(groups, zones)
    short = run_cli("groups", "add", "demo", stdin="spot\n")
    assert short.code == EXIT_USAGE
    assert "end of input); give the request as flags instead (hypd groups add --help)" in (
        short.err)
    assert all(method == "GET" for method, _, _, _ in client.sent)


def test_scale_and_update_send_only_what_is_given_and_say_when_nothing_changes(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    unchanged = {"changed": False, "instanceGroup": {"name": "spot", "count": 3,
                                                      "currentCount": 3}}
    client = canned(unchanged, ACCEPTED, unchanged)

    scaled = run_cli("groups", "scale", "demo", "spot", "3", "--wait")
    updated = run_cli("groups", "update", "demo", "spot", "--min-count", "1",
                      "--taint", "a=b:NoSchedule")
    as_json = run_cli("groups", "update", "demo", "spot", "--count", "3", "-o", "json")

    patch = "/clusters/demo/instance-groups/spot"
    assert client.sent == [
        ("PATCH", patch, {}, {"count": 3}),
        ("PATCH", patch, {}, {"minCount": 1,
                              "taints": [{"key": "a", "value": "b", "effect": "NoSchedule"}]}),
        ("PATCH", patch, {}, {"count": 3}),
    ]
    assert scaled.code == EXIT_OK
    assert scaled.calls == ["updateInstanceGroup"]  # nothing started: nothing to wait for
    assert ("no change: instance group spot of cluster demo already matches the request "
            "(count 3, 3 up); nothing was started.") in scaled.out
    assert (f"Updating instance group spot of cluster demo: operation {OPERATION_ID}"
            in updated.out)
    assert json.loads(as_json.out) == unchanged
    assert as_json.err == ""

    nothing = run_cli("groups", "update", "demo", "spot")
    assert nothing.code == EXIT_USAGE
    assert "give at least one of --count, --min-count, --label, --taint" in nothing.err
    assert run_cli("groups", "scale", "demo", "spot", "many").code == EXIT_USAGE
    assert len(client.sent) == 3


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--label", "team", "--label 'team': expected KEY=VALUE"),
        ("--label", "=ml", "expected KEY=VALUE"),
        ("--taint", "gpu", "--taint 'gpu': expected KEY=VALUE:EFFECT or KEY:EFFECT"),
        ("--taint", ":NoSchedule", "expected KEY=VALUE:EFFECT"),
        ("--taint", "gpu=true:", "expected KEY=VALUE:EFFECT"),
    ],
)
def test_bad_labels_and_taints_are_usage_errors(
    run_cli: RunCli, canned: Callable[..., CannedApi], flag: str, value: str, message: str
) -> None:
    client = canned()

    run = run_cli("groups", "update", "demo", "spot", flag, value)

    assert run.code == EXIT_USAGE
    assert message in run.err
    assert client.sent == []


def test_node_commands_and_autoscaling_send_their_routes(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    off = {"changed": False, "autoscaling": {"tag": "demo", "enabled": False}}
    client = canned({"tag": "demo", "nodes": []}, ACCEPTED, ACCEPTED, ACCEPTED, ACCEPTED, off)

    runs = [
        run_cli("nodes", "list", "demo", "--group", "spot"),
        run_cli("nodes", "reboot", "demo", NODE),
        run_cli("nodes", "replace", "demo", NODE),
        run_cli("nodes", "delete", "demo", NODE),
        run_cli("autoscaling", "enable", "demo", "--group", "a", "--group", "b",
                "--consolidate-after", "10m", "--consolidation-policy", "WhenEmpty"),
        run_cli("autoscaling", "disable", "demo"),
    ]

    assert [r.code for r in runs] == [EXIT_OK] * 6
    node = f"/clusters/demo/nodes/{NODE}"
    assert client.sent == [
        ("GET", "/clusters/demo/nodes", {"instanceGroup": "spot"}, None),
        ("POST", f"{node}/reboot", {}, None),
        ("POST", f"{node}/replace", {}, None),
        ("DELETE", node, {}, None),
        ("PUT", "/clusters/demo/autoscaling", {}, {
            "enabled": True, "instanceGroups": ["a", "b"], "consolidateAfter": "10m",
            "consolidationPolicy": "WhenEmpty"}),
        ("PUT", "/clusters/demo/autoscaling", {}, {"enabled": False}),
    ]
    assert f"Rebooting node {NODE} of cluster demo: operation {OPERATION_ID}" in runs[1].out
    assert f"Deleting node {NODE} of cluster demo" in runs[3].out
    assert ("no change: autoscaling of cluster demo is already off; nothing was started."
            in runs[5].out)
    bad_policy = run_cli("autoscaling", "enable", "demo", "--consolidation-policy", "Always")
    assert bad_policy.code == EXIT_USAGE


def test_a_change_refused_while_another_runs_says_how_to_follow_that_one(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    canned(ApiError(409, "Conflict", f"operation {OPERATION_ID} is already in progress for "
                    "cluster demo", {"operationId": OPERATION_ID, "scope": "cluster#demo"},
                    "deleteInstanceGroup"))

    refused = run_cli("groups", "delete", "demo", "spot", "--endpoint", "http://127.0.0.1:9/v1")

    assert refused.code == EXIT_FAILED
    assert refused.err.splitlines() == [
        "An error occurred (Conflict) when calling the deleteInstanceGroup operation (HTTP 409): "
        f"operation {OPERATION_ID} is already in progress for cluster demo",
        f"Follow it: hypd ops watch {OPERATION_ID} --endpoint http://127.0.0.1:9/v1",
    ]


def test_a_stage_note_says_what_a_running_stage_waits_for_and_what_a_stage_warns_of() -> None:
    assert stage_note(stage("hyperpod", "RUNNING", 1, progress={
        "calls": 1, "note": "instance group spot is Updating"})) == (
        "waiting: instance group spot is Updating")
    assert stage_note(stage("verify", "RUNNING", 1, progress={
        "problems": ["1 of 2 instances are up", "the group is Updating"]})) == (
        "waiting: 1 of 2 instances are up; the group is Updating")
    assert stage_note(stage("prerequisites", "SUCCEEDED", 1, output={
        "warnings": ["instance group spot has 2 instances"]})) == (
        "warning: instance group spot has 2 instances")
    assert stage_note(stage("hyperpod", "SUCCEEDED", 1, progress={"note": "done"})) == ""
    assert stage_note(stage("workloads", "SUCCEEDED", 1, output={
        "deleted": [], "skipped": "EKS cluster hypd-x never became ACTIVE"})) == (
        "skipped: EKS cluster hypd-x never became ACTIVE")
