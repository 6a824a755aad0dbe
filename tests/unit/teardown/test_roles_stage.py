"""The roles stage's AMP workspace: AMP deletes a workspace in the background (DELETING, then
gone), so the stage asks once and reports it deleted only once AMP no longer lists it."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto.amp.models import amp_backends

from hypd.clusters.models import HYPD_TAG_KEY
from hypd.features.catalog import workspace_alias
from hypd.teardown.cluster_tasks import roles
from hypd.teardown.inputs import TeardownInput
from tests.unit.support import REGION

pytestmark = pytest.mark.usefixtures("moto_aws")

TAG = "t"
WHERE = TeardownInput(tag=TAG, eks_name="hypd-t", hyperpod_name="hypd-t")


class Clients:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def client(self, service: str) -> Any:
        client = boto3.client(service, region_name=REGION)
        client.meta.events.register(
            "before-call.*.*", lambda model, **_: self.calls.append(model.name))
        return client


def test_a_workspace_being_deleted_is_waited_for_not_deleted_again() -> None:
    amp = boto3.client("amp", region_name=REGION)
    created = amp.create_workspace(alias=workspace_alias(TAG), tags={HYPD_TAG_KEY: TAG})
    account = boto3.client("sts", region_name=REGION).get_caller_identity()["Account"]
    workspaces = amp_backends[account][REGION].workspaces
    workspaces[created["workspaceId"]].status = {"statusCode": "DELETING"}

    services = Clients()
    look = roles(services, WHERE, [], True)  # type: ignore[arg-type]

    assert [(r.type, r.detail["status"]) for r in look.left] == [
        ("AmpWorkspace", "DELETING")]
    assert "DeleteWorkspace" not in services.calls
    del workspaces[created["workspaceId"]]  # AMP finished
    assert not roles(services, WHERE, [], False).left  # type: ignore[arg-type]


def test_a_workspace_is_deleted_once_and_left_until_gone() -> None:
    amp = boto3.client("amp", region_name=REGION)
    amp.create_workspace(alias=workspace_alias(TAG), tags={HYPD_TAG_KEY: TAG})
    services = Clients()

    look = roles(services, WHERE, [], True)  # type: ignore[arg-type]

    assert services.calls.count("DeleteWorkspace") == 1
    assert [r.type for r in look.left] == ["AmpWorkspace"]  # looked at again next time
