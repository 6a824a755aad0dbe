"""Running the ``hypd`` CLI in-process: ``hypd_cli.main.main(argv)`` with stdin from a string
and stdout/stderr captured.

The local cloud runs its Lambda handlers in this process and they print their logs and
metrics to ``sys.stdout``, as on Lambda; only what the test's own thread (the CLI) writes is
captured, so ``--output json`` can be parsed as it is.

Every run records the REST operations the command called (`Run.calls`) and checks them against
the command table: a command calls its one operation (plus getOperation to wait, plus the
catalogue for the interactive create and add, and the cluster's groups for the add), nothing
else.

Without a cloud, `canned` gives the CLI the real client over canned answers (`CannedApi`), and
`region_types` the instance types the API lists for the local cloud's Region.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hypd_cli.api_client import ApiClient, ApiError
from hypd_cli.cli import COMMANDS, flags_given
from hypd_cli.clusters import REQUEST_FLAGS
from hypd_cli.groups import ADD_FLAGS
from hypd_cli.main import build_parser, hoist_global_options, main
from tests.unit.support import REGION, isolated_modules

CATALOG = {"listAvailabilityZones", "listInstanceTypes", "listTrainingPlans"}
OPERATION_ID = "op-" + "a" * 32
ACCEPTED = {"operationId": OPERATION_ID, "status": "PENDING", "kind": "update-instance-group"}


class ThreadStream(io.TextIOBase):
    """A text stream keeping what one thread writes; other threads' writes are dropped."""

    def __init__(self, tty: bool = False) -> None:
        super().__init__()
        self.owner = threading.current_thread()
        self.buffer_ = io.StringIO()
        self.tty = tty

    def write(self, text: str) -> int:
        if threading.current_thread() is self.owner:
            self.buffer_.write(text)
        return len(text)

    def isatty(self) -> bool:
        return self.tty

    def getvalue(self) -> str:
        return self.buffer_.getvalue()


class Answers(io.StringIO):
    """Answers on stdin: piped (not a terminal), or typed at one (``tty``)."""

    def __init__(self, text: str, tty: bool = False) -> None:
        super().__init__(text)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@dataclass
class Run:
    code: int
    out: str
    err: str
    calls: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.out + self.err


RunCli = Callable[..., Run]


def piped(answers: Sequence[str]) -> str:
    """Answers to an interactive command, as a pipe gives them: one a line."""
    return "".join(f"{answer}\n" for answer in answers)


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """``run_cli("clusters", "list", stdin="...", endpoint=URL)`` -> `Run`. ``tty``: stdout
    is a terminal; ``typed``: stdin is one (the answers are typed, not piped)."""
    calls: list[str] = []
    original = ApiClient.call

    def recording(self: ApiClient, operation_id: str, /, **kwargs: Any) -> dict[str, Any]:
        if threading.current_thread() is threading.main_thread():
            calls.append(operation_id)
        return original(self, operation_id, **kwargs)

    monkeypatch.setattr(ApiClient, "call", recording)

    def run(*argv: str, stdin: str = "", endpoint: str | None = None, tty: bool = False,
            typed: bool = False) -> Run:
        args = list(argv)
        if endpoint is not None:
            args += ["--endpoint", endpoint]
        out, err = ThreadStream(tty), ThreadStream()
        calls.clear()
        with monkeypatch.context() as patch:
            patch.setattr(sys, "stdout", out)
            patch.setattr(sys, "stderr", err)
            patch.setattr(sys, "stdin", Answers(stdin, typed))
            try:
                code = main(args)
            except SystemExit as exc:  # argparse: usage errors and --help
                code = exc.code if isinstance(exc.code, int) else 2
        result = Run(code, out.getvalue(), err.getvalue(), list(calls))
        check_calls(args, result.calls)
        return result

    return run


def check_calls(argv: Sequence[str], calls: list[str]) -> None:
    """The command called only its own operation (see the module's docstring)."""
    try:
        args = build_parser().parse_args(hoist_global_options(argv))
    except SystemExit:
        assert calls == []
        return
    name = getattr(args, "command_name", None)
    if name is None:
        return
    allowed = {COMMANDS[name]}
    if name == "clusters delete" and args.plan:
        allowed = {COMMANDS["clusters plan"]}  # --plan is `clusters plan`: it deletes nothing
    if getattr(args, "wait", False) or name == "ops watch":
        allowed.add("getOperation")
    if name == "clusters create" and not flags_given(args, REQUEST_FLAGS):
        allowed |= CATALOG  # the interactive create offers the catalogue's choices
    if name == "groups add" and not flags_given(args, ADD_FLAGS):
        # the interactive add reads the cluster's groups, then offers the catalogue's choices
        allowed |= CATALOG | {COMMANDS["groups list"]}
    assert set(calls) <= allowed, f"hypd {name} called {calls}"
    if name != "ops watch" and not getattr(args, "follow", False):
        assert calls.count(COMMANDS[name]) <= 1, f"hypd {name} called {calls}"


class CannedApi(ApiClient):
    """The real client (route table, typed methods) over canned answers instead of HTTP: records
    (method, path, query, body) of each request."""

    def __init__(self, *answers: dict[str, Any] | ApiError) -> None:
        super().__init__("http://127.0.0.1:9/v1")
        self.answers = list(answers)
        self.sent: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = []

    def request(self, method: str, path: str, *, query: dict[str, Any] | None = None,
                body: dict[str, Any] | None = None,
                operation_id: str | None = None) -> dict[str, Any]:
        self.sent.append((method, path, query or {}, body))
        answer = self.answers.pop(0) if self.answers else ACCEPTED
        if isinstance(answer, ApiError):
            raise answer
        return answer


@pytest.fixture
def canned(monkeypatch: pytest.MonkeyPatch) -> Callable[..., CannedApi]:
    """``canned(answer, ...)``: the CLI's client for the next runs."""

    def install(*answers: dict[str, Any] | ApiError) -> CannedApi:
        client = CannedApi(*answers)
        monkeypatch.setattr("hypd_cli.cli.client_from_args", lambda args: client)
        return client

    return install


@pytest.fixture(scope="session")
def region_types() -> list[dict[str, Any]]:
    """GET /catalog/instance-types of us-west-2 as the API builds it (the route's view of what
    moto's EC2 offers and describes: the local cloud's catalogue). Read once, with moto on
    only while it is read."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
            patch.delenv(name, raising=False)
        for name, value in (("AWS_ACCESS_KEY_ID", "testing"),
                            ("AWS_SECRET_ACCESS_KEY", "testing"),
                            ("AWS_DEFAULT_REGION", REGION)):
            patch.setenv(name, value)
        with mock_aws(), isolated_modules("hypd.api"):
            from hypd.api.catalog import instance_type_view
            from hypd.create.catalog import offered_instance_types

            offered = offered_instance_types(boto3.client("ec2", region_name=REGION))
            return [instance_type_view(t, facts).model_dump(mode="json", by_alias=True)
                    for t, facts in offered]
