"""Fixtures: a moto server for STS, EKS bearer tokens, a Kubernetes API and official clients."""

from __future__ import annotations

import base64
import http.client
import itertools
import json
import ssl
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import boto3
import pytest
from kubernetes import client as k8s
from moto.server import ThreadedMotoServer

from hypd_local.clock import VirtualClock
from hypd_local.emulator.eks_catalog import access_policy_arn
from hypd_local.kube import CLUSTER_ADMIN, VIEW, AccessDecision, AccessPolicy, KubeApiServer
from tests.kubectl import Kubectl, write_kubeconfig

ACCOUNT = "123456789012"
REGION = "us-west-2"
CLUSTER = "hp-eks"
_names = itertools.count()


@pytest.fixture(scope="session")
def sts_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def eks_token(session: boto3.Session, cluster_name: str, *, region: str = REGION,
              expires: int = 60) -> str:
    """An EKS bearer token, built the way ``aws eks get-token`` builds one (tests only)."""
    sts = session.client("sts", region_name=region)

    def take_cluster(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["eks_cluster"] = params.pop("ClusterName")

    def add_header(request: Any, **_: Any) -> None:
        request.headers["x-k8s-aws-id"] = request.context["eks_cluster"]

    sts.meta.events.register("provide-client-params.sts.GetCallerIdentity", take_cluster)
    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_header)
    url = sts.generate_presigned_url("get_caller_identity", Params={"ClusterName": cluster_name},
                                     ExpiresIn=expires, HttpMethod="GET")
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


class Principals:
    """IAM roles in moto and sessions that assumed them."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        base = boto3.Session(region_name=REGION, aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
                             aws_secret_access_key="testing")
        self._iam = base.client("iam", endpoint_url=endpoint)
        self._sts = base.client("sts", endpoint_url=endpoint)

    def role(self, prefix: str) -> tuple[str, boto3.Session]:
        name = f"{prefix}-{next(_names)}"
        arn = self._iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        creds = self._sts.assume_role(RoleArn=arn, RoleSessionName="test")["Credentials"]
        session = boto3.Session(region_name=REGION, aws_access_key_id=creds["AccessKeyId"],
                                aws_secret_access_key=creds["SecretAccessKey"],
                                aws_session_token=creds["SessionToken"])
        return arn, session


@pytest.fixture(scope="session")
def principals(sts_endpoint: str) -> Principals:
    return Principals(sts_endpoint)


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(ticking=False)


@pytest.fixture
def access() -> dict[str, AccessDecision]:
    """principal ARN -> access entry; tests add entries."""
    return {}


@pytest.fixture
def server(clock: VirtualClock, access: dict[str, AccessDecision], sts_endpoint: str
           ) -> Iterator[KubeApiServer]:
    with KubeApiServer(CLUSTER, access.get, clock, sts_endpoint=sts_endpoint) as running:
        yield running


@pytest.fixture
def ca_file(server: KubeApiServer, tmp_path: Path) -> str:
    assert server.certificate_authority_data is not None
    path = tmp_path / "ca.crt"
    path.write_bytes(base64.b64decode(server.certificate_authority_data))
    return str(path)


ClientFactory = Callable[[str], k8s.ApiClient]


@pytest.fixture
def make_client(server: KubeApiServer, ca_file: str) -> Iterator[ClientFactory]:
    """token -> an official ApiClient on the server (https, trusting the cluster's CA)."""
    made: list[k8s.ApiClient] = []

    def make(token: str) -> k8s.ApiClient:
        configuration = k8s.Configuration()
        configuration.host = server.url
        configuration.ssl_ca_cert = ca_file
        configuration.api_key = {"authorization": f"Bearer {token}"}
        api_client = k8s.ApiClient(configuration)
        made.append(api_client)
        return api_client

    yield make
    for api_client in made:
        api_client.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def admin_token(principals: Principals, access: dict[str, AccessDecision]) -> str:
    """A bearer token of a role with AmazonEKSClusterAdminPolicy."""
    arn, session = principals.role("admin")
    policy = AccessPolicy(access_policy_arn("aws", CLUSTER_ADMIN))
    access[arn] = AccessDecision(username=arn, policies=(policy,))
    return eks_token(session, CLUSTER)


@pytest.fixture
def admin(admin_token: str, make_client: ClientFactory) -> k8s.ApiClient:
    """A client for a role with AmazonEKSClusterAdminPolicy."""
    return make_client(admin_token)


KubectlFactory = Callable[[str], Kubectl]


@pytest.fixture
def kubectl_as(server: KubeApiServer, tmp_path: Path) -> KubectlFactory:
    """token -> the real kubectl with a kubeconfig for the server (its CA, that token)."""
    made = itertools.count()

    def make(token: str) -> Kubectl:
        number = next(made)
        config = write_kubeconfig(tmp_path / f"kubeconfig-{number}", server.url,
                                  server.certificate_authority_data, token)
        return Kubectl(config, tmp_path / f"kubectl-home-{number}")

    return make


@pytest.fixture
def kubectl(kubectl_as: KubectlFactory, admin_token: str) -> Kubectl:
    """The real kubectl as a cluster administrator."""
    return kubectl_as(admin_token)


@pytest.fixture
def viewer(principals: Principals, access: dict[str, AccessDecision],
           make_client: ClientFactory) -> k8s.ApiClient:
    """A client for a role with AmazonEKSViewPolicy only."""
    arn, session = principals.role("viewer")
    policy = AccessPolicy(access_policy_arn("aws", VIEW))
    access[arn] = AccessDecision(username="viewer", policies=(policy,))
    return make_client(eks_token(session, CLUSTER))


class Http:
    """Plain HTTPS requests to the server, as the admin (exact headers and bodies)."""

    def __init__(self, server: KubeApiServer, ca_file: str, token: str) -> None:
        self.server = server
        self.context = ssl.create_default_context(cafile=ca_file)
        self.token = token

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: Mapping[str, str] | None = None
                ) -> tuple[int, http.client.HTTPMessage, bytes]:
        connection = http.client.HTTPSConnection(self.server.host, self.server.port,
                                                 context=self.context, timeout=60)
        try:
            connection.request(method, path, body=body, headers={
                "Authorization": f"Bearer {self.token}", **(headers or {})})
            response = connection.getresponse()
            return response.status, response.headers, response.read()
        finally:
            connection.close()

    def get(self, path: str, **headers: str) -> tuple[int, Any]:
        """GET ``path`` with ``headers`` (``Accept="..."``); the status and the JSON body."""
        status, _headers, body = self.request("GET", path, headers=headers)
        return status, json.loads(body) if body else None


@pytest.fixture
def http_admin(server: KubeApiServer, ca_file: str, admin_token: str) -> Http:
    return Http(server, ca_file, admin_token)
