"""`hypd config`: named connections, one current; a command's flags win over the environment,
which wins over the context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hypd_cli.api_client import ApiClient, ApiConfigError
from hypd_cli.cli import client_from_args
from hypd_cli.main import build_parser, main

LOCAL = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config.json"
    monkeypatch.setenv("HYPD_CONFIG", str(path))
    for name in ("HYPD_ENDPOINT", "HYPD_STACK_NAME", "HYPD_CONTEXT"):
        monkeypatch.delenv(name, raising=False)
    return path


def client_for(*argv: str) -> ApiClient:
    return client_from_args(build_parser().parse_args(["clusters", "list", *argv]))


def test_a_context_set_and_used_gives_the_endpoint_and_signing(
        config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "set-context", "local", "--endpoint", LOCAL,
                 "--no-sign-request"]) == 0
    assert main(["config", "set-context", "prod", "--stack-name", "hypd-prod",
                 "--profile", "ops", "--region", "eu-west-1"]) == 0
    capsys.readouterr()

    # the first context made is the current one
    assert main(["config", "current-context"]) == 0
    assert capsys.readouterr().out.strip() == "local"
    client = client_for()
    assert (client.endpoint, client.signer) == (LOCAL, None)

    assert main(["config", "get-contexts"]) == 0
    listed = capsys.readouterr().out
    assert "*        local" in listed
    assert "stack hypd-prod" in listed
    saved = json.loads(config_file.read_text())
    assert saved["contexts"]["prod"] == {"stackName": "hypd-prod", "profile": "ops",
                                         "region": "eu-west-1"}


def test_flags_then_the_environment_then_the_context(monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["config", "set-context", "local", "--endpoint", LOCAL]) == 0

    assert client_for().endpoint == LOCAL
    monkeypatch.setenv("HYPD_ENDPOINT", "http://127.0.0.1:8/v1")
    assert client_for().endpoint == "http://127.0.0.1:8/v1"
    assert client_for("--endpoint", "http://127.0.0.1:7/v1").endpoint == "http://127.0.0.1:7/v1"


def test_an_unknown_context_or_a_bad_endpoint_is_named(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "set-context", "local", "--endpoint", LOCAL]) == 0

    with pytest.raises(ApiConfigError, match=r"context 'nope' does not exist \(known: local\)"):
        client_for("--context", "nope")
    assert main(["config", "use-context", "nope"]) == 2
    assert main(["config", "set-context", "bad", "--endpoint", "localhost:1"]) == 2
    assert "is not a URL" in capsys.readouterr().err


def test_use_and_delete_a_context(capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("a", "b"):
        assert main(["config", "set-context", name, "--endpoint", LOCAL]) == 0
    assert main(["config", "use-context", "b"]) == 0
    assert main(["config", "delete-context", "b"]) == 0
    capsys.readouterr()

    assert main(["config", "current-context"]) == 1
    assert "No current context" in capsys.readouterr().err
