"""`LocalCloud`: the whole application running in one process, with no AWS account.

    with LocalCloud("template.yaml") as cloud:
        requests.post(f"{cloud.api_url}/clusters/discover")   # the real API handler
        cloud.wait_for_executions(timeout=30)                   # the real ASL, real tasks
        cloud.client("dynamodb").scan(TableName=cloud.resources["HypdTable"])

See docs/local-cloud.md for how it works and the rules handlers follow. What the moto patches
call back is in `cloud_engine`, what a cloud changes in its process (moto's server, the
environment) in `cloud_process`. This module stays a little over 400 lines: `LocalCloud`'s
start, stop and public API are the one surface tests and the CLI use.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any

from werkzeug.serving import BaseWSGIServer

from hypd_local import alarms, credentials, patches, transport
from hypd_local.activity import Activity
from hypd_local.alarms import AlarmAction
from hypd_local.apiaccess import APIGATEWAY_PRINCIPAL, ApiAccess
from hypd_local.apifront import AdminHandler, ApiFront
from hypd_local.apitarget import EVENTS_PRINCIPAL, ApiTargets
from hypd_local.asyncinvoke import AsyncFailure, AsyncInvoker
from hypd_local.clock import VirtualClock
from hypd_local.cloud_engine import EngineCallbacks
from hypd_local.cloud_process import (
    ACCESS_KEY_ID,
    SECRET_ACCESS_KEY,
    ProcessSetup,
    _reset_moto,
)
from hypd_local.credentials import Identities
from hypd_local.emulation import Emulation
from hypd_local.emulator.faults import Faults, admin_routes
from hypd_local.eventbus import (
    DeliveryFailure,
    EventDelivery,
)
from hypd_local.eventlog import EventLog
from hypd_local.iam.enforce import Authorization
from hypd_local.iam.resource_policies import ResourcePolicies
from hypd_local.lambdas import Invocation, LambdaRuntime
from hypd_local.provision import provision
from hypd_local.scheduler import SCHEDULER_PRINCIPAL, Scheduler
from hypd_local.streams import StreamDelivery, StreamFailure
from hypd_local.template import DEFAULT_ACCOUNT_ID, Stack

LOG = logging.getLogger(__name__)


class FunctionError(Exception):
    """The function failed without its handler raising: import error, unserialisable result."""

    def __init__(self, invocation: Invocation) -> None:
        body = invocation.result
        super().__init__(f"{body.get('errorType')}: {body.get('errorMessage')}")
        self.invocation = invocation
        self.error_type = str(body.get("errorType"))


class LocalCloud(EngineCallbacks, ProcessSetup):
    """moto on loopback + the template's resources + in-process Lambda + a REST API front.

    Args:
        template_path: the SAM template to run.
        region: the Region every client and ARN uses.
        api_port: port of the REST API front (0 picks a free one).
        aws_port: port of the moto server (0 picks one, reusing the previous cloud's if free).
        stack_name: used in physical names (``<stack>-<LogicalId>``).
        parameters: template parameter overrides.
        clock: the virtual clock (default: a ticking clock starting now).
        api: logical id of the AWS::Serverless::Api to serve (default: the first one).
        function_concurrency: invocations of one function that run at once (default 1: one
            warm execution environment per function; None: no limit).
        template_edit: changes the parsed template before it is loaded (tests take a
            permission away with it, and see the path fail as it would on AWS).
    """

    def __init__(
        self,
        template_path: str | os.PathLike[str],
        region: str = "us-west-2",
        api_port: int = 0,
        aws_port: int = 0,
        *,
        stack_name: str = "hypd",
        parameters: Mapping[str, Any] | None = None,
        clock: VirtualClock | None = None,
        api: str | None = None,
        function_concurrency: int | None = 1,
        template_edit: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.template_path = Path(template_path).resolve()
        self.region = region
        self.account_id = DEFAULT_ACCOUNT_ID
        self.stack_name = stack_name
        self._parameters = dict(parameters or {})
        self._api_port = api_port
        self._aws_port = aws_port
        self._api_logical_id = api
        self._function_concurrency = function_concurrency
        self._template_edit = template_edit
        self.clock = clock or VirtualClock()
        self.activity = Activity()
        self.event_log = EventLog()
        """Every event the buses received (`hypd_local.eventlog`)."""

        self._started = False
        self._stopping = False
        self._moto: BaseWSGIServer | None = None
        self._moto_thread: threading.Thread | None = None
        self._moto_transport: transport.InProcessTransport | None = None
        self._front: ApiFront | None = None
        self._stack: Stack | None = None
        self._lambdas: LambdaRuntime | None = None
        self._delivery: EventDelivery | None = None
        self._scheduler: Scheduler | None = None
        self._invoker: AsyncInvoker | None = None
        self._streams: StreamDelivery | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._saved_env: dict[str, str | None] = {}
        self._clients: dict[str, Any] = {}
        self._clients_lock = threading.Lock()
        self._executions: dict[str, Any] = {}
        self._executions_cond = threading.Condition()
        self._hypd_clock: Any = None
        self.emulation: Emulation | None = None

    # ------------------------------------------------------------------ life cycle
    def __enter__(self) -> LocalCloud:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> LocalCloud:
        """Start moto, create the stack's resources and serve the REST API."""
        if self._started:
            raise RuntimeError("this LocalCloud is already started")
        patches.install()
        if patches.active() is not None:
            raise RuntimeError("another LocalCloud is running in this process; stop it first")
        self._started = True
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        _reset_moto()
        self.emulation = Emulation(
            clock=self.clock,
            emit=self._emit_from_service,
            account_id=self.account_id,
            region=self.region,
        )
        self._start_moto()
        self._set_environment()
        self._stack = Stack(
            self.template_path,
            region=self.region,
            account_id=self.account_id,
            stack_name=self.stack_name,
            parameters=self._parameters,
            aws_endpoint=self.aws_endpoint,
            edit=self._template_edit,
        )
        credentials.install()
        self.identities = Identities(lambda: self.client("sts"), self.emulation.directory)
        self._lambdas = LambdaRuntime(self._stack.functions,
                                      concurrency=self._function_concurrency,
                                      sessions=self._function_session)
        self._executor = ThreadPoolExecutor(max_workers=32, thread_name_prefix="local-cloud")
        self._invoker = AsyncInvoker(lambdas=self._lambdas, clock=self.clock, client=self.client)
        self._delivery = EventDelivery(
            lambdas=self._lambdas,
            invoker=self._invoker,
            activity=self.activity,
            executor=self._executor,
            client=self.client,
            account_id=self.account_id,
            region=self.region,
        )
        self.resource_policies = ResourcePolicies(
            self._stack.resource_policies.values(), partition=self._stack.partition,
            region=self.region, account_id=self.account_id,
            topic_keys={t.arn: t.attributes["KmsMasterKeyId"]
                        for t in self._stack.topics.values() if "KmsMasterKeyId" in t.attributes},
            live=self._live_policy)
        self._delivery.policies = self.resource_policies
        patches.activate(self)
        self.emulation.start(sts_endpoint=self.aws_endpoint)
        self._use_virtual_time_in_domain()
        provision(self._stack, self.client, self.emulation.directory)
        self._streams = StreamDelivery(
            mappings=list(self._stack.stream_mappings.values()),
            lambdas=self._lambdas,
            activity=self.activity,
            executor=self._executor,
            clock=self.clock,
            records=_stream_records(self.account_id, self.region),
            client=self.client,
            region=self.region,
        )
        self._lambdas.warm()
        api = self._choose_api()
        if api is not None:
            self._front = ApiFront(
                api,
                lambdas=self._lambdas,
                clock=self.clock,
                account_id=self.account_id,
                region=self.region,
                port=self._api_port,
                admin=self._admin_routes(),
                access=ApiAccess(
                    api, enforcer=self.emulation.enforcer, policies=self.resource_policies,
                    role_session=lambda role, name: self.identities.session(
                        role, name, APIGATEWAY_PRINCIPAL), partition=self._stack.partition,
                    region=self.region, account_id=self.account_id),
            )
            self._front.start()
            self._delivery.api_targets = ApiTargets(
                front=self._front, clock=self.clock,
                session=lambda role, name: self.identities.session(
                    role, name, EVENTS_PRINCIPAL, source_account=self.account_id))
        self._scheduler = Scheduler(
            clock=self.clock, activity=self.activity, account_id=self.account_id,
            region=self.region, client=self.client,
            session=lambda role, name: self.identities.session(
                role, name, SCHEDULER_PRINCIPAL, source_account=self.account_id))
        self._scheduler.start()
        LOG.info("local cloud up: API %s, AWS %s", self.api_url if api else "-", self.aws_endpoint)

    def stop(self) -> None:
        """Stop everything this cloud started; safe to call more than once."""
        if not self._started:
            return
        self._stopping = True
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None
        if self._front is not None:
            self._front.stop()
            self._front = None
        self._abort_running_executions()
        try:
            self.activity.wait_idle(timeout=10)
        except TimeoutError as exc:
            LOG.warning("stopping with background work left: %s", exc)
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        if self.emulation is not None:
            self.emulation.stop()
        patches.deactivate(self)
        self._restore_domain_time()
        if self._lambdas is not None:
            self._lambdas.close()
        self._streams = None
        self._clients.clear()
        self._stop_moto()
        _reset_moto()
        self._restore_environment()
        self._started = False
        self._stopping = False

    # ------------------------------------------------------------------ public API

    @property
    def api_url(self) -> str:
        """Base URL of the REST API, stage included (e.g. ``http://127.0.0.1:PORT/v1``)."""
        if self._front is None:
            raise RuntimeError("no REST API is being served (none in the template, or stopped)")
        return self._front.url

    @property
    def api_front(self) -> ApiFront:
        """The REST API front: its IAM refusals (``refusals``), slow answers (``slow_answers``)."""
        if self._front is None:
            raise RuntimeError("no REST API is being served")
        return self._front

    @property
    def local_url(self) -> str:
        """Base URL of the ``/_local`` endpoints (the API front's host, without the stage)."""
        if self._front is None:
            raise RuntimeError("no REST API is being served")
        return self._front.base_url

    @property
    def stack(self) -> Stack:
        if self._stack is None:
            raise RuntimeError("the local cloud is not started")
        return self._stack

    @property
    def resources(self) -> dict[str, Any]:
        """Logical id -> physical id, as ``Ref`` gives it (table name, state machine ARN,
        function name, queue URL, ...). Resources implied by SAM (roles, event rules, their
        queues) are included under SAM's logical ids."""
        return self.stack.refs()

    @property
    def delivery_failures(self) -> list[DeliveryFailure]:
        """EventBridge deliveries to Lambda/Step Functions targets that failed, in order."""
        return self.delivery.failures

    @property
    def stream_failures(self) -> list[StreamFailure]:
        """Stream batches a mapping gave up after its retries, in order."""
        return self._streams.failures if self._streams is not None else []

    @property
    def async_failures(self) -> list[AsyncFailure]:
        """Asynchronous invocations (EventBridge targets, InvocationType=Event) whose handler
        still failed after Lambda's retries, in order."""
        if self._invoker is None:
            raise RuntimeError("the local cloud is not started")
        return self._invoker.failures

    def environment(self) -> dict[str, str]:
        """The variables a shell needs to use this cloud with the AWS CLI or boto3."""
        env = {
            "AWS_ENDPOINT_URL": self.aws_endpoint,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
        }
        if self._front is not None:
            env["HYPD_ENDPOINT"] = self.api_url  # what the hypd CLI and MCP server read
        return env

    def invoke(self, function_logical_id: str, event: Any) -> Any:
        """Invoke a function in-process and return its result.

        Raises the handler's own exception when it raised one, else `FunctionError` (import
        failure, unserialisable result).
        """
        result = self.lambdas.invoke(function_logical_id, event)
        if result.error:
            if result.exception is not None:
                raise result.exception
            raise FunctionError(result) from result.failure
        return result.result

    def invoke_raw(self, function_logical_id: str, event: Any) -> Invocation:
        """Invoke a function in-process; the `Invocation` says whether it failed."""
        return self.lambdas.invoke(function_logical_id, event)

    def emit_event(
        self, source: str, detail_type: str, detail: Mapping[str, Any],
        resources: list[str] | None = None, event_bus: str = "default",
    ) -> None:
        """Put an event on a bus as an AWS service would (e.g. a HyperPod state change)."""
        self.delivery.put_event(source=source, detail_type=detail_type, detail=detail,
                                resources=resources, event_bus=event_bus)

    def fire_alarm(self, logical_id: str, state: str = "ALARM",
                   reason: str = "fired by a test") -> list[AlarmAction]:
        """Change a template alarm's state: CloudWatch publishes to its actions' topics as
        ``cloudwatch.amazonaws.com``, as far as their topic and key policies let it."""
        alarm = self.stack.alarms[logical_id]

        def publish(topic_arn: str, subject: str, message: str) -> None:
            self.client("sns").publish(TopicArn=topic_arn, Subject=subject, Message=message)

        return alarms.fire(alarm, state=state, reason=reason, region=self.region,
                           account_id=self.account_id, policies=self.resource_policies,
                           publish=publish, now=self.clock.now().isoformat())

    def watch_authorizations(
        self, observer: Callable[[Authorization], None]
    ) -> AbstractContextManager[None]:
        """Call ``observer`` after every authorisation of a function's (or state machine's,
        or stack role's) request while the block runs: principal, API call, checks, denial."""
        assert self.emulation is not None, "the local cloud is not started"
        return self.emulation.enforcer.watch(observer)

    def wait_for_executions(self, timeout: float = 30.0) -> None:
        """Block until no execution, event delivery or async invocation is running.

        Raises `hypd_local.activity.IdleTimeout` (a TimeoutError) listing what still runs.
        """
        self.activity.wait_idle(timeout)

    def wait_for_execution(self, execution_arn: str, timeout: float = 30.0) -> dict[str, Any]:
        """Block until one execution has ended; returns its DescribeExecution output."""
        with self._executions_cond:
            finished = self._executions_cond.wait_for(
                lambda: execution_arn not in self._executions, timeout=timeout
            )
        if not finished:
            raise TimeoutError(f"execution {execution_arn} still running after {timeout} s")
        result: dict[str, Any] = self.client("stepfunctions").describe_execution(
            executionArn=execution_arn
        )
        return result

    def running_executions(self) -> list[str]:
        with self._executions_cond:
            return sorted(self._executions)

    # ------------------------------------------------------------------ internals
    @property
    def faults(self) -> Faults:
        """Injected AWS errors by (service, operation): see `hypd_local.emulator.faults`."""
        if self.emulation is None:
            raise RuntimeError("the local cloud is not running")
        return self.emulation.faults

    def _emit_from_service(
        self,
        source: str,
        detail_type: str,
        detail: Mapping[str, Any],
        resources: list[str] | None = None,
    ) -> None:
        if self._delivery is None or self._stopping:
            LOG.debug("dropped %s %s: the event bus is not up", source, detail_type)
            return
        self.emit_event(source, detail_type, detail, resources)

    def _live_policy(self, arn: str) -> Any:
        """The ``Policy`` attribute SQS or SNS holds for a queue or topic, None if it has none
        (or the resource is gone)."""
        try:
            if arn.split(":")[2] == "sqs":
                sqs = self.client("sqs")
                url = sqs.get_queue_url(QueueName=arn.rsplit(":", 1)[1])["QueueUrl"]
                return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"]).get(
                    "Attributes", {}).get("Policy")
            return self.client("sns").get_topic_attributes(TopicArn=arn)["Attributes"].get(
                "Policy")
        except self.client("sqs").exceptions.QueueDoesNotExist:
            return None
        except self.client("sns").exceptions.NotFoundException:
            return None

    def _admin_routes(self) -> dict[tuple[str, str], AdminHandler]:
        """The `/_local/` endpoints beyond the clock: info, clock advance and faults."""

        def info(_body: Any) -> tuple[int, Any]:
            return 200, {
                "awsEndpoint": self.aws_endpoint,
                "region": self.region,
                "accountId": self.account_id,
                "apiUrl": self.api_url,
                "now": self.clock.now().isoformat(),
                # the keys the local cloud treats as its account's administrator (fake ones)
                "credentials": {"accessKeyId": ACCESS_KEY_ID,
                                "secretAccessKey": SECRET_ACCESS_KEY},
            }

        def advance(body: Any) -> tuple[int, Any]:
            seconds = body.get("seconds") if isinstance(body, dict) else None
            if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
                return 400, {"message": 'expected {"seconds": N} with N >= 0'}
            return 200, {"now": self.clock.advance(float(seconds)).isoformat()}

        def now(_body: Any) -> tuple[int, Any]:
            return 200, {"now": self.clock.now().isoformat()}

        routes: dict[tuple[str, str], AdminHandler] = {
            ("GET", "/_local/health"): lambda _body: (200, {"status": "ok"}),
            ("GET", "/_local/info"): info,
            ("GET", "/_local/clock"): now,
            ("POST", "/_local/clock/advance"): advance,
            ("GET", "/_local/events"): self.event_log.admin_route,
        }
        routes.update(admin_routes(self.faults))
        if self.emulation is not None:
            routes.update(self.emulation.admin_routes())
        return routes

    def _choose_api(self) -> Any:
        apis = self.stack.apis
        if not apis:
            return None
        if self._api_logical_id is not None:
            if self._api_logical_id not in apis:
                raise ValueError(
                    f"no AWS::Serverless::Api {self._api_logical_id!r} in the template"
                )
            return apis[self._api_logical_id]
        if len(apis) > 1:
            LOG.warning("the template has several APIs (%s); serving %s", ", ".join(apis),
                        next(iter(apis)))
        return next(iter(apis.values()))


def _stream_records(account_id: str, region: str) -> Callable[[str], tuple[str, list[Any]]]:
    """``records(table)``: the id and records of a table's stream shard in moto."""

    def records(table_name: str) -> tuple[str, list[Any]]:
        from moto.dynamodb.models import dynamodb_backends

        shard = dynamodb_backends[account_id][region].get_table(table_name).stream_shard
        return (shard.id, shard.items) if shard is not None else ("", [])

    return records
