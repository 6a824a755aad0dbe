"""Shared helpers of the unit suite (builders, the template, a deterministic clock)."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from cfnlint.decode import decode

from hypd.clusters.models import Cluster, ClusterSource, EksCluster, HyperPodCluster
from hypd.errors import ConcurrentUpdate
from hypd.operations import lifecycle
from hypd.operations.models import Operation, OperationKind

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = ROOT / "template.yaml"
EVENTS = ROOT / "events"
REGION = "us-west-2"
ACCOUNT = "123456789012"
TABLE_NAME = "hypd-unit-HypdTable"
START = datetime(2026, 1, 15, 10, 0, 0, tzinfo=UTC)
T = TypeVar("T")


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: datetime = START) -> None:
        self.value = start

    def __call__(self) -> datetime:
        return self.value

    def advance(self, seconds: float = 1.0) -> None:
        self.value += timedelta(seconds=seconds)


def load_template() -> dict[str, Any]:
    """template.yaml as plain JSON-like data (cfn-lint's decoder understands the short tags)."""
    decoded, matches = decode(str(TEMPLATE_PATH))
    assert not matches, f"template.yaml does not parse: {matches}"
    assert decoded is not None
    plain: dict[str, Any] = json.loads(json.dumps(decoded))
    return plain


def hypd_table_properties(template: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = template["Resources"]["HypdTable"]["Properties"]
    return properties


def create_hypd_table(client: Any, template: dict[str, Any], name: str = TABLE_NAME) -> None:
    """Create HypdTable exactly as template.yaml defines its keys and indexes."""
    properties = hypd_table_properties(template)
    client.create_table(
        TableName=name,
        BillingMode=properties["BillingMode"],
        AttributeDefinitions=properties["AttributeDefinitions"],
        KeySchema=properties["KeySchema"],
        GlobalSecondaryIndexes=properties["GlobalSecondaryIndexes"],
    )


class SerializedClient:
    """Forwards to a boto3 client, one API call at a time.

    DynamoDB executes each request atomically (a conditional put checks and writes as one
    step); moto's in-process backend does not lock, so threads share the client through this
    wrapper. Calls from different threads still interleave between requests, which is the race
    optimistic locking must survive.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(*args, **kwargs)

        return call


def run_concurrently(calls: Sequence[Callable[[], T]]) -> list[T]:
    """Run each call on a thread of its own, all released at once; their results, in order.

    A call that loses every optimistic attempt (`ConcurrentUpdate`, a temporary error) runs
    again, as the function's retry policy would run it: how often a writer loses depends on
    how the machine schedules the threads, so a test judges only what the writes left. Any
    other exception, or a call still running after a minute, fails the test.
    """
    barrier = threading.Barrier(len(calls))
    results: dict[int, T] = {}
    errors: list[BaseException] = []

    def run(index: int, call: Callable[[], T]) -> None:
        barrier.wait()
        while True:
            try:
                results[index] = call()
                return
            except ConcurrentUpdate:
                continue
            except BaseException as exc:  # reported below, not lost in a thread
                errors.append(exc)
                return

    threads = [threading.Thread(target=run, args=pair) for pair in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a call never finished"
    assert errors == []
    return [results[index] for index in range(len(calls))]


def discover_operation(*, lock_scope: str | None = None, **input: Any) -> Operation:
    return lifecycle.new_operation(OperationKind.DISCOVER, input=input, lock_scope=lock_scope)


def operation_with_cluster(cluster_tag: str | None) -> Operation:
    """A discover-shaped operation bound to a cluster (the store treats every kind alike)."""
    operation = lifecycle.new_operation(OperationKind.DISCOVER)
    operation.cluster_tag = cluster_tag
    return operation


def eks_arn(name: str) -> str:
    return f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{name}"


def hyperpod_arn(name: str) -> str:
    return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/{name}"


def eks(name: str, *, tags: dict[str, str] | None = None) -> EksCluster:
    return EksCluster(
        name=name,
        arn=eks_arn(name),
        status="ACTIVE",
        version="1.31",
        tags=tags or {},
    )


def hyperpod(
    name: str, *, eks_name: str | None = None, tags: dict[str, str] | None = None
) -> HyperPodCluster:
    return HyperPodCluster(
        name=name,
        arn=hyperpod_arn(name),
        status="InService",
        eks_cluster_arn=eks_arn(eks_name) if eks_name else None,
        tags=tags or {},
    )


def cluster_record(
    tag: str,
    anchor_arn: str,
    *,
    source: ClusterSource = ClusterSource.DISCOVERED,
    at: str = "2026-01-01T00:00:00.000Z",
) -> Cluster:
    return Cluster(
        tag=tag,
        source=source,
        region=REGION,
        anchor_arn=anchor_arn,
        created_at=at,
        updated_at=at,
        last_seen_at=at,
    )


def load_event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    return event


# ---------------------------------------------------------------------------- Lambda functions
class FakeLambdaContext:
    """The attributes of the Lambda context object that Powertools reads."""

    def __init__(self, function_name: str) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 512
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function_name}"
        self.aws_request_id = "c6af9ac6-7b61-11e6-9a41-93e812345678"
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "2026/01/15/[$LATEST]0123456789abcdef0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 25_000


def function_environment(
    template: dict[str, Any], logical_id: str, refs: dict[str, str]
) -> dict[str, str]:
    """The environment template.yaml gives a function (Globals + its own), Refs resolved: from
    `refs`, a parameter's default, else a placeholder ARN naming the resource."""
    variables: dict[str, Any] = dict(template["Globals"]["Function"]["Environment"]["Variables"])
    own = template["Resources"][logical_id]["Properties"].get("Environment", {})
    variables.update(own.get("Variables", {}))
    parameters = template.get("Parameters", {})
    environment: dict[str, str] = {}
    for name, value in variables.items():
        if isinstance(value, dict) and set(value) == {"Ref"}:
            ref = value["Ref"]
            if ref in refs:
                value = refs[ref]
            elif ref in parameters:
                value = parameters[ref]["Default"]
            else:  # a resource the test does not use: a placeholder of the right kind
                value = f"arn:aws:unit:{REGION}:{ACCOUNT}:{ref}"
        assert isinstance(value, str), f"{logical_id} {name}: unsupported value {value!r}"
        environment[name] = value
    return environment


_MISSING = object()


@contextmanager
def isolated_modules(prefix: str = "hypd.api") -> Iterator[None]:
    """Run with the `prefix` modules not imported, and leave sys.modules as it was found.

    A new Lambda execution environment imports hypd.api under the function's environment;
    hypd.api's modules bind Powertools child loggers to POWERTOOLS_SERVICE_NAME at import, so
    a module imported under another environment must neither leak into a test nor out of it.
    """

    def ours(name: str) -> bool:
        return name == prefix or name.startswith(f"{prefix}.")

    parent, _, attribute = prefix.rpartition(".")
    parent_module = sys.modules[parent]
    saved = {name: module for name, module in sys.modules.items() if ours(name)}
    saved_attribute = parent_module.__dict__.get(attribute, _MISSING)
    for name in saved:
        del sys.modules[name]
    parent_module.__dict__.pop(attribute, None)
    try:
        yield
    finally:
        for name in [name for name in sys.modules if ours(name)]:
            del sys.modules[name]
        sys.modules.update(saved)
        parent_module.__dict__.pop(attribute, None)
        if saved_attribute is not _MISSING:
            setattr(parent_module, attribute, saved_attribute)


def load_function_module(function_dir: str) -> Any:
    """Import functions/<dir>/app.py under a unique module name (as the local cloud does).

    Call it inside `isolated_modules()` (the `fresh_imports` fixture), so hypd.api is imported
    afresh under the function's environment, as in a new execution environment.
    """
    assert "hypd.api" not in sys.modules, "load functions inside isolated_modules()"
    path = ROOT / "functions" / function_dir / "app.py"
    name = f"hypd_unit_{function_dir}_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answer_list_training_plans(session: Any, summaries: list[dict[str, Any]]) -> None:
    """Make ListTrainingPlans on `session`'s clients answer `summaries` (moto lacks it).

    A `before-call` handler that returns a response short-circuits the call (moto answers at
    `before-send`, later). It is registered last on the plain `before-call` event, so a call
    recorder registered there earlier still sees the call.
    """
    from botocore.awsrequest import AWSResponse

    def answer(model: Any, **_kwargs: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if model.name != "ListTrainingPlans":
            return None
        return AWSResponse("", 200, {}, None), {"TrainingPlanSummaries": summaries}

    session.events.register_last("before-call", answer, unique_id=ANSWER_TRAINING_PLANS)


ANSWER_TRAINING_PLANS = "answer-list-training-plans"
