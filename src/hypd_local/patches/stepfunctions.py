"""Step Functions executions: threads, dates, aborts, errors, parsing and the interpreter's clients.

- ``ExecutionWorker.start``: the execution thread is tracked (so callers can wait for quiet
  without polling) and an interpreter crash fails the execution instead of leaving it RUNNING
  forever.
- ``BaseExecutionWorkerCommunication.terminated``, ``Execution.__init__``,
  ``EventManager._get_current_timestamp``: start/stop dates and history on the virtual clock;
  the ``Step Functions Execution Status Change`` event is emitted.
- ``Execution.stop`` and ``Environment.set_error/set_timed_out``: an abort ends a task-token
  wait at once and the execution stays ABORTED.
- ``StepFunctionsParserBackend.start_execution``: a name is generated when none is given (moto
  would build an ARN ending in "None").
- ``StepFunctionResponse.send_task_failure``: the ``cause`` reaches the waiting task (moto's
  response handler drops it, so a Catch would see the error without its cause).
- ``BranchWorker._thread_routine``: a Parallel branch stopped before it got going
  (StopExecution racing its start) still reports itself terminated; moto's branch thread dies
  with "Could not set NextState ... ProgramStopped" and the execution waits for it forever.
  ``BranchWorkerPool.__init__``: the branches of a Parallel share one timeline (a `Cohort` of
  the clock, nested in the cohort of the thread that runs the Parallel; each branch thread is
  a member until it ends), so their waits overlap.
- ``ExecutionWorker.start`` and ``_get_evaluation_environment`` also make the execution a
  member of the clock's `executions` cohort until it ends (its states find the cohort on their
  environment, as branches do; ``BranchesDecl._eval_body`` nests a Parallel's cohort in it):
  executions running at once overlap their waits too.
- ``AmazonStateLanguageParser.parse``: the syntax tree of a definition is kept, so creating a
  machine again and starting an execution do not parse it again.
- ``boto_client_for`` (in every interpreter module that imported it): one client per Region,
  service, port and state-machine role instead of a new one for every Lambda task.
"""

from __future__ import annotations

import datetime
import logging
import threading
import uuid
from contextlib import nullcontext
from typing import Any

from hypd_local.clock import Cohort, bound, current_cohort
from hypd_local.patches.engine import active, replace
from hypd_local.transport import serve_in_process

LOG = logging.getLogger(__name__)


def patch_executions() -> None:
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
    from moto.stepfunctions.parser.backend.execution import (
        BaseExecutionWorkerCommunication,
        Execution,
    )
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original_start: Any = ExecutionWorker.start
    original_environment: Any = ExecutionWorker._get_evaluation_environment
    original_terminated: Any = BaseExecutionWorkerCommunication.terminated
    original_init: Any = Execution.__init__
    original_start_execution: Any = StepFunctionsParserBackend.start_execution
    original_timestamp: Any = EventManager._get_current_timestamp
    original_stop: Any = Execution.stop

    def start(self: Any) -> None:
        engine = active()
        if engine is None:
            original_start(self)
            return
        execution = getattr(self._execution_communication, "execution", None)
        name = getattr(execution, "name", "?")
        token = engine.activity.begin("execution", str(getattr(execution, "exec_arn", name)))
        engine.execution_started(execution)
        # Executions running at once share one timeline (hypd_local.clock.Cohort): the
        # execution counts from now, its states find the cohort on their environment.
        timeline = engine.clock.executions
        timeline.join()

        def run() -> None:
            try:
                with timeline.member():
                    self._execution_logic()
            except Exception as exc:  # moto's interpreter crashed: fail the execution visibly
                LOG.exception("execution %s crashed in the interpreter", name)
                engine.execution_crashed(execution, exc)
            finally:
                engine.activity.end("execution", token)

        threading.Thread(target=run, daemon=True, name=f"sfn-execution-{name}").start()

    def evaluation_environment(self: Any) -> Any:
        env = original_environment(self)
        engine = active()
        if engine is not None:  # moto evaluates states in threads of their own
            env.hypd_cohort = engine.clock.executions
        return env

    def terminated(self: Any) -> None:
        original_terminated(self)
        engine = active()
        if engine is not None:
            self.execution.stop_date = engine.clock.now()
            engine.execution_ended(self.execution)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        engine = active()
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
        if active() is None:
            return
        # Abort at once, as AWS does, even when a state is waiting for a task token.
        env = getattr(self.exec_worker, "env", None)
        pool = getattr(getattr(env, "callback_pool_manager", None), "_pool", None) or {}
        for endpoint in list(pool.values()):
            endpoint.interrupt_all()

    def current_timestamp() -> datetime.datetime:
        engine = active()
        if engine is None:
            now: datetime.datetime = original_timestamp()
            return now
        return engine.clock.now()

    replace(ExecutionWorker, "start", start)
    replace(ExecutionWorker, "_get_evaluation_environment", evaluation_environment)
    replace(BaseExecutionWorkerCommunication, "terminated", terminated)
    replace(Execution, "__init__", init)
    replace(Execution, "stop", stop)
    replace(StepFunctionsParserBackend, "start_execution", start_execution)
    replace(EventManager, "_get_current_timestamp", staticmethod(current_timestamp))


