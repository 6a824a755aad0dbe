"""Start, stop, and start again: nothing leaks from one local cloud to the next."""

from __future__ import annotations

import os
import sys

import pytest

from hypd_local import LocalCloud

from .conftest import FIXTURE_TEMPLATE


def test_two_clouds_in_a_row_share_nothing() -> None:
    endpoint_before = os.environ.get("AWS_ENDPOINT_URL")

    with LocalCloud(FIXTURE_TEMPLATE) as first:
        first.client("sqs").create_queue(QueueName="left-behind")
        assert first.invoke("WorkerFunction", {"action": "echo"}) == {"echo": {"action": "echo"}}
        first_module = sys.modules["hypd_fn_WorkerFunction"]
        assert os.environ["AWS_ENDPOINT_URL"] == first.aws_endpoint

    # After stop: environment restored and handler modules unloaded
    assert os.environ.get("AWS_ENDPOINT_URL") == endpoint_before
    assert "hypd_fn_WorkerFunction" not in sys.modules

    with LocalCloud(FIXTURE_TEMPLATE) as second:
        queues = second.client("sqs").list_queues().get("QueueUrls", [])
        assert not [url for url in queues if url.endswith("/left-behind")]
        second.invoke("WorkerFunction", {"action": "echo"})
        assert sys.modules["hypd_fn_WorkerFunction"] is not first_module


def test_only_one_cloud_runs_at_a_time() -> None:
    with LocalCloud(FIXTURE_TEMPLATE), pytest.raises(RuntimeError, match="is running"):
        LocalCloud(FIXTURE_TEMPLATE).start()


def test_a_bad_template_leaves_nothing_running(tmp_path) -> None:
    template = tmp_path / "template.yaml"
    template.write_text("Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n"
                        "    Properties: {CodeUri: missing, Handler: app.handler}\n")
    endpoint_before = os.environ.get("AWS_ENDPOINT_URL")

    with pytest.raises(Exception, match="is not a directory"):
        LocalCloud(template).start()

    assert os.environ.get("AWS_ENDPOINT_URL") == endpoint_before
    with LocalCloud(FIXTURE_TEMPLATE):  # and the next one starts fine
        pass
