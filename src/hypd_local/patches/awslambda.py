"""Lambda: invocations run the template's handlers in-process.

- ``LambdaFunction._invoke_lambda``: the handler is imported and called in-process (moto would
  start a Docker container).
- ``LambdaFunction.invoke``: FunctionError is "Unhandled" as on AWS; InvocationType Event runs
  on a worker thread and answers 202 at once.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from hypd_local.lambdas import FunctionNotFound
from hypd_local.patches.engine import active, replace


def patch_lambda() -> None:
    from moto.awslambda.models import LambdaFunction

    original_invoke_lambda: Any = LambdaFunction._invoke_lambda
    original_invoke: Any = LambdaFunction.invoke

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        engine = active()
        if engine is None:
            outcome: tuple[str, bool, str] = original_invoke_lambda(self, event)
            return outcome
        if isinstance(event, (str, bytes)):
            event = json.loads(event) if event else {}
        try:
            spec = engine.lambdas.find(self.function_name)
        except FunctionNotFound as exc:
            payload = {
                "errorMessage": f"{exc}: the local cloud runs only the template's functions",
                "errorType": "Runtime.HandlerNotFound",
            }
            return json.dumps(payload), True, ""
        result = engine.lambdas.invoke(spec, {} if event is None else event)
        return result.payload, result.error, ""

    def invoke(self: Any, body: Any, request_headers: Any, response_headers: Any) -> Any:
        engine = active()
        if engine is None:
            return original_invoke(self, body, request_headers, response_headers)
        event = json.loads(body) if body else {}
        invocation_type = request_headers.get("x-amz-invocation-type", "RequestResponse")
        if invocation_type == "DryRun":
            return b""
        if invocation_type == "Event":
            engine.invoke_async(self.function_name, event)
            return b""
        payload, errored, logs = self._invoke_lambda(event=event)
        if errored:
            # The Python runtime reports every uncaught exception as "Unhandled"; Step Functions
            # takes the error name from errorType either way.
            response_headers["x-amz-function-error"] = "Unhandled"
        response_headers["x-amz-log-result"] = base64.b64encode(logs.encode()).decode()
        return payload.encode()

    replace(LambdaFunction, "_invoke_lambda", _invoke_lambda)
    replace(LambdaFunction, "invoke", invoke)