def patch_program_state() -> None:
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped

    original_set_error: Any = Environment.set_error
    original_set_timed_out: Any = Environment.set_timed_out

    # An aborted execution stays ABORTED: the task interrupted by the abort reports an error
    # afterwards, which moto would otherwise record over the stop.
    def set_error(self: Any, error: Any) -> None:
        if active() is not None and isinstance(self._program_state, ProgramStopped):
            return
        original_set_error(self, error)

    def set_timed_out(self: Any) -> None:
        if active() is not None and isinstance(self._program_state, ProgramStopped):
            return
        original_set_timed_out(self)

    replace(Environment, "set_error", set_error)
    replace(Environment, "set_timed_out", set_timed_out)


def patch_send_task_failure() -> None:
    from moto.core.responses import ActionResult, EmptyResult
    from moto.stepfunctions.responses import StepFunctionResponse

    def send_task_failure(self: Any) -> ActionResult:
        self.stepfunction_backend.send_task_failure(
            self._get_param("taskToken"),
            error=self._get_param("error"),
            cause=self._get_param("cause"),
        )
        return EmptyResult()

    replace(StepFunctionResponse, "send_task_failure", send_task_failure)


def patch_parallel_branches() -> None:
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker import (
        BranchWorker,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branches_decl import (
        BranchesDecl,
        BranchWorkerPool,
    )
    from moto.stepfunctions.parser.asl.eval.environment import Environment
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped

    original_pool_init: Any = BranchWorkerPool.__init__

    def pool_init(self: Any, workers_num: int) -> None:
        original_pool_init(self, workers_num)
        engine = active()
        # The Parallel's branches share one timeline (hypd_local.clock.Cohort), nested in the
        # one of the thread that runs the Parallel (its execution's, or an outer branch's).
        if engine is None:
            self.hypd_cohort = None
            return
        outer = current_cohort()
        parent = outer if outer is not None and outer.clock is engine.clock else None
        self.hypd_cohort = Cohort(engine.clock, workers_num, parent)

    def _thread_routine(self: Any) -> None:
        cohort: Cohort | None = getattr(self._branch_worker_comm, "hypd_cohort", None)
        # moto evaluates the branch's states in threads of their own: they find the cohort on
        # the branch's environment (and its frames, `as_inner_frame_of`).
        self.env.hypd_cohort = cohort
        with cohort.member() if cohort is not None else nullcontext():
            try:
                self._program.eval(self.env)
            except RuntimeError:
                if not isinstance(self.env.program_state(), ProgramStopped):
                    raise
                # The execution was stopped before the branch began: it ends here, stopped.
        self._branch_worker_comm.on_terminated(env=self.env)

    original_branches_body: Any = BranchesDecl._eval_body

    def branches_body(self: Any, env: Any) -> None:
        # The pool made here nests its cohort in the one this Parallel's state waits on.
        with bound(getattr(env, "hypd_cohort", None)):
            original_branches_body(self, env)

    replace(BranchWorkerPool, "__init__", pool_init)
    replace(BranchesDecl, "_eval_body", branches_body)

    original_inner_frame: Any = vars(Environment)["as_inner_frame_of"].__func__

    def as_inner_frame_of(cls: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
        # Every frame (a task's, a branch's inner ones) waits on its environment's cohort.
        frame = original_inner_frame(cls, env, *args, **kwargs)
        frame.hypd_cohort = getattr(env, "hypd_cohort", None)
        return frame

    replace(Environment, "as_inner_frame_of", classmethod(as_inner_frame_of))
    replace(BranchWorker, "_thread_routine", _thread_routine)

ASL_TREES_KEPT = 256


def patch_asl_parser() -> None:
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

    replace(parser, "parse", staticmethod(parse))


def patch_json_paths() -> None:
    import functools

    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    # moto parses a state's JSONPath (InputPath, ResultPath, a Choice's Variable...) every time
    # the state runs, and jsonpath_ng builds its lexer and parser tables on every parse: a tenth
    # of a busy cloud's time. A parsed path is only read (`find`, `update`), so one parse per
    # path string serves every execution.
    for module in (json_path, result_path):
        parse: Any = vars(module)["parse"]
        replace(module, "parse", functools.lru_cache(maxsize=JSON_PATHS_KEPT)(parse))


JSON_PATHS_KEPT = 4096


def patch_interpreter_clients() -> None:
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
        serve_in_process(client)  # the interpreter's calls skip HTTP (hypd_local.transport)
        with lock:
            return clients.setdefault(key, client)

    for module in list(sys.modules.values()):
        if getattr(module, "boto_client_for", None) is original:
            replace(module, "boto_client_for", boto_client_for)
