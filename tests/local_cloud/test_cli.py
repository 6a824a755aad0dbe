"""The hypd console script: argument parsing and `hypd local up` serving until told to stop."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hypd_cli.api_client import ApiClient
from hypd_cli.demo import demo_request, follow
from hypd_cli.local import default_template, run_up
from hypd_cli.local_output import MAX_RECORD, function_output
from hypd_cli.main import build_parser, main

from .conftest import FIXTURE_TEMPLATE, REAL_TEMPLATE


@contextlib.contextmanager
def local_up(args: Any, out: io.StringIO) -> Iterator[Any]:
    """`hypd local up` running on a thread until the block ends; yields its cloud, and checks
    it then stopped with exit code 0."""
    stop, ready = threading.Event(), threading.Event()
    clouds: list[Any] = []
    exit_codes: list[int] = []

    def on_ready(cloud: Any) -> None:
        clouds.append(cloud)
        ready.set()

    runner = threading.Thread(
        target=lambda: exit_codes.append(run_up(args, stop=stop, on_ready=on_ready, out=out)))
    runner.start()
    try:
        assert ready.wait(timeout=120)
        yield clouds[0]
    finally:
        stop.set()
        runner.join(timeout=60)
    assert exit_codes == [0]


def test_local_up_arguments() -> None:
    args = build_parser().parse_args(
        ["local", "up", "--port", "9000", "--aws-port", "0", "--region", "eu-west-1",
         "--template", "t.yaml", "--parameter", "A=b", "--seed", "demo"])

    assert (args.port, args.aws_port, args.region) == (9000, 0, "eu-west-1")
    assert args.template == Path("t.yaml")
    assert args.parameter == ["A=b"]
    assert args.handler is run_up


def test_a_group_without_a_subcommand_shows_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["local"])

    assert "up" in capsys.readouterr().out


def test_the_default_template_is_the_one_in_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "template.yaml").write_text("Resources: {}\n")

    assert default_template(tmp_path) == tmp_path / "template.yaml"
    assert default_template(tmp_path / "empty").name == "template.yaml"


def test_local_up_serves_until_stopped() -> None:
    # Given `hypd local up` running on a thread, with a way to stop it
    args = build_parser().parse_args(
        ["local", "up", "--port", "0", "--console-port", "0", "--template",
         str(FIXTURE_TEMPLATE), "--seed", "demo"])
    urls: dict[str, str] = {}
    out = io.StringIO()

    with local_up(args, out) as cloud:
        urls["api"] = cloud.api_url
        # When the API is called
        with urllib.request.urlopen(urls["api"] + "/items/7", timeout=30) as response:  # noqa: S310
            body = json.loads(response.read())
        # and the web console is opened, at the address the banner gives
        console = re.search(r"web console    (http://127\.0\.0\.1:\d+/)", out.getvalue())
        assert console is not None
        with urllib.request.urlopen(console.group(1), timeout=30) as response:  # noqa: S310
            page = response.read().decode()

    # Then it answered, printed how to use it, and shut down cleanly (local_up: exit code 0)
    assert body["pathParameters"] == {"itemId": "7"}
    printed = out.getvalue()
    assert f"REST API       {urls['api']}" in printed
    assert "<title>hypd console</title>" in page
    assert "export AWS_ENDPOINT_URL=http://127.0.0.1:" in printed
    # and what kubectl and aws eks get-token need
    assert "hypd local kubeconfig TAG --output kubeconfig" in printed
    assert "export AWS_ENDPOINT_URL_STS=http://127.0.0.1:" in printed
    assert "Stopped." in printed


@pytest.mark.parametrize("command", [["local", "up", "--port", "0"], ["local", "demo"]])
def test_without_the_local_extra_the_cli_says_to_install_it(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a Python where moto cannot be imported (hypd installed without its `local` extra)
    monkeypatch.setitem(sys.modules, "moto", None)

    # Then the command exits with a usage error naming what to install, no traceback
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "moto" in err
    assert "pip install 'hypd[local]'" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("name", ["My_Data", "ab", "data..set", "192.168.0.1", "xn--data"])
def test_a_bucket_name_s3_refuses_is_refused_before_the_cloud_starts(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["local", "up", "--bucket", name])

    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "usage: hypd local up" in err
    assert f"argument --bucket: {name!r} is not a valid S3 bucket name (3-63 lowercase" in err


def test_local_up_prints_its_endpoints_and_a_line_per_operation_the_logs_go_to_a_file(
        tmp_path: Path) -> None:
    # Given `hypd local up` on the project's template, logging to a file
    log_file = tmp_path / "local.log"
    args = build_parser().parse_args(
        ["local", "up", "--port", "0", "--no-console", "--template", str(REAL_TEMPLATE),
         "--log-file", str(log_file), "--bucket", "hypd-up-data", "--bucket", "hypd-up-data"])
    out = io.StringIO()

    with local_up(args, out) as cloud:
        # When a cluster is created through its API, to the end, mounting the bucket it made
        # (named twice: one bucket)
        api = ApiClient(cloud.api_url)
        accepted = api.post("/clusters", demo_request(api, "up", "hypd-up-data"))
        operation = follow(api, cloud, str(accepted["operationId"]), timeout=240)

    # Then the terminal got the banner, the log file's name and one line per transition of
    # the operation; the functions' logs went to the file
    assert operation["status"] == "SUCCEEDED", operation.get("error")
    printed = out.getvalue()
    assert f"logs           {log_file}" in printed
    assert "  S3 buckets     hypd-up-data\n" in printed
    transitions = [line.split()[2:] for line in printed.splitlines()
                   if accepted["operationId"] in line]
    assert transitions == [["create-cluster", "up", status]
                           for status in ("PENDING", "RUNNING", "SUCCEEDED")]
    assert "operation started" in log_file.read_text()  # the API function's log line
    assert '"level":' not in printed
    assert len(printed) < 4000, len(printed)


def test_a_huge_log_record_is_cut_wherever_it_goes(tmp_path: Path) -> None:
    log_file = tmp_path / "cut.log"
    with function_output(log_file, "WARNING"):
        logging.getLogger("moto.stepfunctions.parser").error("state %s", "x" * 60_000)
        print("a function's line")

    written = log_file.read_text()
    assert "(58006 characters more)" in written
    assert len(written) < MAX_RECORD + 500
    assert "a function's line" in written
