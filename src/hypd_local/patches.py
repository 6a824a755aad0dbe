"""Patches to moto 5.2.5 that make it a local cloud. Read docs/local-cloud.md first.

moto's classes are process-wide, so the patches are installed once and stay installed; each one
delegates to the *active engine* (the running `LocalCloud`) and falls back to moto's original
behaviour when no local cloud is running. Only one local cloud can be active in a process at a
time (moto's backends are global too).

What is patched (moto 5.2.5), and why:

- awslambda ``LambdaFunction._invoke_lambda``: the handler is imported and called in-process
  (moto would start a Docker container).
- awslambda ``LambdaFunction.invoke``: FunctionError is "Unhandled" as on AWS; InvocationType
  Event runs on a worker thread and answers 202 at once.
- stepfunctions ``WaitFunction._wait_interval`` and ``Timestamp._get_wait_seconds``: Wait states
  advance the virtual clock (timestamps compared in UTC, moto compares with local time).
- stepfunctions ``retrier_decl.time``: Retry back-off sleeps advance the virtual clock.
- stepfunctions ``CallbackEndpoint.wait/notify/interrupt_all`` and
  ``HeartbeatEndpoint.clear_and_wait/notify``: task-token and heartbeat timeouts run in virtual
  time. A wait behaves like a sleep interrupted by callbacks: while an emulator change is
  scheduled before its deadline, it moves the clock to that change and lets the events it
  causes be delivered before looking again; with nothing scheduled it blocks until notified or
  until the clock reaches the deadline by other means (see `virtual_wait`).
- stepfunctions ``ExecutionWorker.start``: the execution thread is tracked (so callers can wait
  for quiet without polling) and an interpreter crash fails the execution instead of leaving it
  RUNNING forever.
- stepfunctions ``BaseExecutionWorkerCommunication.terminated``, ``Execution.__init__``,
  ``EventManager._get_current_timestamp``: start/stop dates and history on the virtual clock;
  the ``Step Functions Execution Status Change`` event is emitted.
- stepfunctions ``Execution.stop`` and ``Environment.set_error/set_timed_out``: an abort ends a
  task-token wait at once and the execution stays ABORTED.
- stepfunctions ``StepFunctionsParserBackend.start_execution``: a name is generated when none is
  given (moto would build an ARN ending in "None").
- stepfunctions ``BranchWorker._thread_routine``: a Parallel branch stopped before it got going
  (StopExecution racing its start) still reports itself terminated; moto's branch thread dies
  with "Could not set NextState ... ProgramStopped" and the execution waits for it forever.
- fsx ``FileSystem``: a file system has a life cycle on the virtual clock (``Lifecycle``
  CREATING for `FSX_CREATE_SECONDS`, then AVAILABLE; moto reports none, so a waiter would wait
  forever), a ``CreationTime`` and a Lustre ``MountName``.
- stepfunctions ``StepFunctionResponse.send_task_failure``: the ``cause`` reaches the waiting
  task (moto's response handler drops it, so a Catch would see the error without its cause).
- events ``Rule.send_to_targets``: Lambda and Step Functions targets are delivered (moto raises
  NotImplementedError); DISABLED rules deliver nothing. ``events.models.unix_time``: event times
  on the virtual clock.
- botocore ``endpoint.time`` and ``waiter.time``: the back-off of botocore's own retries and
  waiters (in handlers and tests alike) advances the virtual clock instead of sleeping.
- sagemaker ``SageMakerResponse.create_cluster`` / ``Cluster.describe``: Orchestrator,
  NodeRecovery, NodeProvisioningMode, ClusterRole, AutoScaling and TieredStorageConfig are kept
  and described (moto drops them; discovery links HyperPod to EKS through Orchestrator).
- stepfunctions ``AmazonStateLanguageParser.parse``: the syntax tree of a definition is kept,
  so creating a machine again and starting an execution do not parse it again.
- stepfunctions ``boto_client_for`` (in every interpreter module that imported it): one client
  per Region, service and port instead of a new one for every Lambda task.
- server ``backends.list_of_moto_modules``: listed once (the server's dispatcher lists moto's
  modules from the file system on every request, holding its lock).
"""

from __future__ import annotations

import base64
import copy
import datetime
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from hypd_local.activity import Activity
from hypd_local.clock import VirtualClock
from hypd_local.credentials import Session
from hypd_local.eventbus import EventDelivery
from hypd_local.iam.stacks import StackResource
from hypd_local.lambdas import FunctionNotFound, LambdaRuntime

