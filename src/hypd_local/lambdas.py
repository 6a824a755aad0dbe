"""Lambda functions run in-process.

Every invocation path of the local cloud ends here: moto's Lambda ``Invoke`` (what Step Functions
tasks and boto3 clients use), the REST API front, EventBridge targets and `LocalCloud.invoke`.

Each function's handler module is imported once, from its CodeUri directory, under a module name
of its own (``hypd_fn_<LogicalId>``), so three functions that all call their file ``app.py`` do
not shadow each other. While the module is imported the function's environment variables are
applied to ``os.environ`` (under a lock, then restored): a handler must read its configuration at
import time, as Lambda handlers usually do, because at call time the process environment is shared
by every function. A local cloud imports every handler when it starts (`LambdaRuntime.warm`),
so no import changes the environment while another function runs.

A handler exception becomes the Lambda error payload (``errorType`` = the exception class name),
so Step Functions' Retry/Catch match the same names as on AWS.

One module, a little over 400 lines, on purpose: finding, importing and invoking a handler (the
import lock, the environment applied while importing, the concurrency slot, the signing
identity, the error payload) are one sequence whose invariants hold only together.
"""

from __future__ import annotations

import decimal
import importlib
import importlib.util
import json
import logging
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

from botocore.credentials import Credentials

from hypd_local.credentials import Session, signing_as
from hypd_local.template import FunctionSpec
from hypd_local.transport import serving_in_process

LOG = logging.getLogger(__name__)

Handler = Callable[[Any, Any], Any]

# os.environ and sys.modules are process-wide: one lock for every import of every cloud.
_IMPORT_LOCK = threading.RLock()


class LambdaContext:
    """The ``context`` argument of a handler, with the attributes Lambda's Python runtime has."""

    def __init__(self, spec: FunctionSpec, request_id: str) -> None:
        self.function_name = spec.name
        self.function_version = "$LATEST"
        self.invoked_function_arn = spec.arn
        self.memory_limit_in_mb = str(spec.memory_size)
        self.aws_request_id = request_id
        self.log_group_name = spec.log_group_name
        self.log_stream_name = (
            time.strftime("%Y/%m/%d") + f"/[$LATEST]{request_id.replace('-', '')}"
        )
        self.identity: Any = None
        self.client_context: Any = None
        self._deadline = time.monotonic() + spec.timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass(frozen=True)
class Invocation:
    """The outcome of one invocation.

    ``payload`` is the JSON text Lambda would return: the handler's result, or the error payload
    when ``error`` is set. ``exception`` is what the handler raised; ``failure`` is what went
    wrong around it (import error, unserialisable result).
    """

    function: FunctionSpec
    request_id: str
    payload: str
    error: bool
    exception: BaseException | None = None
    failure: BaseException | None = None
    duration_ms: float = 0.0

    @property
    def result(self) -> Any:
        return json.loads(self.payload)


class FunctionNotFound(LookupError):
    """No function of the stack has this name or ARN."""


