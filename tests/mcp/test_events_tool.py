"""``events_list_recent`` seen by a real MCP client session over stdio: a read-only tool whose
arguments become GET /events' query and whose answer is the API's, checked against the tool's
output schema (the API here is a small HTTP server answering as GET /events does)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest

from hypd.api.event_models import EventList
from tests.mcp.conftest import call, call_error, mcp_session

OP = "op-" + "b" * 32
ANSWER = EventList.model_validate({
    "events": [
        {"id": f"OP#{OP}|OP|v4", "time": "2026-01-15T10:00:00.000Z", "source": "hypd",
         "detail-type": "hypd Operation State Change", "resources": [],
         "detail": {"eventId": f"OP#{OP}|OP|v4", "operationId": OP,
                    "kind": "replace-node", "clusterTag": "train", "status": "FAILED",
                    "previousStatus": "RUNNING", "stage": "replace",
                    "error": {"code": "ThrottlingException", "message": "Rate exceeded"},
                    "links": {"operation": f"/operations/{OP}"}}},
        {"id": "CLUSTER#train|NODE#i-0abc|v2", "time": "2026-01-15T10:01:00.000Z",
         "source": "hypd", "detail-type": "hypd Node Health Change", "resources": [],
         "detail": {"eventId": "CLUSTER#train|NODE#i-0abc|v2", "tag": "train",
                    "nodeId": "i-0abc", "health": "Unhealthy", "previousHealth": "Healthy",
                    "repair": {"by": "hypd", "action": "replace", "operationId": OP},
                    "links": {}}},
    ],
    "next": "2026-01-15T10:01:02.000Z#0000#CLUSTER#train|NODE#i-0abc|v2",
}).model_dump(mode="json", by_alias=True)


class FakeEventsApi(BaseHTTPRequestHandler):
    """GET /v1/events: ANSWER, or the API's 400 for a bad limit; records each query."""

    queries: ClassVar[list[dict[str, list[str]]]] = []

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        self.queries.append(query)
        status, body = 200, ANSWER
        if url.path != "/v1/events":
            status, body = 404, {"code": "NotFound", "message": url.path, "details": {}}
        elif query.get("limit") == ["0"]:
            status, body = 400, {"code": "ValidationError",
                                 "message": "invalid request: limit: must be 1 or more",
                                 "details": {}}
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    FakeEventsApi.queries = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeEventsApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        thread.join()


@pytest.mark.anyio
async def test_events_list_recent_reads_a_clusters_events_read_only(endpoint: str) -> None:
    async with mcp_session(endpoint) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        # When an agent asks for a cluster's recent node events
        answer = await call(session, "events_list_recent", cluster="train",
                            detailType="hypd Node Health Change", limit=20)
        # and with a bad limit
        error = await call_error(session, "events_list_recent", limit=0)

    tool = tools["events_list_recent"]
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True
    assert set(tool.input_schema["properties"]) == {"cluster", "since", "detailType", "limit"}
    assert tool.input_schema.get("required", []) == []
    # Then its arguments are the query and its answer the API's, newest last
    assert FakeEventsApi.queries[0] == {"cluster": ["train"],
                                        "detailType": ["hypd Node Health Change"],
                                        "limit": ["20"]}
    assert answer == ANSWER
    # And the API's 400 is a tool error naming the field
    assert (error["status"], error["code"]) == (400, "ValidationError")
    assert "limit" in error["message"]
