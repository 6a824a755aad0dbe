"""Helpers shared by the unit, integration and end-to-end tests (fault injection, raw table reads,
the EMF metrics the functions print)."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@contextlib.contextmanager
def fail_calls(
    cloud: Any,
    service: str,
    method: str,
    error_code: str | None,
    *,
    times: int,
    block: threading.Event | None = None,
    entered: threading.Event | None = None,
) -> Iterator[list[int]]:
    """Make the next `times` calls of `service`.`method` (snake_case) on the local cloud fail
    with `error_code` (an AWS error code, through the emulator's fault injection), or, with
    `block`, wait until the event is set and then answer normally. Yields a one-item list
    counting the calls the emulator saw; `entered` is set when the first call arrives."""
    emulator = {"eks": cloud.emulation.eks, "sagemaker": cloud.emulation.hyperpod}[service]
    original = getattr(emulator, method)
    seen = [0]
    lock = threading.Lock()

    def counted(params: dict[str, Any]) -> Any:
        with lock:
            seen[0] += 1
            blocked = block is not None and seen[0] <= times
        if entered is not None:
            entered.set()
        if blocked and block is not None and not block.wait(timeout=60):
            raise TimeoutError("the test never released the blocked call")
        return original(params)

    setattr(emulator, method, counted)
    if error_code is not None:
        operation = "".join(word.capitalize() for word in method.split("_"))
        cloud.faults.fail(service, operation, code=error_code, times=times)
    try:
        yield seen
    finally:
        setattr(emulator, method, original)
        cloud.faults.clear()


def records_in_table(cloud: Any, pk_prefix: str) -> list[str]:
    """The partition keys in the hypd table that start with `pk_prefix` (a test may Scan)."""
    client = cloud.client("dynamodb")
    table = cloud.resources["HypdTable"]
    keys: list[str] = []
    for page in client.get_paginator("scan").paginate(TableName=table):
        keys.extend(
            item["PK"]["S"] for item in page["Items"] if item["PK"]["S"].startswith(pk_prefix)
        )
    return sorted(keys)


def group_body(**overrides: Any) -> dict[str, Any]:
    """An `instanceGroups` item of POST /clusters (one on-demand ml.g6.4xlarge by default)."""
    body: dict[str, Any] = {
        "name": "workers",
        "instanceType": "ml.g6.4xlarge",
        "count": 2,
        "capacity": {"type": "on-demand"},
    }
    body.update(overrides)
    return body


def create_body(**overrides: Any) -> dict[str, Any]:
    """A POST /clusters body; an override of None drops the field."""
    body: dict[str, Any] = {
        "tag": "train",
        "availabilityZone": "us-west-2a",
        "instanceGroups": [group_body()],
        "storage": {"s3": {"bucket": "team-data"}},
    }
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not None}


def service_role(cloud: Any, name: str, service: str) -> str:
    """A role that ``service`` may assume; for SageMaker (a HyperPod execution role) allowed
    what the cluster's instances need, or HyperPod fails the cluster, as on AWS."""
    from hypd_local.emulator.hyperpod_iam import EXECUTION_ACTIONS

    iam = cloud.client("iam")
    arn: str = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"Service": service},
            "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
    if service == "sagemaker.amazonaws.com":
        iam.put_role_policy(RoleName=name, PolicyName="instances", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": sorted(EXECUTION_ACTIONS), "Resource": "*"}]}))
    return arn


def emf_documents(captured: str) -> list[dict[str, Any]]:
    """The EMF documents the functions printed. Lambda threads share the captured stdout, so
    two documents may share a line: each line is read as a sequence of JSON documents."""
    decoder = json.JSONDecoder()
    documents = []
    for line in captured.splitlines():
        at = line.find('{"_aws"')
        while at != -1:
            try:
                document, end = decoder.raw_decode(line, at)
            except ValueError:
                break
            if "CloudWatchMetrics" in document.get("_aws", {}):
                documents.append(document)
            at = line.find('{"_aws"', end)
    return documents


def emf_sum(documents: list[dict[str, Any]], name: str, **dimensions: str) -> int:
    """The sum of one metric over the documents with these dimensions (EMF values are a
    number or a list of numbers)."""
    total = 0.0
    for d in documents:
        if name in d and all(d.get(k) == v for k, v in dimensions.items()):
            value = d[name]
            total += sum(value) if isinstance(value, list) else value
    return int(total)


@dataclass
class Received:
    """One request as the fake API got it (headers' names lowercased)."""

    method: str
    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeApi:
    """An HTTP server on loopback, standing in for the REST API at ``url`` (stage ``/v1``):
    records requests and answers every one with ``reply`` (status, headers, body)."""

    url: str
    received: list[Received] = field(default_factory=list)
    reply: tuple[int, dict[str, str], bytes] = (200, {}, b'{"ok": true}')


@contextlib.contextmanager
def serve_fake_api() -> Iterator[FakeApi]:
    """A `FakeApi` serving until the block ends (the API client's and the console's tests)."""
    state = FakeApi(url="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            state.received.append(Received(
                self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                self.rfile.read(length),
            ))
            status, headers, body = state.reply
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer  # noqa: N815 - http.server's naming

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


PRIVATE_BUCKET = {
    "publicAccessBlock": {"BlockPublicAcls": True, "IgnorePublicAcls": True,
                          "BlockPublicPolicy": True, "RestrictPublicBuckets": True},
    "encryption": [{"SSEAlgorithm": "AES256"}],
}
"""What `bucket_privacy` answers for a bucket made as hypd makes the TLS bucket."""


def bucket_privacy(s3: Any, bucket: str) -> dict[str, Any]:
    """What S3 says of `bucket`'s privacy: its public access block and default encryption."""
    rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    return {
        "publicAccessBlock": s3.get_public_access_block(Bucket=bucket)[
            "PublicAccessBlockConfiguration"],
        "encryption": [r["ApplyServerSideEncryptionByDefault"] for r in rules],
    }
