"""hypd.observability.DeferredTracer: the Tracer is made by the first invocation (or by
SnapStart's priming), once, and traces the handler as Powertools' own decorator does."""

from __future__ import annotations

from typing import Any

import pytest
from aws_lambda_powertools import Tracer

from hypd.observability import DeferredTracer
from tests.unit.support import FakeLambdaContext


def test_the_tracer_is_made_by_the_first_invocation_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "true")
    made: list[Tracer] = []

    class CountingTracer(Tracer):
        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            made.append(self)

    monkeypatch.setattr("hypd.observability.Tracer", CountingTracer)
    deferred = DeferredTracer(patch_modules=("botocore",))

    @deferred.capture_lambda_handler
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"echo": event["value"]}

    assert made == []
    assert handler.__name__ == "handler"
    context: Any = FakeLambdaContext("hypd-api")
    assert handler({"value": 1}, context) == {"echo": 1}
    assert handler({"value": 2}, context) == {"echo": 2}
    assert len(made) == 1
    assert deferred.tracer() is made[0]
