"""hypd.aws.clients: one client per session, service, Region and endpoint, made on first use,
and forgotten on request (SnapStart's restore)."""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest

from hypd.aws import clients
from hypd.aws.clients import (
    CLIENT_CONFIG,
    client,
    forget_clients,
    lazy_client,
    regional_clients,
    service_client,
)


@pytest.fixture
def session(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> boto3.session.Session:
    fresh = boto3.session.Session(region_name="us-west-2")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", fresh)
    return fresh


def test_a_client_is_made_once_and_kept(session: boto3.session.Session) -> None:
    first = client("sqs", "us-west-2")
    assert client("sqs", "us-west-2") is first
    assert first.meta.region_name == "us-west-2"
    assert first.meta.config.retries == CLIENT_CONFIG.retries
    assert client("sqs", "eu-west-1") is not first
    assert client("sns", "us-west-2") is not first


def test_another_session_or_endpoint_gets_its_own_client(
        session: boto3.session.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    first = client("sqs", "us-west-2")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
    moved = client("sqs", "us-west-2")
    assert moved is not first
    assert moved.meta.endpoint_url == "http://127.0.0.1:4566"
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", boto3.session.Session(region_name="us-west-2"))
    assert client("sqs", "us-west-2") is not moved


def test_a_lazy_client_is_made_on_first_use(session: boto3.session.Session) -> None:
    get = lazy_client("sqs", "us-west-2")
    assert get() is client("sqs", "us-west-2")


def test_regional_clients_are_the_kept_clients_of_their_region(
        session: boto3.session.Session) -> None:
    clients = regional_clients("eu-west-1")
    assert clients("sqs") is client("sqs", "eu-west-1")
    assert clients("sqs").meta.region_name == "eu-west-1"


def test_threads_asking_at_once_share_one_client(session: boto3.session.Session) -> None:
    got: list[Any] = []
    threads = [threading.Thread(target=lambda: got.append(client("sts", "us-west-2")))
               for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 16
    assert len({id(made) for made in got}) == 1


def test_a_service_client_makes_no_client_until_a_call_needs_one(
        session: boto3.session.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clients, "_CLIENTS", {})
    sqs = service_client("sqs", "us-west-2")
    assert clients._CLIENTS == {}
    assert sqs.meta is client("sqs", "us-west-2").meta
    assert sqs.get_queue_url.__self__ is client("sqs", "us-west-2")
    # Python's own protocols (copy, pickle, mocks) are not asked of the client
    with pytest.raises(AttributeError):
        sqs.__deepcopy__  # noqa: B018


def test_forgetting_clients_drops_them_and_the_default_session(
        session: boto3.session.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clients, "_CLIENTS", {})
    kept = client("sqs", "us-west-2")
    sqs = service_client("sqs", "us-west-2")
    forget_clients()
    assert clients._CLIENTS == {}
    assert boto3.DEFAULT_SESSION is None
    # the next call makes a new session (credentials read again) and a new client
    made = client("sqs", "us-west-2")
    assert made is not kept
    assert boto3.DEFAULT_SESSION is not session
    assert sqs.meta is made.meta
