"""A function's Kubernetes requests are served in process (`hypd_local.transport`): no TLS, no
socket, the same authentication and authorisation as over HTTPS."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hypd_local.kube import KubeApiServer
from hypd_local.transport import serving_in_process

from .conftest import ClientFactory


def served_on(server: KubeApiServer, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread of every request the server handles from now on."""
    threads: list[int] = []
    handle = server._handle

    def recorded(request: Any) -> Any:
        threads.append(threading.get_ident())
        return handle(request)

    monkeypatch.setattr(server, "_handle", recorded)
    return threads


def outcome(call: Callable[[], Any]) -> tuple[int, str]:
    try:
        call()
    except ApiException as exc:
        return int(exc.status), str(exc.reason)
    return 200, "OK"


def test_a_functions_request_is_served_on_its_thread_as_over_https(
        server: KubeApiServer, admin: k8s.ApiClient, viewer: k8s.ApiClient,
        make_client: ClientFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    threads = served_on(server, monkeypatch)
    nobody = make_client("k8s-aws-v1.not-a-token")

    core: dict[str, Any] = {"admin": k8s.CoreV1Api(admin), "viewer": k8s.CoreV1Api(viewer),
                            "nobody": k8s.CoreV1Api(nobody)}

    def calls(name: str) -> list[tuple[int, str]]:
        body = {"metadata": {"name": name}, "data": {"k": "v"}}
        return [
            outcome(lambda: core["admin"].create_namespaced_config_map("default", body)),
            outcome(lambda: core["viewer"].create_namespaced_config_map("default", body)),
            outcome(lambda: core["nobody"].list_namespaced_config_map("default")),
        ]

    # When the administrator, a viewer and a client with a bad token call over HTTPS, then
    # from a thread that serves in process (a function's)
    over_https = calls("over-https")
    assert all(thread != threading.get_ident() for thread in threads)
    threads.clear()
    with serving_in_process():
        in_process = calls("in-process")

    # Then each gets what it got over HTTPS: created, forbidden, unauthorised
    assert [status for status, _ in over_https] == [200, 403, 401]
    assert in_process == over_https
    # and the server handled each on the caller's thread
    assert threads == [threading.get_ident()] * 3
    names = {c.metadata.name for c in core["admin"].list_namespaced_config_map("default").items}
    assert {"over-https", "in-process"} <= names


def test_a_stopped_server_is_no_longer_served_in_process(
        server: KubeApiServer, admin: k8s.ApiClient) -> None:
    server.stop()
    with serving_in_process(), pytest.raises(urllib3.exceptions.MaxRetryError):
        k8s.CoreV1Api(admin).list_namespaced_config_map("default", _request_timeout=5)
