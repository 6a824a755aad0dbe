"""A function's Kubernetes requests are served in process (`hypd_local.transport`): no socket,
the same authentication and authorisation as over HTTPS, and a client whose TLS settings would
fail the handshake with the server's certificate refused as over HTTPS."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from typing import Any

import pytest
import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hypd_local.kube import KubeApiServer, tls
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


def clients_trusting(server: KubeApiServer, token: str, tmp_path: Any
                     ) -> dict[str, k8s.ApiClient]:
    """Clients of the server whose TLS settings differ: the cluster's CA, another cluster's
    CA, the system's CAs only, and no verification at all."""
    other = tmp_path / "other-ca.crt"
    other.write_bytes(tls.generate("other", "127.0.0.1").ca_pem)
    own = tmp_path / "own-ca.crt"
    own.write_bytes(base64.b64decode(server.certificate_authority_data or ""))
    made: dict[str, k8s.ApiClient] = {}
    for name, ca, verify in (("own CA", str(own), True), ("other CA", str(other), True),
                             ("system CAs", None, True), ("no verification", None, False)):
        configuration = k8s.Configuration()
        configuration.host = server.url
        configuration.ssl_ca_cert = ca
        configuration.verify_ssl = verify
        configuration.api_key = {"authorization": f"Bearer {token}"}
        made[name] = k8s.ApiClient(configuration)
    return made


def reached(api: k8s.ApiClient) -> str:
    try:
        k8s.CoreV1Api(api).list_namespaced_config_map("default", _request_timeout=5)
    except urllib3.exceptions.MaxRetryError as exc:
        return "TLS refused" if isinstance(exc.reason, urllib3.exceptions.SSLError) else (
            f"failed: {exc.reason!r}")
    return "answered"


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_in_process_a_client_that_would_fail_the_tls_handshake_is_refused_as_over_https(
        server: KubeApiServer, admin_token: str, tmp_path: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Given clients of the cluster trusting its CA, another cluster's, only the system's, or
    # verifying nothing (which AWS's endpoint does not refuse either)
    clients = clients_trusting(server, admin_token, tmp_path)
    # urllib3 retries a failed handshake; over the network that is three more handshakes
    monkeypatch.setattr(urllib3.util.Retry, "DEFAULT", urllib3.util.Retry(0))

    # When each lists config maps over HTTPS, then from a thread that serves in process
    over_https = {name: reached(api) for name, api in clients.items()}
    threads = served_on(server, monkeypatch)
    with serving_in_process():
        in_process = {name: reached(api) for name, api in clients.items()}

    # Then only the clients whose handshake fails are refused, the same way both times
    assert over_https == {"own CA": "answered", "other CA": "TLS refused",
                          "system CAs": "TLS refused", "no verification": "answered"}
    assert in_process == over_https
    # and the answered ones were served in process
    assert threads == [threading.get_ident()] * 2


def test_in_process_the_host_name_is_checked_against_the_certificate(
        server: KubeApiServer, admin_token: str, tmp_path: Any) -> None:
    # Given a client trusting the cluster's CA that names the server by a name its
    # certificate does not carry (urllib3's server_hostname)
    api = clients_trusting(server, admin_token, tmp_path)["own CA"]
    api.rest_client.pool_manager.connection_pool_kw["server_hostname"] = "elsewhere.example"

    # When it calls in process, then the handshake's name check refuses it
    with serving_in_process():
        assert reached(api) == "TLS refused"