class LambdaRuntime:
    """Imports and calls the handlers of one stack's functions."""

    def __init__(
        self,
        functions: Mapping[str, FunctionSpec],
        *,
        concurrency: int | None = 1,
        module_prefix: str = "hypd_fn_",
        sessions: Callable[[FunctionSpec], Session] | None = None,
    ) -> None:
        """``concurrency``: invocations of one function that may run at once (None: no limit).

        The default of 1 gives each function one warm execution environment, as handler code
        written for Lambda expects: its module globals are never used by two invocations at
        once. Other invocations of the same function queue (different functions run in parallel).

        ``sessions``: the session of a function's execution role (``hypd_local.credentials``);
        its keys are in the function's environment at import and every request an invocation
        signs uses them. None: functions act with the process's credentials.
        """
        self._sessions = sessions
        self._by_logical_id = dict(functions)
        self._slots = {
            logical_id: threading.BoundedSemaphore(concurrency) if concurrency else None
            for logical_id in functions
        }
        self._by_name = {spec.name: spec for spec in functions.values()}
        self._prefix = module_prefix
        self._handlers: dict[str, Handler] = {}
        self._modules: set[str] = set()
        self._sys_paths: list[str] = []
        self._closed = False

    # ------------------------------------------------------------------ lookup
    @property
    def functions(self) -> dict[str, FunctionSpec]:
        return dict(self._by_logical_id)

    def find(self, name_or_arn: str) -> FunctionSpec:
        """A function by logical id, name, or (qualified) ARN."""
        if name_or_arn in self._by_logical_id:
            return self._by_logical_id[name_or_arn]
        name = name_or_arn
        if name.startswith("arn:"):
            # arn:aws:lambda:region:account:function:name[:qualifier]
            parts = name.split(":")
            name = parts[6] if len(parts) > 6 else name
        elif ":" in name:
            name = name.split(":", 1)[0]
        spec = self._by_name.get(name)
        if spec is None:
            raise FunctionNotFound(f"Function not found: {name_or_arn}")
        return spec

    # ------------------------------------------------------------------ invoke
    def invoke(self, function: FunctionSpec | str, event: Any) -> Invocation:
        """Call the handler; never raises for handler errors (see `Invocation.error`)."""
        spec = function if isinstance(function, FunctionSpec) else self.find(function)
        request_id = str(uuid.uuid4())
        started = time.monotonic()
        try:
            handler = self._handler(spec)
        except _InitError as exc:
            return Invocation(spec, request_id, _dump(exc.payload(request_id)), True,
                              failure=exc.cause)
        context = LambdaContext(spec, request_id)
        try:
            with self._slot(spec), signing_as(self.credentials_of(spec)), serving_in_process():
                result = handler(event, context)
        except Exception as exc:
            LOG.info("%s raised %s: %s", spec.logical_id, type(exc).__name__, exc)
            return Invocation(spec, request_id, _dump(error_payload(exc, request_id)), True,
                              exception=exc, duration_ms=_ms_since(started))
        try:
            payload = json.dumps(result, default=_json_default)
        except (TypeError, ValueError) as exc:
            error = {
                "errorMessage": f"Unable to marshal response: {exc}",
                "errorType": "Runtime.MarshalError",
                "requestId": request_id,
                "stackTrace": [],
            }
            return Invocation(spec, request_id, _dump(error), True, failure=exc,
                              duration_ms=_ms_since(started))
        elapsed = _ms_since(started)
        if elapsed > spec.timeout * 1000:
            LOG.warning("%s ran %.0f ms, longer than its Timeout of %s s (not enforced locally)",
                        spec.logical_id, elapsed, spec.timeout)
        return Invocation(spec, request_id, payload, False, duration_ms=elapsed)

    def session_of(self, spec: FunctionSpec) -> Session | None:
        """The session of the function's execution role (None without ``sessions``)."""
        return self._sessions(spec) if self._sessions is not None else None

    def credentials_of(self, spec: FunctionSpec) -> Credentials | None:
        session = self.session_of(spec)
        return session.credentials if session is not None else None

    @contextmanager
    def _slot(self, spec: FunctionSpec) -> Iterator[None]:
        slot = self._slots.get(spec.logical_id)
        if slot is None:
            yield
            return
        # A handler that synchronously invokes its own function would wait for itself forever;
        # after the function's timeout (plus a margin) it runs alongside instead, with a warning.
        acquired = slot.acquire(timeout=spec.timeout + 30)
        if not acquired:
            LOG.warning("%s: no free execution environment after %s s; running concurrently",
                        spec.logical_id, spec.timeout + 30)
        try:
            yield
        finally:
            if acquired:
                slot.release()

    # ------------------------------------------------------------------ import
    def warm(self) -> None:
        """Import every function's handler now, before anything runs concurrently.

        An import applies the function's variables to the process environment and takes them
        back after: a thread copying os.environ meanwhile (botocore and requests read proxy
        settings so) would find a variable gone and fail with a KeyError. Importing all of
        them at start leaves no import to overlap with an invocation. A function that cannot
        be imported is not an error here: its invocations report it, as Lambda's do.
        """
        for spec in self._by_logical_id.values():
            with suppress(_InitError):
                self._handler(spec)

    def _handler(self, spec: FunctionSpec) -> Handler:
        handler = self._handlers.get(spec.logical_id)
        if handler is not None:
            return handler
        with _IMPORT_LOCK:
            handler = self._handlers.get(spec.logical_id)
            if handler is None:
                if self._closed:
                    raise _InitError("Runtime.Unavailable", "the local cloud has stopped")
                handler = self._import(spec)
                self._handlers[spec.logical_id] = handler
        return handler

    def _import(self, spec: FunctionSpec) -> Handler:
        module_path, function_name = spec.handler_module, spec.handler_attribute
        self._check_sibling_names(spec)
        code_dir = str(spec.code_dir)
        if code_dir not in sys.path:
            # Lambda puts the function's directory first on sys.path (/var/task).
            sys.path.insert(0, code_dir)
            self._sys_paths.append(code_dir)
        before = set(sys.modules)
        try:
            environment = spec.lambda_environment()
            session = self.session_of(spec)
            if session is not None:  # as Lambda: the execution role's keys
                environment.update(session.environment())
            with _environment(environment), signing_as(self.credentials_of(spec)), \
                    serving_in_process():
                module = self._load_module(spec, module_path)
        except _InitError:
            raise
        except Exception as exc:
            LOG.exception("%s: cannot import %s", spec.logical_id, module_path)
            raise _InitError(
                "Runtime.ImportModuleError",
                f"Unable to import module '{module_path}': {exc}",
                exc,
            ) from exc
        finally:
            self._track_sibling_modules(spec, before)
        handler = getattr(module, function_name, None)
        if not callable(handler):
            raise _InitError(
                "Runtime.HandlerNotFound",
                f"Handler '{function_name}' missing on module '{module_path}'",
            )
        return handler  # type: ignore[no-any-return]

    def _load_module(self, spec: FunctionSpec, module_path: str) -> ModuleType:
        if "." in module_path:
            # A handler inside a package keeps its real name: relative imports need it.
            module = importlib.import_module(module_path)
            self._modules.add(module_path.split(".", 1)[0])
            return module
        path = spec.code_dir / f"{module_path}.py"
        if not path.is_file():
            raise _InitError("Runtime.ImportModuleError",
                             f"Unable to import module '{module_path}': no {path}")
        unique = f"{self._prefix}{spec.logical_id}"
        module_spec = importlib.util.spec_from_file_location(unique, path)
        if module_spec is None or module_spec.loader is None:
            raise _InitError("Runtime.ImportModuleError", f"Unable to load {path}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[unique] = module
        self._modules.add(unique)
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(unique, None)
            raise
        return module

    def _track_sibling_modules(self, spec: FunctionSpec, before: set[str]) -> None:
        """Remember modules imported from the function's directory (to unload them later)."""
        for name in set(sys.modules) - before:
            file = getattr(sys.modules.get(name), "__file__", None)
            if file and _is_within(Path(file), spec.code_dir):
                self._modules.add(name)

    @staticmethod
    def _check_sibling_names(spec: FunctionSpec) -> None:
        """Fail if a sibling module name is already taken by another function's module.

        sys.modules is keyed by name: two functions with a ``models.py`` each would otherwise
        share whichever was imported first.
        """
        code_dir = spec.code_dir
        for entry in code_dir.iterdir():
            if entry.suffix == ".py":
                name = entry.stem
            elif (entry / "__init__.py").is_file():
                name = entry.name
            else:
                continue
            file = getattr(sys.modules.get(name), "__file__", None)
            if (file and not _is_within(Path(file), code_dir)
                    and _is_within(Path(file), code_dir.parent)):
                raise _InitError(
                    "Runtime.ImportModuleError",
                    f"module name {name!r} of {spec.logical_id} is already taken by {file}; "
                    "sibling modules of different functions need distinct names",
                )

    def close(self) -> None:
        """Forget every imported handler so the next cloud imports them afresh."""
        with _IMPORT_LOCK:
            self._closed = True
            self._handlers.clear()
            for name in list(sys.modules):
                if name in self._modules or name.split(".", 1)[0] in self._modules:
                    del sys.modules[name]
            self._modules.clear()
            for path in self._sys_paths:
                while path in sys.path:
                    sys.path.remove(path)
            self._sys_paths.clear()


class _InitError(Exception):
    """The handler could not be loaded (import failure, missing handler)."""

    def __init__(self, error_type: str, message: str, cause: BaseException | None = None):
        super().__init__(message)
        self.error_type = error_type
        self.message = message
        self.cause = cause or self

    def payload(self, request_id: str) -> dict[str, Any]:
        return {
            "errorMessage": self.message,
            "errorType": self.error_type,
            "requestId": request_id,
            "stackTrace": [],
        }


def error_payload(exc: BaseException, request_id: str) -> dict[str, Any]:
    """The payload Lambda's Python runtime returns for an unhandled exception."""
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "requestId": request_id,
        # Like Lambda's, the trace starts in the handler, not in the runtime that called it.
        "stackTrace": traceback.format_tb(_handler_frames(exc)),
    }


def _handler_frames(exc: BaseException) -> TracebackType | None:
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        return tb.tb_next
    return tb


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def _json_default(value: Any) -> Any:
    # Decimal is what boto3's DynamoDB layer returns for numbers: write it as a JSON number.
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _dump(payload: Mapping[str, Any]) -> str:
    return json.dumps(payload)


def _ms_since(started: float) -> float:
    return (time.monotonic() - started) * 1000


def _is_within(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory)
    except ValueError:
        return False
    return True
