"""The workload operations' tasks (WorkloadStateMachine, run by FeatureTasksFunction: the
function with a cluster-admin access entry on the cluster; docs/workloads.md, "Operations").

- ``workload-submit`` (stage submit): create the object the operation recorded; an object of
  that name created since the API's check fails the stage (`ObjectExists`, permanent).
- ``workload-deploy[-check]`` (stage deploy): the operator's status to DeploymentComplete;
  DeploymentFailed fails with the operator's message; the object's maxDeployTimeInSeconds bounds
  the wait.
- ``workload-register[-check]`` (stage register): the SageMaker endpoint CreationCompleted.
- ``workload-delete[-check]`` (stage delete): delete (foreground) and wait until the object and
  its pods are gone (the operator's finalizers run first).
- ``finish-workload`` / ``fail-workload``.
"""

from __future__ import annotations

from typing import Any

from hypd.clusters.workload_request import WorkloadInput
from hypd.errors import PermanentError
from hypd.features.tasks import FeatureServices, fail_features
from hypd.kubernetes.apply import delete_object, read_object
from hypd.kubernetes.objects import create_object
from hypd.operations.models import Operation, OperationKind
from hypd.operations.steps import FailInput, OperationInput, Steps, poll_result, polled, ready
from hypd.tasks import TaskRouter
from hypd.workloads import views
from hypd.workloads.cluster import job_pods
from hypd.workloads.manifests import KINDS, TRAINING_JOB

router = TaskRouter()

DEPLOY_FIRST_LOOK = 120
"""An endpoint's model download and server start take minutes: first look after two."""
DEPLOY_INTERVAL = 30
DEFAULT_MAX_DEPLOY_SECONDS = 3600
"""The operator's default spec.maxDeployTimeInSeconds."""
REGISTER_INTERVAL = 30
DELETE_INTERVAL = 15


class DeploymentFailed(PermanentError):
    code = "DeploymentFailed"


class DeploymentTimedOut(PermanentError):
    code = "DeploymentTimedOut"


class RegistrationFailed(PermanentError):
    code = "RegistrationFailed"


def _work(services: FeatureServices, task: OperationInput) -> tuple[Operation, WorkloadInput]:
    operation = services.operations.get(task.operation_id)
    return operation, WorkloadInput.model_validate(operation.input)


def _read(services: FeatureServices, work: WorkloadInput) -> dict[str, Any] | None:
    kind = KINDS[work.kind]
    return read_object(services.clients.kubernetes(work.eks_name), kind.api_version, kind.kind,
                       work.name, work.namespace)


@router.task("workload-submit", OperationInput)
def submit(task: OperationInput, services: FeatureServices) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        operation, work = _work(services, task)
        assert work.manifest is not None, "a submit records its manifest"
        created = create_object(services.clients.kubernetes(work.eks_name), work.manifest)
        deploys = operation.kind is OperationKind.DEPLOY_ENDPOINT
        return {"ready": True, "then": "deploy" if deploys else "done",
                "uid": (created.get("metadata") or {}).get("uid"),
                "namespace": work.namespace, "name": work.name, "kind": work.kind}

    return services.steps.step(task, "submit", work, start=True, complete=True,
                               summarize=lambda r: {k: r[k] for k in
                                                    ("kind", "namespace", "name", "uid")})


