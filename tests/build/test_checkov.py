"""checkov finds nothing in the template, neither as SAM nor as the CloudFormation SAM makes of it.

checkov understands SAM only in part: it merges Globals and checks AWS::Serverless::Function and
::Api, but not state machines, and it never sees what the SAM transform generates (IAM roles,
Lambda permissions, the EventBridge dead-letter queue, the API stage). So it runs twice: on
template.yaml, and on the transformed template (tests/build/sam_transform.py, offline).
Skipped checks and their reasons: .checkov.yaml.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from hypd_local.template import resources_of_type
from tests.build.conftest import require_tool, run
from tests.build.support import CHECKOV_VENV, FUNCTION_TYPE, ROOT, TEMPLATE

pytestmark = pytest.mark.build

CONFIG = ROOT / ".checkov.yaml"

# Event sources that invoke Lambda asynchronously: function errors are retried twice by Lambda
# and then dropped unless the function has somewhere to send the failed event.
ASYNC_EVENT_TYPES = {
    "CloudWatchEvent",
    "EventBridgeRule",
    "Schedule",
    "ScheduleV2",
    "S3",
    "SNS",
    "CloudWatchLogs",
    "IoTRule",
    "Cognito",
}


def checkov(path: Path) -> dict[str, Any]:
    binary = require_tool(CHECKOV_VENV / "bin" / "checkov")
    result = run([str(binary), "--config-file", str(CONFIG), "-f", str(path), "-o", "json"])
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        pytest.fail(
            f"checkov gave no JSON ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    reports = report if isinstance(report, list) else [report]
    (cloudformation,) = [r for r in reports if r.get("check_type") == "cloudformation"]
    return dict(cloudformation)


def describe_failures(report: dict[str, Any]) -> str:
    return "\n".join(
        f"{c['check_id']} {c['resource']}: {c['check_name']}"
        for c in report["results"]["failed_checks"]
    )


def assert_clean(report: dict[str, Any]) -> None:
    summary = report["summary"]
    assert summary["parsing_errors"] == 0
    assert summary["resource_count"] > 0
    assert summary["passed"] > 0
    assert summary["failed"] == 0, describe_failures(report)


def test_every_skipped_check_has_a_reason() -> None:
    lines = CONFIG.read_text(encoding="utf-8").splitlines()
    entries = [line for line in lines if re.match(r"\s*-\s*CKV", line)]
    assert entries
    for line in entries:
        assert re.match(r"\s*-\s*CKV2?_[A-Z0-9]+_\d+\s+#\s*\S", line), f"no reason: {line!r}"


def test_checkov_sam_template() -> None:
    assert_clean(checkov(TEMPLATE))


def test_checkov_transformed_template(transformed: Path) -> None:
    assert_clean(checkov(transformed))


def test_queues_are_encrypted(transformed: Path) -> None:
    """Stands in for the skipped CKV_AWS_27, accepting SSE-SQS as well as KMS. Covers the queues
    SAM generates (e.g. an EventBridgeRule's `DeadLetterConfig: {Type: SQS}`), which rely on
    SQS's default instead of saying so."""
    resources = json.loads(transformed.read_text(encoding="utf-8"))["Resources"]
    unencrypted = [
        logical_id
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::SQS::Queue"
        and resource.get("Properties", {}).get("SqsManagedSseEnabled") is not True
        and not resource.get("Properties", {}).get("KmsMasterKeyId")
    ]
    assert unencrypted == [], "set SqsManagedSseEnabled: true (or KmsMasterKeyId)"


def test_async_invoked_functions_keep_failed_events(template: dict[str, Any]) -> None:
    """Stands in for the skipped CKV_AWS_116, for the functions it matters for."""
    lacking = []
    for logical_id, resource in resources_of_type(template, FUNCTION_TYPE).items():
        props = resource.get("Properties", {})
        async_events = sorted(
            name
            for name, event in props.get("Events", {}).items()
            if event.get("Type") in ASYNC_EVENT_TYPES
        )
        if not async_events:
            continue
        on_failure = (
            props.get("EventInvokeConfig", {}).get("DestinationConfig", {}).get("OnFailure")
        )
        if not props.get("DeadLetterQueue") and not on_failure:
            lacking.append(f"{logical_id} (events {', '.join(async_events)})")
    assert lacking == [], (
        "asynchronously invoked functions need DeadLetterQueue or "
        "EventInvokeConfig.DestinationConfig.OnFailure"
    )
