"""GET /_local/events: what the buses received, filtered, oldest first."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from hypd_local import LocalCloud


def get(cloud: LocalCloud, query: str) -> tuple[int, Any]:
    try:
        url = f"{cloud.local_url}/_local/events{query}"
        with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 (loopback)
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_log_lists_what_the_buses_took_filtered_and_after_an_id(
        idle_cloud: LocalCloud) -> None:
    events = idle_cloud.client("events")
    taken = events.put_events(Entries=[
        {"Source": "log.test", "DetailType": f"Kind{i % 2}", "Detail": json.dumps({"n": i})}
        for i in range(4)])
    ids = [entry["EventId"] for entry in taken["Entries"]]

    status, body = get(idle_cloud, "?source=log.test")
    assert status == 200
    assert [e["id"] for e in body["events"]] == ids
    assert all(e["bus"] == "default" and e["time"].endswith("Z") for e in body["events"])
    _, kind1 = get(idle_cloud, "?source=log.test&detail-type=Kind1")
    assert [e["detail"]["n"] for e in kind1["events"]] == [1, 3]
    _, later = get(idle_cloud, f"?source=log.test&after={ids[1]}&limit=1")
    assert [e["id"] for e in later["events"]] == [ids[3]]


def test_a_bad_query_is_a_400_naming_it(idle_cloud: LocalCloud) -> None:
    assert get(idle_cloud, "?limit=0")[0] == 400
    status, body = get(idle_cloud, "?colour=red")
    assert status == 400
    assert "colour" in body["message"]
