"""EKS bearer tokens and the Kubernetes API client built from DescribeCluster (no network)."""

from __future__ import annotations

import base64
import gc
import os
import subprocess
import sys
import urllib.parse
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from hypd.aws.sts import sts_endpoint
from hypd.kubernetes import EksToken, TokenCache, eks_token, kubernetes_api, token_sts_client
from hypd.kubernetes.token import REFRESH_AFTER, TOKEN_LIFETIME
from hypd_local.kube.auth import expected_signature

REGION = "us-west-2"
NOW = datetime(2026, 1, 15, 10, 0, tzinfo=UTC)
SECRET = "test-secret"


def session() -> boto3.session.Session:
    return boto3.session.Session(aws_access_key_id="AKIDTEST", aws_secret_access_key=SECRET,
                                 region_name=REGION)


def decode(token: str) -> urllib.parse.SplitResult:
    assert token.startswith("k8s-aws-v1.")
    payload = token[len("k8s-aws-v1."):]
    assert "=" not in payload
    assert "+" not in payload
    assert "/" not in payload
    return urllib.parse.urlsplit(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
                                 .decode())


def query(url: urllib.parse.SplitResult) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(url.query))


def test_token_is_a_presigned_get_caller_identity_url_for_regional_sts() -> None:
    token = eks_token(token_sts_client(REGION, session()), "training", now=NOW)

    url = decode(token.value)
    params = query(url)
    assert (url.scheme, url.hostname, url.path) == ("https", "sts.us-west-2.amazonaws.com", "/")
    assert params["Action"] == "GetCallerIdentity"
    assert params["X-Amz-Expires"] == "60"
    assert params["X-Amz-SignedHeaders"].split(";") == ["host", "x-k8s-aws-id"]
    day = params["X-Amz-Date"][:8]
    assert params["X-Amz-Credential"] == f"AKIDTEST/{day}/us-west-2/sts/aws4_request"
    assert token.expires_at == NOW + TOKEN_LIFETIME == NOW + timedelta(minutes=14)


def test_signature_covers_the_cluster_name() -> None:
    # What STS recomputes when EKS forwards the URL with x-k8s-aws-id: <the cluster it serves>.
    url = decode(eks_token(token_sts_client(REGION, session()), "training", now=NOW).value)
    pairs = urllib.parse.parse_qsl(url.query)
    params = {k.lower(): v for k, v in pairs}

    def signature(cluster: str) -> str:
        return expected_signature(url.netloc, params, pairs, cluster, SECRET)

    assert signature("training") == params["x-amz-signature"]
    assert signature("other") != params["x-amz-signature"]


def test_ignores_aws_endpoint_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:4566")

    url = decode(eks_token(token_sts_client(REGION, session()), "c", now=NOW).value)

    assert url.hostname == "sts.us-west-2.amazonaws.com"


def test_refuses_a_client_that_does_not_sign_for_sts() -> None:
    local = session().client("sts", endpoint_url="http://127.0.0.1:4566")
    with pytest.raises(ValueError, match="EKS only accepts STS hosts"):
        eks_token(local, "c", now=NOW)


def test_rejects_naive_time_and_empty_name() -> None:
    sts = token_sts_client(REGION, session())
    with pytest.raises(ValueError, match="timezone-aware"):
        eks_token(sts, "c", now=datetime(2026, 1, 15))  # naive: the point of the test
    with pytest.raises(ValueError, match="cluster_name"):
        eks_token(sts, "", now=NOW)


@pytest.mark.parametrize(
    ("region", "endpoint"),
    [
        ("us-west-2", "https://sts.us-west-2.amazonaws.com"),
        ("cn-north-1", "https://sts.cn-north-1.amazonaws.com.cn"),
        ("us-gov-west-1", "https://sts.us-gov-west-1.amazonaws.com"),
    ],
)
def test_the_sts_host_is_the_region_s_in_its_partition(region: str, endpoint: str) -> None:
    assert sts_endpoint(region) == endpoint


def test_handlers_do_not_leak_to_other_calls_on_a_shared_client() -> None:
    sts = token_sts_client(REGION, session())
    eks_token(sts, "training", now=NOW)
    eks_token(sts, "training", now=NOW)  # registering twice is a no-op

    # A plain presign on the same client signs no cluster header ...
    plain = urllib.parse.urlsplit(sts.generate_presigned_url("get_caller_identity",
                                                             HttpMethod="GET"))
    assert query(plain)["X-Amz-SignedHeaders"] == "host"

    # ... nor does an ordinary call (answered locally, before it leaves the process).
    sent: list[Any] = []

    def answer(request: Any, **_: Any) -> AWSResponse:
        sent.append(request)
        body = (b"<GetCallerIdentityResponse><GetCallerIdentityResult>"
                b"<Arn>arn:aws:iam::123456789012:user/me</Arn><UserId>U</UserId>"
                b"<Account>123456789012</Account></GetCallerIdentityResult>"
                b"</GetCallerIdentityResponse>")

        class Raw:
            def stream(self, **_: Any) -> Any:
                yield body

        return AWSResponse(request.url, 200, {}, Raw())

    sts.meta.events.register("before-send.sts.GetCallerIdentity", answer)
    identity = sts.get_caller_identity()

    assert identity["Arn"] == "arn:aws:iam::123456789012:user/me"
    assert "x-k8s-aws-id" not in {k.lower() for k in sent[0].headers}
    assert b"x-k8s-aws-id" not in bytes(sent[0].headers["Authorization"]).lower()

    # And tokens for two clusters from one client carry their own names.
    one = eks_token(sts, "one", now=NOW)
    two = eks_token(sts, "two", now=NOW)
    assert one.value != two.value