if TYPE_CHECKING:
    from hypd_local.emulation import Emulation

LOG = logging.getLogger(__name__)

# What a task-token wait lets finish after it moved the clock to an emulator change: the event
# deliveries and asynchronous invocations that change caused (not executions: the waiting
# execution is one). Bounded in real time.
QUIET_KINDS = ("delivery", "invoke")
QUIET_TIMEOUT_SECONDS = 30.0


class Engine(Protocol):
    """What the patches need from the running local cloud."""

    @property
    def clock(self) -> VirtualClock: ...

    @property
    def lambdas(self) -> LambdaRuntime: ...

    @property
    def activity(self) -> Activity: ...

    @property
    def delivery(self) -> EventDelivery: ...

    @property
    def emulation(self) -> Emulation | None: ...

    def invoke_async(self, function_name: str, event: Any) -> None: ...

    def execution_started(self, execution: Any) -> None: ...

    def execution_ended(self, execution: Any) -> None: ...

    def execution_crashed(self, execution: Any, error: BaseException) -> None: ...

    def role_session(self, role_arn: str, service: str, session_name: str) -> Session: ...

    def stack_refusal(self, stack_role_arn: str | None, resources: list[StackResource],
                      stack_tags: dict[str, str]) -> tuple[str, str] | None: ...


_state_lock = threading.Lock()
_engine: Engine | None = None
_installed = False
_saved_sfn_config: bool | None = None


def _replace(owner: Any, name: str, value: Any) -> None:
    """Install one patch (moto's attribute ``owner.name`` becomes ``value``)."""
    setattr(owner, name, value)


def active() -> Engine | None:
    return _engine


def activate(engine: Engine) -> None:
    """Make ``engine`` the target of every patch (installing them on first use)."""
    global _engine, _saved_sfn_config
    from moto.core.config import default_user_config

    install()
    with _state_lock:
        if _engine is not None and _engine is not engine:
            raise RuntimeError(
                "another LocalCloud is already running in this process; stop it first "
                "(moto's backends are process-wide)"
            )
        _engine = engine
        sfn_config = default_user_config.setdefault("stepfunctions", {})
        _saved_sfn_config = sfn_config.get("execute_state_machine", False)
        # Read by moto.stepfunctions.responses.get_backend on every request, server mode included.
        sfn_config["execute_state_machine"] = True


def deactivate(engine: Engine) -> None:
    global _engine
    from moto.core.config import default_user_config

    with _state_lock:
        if _engine is not engine:
            return
        _engine = None
        default_user_config.setdefault("stepfunctions", {})["execute_state_machine"] = bool(
            _saved_sfn_config
        )


def install() -> None:
    """Install every patch once per process (idempotent)."""
    global _installed
    with _state_lock:
        if _installed:
            return
        _patch_lambda()
        _patch_waits()
        _patch_callbacks()
        _patch_program_state()
        _patch_executions()
        _patch_send_task_failure()
        _patch_parallel_branches()
        _patch_fsx()
        _patch_events()
        _patch_sagemaker()
        _patch_botocore()
        _patch_server_dispatch()
        _patch_asl_parser()
        _patch_interpreter_clients()
        _patch_cloudformation()
        _installed = True


# ---------------------------------------------------------------------------------- FSx
FSX_CREATE_SECONDS = 6 * 60
"""How long an FSx file system stays CREATING on the local cloud (AWS: about 5-10 minutes)."""


def _patch_fsx() -> None:
    from moto.fsx.models import FileSystem

    original_init: Any = FileSystem.__init__
    original_to_dict: Any = FileSystem.to_dict

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        engine = _engine
        self.hypd_created = (
            engine.clock.now() if engine is not None else datetime.datetime.now(datetime.UTC)
        )
        self.hypd_mount_name = uuid.uuid4().hex[:8]

    def to_dict(self: Any) -> dict[str, Any]:
        described: dict[str, Any] = original_to_dict(self)
        created = getattr(self, "hypd_created", None)
        if created is None:
            return described
        engine = _engine
        now = engine.clock.now() if engine is not None else datetime.datetime.now(datetime.UTC)
        ready = created + datetime.timedelta(seconds=FSX_CREATE_SECONDS)
        described["Lifecycle"] = "AVAILABLE" if now >= ready else "CREATING"
        described["CreationTime"] = created.timestamp()
        if self.file_system_type == "LUSTRE":
            lustre = dict(described.get("LustreConfiguration") or {})
            lustre.setdefault("MountName", self.hypd_mount_name)
            described["LustreConfiguration"] = lustre
        return described

    _replace(FileSystem, "__init__", init)
    _replace(FileSystem, "to_dict", to_dict)


