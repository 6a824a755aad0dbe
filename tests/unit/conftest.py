"""Fixtures of the unit suite: a controllable clock, fake AWS credentials, moto DynamoDB with
the table template.yaml defines."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hypd import clock
from hypd.aws import clients as aws_clients
from hypd.aws.dynamodb import Table
from hypd.operations.store import OperationStore
from tests.unit.support import (
    REGION,
    TABLE_NAME,
    FakeClock,
    create_hypd_table,
    isolated_modules,
    load_template,
)


@pytest.fixture
def fixed_clock() -> Iterator[FakeClock]:
    """hypd.clock reads this clock (2026-01-15T10:00:00Z, advanced only on request)."""
    fake = FakeClock()
    clock.set_source(fake)
    yield fake
    clock.set_source(None)


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and a region, so nothing can reach real AWS."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)


@pytest.fixture(scope="session")
def _boto3_session() -> boto3.session.Session:
    """One session with fake credentials: it caches service models, so clients are cheap."""
    return boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )


@pytest.fixture
def moto_aws(
    aws_env: None, _boto3_session: boto3.session.Session, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """moto for every AWS API; `boto3.client(...)` (as the handlers call it) uses the cached
    fake-credential session. hypd's kept clients are forgotten for the test: a client copies
    its session's event handlers when it is made, and tests register handlers on the session
    (answers moto lacks, faults, call recorders)."""
    with mock_aws():
        monkeypatch.setattr(boto3, "DEFAULT_SESSION", _boto3_session)
        monkeypatch.setattr(aws_clients, "_CLIENTS", {})
        yield


@pytest.fixture(scope="session")
def _shared_dynamodb_client(_boto3_session: boto3.session.Session) -> Any:
    return _boto3_session.client("dynamodb")


@pytest.fixture
def dynamodb_client(moto_aws: None, _shared_dynamodb_client: Any, template: dict[str, Any]) -> Any:
    """A moto DynamoDB client whose table HypdTable was created from template.yaml."""
    create_hypd_table(_shared_dynamodb_client, template)
    return _shared_dynamodb_client


@pytest.fixture
def table(dynamodb_client: Any) -> Table:
    return Table(dynamodb_client, TABLE_NAME)


@pytest.fixture
def operation_store(table: Table) -> OperationStore:
    return OperationStore(table)


@pytest.fixture
def fresh_imports() -> Iterator[None]:
    """hypd.api is imported afresh in the test and forgotten after it (see isolated_modules)."""
    with isolated_modules("hypd.api"):
        yield