class CountingFactory:
    def __init__(self) -> None:
        self.calls = 0
        self.client = token_sts_client(REGION, session())

    def __call__(self) -> Any:
        self.calls += 1
        return self.client


def test_cache_reuses_a_token_until_it_is_ten_minutes_old() -> None:
    factory = CountingFactory()
    cache = TokenCache(factory)

    first = cache.token("a", now=NOW)
    assert cache.token("a", now=NOW + REFRESH_AFTER - timedelta(seconds=1)) is first
    assert factory.calls == 1

    other = cache.token("b", now=NOW)
    assert other is not first
    assert factory.calls == 2

    renewed = cache.token("a", now=NOW + REFRESH_AFTER)
    assert renewed is not first
    assert renewed.expires_at == NOW + REFRESH_AFTER + TOKEN_LIFETIME
    assert factory.calls == 3

    # Whoever gets a cached token can still use it for at least four minutes.
    assert timedelta(minutes=4) <= TOKEN_LIFETIME - REFRESH_AFTER


def test_cache_invalidate_and_clock_going_backwards() -> None:
    factory = CountingFactory()
    cache = TokenCache(factory)
    first = cache.token("a", now=NOW)

    cache.invalidate("a")
    second = cache.token("a", now=NOW)
    assert second is not first

    assert cache.token("a", now=NOW - timedelta(minutes=1)) is not second
    cache.invalidate("never-cached")  # no error


def test_cache_refuses_a_refresh_age_beyond_the_token_lifetime() -> None:
    with pytest.raises(ValueError, match="refresh_after"):
        TokenCache(CountingFactory(), refresh_after=timedelta(minutes=15))


# --------------------------------------------------------------------------- the API client

CA_PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
CLUSTER = {"name": "c", "endpoint": "https://abc.gr7.us-west-2.eks.amazonaws.com",
           "certificateAuthority": {"data": base64.b64encode(CA_PEM).decode()}}


def test_api_client_uses_endpoint_ca_and_bearer_token() -> None:
    api = kubernetes_api(CLUSTER, "k8s-aws-v1.abc")
    configuration = api.configuration

    assert configuration.host == CLUSTER["endpoint"]
    assert configuration.verify_ssl
    ca_path = configuration.ssl_ca_cert
    assert ca_path is not None
    with open(ca_path, "rb") as file:
        assert file.read() == CA_PEM
    assert os.stat(ca_path).st_mode & 0o077 == 0
    assert configuration.get_api_key_with_prefix("authorization") == "Bearer k8s-aws-v1.abc"

    # The CA file lives as long as the client.
    del api, configuration
    gc.collect()
    assert not os.path.exists(ca_path)


def test_api_client_asks_for_a_fresh_token_before_each_request() -> None:
    tokens = iter(["k8s-aws-v1.one", "k8s-aws-v1.two"])
    api = kubernetes_api(CLUSTER, "k8s-aws-v1.zero", refresh_token=lambda: next(tokens))

    assert api.configuration.get_api_key_with_prefix("authorization") == "Bearer k8s-aws-v1.one"
    assert api.configuration.get_api_key_with_prefix("authorization") == "Bearer k8s-aws-v1.two"


@pytest.mark.parametrize("cluster", [
    {"endpoint": "", "certificateAuthority": {"data": "eA=="}},
    {"endpoint": "https://x", "certificateAuthority": {}},
    {"endpoint": "https://x"},
])
def test_api_client_needs_an_active_cluster(cluster: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not ACTIVE"):
        kubernetes_api(cluster, "t")


def test_api_client_rejects_a_bad_ca() -> None:
    with pytest.raises(ValueError, match="base64"):
        kubernetes_api({"endpoint": "https://x", "certificateAuthority": {"data": "%%%"}}, "t")


def test_tokens_do_not_load_the_kubernetes_client() -> None:
    code = ("import sys, hypd.kubernetes, hypd.kubernetes.token; "
            "assert not any(m == 'kubernetes' or m.startswith('kubernetes.') "
            "for m in sys.modules), 'kubernetes imported'")
    subprocess.run([sys.executable, "-c", code], check=True)  # noqa: S603 - our own interpreter


def test_token_is_a_value_object() -> None:
    token = EksToken("k8s-aws-v1.x", NOW)
    assert token == EksToken("k8s-aws-v1.x", NOW)