# ---------------------------------------------------------------------------------- parallel
def _patch_parallel_branches() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker import (
        BranchWorker,
    )
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped

    def _thread_routine(self: Any) -> None:
        try:
            self._program.eval(self.env)
        except RuntimeError:
            if not isinstance(self.env.program_state(), ProgramStopped):
                raise
            # The execution was stopped before the branch began: it ends here, stopped.
        self._branch_worker_comm.on_terminated(env=self.env)

    _replace(BranchWorker, "_thread_routine", _thread_routine)


# ---------------------------------------------------------------------------------- tokens
def _patch_send_task_failure() -> None:
    from moto.core.responses import ActionResult, EmptyResult
    from moto.stepfunctions.responses import StepFunctionResponse

    def send_task_failure(self: Any) -> ActionResult:
        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"),
            error=self._get_param("error"),
            cause=self._get_param("cause"),
        )
        return EmptyResult()

    _replace(StepFunctionResponse, "send_task_failure", send_task_failure)


# ---------------------------------------------------------------------------------- Lambda
def _patch_lambda() -> None:
    from moto.awslambda.models import LambdaFunction

    original_invoke_lambda: Any = LambdaFunction._invoke_lambda
    original_invoke: Any = LambdaFunction.invoke

    def _invoke_lambda(self: Any, event: Any = None) -> tuple[str, bool, str]:
        engine = _engine
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
        engine = _engine
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

    _replace(LambdaFunction, "_invoke_lambda", _invoke_lambda)
    _replace(LambdaFunction, "invoke", invoke)


# ---------------------------------------------------------------------------------- waits
class _VirtualTime:
    """Stands in for the ``time`` module of a module that sleeps: its sleeps become virtual."""

    def sleep(self, seconds: float) -> None:
        engine = _engine
        if engine is None:
            time.sleep(seconds)
        else:
            engine.clock.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def _patch_waits() -> None:
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import (
        Timestamp,
    )
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import (
        WaitFunction,
    )

    original_wait_interval: Any = WaitFunction._wait_interval
    original_timestamp_seconds: Any = Timestamp._get_wait_seconds

    def _wait_interval(self: Any, env: Any, wait_seconds: int) -> None:
        engine = _engine
        if engine is None:
            original_wait_interval(self, env, wait_seconds)
            return
        if wait_seconds > 0 and env.is_running():
            engine.clock.sleep(wait_seconds)

    def _get_wait_seconds(self: Any, env: Any) -> int:
        engine = _engine
        if engine is None:
            seconds: int = original_timestamp_seconds(self, env)
            return seconds
        self.string.eval(env=env)
        timestamp_str: str = env.stack.pop()
        timestamp = self._from_timestamp_string(timestamp=timestamp_str)
        if timestamp is None:
            raise FailureEventException(self._create_failure_event(env, timestamp_str))
        # moto compares with the local wall time; timestamps in ASL are UTC.
        now = engine.clock.now().replace(tzinfo=None)
        return int((timestamp - now).total_seconds())

    _replace(WaitFunction, "_wait_interval", _wait_interval)
    _replace(Timestamp, "_get_wait_seconds", _get_wait_seconds)
    _replace(retrier_decl, "time", _VirtualTime())


