"""What the moto patches call back on the running `LocalCloud` (`hypd_local.patches.Engine`):
asynchronous invocations, executions starting, ending or crashing (and their status-change
events), the sessions roles are assumed in, CloudFormation's authorisation and Scheduler's
schedules changing."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hypd_local.activity import Activity
from hypd_local.asyncinvoke import AsyncInvoker
from hypd_local.clock import VirtualClock
from hypd_local.credentials import Identities, Session
from hypd_local.emulation import Emulation
from hypd_local.eventbus import (
    EXECUTION_STATUS_CHANGE,
    EventDelivery,
    execution_status_detail,
)
from hypd_local.iam.enforce import current_caller
from hypd_local.iam.stacks import StackResource, stack_calls
from hypd_local.lambdas import FunctionNotFound, LambdaRuntime
from hypd_local.scheduler import Scheduler
from hypd_local.streams import StreamDelivery
from hypd_local.template import FunctionSpec

LOG = logging.getLogger("hypd_local.cloud")


class EngineCallbacks:
    """The engine side of a `LocalCloud`."""

    clock: VirtualClock
    activity: Activity
    emulation: Emulation | None
    identities: Identities
    _lambdas: LambdaRuntime | None
    _delivery: EventDelivery | None
    _scheduler: Scheduler | None
    _invoker: AsyncInvoker | None
    _streams: StreamDelivery | None
    _executor: ThreadPoolExecutor | None
    _executions: dict[str, Any]
    _executions_cond: threading.Condition
    _stopping: bool

    @property
    def lambdas(self) -> LambdaRuntime:
        if self._lambdas is None:
            raise RuntimeError("the local cloud is not started")
        return self._lambdas

    @property
    def delivery(self) -> EventDelivery:
        if self._delivery is None:
            raise RuntimeError("the local cloud is not started")
        return self._delivery

    @property
    def scheduler(self) -> Scheduler:
        """EventBridge Scheduler: the schedules firing on the virtual clock."""
        if self._scheduler is None:
            raise RuntimeError("the local cloud is not started")
        return self._scheduler

    def schedules_changed(self) -> None:
        """A schedule was created, updated or deleted: fire what is now due."""
        if self._scheduler is not None and not self._stopping:
            self._scheduler.look()

    def invoke_async(self, function_name: str, event: Any) -> None:
        """InvocationType=Event: Lambda's asynchronous invocation on a worker thread."""
        executor, invoker = self._executor, self._invoker
        if executor is None or invoker is None:
            return
        try:
            function = self.lambdas.find(function_name)
        except FunctionNotFound:
            LOG.warning("asynchronous invocation of %s dropped: not a function of the template",
                        function_name)
            return
        token = self.activity.begin("invoke", function_name)

        def run() -> None:
            try:
                invoker.run(function, event)
            except Exception:
                LOG.exception("asynchronous invocation of %s failed", function_name)
            finally:
                self.activity.end("invoke", token)

        try:
            executor.submit(run)
        except RuntimeError:
            self.activity.end("invoke", token)

    def stream_written(self, table_name: str) -> None:
        """A table's stream got a record: its event source mappings read on."""
        if self._streams is not None and not self._stopping:
            self._streams.notify(table_name)

    def execution_started(self, execution: Any) -> None:
        if execution is None:
            return
        with self._executions_cond:
            self._executions[execution.exec_arn] = execution
        self._emit_status(execution)

    def execution_ended(self, execution: Any) -> None:
        self._emit_status(execution)
        with self._executions_cond:
            self._executions.pop(execution.exec_arn, None)
            self._executions_cond.notify_all()

    def execution_crashed(self, execution: Any, error: BaseException) -> None:
        if execution is None:
            return
        from moto.stepfunctions.parser.api import ExecutionStatus

        if execution.exec_status == ExecutionStatus.RUNNING:
            execution.exec_status = ExecutionStatus.FAILED
            execution.error = "States.Runtime"
            execution.cause = f"{type(error).__name__}({error})"
            execution.stop_date = self.clock.now()
            self.execution_ended(execution)

    def _emit_status(self, execution: Any) -> None:
        if self._stopping or self._delivery is None:
            return
        if "EXPRESS" in str(getattr(execution, "sm_type", "") or "").upper():
            return  # AWS emits status-change events for Standard workflows only
        try:
            self._delivery.put_event(
                source="aws.states",
                detail_type=EXECUTION_STATUS_CHANGE,
                detail=execution_status_detail(execution),
                resources=[execution.exec_arn],
            )
        except Exception:
            LOG.exception("cannot emit the status event of %s", execution.exec_arn)

    def _function_session(self, spec: FunctionSpec) -> Session:
        """The session of a function's execution role, as Lambda makes it (session name: the
        function's name)."""
        return self.identities.session(spec.role_arn, spec.name, "lambda.amazonaws.com")

    def role_session(self, role_arn: str, service: str, session_name: str) -> Session:
        """The session ``service`` acts in when it assumes ``role_arn`` (a state machine's
        role, a stack's service role)."""
        return self.identities.session(role_arn, session_name, service)

    def stack_refusal(self, stack_role_arn: str | None, resources: list[StackResource],
                      stack_tags: dict[str, str]) -> tuple[str, str] | None:
        """(resource, reason) of the first resource CloudFormation could not make with the
        stack's role (or, with none, its caller's permissions); None when all could be."""
        assert self.emulation is not None
        enforcer = self.emulation.enforcer
        if stack_role_arn:
            session = self.identities.session(stack_role_arn, "AWSCloudFormation",
                                              "cloudformation.amazonaws.com")
            principal = self.emulation.directory.principal(
                session.credentials.get_frozen_credentials().access_key)
        else:
            principal = current_caller()
        if principal is None:  # the account's administrator
            return None
        for resource, calls in stack_calls(resources, stack_tags):
            for service, operation, params in calls:
                denial = enforcer.decide(principal, enforcer.checks(service, service, operation,
                                                                    params))
                if denial is not None:
                    return resource.logical_id, (
                        f"Resource handler returned message: \"You are not authorized to "
                        f"perform this operation. {denial.message}\" (Service: Ec2, Status "
                        "Code: 403, Error Code: UnauthorizedOperation)")
        return None

    def _abort_running_executions(self) -> None:
        with self._executions_cond:
            running = list(self._executions.values())
        for execution in running:
            try:
                execution.stop(stop_date=self.clock.now(), error=None, cause=None)
            except Exception:
                LOG.exception("cannot abort %s", getattr(execution, "exec_arn", execution))
