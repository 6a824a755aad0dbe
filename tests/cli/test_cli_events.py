"""``hypd events tail``: one line per event, newest last; JSON lines; ``--follow`` polls
GET /events with the cursor until Ctrl+C (exit 130); its options become the query."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from hypd_cli.api_client import ApiError, ApiUnreachable
from hypd_cli.cli import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, Context, run_command
from hypd_cli.events import tail_events
from hypd_cli.main import build_parser
from tests.cli.conftest import CannedApi, RunCli

OP = "op-" + "a" * 32
OPERATION = {
    "id": f"OP#{OP}|OP|v3", "time": "2026-01-15T10:00:00.000Z", "source": "hypd",
    "detail-type": "hypd Operation State Change", "resources": [],
    "detail": {"eventId": f"OP#{OP}|OP|v3", "operationId": OP, "kind": "create-cluster",
               "clusterTag": "train", "status": "FAILED", "previousStatus": "RUNNING",
               "stage": "eks", "error": {"code": "AccessDeniedException", "message": "no"},
               "links": {}},
}
CLUSTER = {
    "id": "CLUSTER#train|CLUSTER|2026-01-15T10:05:00.000Z", "time": "2026-01-15T10:05:00.000Z",
    "source": "hypd", "detail-type": "hypd Cluster State Change", "resources": [],
    "detail": {"eventId": "CLUSTER#train|CLUSTER|2026-01-15T10:05:00.000Z", "tag": "train",
               "status": "ACTIVE", "previousStatus": "CREATING", "operationId": OP,
               "links": {}},
}
NODE = {
    "id": "CLUSTER#train|NODE#i-0abc|v2", "time": "2026-01-15T10:06:00.000Z", "source": "hypd",
    "detail-type": "hypd Node Health Change", "resources": [],
    "detail": {"eventId": "CLUSTER#train|NODE#i-0abc|v2", "tag": "train", "nodeId": "i-0abc",
               "instanceGroup": "gpu", "health": "Unhealthy", "previousHealth": "Healthy",
               "reason": "GPU health check failed",
               "repair": {"by": "hypd", "action": "replace", "operationId": OP}, "links": {}},
}


class ScriptedEvents:
    """Answers listEvents from a script (a page, or an exception to raise) and records the
    query of each call."""

    def __init__(self, *script: dict[str, Any] | BaseException) -> None:
        self.script = list(script)
        self.queries: list[dict[str, Any]] = []

    def list_events(self, **query: Any) -> dict[str, Any]:
        self.queries.append(query)
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item


def tail(argv: list[str], client: ScriptedEvents,
         sleep: Callable[[float], None] = lambda seconds: None) -> tuple[int, Context]:
    args = build_parser().parse_args(["events", "tail", *argv,
                                      "--endpoint", "http://127.0.0.1:9/v1"])
    ctx = Context(args, out=io.StringIO(), err=io.StringIO(), _client=client,  # type: ignore[arg-type]
                  sleep=sleep)
    return run_command(ctx, "events tail", tail_events), ctx


def out(ctx: Context) -> list[str]:
    assert isinstance(ctx.out, io.StringIO)
    return ctx.out.getvalue().splitlines()


def test_each_event_is_one_line_of_what_changed_newest_last(run_cli: RunCli,
                                                            canned: Callable[..., CannedApi]
                                                            ) -> None:
    # Given three events, one of each type
    api = canned({"events": [OPERATION, CLUSTER, NODE], "next": "cursor"})
    # When they are tailed
    run = run_cli("events", "tail")
    # Then each is a line: time, type, cluster and the detail's essentials
    assert run.code == EXIT_OK, run.err
    assert run.out.splitlines() == [
        f"2026-01-15 10:00:00  operation  train  {OP}  create-cluster  RUNNING -> FAILED  "
        "stage eks  AccessDeniedException: no",
        f"2026-01-15 10:05:00  cluster    train  CREATING -> ACTIVE  by {OP}",
        "2026-01-15 10:06:00  node       train  i-0abc (gpu)  Healthy -> Unhealthy  "
        f"GPU health check failed  repair: hypd replace {OP}",
    ]
    assert api.sent == [("GET", "/events", {}, None)]
    assert run.calls == ["listEvents"]


def test_the_options_are_the_query_and_json_is_one_event_per_line(
    run_cli: RunCli, canned: Callable[..., CannedApi]
) -> None:
    api = canned({"events": [OPERATION, NODE], "next": "cursor"})

    run = run_cli("events", "tail", "--cluster", "train", "--type", "node", "--since",
                  "2026-01-15T09:00:00Z", "--limit", "5", "--json")

    assert run.code == EXIT_OK, run.err
    assert [json.loads(line) for line in run.out.splitlines()] == [OPERATION, NODE]
    assert api.sent == [("GET", "/events", {"cluster": "train", "detailType":
                                            "hypd Node Health Change",
                                            "since": "2026-01-15T09:00:00Z", "limit": 5}, None)]
    # -o json is the same
    canned({"events": [CLUSTER], "next": "cursor"})
    assert run_cli("events", "tail", "-o", "json").out == json.dumps(
        CLUSTER, separators=(",", ":")) + "\n"


def test_follow_polls_with_the_cursor_until_ctrl_c() -> None:
    # Given a first page, a poll with nothing new, then a new event, then Ctrl+C
    client = ScriptedEvents(
        {"events": [OPERATION], "next": "c1"},
        {"events": [], "next": "c1"},
        {"events": [CLUSTER], "next": "c2"},
        KeyboardInterrupt(),
    )
    pauses: list[float] = []
    # When it follows
    code, ctx = tail(["--follow", "--cluster", "train", "--interval", "5"], client,
                     sleep=pauses.append)
    # Then each event is printed once, newest last, and Ctrl+C exits 130
    assert code == EXIT_INTERRUPTED
    assert [line.split("  ")[1].strip() for line in out(ctx)] == ["operation", "cluster"]
    assert [q["since"] for q in client.queries] == [None, "c1", "c1", "c2"]
    assert {q["cluster"] for q in client.queries} == {"train"}
    assert pauses == [5.0, 5.0, 5.0]
    assert "Interrupted." in ctx.err.getvalue()  # type: ignore[attr-defined]


def test_follow_reads_a_full_page_again_at_once() -> None:
    # A backlog larger than a page is read page after page without waiting in between
    full = {"events": [OPERATION] * 200, "next": "c1"}
    client = ScriptedEvents(full, {"events": [CLUSTER], "next": "c2"}, KeyboardInterrupt())
    pauses: list[float] = []

    code, ctx = tail(["--follow", "--limit", "200"], client, sleep=pauses.append)

    assert code == EXIT_INTERRUPTED
    assert len(out(ctx)) == 201
    assert pauses == [2.0]  # after the short page only
    assert [q["limit"] for q in client.queries] == [200, 200, 200]


def test_follow_rides_out_a_temporary_failure_and_stops_on_a_refusal() -> None:
    throttled = ApiError(429, "TooManyRequestsException", "slow down", {})
    client = ScriptedEvents({"events": [], "next": None},
                            ApiUnreachable("http://127.0.0.1:9/v1", "refused"), throttled,
                            {"events": [NODE], "next": "c1"}, KeyboardInterrupt())
    pauses: list[float] = []

    code, ctx = tail(["--follow"], client, sleep=pauses.append)

    assert code == EXIT_INTERRUPTED
    assert len(out(ctx)) == 1
    assert pauses == [2.0, 2.0, 4.0, 2.0]  # the interval, then the back-off of two failures
    assert "poll failed" in ctx.err.getvalue()  # type: ignore[attr-defined]

    refused = ScriptedEvents(ApiError(400, "ValidationError", "invalid request: since: bad",
                                      {}, "listEvents"))
    code, ctx = tail(["--since", "2026-01-30T00:00:00Z"], refused)
    assert code == EXIT_FAILED
    assert "(ValidationError) when calling the listEvents operation (HTTP 400): invalid " \
        "request: since: bad" in ctx.err.getvalue()  # type: ignore[attr-defined]