def virtual_wait(engine: Engine, seconds: float, done: Callable[[], bool]) -> bool:
    """Wait up to ``seconds`` of virtual time for ``done()``; True if it came, False on timeout.

    Like a sleep interrupted by callbacks. While ``done()`` is false: if the emulators have a
    change scheduled before the deadline, move the clock to it (the tick emits its events, rules
    deliver them, Lambda targets run), wait in real time (at most `QUIET_TIMEOUT_SECONDS`) until
    those deliveries and invocations are over, and look again. With nothing scheduled before the
    deadline, block until ``done()`` (the notifier pokes the clock), until the clock reaches the
    deadline by other means, or until the emulators' schedule changes (then look again).
    """
    clock = engine.clock
    deadline = clock.now() + datetime.timedelta(seconds=seconds)
    emulation = engine.emulation
    while True:
        if done():
            return True
        # Read before next_due: a change scheduled in between then wakes the wait below.
        version = emulation.schedule_version if emulation is not None else 0
        due = emulation.next_due() if emulation is not None else None
        if emulation is not None and due is not None and due < deadline:
            clock.advance_to(due)
            emulation.tick(wait=True)  # the ticker thread may have been mid-tick at `due`
            if not engine.activity.wait_quiet(QUIET_KINDS, QUIET_TIMEOUT_SECONDS):
                LOG.warning(
                    "task-token wait: event deliveries still running after %s s: %s",
                    QUIET_TIMEOUT_SECONDS,
                    "; ".join(engine.activity.describe()),
                )
            continue
        clock.wait_until(deadline, _done_or_rescheduled(done, emulation, version))
        if done():
            return True
        if clock.now() >= deadline:
            return False


def _done_or_rescheduled(
    done: Callable[[], bool], emulation: Emulation | None, version: int
) -> Callable[[], bool]:
    """``done()``, or the emulators' schedule is no longer ``version``. It runs under the
    clock's lock, so it reads plain attributes only and takes no emulator lock."""
    if emulation is None:
        return done
    return lambda: done() or emulation.schedule_version != version


def _patch_callbacks() -> None:
    from moto.stepfunctions.parser.asl.eval.callback.callback import (
        CallbackEndpoint,
        HeartbeatEndpoint,
    )

    original_wait: Any = CallbackEndpoint.wait
    original_notify: Any = CallbackEndpoint.notify
    original_interrupt: Any = CallbackEndpoint.interrupt_all
    original_clear_and_wait: Any = HeartbeatEndpoint.clear_and_wait
    original_heartbeat_notify: Any = HeartbeatEndpoint.notify

    def wait(self: Any, timeout: Any = None) -> Any:
        engine = _engine
        if engine is None or timeout is None:
            return original_wait(self, timeout)
        if not isinstance(timeout, (int, float)):
            # moto evaluates nothing once an execution is stopped, so the task's timeout was
            # never pushed and something else was popped: the execution is ending anyway.
            return self._outcome
        virtual_wait(engine, timeout, self._notify_event.is_set)
        return self._outcome

    def notify(self: Any, outcome: Any) -> None:
        original_notify(self, outcome)
        _poke()

    def interrupt_all(self: Any) -> None:
        original_interrupt(self)
        _poke()

    def clear_and_wait(self: Any) -> bool:
        engine = _engine
        if engine is None:
            received: bool = original_clear_and_wait(self)
            return received
        with self._mutex:
            if self._next_heartbeat_event.is_set():
                self._next_heartbeat_event.clear()
                return True
        return virtual_wait(engine, self._heartbeat_seconds, self._next_heartbeat_event.is_set)

    def heartbeat_notify(self: Any) -> None:
        original_heartbeat_notify(self)
        _poke()

    _replace(CallbackEndpoint, "wait", wait)
    _replace(CallbackEndpoint, "notify", notify)
    _replace(CallbackEndpoint, "interrupt_all", interrupt_all)
    _replace(HeartbeatEndpoint, "clear_and_wait", clear_and_wait)
    _replace(HeartbeatEndpoint, "notify", heartbeat_notify)


def _patch_program_state() -> None:
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped

    original_set_error: Any = Environment.set_error
    original_set_timed_out: Any = Environment.set_timed_out

    # An aborted execution stays ABORTED: the task interrupted by the abort reports an error
    # afterwards, which moto would otherwise record over the stop.
    def set_error(self: Any, error: Any) -> None:
        if _engine is not None and isinstance(self._program_state, ProgramStopped):
            return
        original_set_error(self, error)

    def set_timed_out(self: Any) -> None:
        if _engine is not None and isinstance(self._program_state, ProgramStopped):
            return
        original_set_timed_out(self)

    _replace(Environment, "set_error", set_error)
    _replace(Environment, "set_timed_out", set_timed_out)


def _poke() -> None:
    engine = _engine
    if engine is not None:
        engine.clock.poke()