@polled(router, "workload-deploy", "workload-deploy-check")
def deploy(task: OperationInput, services: FeatureServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        operation, work = _work(services, task)
        obj = _read(services, work)
        if obj is None:
            raise DeploymentFailed(
                f"{work.kind} {work.namespace}/{work.name} is gone: it was deleted while it "
                "deployed")
        view = views.endpoint_view(obj)
        if view["state"] == views.FAILED_STATE:
            raise DeploymentFailed(
                f"the inference operator could not deploy {work.namespace}/{work.name}: "
                f"{view.get('message') or 'DeploymentFailed'}",
                details={"state": view["state"]})
        if view["ready"]:
            return {**poll_result(True), "register": bool(work.sagemaker_endpoint_name),
                    "replicas": view["replicas"], "readyReplicas": view["readyReplicas"]}
        limit = int((obj.get("spec") or {}).get("maxDeployTimeInSeconds")
                    or DEFAULT_MAX_DEPLOY_SECONDS)
        elapsed = Steps.elapsed(operation, "deploy")
        if elapsed > limit:
            raise DeploymentTimedOut(
                f"{work.namespace}/{work.name} is still {view['state']} after {int(elapsed)} s "
                f"(its maxDeployTimeInSeconds is {limit}): {view.get('message') or ''}".rstrip(
                    ": "))
        wait = DEPLOY_FIRST_LOOK if start else DEPLOY_INTERVAL
        waiting = (f"{work.kind} {work.namespace}/{work.name} is {view['state']} "
                   f"({view['readyReplicas']} of {view['replicas']} replicas ready)")
        return {**poll_result(False, wait, waiting=waiting), "state": view["state"],
                "readyReplicas": view["readyReplicas"]}

    return services.steps.step(
        task, "deploy", work, start=start, complete=ready,
        summarize=lambda r: {"replicas": r["replicas"], "readyReplicas": r["readyReplicas"]},
        progress=lambda r: {"state": r["state"], "readyReplicas": r["readyReplicas"]},
    )


@polled(router, "workload-register", "workload-register-check")
def register(task: OperationInput, services: FeatureServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, work = _work(services, task)
        obj = _read(services, work)
        sagemaker = (views.endpoint_view(obj).get("sageMaker") or {}) if obj else {}
        state = sagemaker.get("state")
        if state == views.REGISTERED_STATE:
            return {**poll_result(True), "endpointName": sagemaker.get("endpointName"),
                    "endpointArn": sagemaker.get("endpointArn")}
        if state and "Failed" in str(state):
            raise RegistrationFailed(
                f"SageMaker endpoint {work.sagemaker_endpoint_name} of {work.name} is {state}")
        waiting = (f"SageMaker endpoint {work.sagemaker_endpoint_name} of {work.name} is "
                   f"{state or 'Pending'}")
        return {**poll_result(False, REGISTER_INTERVAL, waiting=waiting),
                "state": state or "Pending"}

    return services.steps.step(
        task, "register", work, start=start, complete=ready,
        summarize=lambda r: {"endpointName": r["endpointName"], "endpointArn": r["endpointArn"]},
        progress=lambda r: {"state": r["state"]},
    )


@polled(router, "workload-delete", "workload-delete-check")
def delete(task: OperationInput, services: FeatureServices, *, start: bool) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        _operation, work = _work(services, task)
        api = services.clients.kubernetes(work.eks_name)
        kind = KINDS[work.kind]
        obj = _read(services, work)
        if obj is not None and start:
            delete_object(api, kind.api_version, kind.kind, work.name, work.namespace,
                          propagation="Foreground")
        pods = job_pods(api, work.namespace, work.name) if kind is TRAINING_JOB else []
        if obj is None and not pods:
            return {**poll_result(True), "deleted": f"{work.namespace}/{work.name}"}
        left = ([f"{work.kind} {work.namespace}/{work.name}"] if obj is not None else []) + (
            [f"{len(pods)} pod(s)"] if pods else [])
        return {**poll_result(False, DELETE_INTERVAL, waiting="still there: " + ", ".join(left)),
                "remaining": len(pods) + (obj is not None)}

    return services.steps.step(
        task, "delete", work, start=start, complete=ready,
        summarize=lambda r: {"deleted": r["deleted"]},
        progress=lambda r: {"remaining": r["remaining"]},
    )


@router.task("finish-workload", OperationInput)
def finish(task: OperationInput, services: FeatureServices) -> dict[str, Any]:
    def output(operation: Operation) -> dict[str, Any]:
        work = WorkloadInput.model_validate(operation.input)
        result: dict[str, Any] = {"tag": work.tag, "kind": work.kind,
                                  "namespace": work.namespace, "name": work.name}
        if operation.kind in (OperationKind.DELETE_TRAINING_JOB, OperationKind.DELETE_ENDPOINT):
            return {**result, "deleted": True}
        obj = _read(services, work)
        if obj is not None and work.kind != TRAINING_JOB.kind:
            result["endpoint"] = views.endpoint_view(obj)
        elif obj is not None:
            result["job"] = views.job_summary(obj)
        return result

    return services.steps.finish(task, output)


@router.task("fail-workload", FailInput)
def fail(task: FailInput, services: FeatureServices) -> dict[str, Any]:
    return fail_features(task, services)
