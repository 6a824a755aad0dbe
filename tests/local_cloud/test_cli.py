"""The hypd console script: argument parsing and `hypd local up` serving until told to stop."""

from __future__ import annotations

import io
import json
import re
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from hypd_cli.local import default_template, run_up
from hypd_cli.main import build_parser, main

from .conftest import FIXTURE_TEMPLATE


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
    stop, ready = threading.Event(), threading.Event()
    urls: dict[str, str] = {}
    out = io.StringIO()

    def on_ready(cloud) -> None:
        urls["api"] = cloud.api_url
        ready.set()

    exit_codes: list[int] = []
    runner = threading.Thread(
        target=lambda: exit_codes.append(run_up(args, stop=stop, on_ready=on_ready, out=out)))
    runner.start()
    try:
        assert ready.wait(timeout=60)
        # When the API is called
        with urllib.request.urlopen(urls["api"] + "/items/7", timeout=30) as response:  # noqa: S310
            body = json.loads(response.read())
        # and the web console is opened, at the address the banner gives
        console = re.search(r"web console    (http://127\.0\.0\.1:\d+/)", out.getvalue())
        assert console is not None
        with urllib.request.urlopen(console.group(1), timeout=30) as response:  # noqa: S310
            page = response.read().decode()
    finally:
        stop.set()
        runner.join(timeout=60)

    # Then it answered, printed how to use it, and shut down cleanly
    assert body["pathParameters"] == {"itemId": "7"}
    assert exit_codes == [0]
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