# ---------------------------------------------------------------------------------- executions
def _patch_executions() -> None:
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
    from moto.stepfunctions.parser.backend.execution import (
        BaseExecutionWorkerCommunication,
        Execution,
    )
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original_start: Any = ExecutionWorker.start
    original_terminated: Any = BaseExecutionWorkerCommunication.terminated
    original_init: Any = Execution.__init__
    original_start_execution: Any = StepFunctionsParserBackend.start_execution
    original_timestamp: Any = EventManager._get_current_timestamp
    original_stop: Any = Execution.stop

    def start(self: Any) -> None:
        engine = _engine
        if engine is None:
            original_start(self)
            return
        execution = getattr(self._execution_communication, "execution", None)
        name = getattr(execution, "name", "?")
        token = engine.activity.begin("execution", str(getattr(execution, "exec_arn", name)))
        engine.execution_started(execution)

        def run() -> None:
            try:
                self._execution_logic()
            except Exception as exc:  # moto's interpreter crashed: fail the execution visibly
                LOG.exception("execution %s crashed in the interpreter", name)
                engine.execution_crashed(execution, exc)
            finally:
                engine.activity.end("execution", token)

        threading.Thread(target=run, daemon=True, name=f"sfn-execution-{name}").start()

    def terminated(self: Any) -> None:
        original_terminated(self)
        engine = _engine
        if engine is not None:
            self.execution.stop_date = engine.clock.now()
            engine.execution_ended(self.execution)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        engine = _engine
        if engine is not None:
            self.start_date = engine.clock.now()

    def start_execution(
        self: Any, state_machine_arn: str, name: str | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        # AWS generates a name when none is given; moto would build an ARN ending in "None".
        return original_start_execution(
            self, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs
        )

    def stop(self: Any, *args: Any, **kwargs: Any) -> None:
        original_stop(self, *args, **kwargs)
        if _engine is None:
            return
        # Abort at once, as AWS does, even when a state is waiting for a task token.
        env = getattr(self.exec_worker, "env", None)
        pool = getattr(getattr(env, "callback_pool_manager", None), "_pool", None) or {}
        for endpoint in list(pool.values()):
            endpoint.interrupt_all()

    def current_timestamp() -> datetime.datetime:
        engine = _engine
        if engine is None:
            now: datetime.datetime = original_timestamp()
            return now
        return engine.clock.now()

    _replace(ExecutionWorker, "start", start)
    _replace(BaseExecutionWorkerCommunication, "terminated", terminated)
    _replace(Execution, "__init__", init)
    _replace(Execution, "stop", stop)
    _replace(StepFunctionsParserBackend, "start_execution", start_execution)
    _replace(EventManager, "_get_current_timestamp", staticmethod(current_timestamp))


# ---------------------------------------------------------------------------------- events
def _patch_events() -> None:
    from moto.events import models as events_models

    original_send: Any = events_models.Rule.send_to_targets
    original_unix_time: Any = vars(events_models)["unix_time"]

    def send_to_targets(self: Any, original_event: Any, transform_input: bool = True) -> None:
        engine = _engine
        if engine is None:
            original_send(self, original_event, transform_input)
            return
        if self.state != "ENABLED" or not self.event_pattern.matches_event(original_event):
            return
        ours = [t for t in self.targets if EventDelivery.handles(str(t["Arn"]))]
        others = [t for t in self.targets if not EventDelivery.handles(str(t["Arn"]))]
        if others:
            # moto delivers the kinds it supports; a shallow copy keeps self.targets untouched.
            clone = copy.copy(self)
            clone.targets = others
            original_send(clone, original_event, transform_input)
        for target in ours:
            engine.delivery.dispatch(self.arn, target, original_event)

    def unix_time(dt: datetime.datetime | None = None) -> float:
        engine = _engine
        if engine is None or dt is not None:
            seconds: float = original_unix_time(dt)
            return seconds
        return engine.clock.timestamp()

    _replace(events_models.Rule, "send_to_targets", send_to_targets)
    _replace(events_models, "unix_time", unix_time)


# ---------------------------------------------------------------------------------- SageMaker
_CLUSTER_CREATE_FIELDS = (
    "Orchestrator",
    "NodeRecovery",
    "NodeProvisioningMode",
    "ClusterRole",
    "AutoScaling",
    "TieredStorageConfig",
)


def _patch_sagemaker() -> None:
    from moto.sagemaker.models import Cluster
    from moto.sagemaker.responses import SageMakerResponse

    original_create: Any = SageMakerResponse.create_cluster
    original_describe: Any = Cluster.describe

    def create_cluster(self: Any) -> Any:
        result = original_create(self)
        if _engine is not None:
            cluster = self.sagemaker_backend.clusters.get(self._get_param("ClusterName"))
            if cluster is not None:
                cluster.local_cloud_fields = {
                    key: value
                    for key in _CLUSTER_CREATE_FIELDS
                    if (value := self._get_param(key)) is not None
                }
        return result

    def describe(self: Any) -> dict[str, Any]:
        described: dict[str, Any] = original_describe(self)
        described.update(getattr(self, "local_cloud_fields", {}))
        return described

    _replace(SageMakerResponse, "create_cluster", create_cluster)
    _replace(Cluster, "describe", describe)


# ---------------------------------------------------------------------------------- botocore
def _patch_botocore() -> None:
    from botocore import endpoint, waiter

    # Only ``time.sleep`` is virtual; everything else of the module is the real one.
    _replace(endpoint, "time", _VirtualTime())
    _replace(waiter, "time", _VirtualTime())


# ---------------------------------------------------------------------------------- server
def _patch_server_dispatch() -> None:
    from moto import backends

    # The server's dispatcher asks for the list of moto's modules on every request, under its
    # one lock, and moto lists them from the file system each time (a listdir and a hundred
    # isdir calls): every request of every thread waited on it. The list cannot change.
    modules = tuple(backends.list_of_moto_modules())
    _replace(backends, "list_of_moto_modules", lambda: modules)


# ---------------------------------------------------------------------------------- ASL parse
ASL_TREES_KEPT = 256


def _patch_asl_parser() -> None:
    from moto.stepfunctions.parser.asl.parse import asl_parser
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    parser = asl_parser.AmazonStateLanguageParser
    original: Any = parser.parse
    trees: dict[str, Any] = {}
    lock = threading.Lock()

    # moto parses a definition with ANTLR when the state machine is created and again for every
    # execution; the parse is most of the cost of both (a cloud's start creates the same
    # machines each time). The syntax tree of a definition is kept and only the evaluation
    # components, which hold the state of one execution (retry counts...), are built anew.
    def parse(definition: str) -> tuple[Any, Any]:
        with lock:
            tree = trees.get(definition)
        if tree is None:
            program, tree = original(definition)  # raises on a bad definition: nothing kept
            with lock:
                if len(trees) >= ASL_TREES_KEPT:
                    trees.pop(next(iter(trees)))
                trees[definition] = tree
            return program, tree
        return Preprocessor().visit(tree), tree

    _replace(parser, "parse", staticmethod(parse))


# ---------------------------------------------------------------------------------- SFN clients
def _patch_interpreter_clients() -> None:
    import sys

    from moto.stepfunctions.parser.asl.component.state.exec.state_task import (  # noqa: F401
        lambda_eval_utils,
    )
    from moto.stepfunctions.parser.asl.utils import boto_client

    original: Any = boto_client.boto_client_for
    clients: dict[tuple[str, str, str, str | None], Any] = {}
    lock = threading.Lock()

    # The interpreter makes a new boto3 client for every Lambda task it runs (tens of
    # milliseconds of botocore set-up each time); one per Region, service, moto port and role
    # does. Its calls are signed as the state machine's role (the execution's RoleArn), as
    # Step Functions makes them on AWS, so they are authorised against that role's policies.
    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        import boto3
        from botocore.config import Config
        from moto.core.models import botocore_stubber
        from moto.settings import moto_server_port
        from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import (
            TimeoutSeconds,
        )

        if botocore_stubber.enabled:
            return original(region, service, state_credentials)
        cloud = active()
        role_arn = getattr(state_credentials, "role_arn", None)
        frozen = (cloud.role_session(role_arn, "states.amazonaws.com", "StepFunctions")
                  .credentials.get_frozen_credentials() if role_arn and cloud else None)
        # Keyed by the session's key: the next cloud's sessions have new ones.
        key = (region, service, str(moto_server_port()), frozen.access_key if frozen else None)
        with lock:
            client = clients.get(key)
        if client is not None:
            return client
        if frozen is not None:
            client = boto3.client(
                service, region_name=region, endpoint_url=f"http://localhost:{moto_server_port()}",
                aws_access_key_id=frozen.access_key, aws_secret_access_key=frozen.secret_key,
                aws_session_token=frozen.token,
                config=Config(parameter_validation=False,
                              retries={"max_attempts": 0, "total_max_attempts": 1},
                              connect_timeout=TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS,
                              read_timeout=TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS))
        else:
            client = original(region, service)
        with lock:
            return clients.setdefault(key, client)

    for module in list(sys.modules.values()):
        if getattr(module, "boto_client_for", None) is original:
            _replace(module, "boto_client_for", boto_client_for)


# ---------------------------------------------------------------------------------- CloudFormation
def _stack_resources(stack: Any, names: list[str] | None = None) -> list[StackResource]:
    """The stack's resources (or those named) in the order moto made them, properties
    resolved; those moto skips (SecurityGroupEgress) last."""
    from moto.cloudformation.parsing import clean_json

    resource_map = stack.resource_map
    template = stack.template_dict.get("Resources") or {}
    made = [n for n in resource_map._parsed_resources if n in template]
    ordered = made + [n for n in template if n not in made]
    found = []
    for name in ordered:
        if names is not None and name not in names:
            continue
        declared = template[name]
        try:
            properties = clean_json(declared.get("Properties") or {}, resource_map)
        except Exception:  # a reference moto could not resolve (a skipped resource)
            properties = declared.get("Properties") or {}
        physical = resource_map._parsed_resources.get(name)
        found.append(StackResource(name, str(declared.get("Type")), properties,
                                   getattr(physical, "physical_resource_id", None)))
    return found


def _resource_event(stack: Any, resource: str, rtype: str, status: str, reason: str) -> None:
    from moto.cloudformation.models import Event

    stack.events.append(Event(stack.stack_id, stack.name, resource, "", rtype, status, reason,
                              None))


# EC2 resources CloudFormation tags with the stack's tags: id prefixes
_EC2_TAGGED_PREFIXES = frozenset({"vpc", "subnet", "rtb", "igw", "nat", "eipalloc", "sg",
                                  "vpce"})


def _patch_cloudformation() -> None:
    """moto makes a stack's resources in its backends, authorising nothing: the local cloud
    authorises CloudFormation's calls for each (as the stack's role) afterwards, and a denied
    one fails the resource and rolls the stack back, as on AWS (hypd_local.iam.stacks)."""
    from moto.cloudformation import models, parsing

    create_resources = models.Stack.create_resources
    update = models.Stack.update

    def refusal(stack: Any, names: list[str] | None) -> tuple[str, str] | None:
        engine = active()
        if engine is None:
            return None
        tags = {str(k): str(v) for k, v in (stack.tags or {}).items()}
        return engine.stack_refusal(stack.role_arn, _stack_resources(stack, names), tags)

    def tag_like_cloudformation(stack: Any) -> None:
        # CloudFormation puts the stack's tags on every resource that takes tags; moto only
        # on some EC2 types (not on Elastic IPs, for one).
        from moto.ec2.models import ec2_backends

        backend = ec2_backends[stack.account_id][stack.region_name]
        tags = dict(stack.resource_map.tags)
        for name, resource in list(stack.resource_map._parsed_resources.items()):
            # an Elastic IP's physical id is its address; its tags are on its allocation
            ident = (getattr(resource, "allocation_id", None) or getattr(resource, "id", None)
                     or getattr(resource, "physical_resource_id", None))
            declared = (stack.template_dict.get("Resources") or {}).get(name) or {}
            if (isinstance(ident, str) and str(declared.get("Type", "")).startswith(
                    "AWS::EC2::") and ident.split("-", 1)[0] in _EC2_TAGGED_PREFIXES):
                backend.create_tags([ident], {**tags, "aws:cloudformation:logical-id": name})

    def patched_create(self: Any) -> None:
        create_resources(self)
        tag_like_cloudformation(self)
        refused = refusal(self, None)
        if refused is None:
            return
        resource, reason = refused
        rtype = str(self.template_dict["Resources"][resource].get("Type"))
        # moto's last CREATE_COMPLETE event was never CloudFormation's
        if self.events and self.events[-1].resource_status == "CREATE_COMPLETE":
            self.events.pop()
        _resource_event(self, resource, rtype, "CREATE_FAILED", reason)
        self._add_stack_event("ROLLBACK_IN_PROGRESS", resource_status_reason=(
            f"The following resource(s) failed to create: [{resource}]. Rollback requested "
            "by user."))
        self.resource_map.delete()
        # Nothing is left: no outputs (moto would make a resource again to read one).
        self.resource_map._resource_json_map = {}
        self.output_map = parsing.OutputMap(self.resource_map, {}, self.stack_id)
        self.status = "ROLLBACK_COMPLETE"
        self._add_stack_event("ROLLBACK_COMPLETE")

    def patched_update(self: Any, template: str, role_arn: str | None = None,
                       parameters: dict[str, Any] | None = None,
                       tags: dict[str, str] | None = None) -> None:
        before_template, before_role = self.template, self.role_arn
        before = set(self.template_dict.get("Resources") or {})
        update(self, template, role_arn, parameters, tags)
        tag_like_cloudformation(self)
        added = [n for n in self.template_dict.get("Resources") or {} if n not in before]
        refused = refusal(self, added) if added else None
        if refused is None:
            return
        resource, reason = refused
        rtype = str(self.template_dict["Resources"][resource].get("Type"))
        _resource_event(self, resource, rtype, "CREATE_FAILED", reason)
        self._add_stack_event("UPDATE_ROLLBACK_IN_PROGRESS", resource_status_reason=(
            f"The following resource(s) failed to create: [{resource}]."))
        # Back to the template before: moto removes what the update added (its own events
        # of that inner update are not CloudFormation's).
        kept = len(self.events)
        update(self, before_template, before_role, parameters, None)
        del self.events[kept:]
        self.status = "UPDATE_ROLLBACK_COMPLETE"
        self._add_stack_event("UPDATE_ROLLBACK_COMPLETE")

    _replace(models.Stack, "create_resources", patched_create)
    _replace(models.Stack, "update", patched_update)
    _replace(parsing.ResourceMap, "delete", _delete_stack_resources)


def _delete_ec2_resource(resource_map: Any, name: str) -> None:
    """Delete one resource of a stack; the EC2 types moto's CloudFormation cannot delete
    through the EC2 backend, the others as moto does."""
    from moto.cloudformation.parsing import clean_json
    from moto.ec2.models import ec2_backends

    declared = resource_map._resource_json_map[name]
    kind = str(declared.get("Type"))
    resource = resource_map._parsed_resources.get(name)
    ec2 = ec2_backends[resource_map._account_id][resource_map._region_name]
    props = clean_json(declared.get("Properties") or {}, resource_map)
    ident = str(getattr(resource, "id", None) or getattr(resource, "physical_resource_id", ""))
    if kind == "AWS::EC2::Route":
        ec2.delete_route(props["RouteTableId"], props.get("DestinationCidrBlock"))
    elif kind == "AWS::EC2::SubnetRouteTableAssociation":
        table = ec2.get_route_table(props["RouteTableId"])
        for association, subnet in list(table._associations.items()):
            if subnet == props["SubnetId"]:
                ec2.disassociate_route_table(association)
    elif kind == "AWS::EC2::VPCGatewayAttachment":
        ec2.detach_internet_gateway(props["InternetGatewayId"], props["VpcId"])
    elif kind == "AWS::EC2::VPCEndpoint":
        ec2.delete_vpc_endpoints([ident])
    elif kind == "AWS::EC2::NatGateway":
        ec2.delete_nat_gateway(ident)
    elif kind == "AWS::EC2::EIP":
        ec2.release_address(allocation_id=getattr(resource, "allocation_id", None))
    elif kind == "AWS::EC2::RouteTable":
        ec2.delete_route_table(ident)
    elif kind == "AWS::EC2::InternetGateway":
        ec2.delete_internet_gateway(ident)
    elif kind in ("AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress"):
        return  # rules go with their group
    elif resource is not None and not isinstance(resource, str):
        resource_map._delete_resource(resource, declared)


def _delete_stack_resources(self: Any) -> None:
    """moto's ResourceMap.delete, for the EC2 resources it cannot delete too: newest first,
    again while a pass deletes anything (a dependency may need another's deletion first)."""
    names = [n for n in self._parsed_resources if n in self._resource_json_map
             and self._resource_json_map[n].get("DeletionPolicy") != "Retain"]
    remaining = list(reversed(names))
    last: Exception | None = None
    while remaining:
        progress = False
        for name in list(remaining):
            try:
                _delete_ec2_resource(self, name)
            except Exception as exc:  # a dependency not deleted yet: next pass
                last = exc
            else:
                remaining.remove(name)
                self._parsed_resources.pop(name, None)
                progress = True
        if not progress:
            assert last is not None
            raise last
