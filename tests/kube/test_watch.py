"""The watch protocol over plain HTTPS: where a watch starts, what it reports, how it ends.

Every watch here reads a known number of events (each already written, or written by the test
after the watch began) and then closes the connection: nothing waits for time to pass.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes import client as k8s

from hypd_local.kube import KubeApiServer


class Stream:
    def __init__(self, response: http.client.HTTPResponse) -> None:
        self.response = response

    def read(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` events (each line of the stream is one)."""
        events: list[dict[str, Any]] = []
        for _ in range(count):
            line = self.response.readline()
            assert line, f"the stream ended after {events}"
            events.append(json.loads(line))
        return events


@pytest.fixture
def watch(server: KubeApiServer, ca_file: str, admin_token: str
          ) -> Callable[..., Any]:
    @contextmanager
    def open_watch(path: str, **query: str) -> Iterator[Stream]:
        context = ssl.create_default_context(cafile=ca_file)
        connection = http.client.HTTPSConnection(server.host, server.port, context=context,
                                                 timeout=60)
        params = urllib.parse.urlencode({"watch": "1", **query})
        connection.request("GET", f"{path}?{params}",
                           headers={"Authorization": f"Bearer {admin_token}"})
        response = connection.getresponse()
        assert response.status == 200, response.read()
        assert response.getheader("Transfer-Encoding") == "chunked"
        try:
            yield Stream(response)
        finally:
            connection.close()

    return open_watch


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}


def _summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def test_from_a_lists_resource_version_every_change_in_order(
    admin: k8s.ApiClient, watch: Callable[..., Any]
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespaced_config_map("default", _cm("before"))
    listed = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", _cm("a"))
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "w"}})
    core.delete_namespaced_config_map("a", "default")
    core.create_namespaced_config_map("kube-system", _cm("elsewhere"))
    with watch(CONFIGMAPS, resourceVersion=listed) as stream:
        events = stream.read(3)
        assert _summary(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
        versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
        assert versions == sorted(versions)
        assert versions[0] > int(listed)
        assert events[1]["object"]["data"] == {"k": "w"}
        assert events[0]["object"]["kind"] == "ConfigMap"
        assert events[0]["object"]["apiVersion"] == "v1"
        # a change made while the watch is open arrives too
        core.create_namespaced_config_map("default", _cm("later"))
        assert _summary(stream.read(1)) == [("ADDED", "later")]


def test_without_a_resource_version_it_starts_with_what_there_is(
    admin: k8s.ApiClient, watch: Callable[..., Any]
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespaced_config_map("default", _cm("one"))
    core.create_namespaced_config_map("default", _cm("two"))
    for version in (None, "0"):
        query = {} if version is None else {"resourceVersion": version}
        with watch(CONFIGMAPS, **query) as stream:
            assert sorted(_summary(stream.read(2))) == [("ADDED", "one"), ("ADDED", "two")]
            core.delete_namespaced_config_map("one", "default")
            assert _summary(stream.read(1)) == [("DELETED", "one")]
        core.create_namespaced_config_map("default", _cm("one"))


def test_selectors_turn_changes_into_arrivals_and_departures(
    admin: k8s.ApiClient, watch: Callable[..., Any]
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    listed = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", _cm("x", app="web"))
    core.create_namespaced_config_map("default", _cm("y", app="db"))
    core.patch_namespaced_config_map("y", "default", {"metadata": {"labels": {"app": "web"}}})
    core.patch_namespaced_config_map("x", "default", {"metadata": {"labels": {"app": "db"}}})
    with watch(CONFIGMAPS, resourceVersion=listed, labelSelector="app=web") as stream:
        events = stream.read(3)
        assert _summary(events) == [("ADDED", "x"), ("ADDED", "y"), ("DELETED", "x")]
        assert events[2]["object"]["metadata"]["labels"] == {"app": "web"}
    with watch(CONFIGMAPS, resourceVersion=listed, fieldSelector="metadata.name=y") as stream:
        assert _summary(stream.read(2)) == [("ADDED", "y"), ("MODIFIED", "y")]


def test_a_resource_version_older_than_the_history_is_410_expired(
    admin: k8s.ApiClient, server: KubeApiServer, watch: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    listed = core.list_namespaced_config_map("default").metadata.resource_version
    short: Any = type(server.store._changes)(server.store._changes, maxlen=3)
    monkeypatch.setattr(server.store, "_changes", short)
    for name in ("a", "b", "c", "d", "e"):
        core.create_namespaced_config_map("default", _cm(name))
    with watch(CONFIGMAPS, resourceVersion=listed) as stream:
        (event,) = stream.read(1)
        assert event["type"] == "ERROR"
        status = event["object"]
        assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
        assert status["message"].startswith(f"too old resource version: {listed} (")
        assert stream.response.readline() == b""  # and the stream ends


def test_bookmarks_and_the_end_of_the_initial_events(
    admin: k8s.ApiClient, watch: Callable[..., Any]
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespaced_config_map("default", _cm("there"))
    query = {"sendInitialEvents": "true", "allowWatchBookmarks": "true",
             "resourceVersionMatch": "NotOlderThan", "resourceVersion": ""}
    with watch(CONFIGMAPS, **query) as stream:
        added, bookmark = stream.read(2)
        assert _summary([added]) == [("ADDED", "there")]
        assert bookmark["type"] == "BOOKMARK"
        assert bookmark["object"]["kind"] == "ConfigMap"
        metadata = bookmark["object"]["metadata"]
        assert metadata["annotations"] == {"k8s.io/initial-events-end": "true"}
        assert int(metadata["resourceVersion"]) >= int(added["object"]["metadata"]
                                                       ["resourceVersion"])


def test_namespace_deletion_reports_its_objects_gone(
    admin: k8s.ApiClient, watch: Callable[..., Any]
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map("doomed", _cm("inside"))
    listed = core.list_config_map_for_all_namespaces().metadata.resource_version
    core.delete_namespace("doomed")
    with watch("/api/v1/configmaps", resourceVersion=listed) as stream:
        assert _summary(stream.read(1)) == [("DELETED", "inside")]


def test_bad_watch_requests_are_refused_before_streaming(
    server: KubeApiServer, admin: k8s.ApiClient
) -> None:
    core: Any = k8s.CoreV1Api(admin)
    for kwargs in ({"resource_version": "abc"}, {"label_selector": "a in (b"},
                   {"send_initial_events": True, "resource_version_match": "Exact"}):
        with pytest.raises(k8s.exceptions.ApiException) as refused:
            core.list_namespaced_config_map("default", watch=True, _preload_content=False,
                                            **kwargs)
        assert refused.value.status in (400, 422)
        assert json.loads(refused.value.body or "{}")["kind"] == "Status"
