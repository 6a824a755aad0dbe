"""Routes: /clusters/{tag}/training-jobs and /clusters/{tag}/inference-endpoints
(docs/workloads.md).

Reads go to the cluster's Kubernetes API (the API function's read-only access entry); writes
are operations (WorkloadStateMachine), started only after every check passed
(`hypd.workloads.cluster`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hypd.api.context import services
from hypd.api.errors import ERROR_RESPONSES, accepted_response, json_response
from hypd.api.params import Tag
from hypd.api.responses import launch
from hypd.api.workload_models import (
    EndpointList,
    EndpointView,
    InvokeResult,
    TrainingJobList,
    TrainingJobLogs,
    TrainingJobSummary,
    TrainingJobView,
)
from hypd.aws import sagemaker_runtime
from hypd.clusters.workload_request import (
    ENDPOINT_NAME_MAX,
    KUBERNETES_NAME_PATTERN,
    EndpointRequest,
    InvokeRequest,
    TrainingJobRequest,
    WorkloadInput,
)
from hypd.errors import ConflictError, ValidationError
from hypd.kubernetes.objects import pod_logs
from hypd.operations.models import OperationKind
from hypd.workloads import cluster, manifests, views

router = APIGatewayRouter()
TAGS = ["workloads"]
Name = Annotated[str, Path(pattern=KUBERNETES_NAME_PATTERN, max_length=ENDPOINT_NAME_MAX,
                           description="The job's or endpoint's name.")]
Namespace = Annotated[str | None, Query(
    pattern=KUBERNETES_NAME_PATTERN, max_length=63,
    description="The namespace (default: look in every namespace).")]
LOG_TAIL_DEFAULT = 200
LOG_TAIL_MAX = 10000
WRITE_STATUSES = (400, 404, 409, 503)
READ_STATUSES = (400, 404, 409, 503)


def _target(tag: str) -> cluster.Target:
    return cluster.target(services(), services().clusters.get(tag))


def _api(where: cluster.Target) -> Any:
    return cluster.kube(services(), where)


def _responses(schema: str, description: str) -> dict[int, Any]:
    return {200: json_response(schema, description),
            **{s: ERROR_RESPONSES[s] for s in READ_STATUSES}}


ACCEPTED = {
    202: accepted_response("The operation was started; poll GET /operations/{operationId}."),
    **{s: ERROR_RESPONSES[s] for s in WRITE_STATUSES},
}


def _launch(kind: OperationKind, where: cluster.Target, obj_kind: str, namespace: str,
            name: str, manifest: dict[str, Any] | None = None,
            sagemaker_endpoint_name: str | None = None) -> Response[str]:
    work = WorkloadInput(tag=where.tag, eks_name=where.eks_name, namespace=namespace, name=name,
                         kind=obj_kind, manifest=manifest,
                         sagemaker_endpoint_name=sagemaker_endpoint_name)
    return launch(kind, work, where.tag, workload=f"{namespace}/{name}", workload_name=name)


# ---------------------------------------------------------------------------- training jobs
@router.post(
    "/clusters/<tag>/training-jobs",
    operation_id="submitTrainingJob",
    summary="Submit a training job (HyperPodPyTorchJob; an operation)",
    description=(
        "Checked first, each a 4xx naming the field: the training operator is on, the "
        "instance type is one of the cluster's groups and the node count fits them (or "
        "autoscaling is on), the volume claims exist, the name is free, the team and "
        "priority exist. Then 202 with a submit-training-job operation; follow the job with "
        "GET /clusters/{tag}/training-jobs/{name}."
    ),
    tags=TAGS,
    responses=ACCEPTED,
)
def submit_training_job(tag: Tag, request: Annotated[TrainingJobRequest, Body()]
                        ) -> Response[str]:
    where = _target(tag)
    devices = cluster.check_job(services(), where, request)
    manifest = manifests.training_job(request, devices)
    return _launch(OperationKind.SUBMIT_TRAINING_JOB, where, manifests.TRAINING_JOB.kind,
                   manifest["metadata"]["namespace"], request.name, manifest)


@router.get(
    "/clusters/<tag>/training-jobs",
    operation_id="listTrainingJobs",
    summary="List the cluster's training jobs (every HyperPodPyTorchJob, any namespace)",
    tags=TAGS,
    responses=_responses("TrainingJobList", "The jobs."),
)
def list_training_jobs(tag: Tag) -> TrainingJobList:
    where = _target(tag)
    jobs = cluster.list_kinds(_api(where), [manifests.TRAINING_JOB])
    return TrainingJobList(tag=tag, jobs=[TrainingJobSummary.model_validate(views.job_summary(j))
                                          for j in jobs])


@router.get(
    "/clusters/<tag>/training-jobs/<name>",
    operation_id="getTrainingJob",
    summary="Get a training job: phase, restarts, pods and their nodes, node faults, events",
    tags=TAGS,
    responses=_responses("TrainingJobView", "The job."),
)
def get_training_job(tag: Tag, name: Name, namespace: Namespace = None) -> TrainingJobView:
    where = _target(tag)
    view = cluster.read_job(_api(where), services().health_store, tag, name, namespace)
    return TrainingJobView.model_validate(view)


@router.get(
    "/clusters/<tag>/training-jobs/<name>/logs",
    operation_id="getTrainingJobLogs",
    summary="Read a training job pod's logs",
    description="The first pod's (rank 0) unless `pod` names another of the job's pods.",
    tags=TAGS,
    responses=_responses("TrainingJobLogs", "The logs."),
)
def get_training_job_logs(
    tag: Tag,
    name: Name,
    namespace: Namespace = None,
    pod: Annotated[str | None, Query(pattern=KUBERNETES_NAME_PATTERN, max_length=253,
                                     description="One of the job's pods.")] = None,
    container: Annotated[str | None, Query(pattern=KUBERNETES_NAME_PATTERN, max_length=63)
                         ] = None,
    tail: Annotated[int, Query(ge=1, le=LOG_TAIL_MAX, description="The last lines.")
                    ] = LOG_TAIL_DEFAULT,
    since_seconds: Annotated[int | None, Query(alias="sinceSeconds", ge=1, le=31_536_000,
                                               description="Only lines this recent.")] = None,
) -> TrainingJobLogs:
    where = _target(tag)
    api = _api(where)
    job = cluster.find(api, [manifests.TRAINING_JOB], name, namespace)
    job_namespace = str(job["metadata"]["namespace"])
    pods = sorted(str(p["metadata"]["name"]) for p in cluster.job_pods(api, job_namespace, name))
    if pod is None:
        if not pods:
            raise ConflictError(f"training job {name} has no pods yet (it is "
                                f"{views.phase(job)})", details={"name": name})
        pod = pods[0]
    elif pod not in pods:
        raise ValidationError(
            f"pod: {pod} is not a pod of training job {name} ({', '.join(pods) or 'none'})",
            details={"field": "pod"})
    text = pod_logs(api, job_namespace, pod, container=container, tail_lines=tail,
                    since_seconds=since_seconds)
    return TrainingJobLogs(name=name, namespace=job_namespace, pod=pod, container=container,
                           logs=text)


@router.delete(
    "/clusters/<tag>/training-jobs/<name>",
    operation_id="deleteTrainingJob",
    summary="Delete a training job and its pods (an operation)",
    tags=TAGS,
    responses=ACCEPTED,
)
def delete_training_job(tag: Tag, name: Name, namespace: Namespace = None) -> Response[str]:
    where = _target(tag)
    job = cluster.find(_api(where), [manifests.TRAINING_JOB], name, namespace)
    return _launch(OperationKind.DELETE_TRAINING_JOB, where, manifests.TRAINING_JOB.kind,
                   str(job["metadata"]["namespace"]), name)


# ---------------------------------------------------------------------------- endpoints
def _endpoint_view(obj: dict[str, Any], tag: str) -> EndpointView:
    view = views.endpoint_view(obj)
    if views.registered(view):
        view["invoke"] = f"/clusters/{tag}/inference-endpoints/{view['name']}/invoke"
    return EndpointView.model_validate(view)


@router.post(
    "/clusters/<tag>/inference-endpoints",
    operation_id="deployInferenceEndpoint",
    summary="Deploy a JumpStart or a custom model as an inference endpoint (an operation)",
    description=(
        "Checked first: the inference operator is on, the instance type is one of the "
        "cluster's groups and the replicas fit, the name is free, the team exists. The "
        "deploy-endpoint operation waits until the deployment is complete (minutes) and, when "
        "sageMakerEndpointName is given, until the SageMaker endpoint exists."
    ),
    tags=TAGS,
    responses=ACCEPTED,
)
def deploy_inference_endpoint(tag: Tag, request: Annotated[EndpointRequest, Body()]
                              ) -> Response[str]:
    where = _target(tag)
    cluster.check_endpoint(services(), where, request)
    manifest = manifests.endpoint(request, where.region)
    return _launch(OperationKind.DEPLOY_ENDPOINT, where, manifest["kind"],
                   manifest["metadata"]["namespace"], request.name, manifest,
                   request.sagemaker_endpoint_name)


@router.get(
    "/clusters/<tag>/inference-endpoints",
    operation_id="listInferenceEndpoints",
    summary="List the cluster's inference endpoints (JumpStartModel, InferenceEndpointConfig)",
    tags=TAGS,
    responses=_responses("EndpointList", "The endpoints."),
)
def list_inference_endpoints(tag: Tag) -> EndpointList:
    where = _target(tag)
    objects = cluster.list_kinds(_api(where), manifests.ENDPOINT_KINDS)
    return EndpointList(tag=tag, endpoints=[_endpoint_view(o, tag) for o in objects])


@router.get(
    "/clusters/<tag>/inference-endpoints/<name>",
    operation_id="getInferenceEndpoint",
    summary="Get an inference endpoint: state, replicas ready, its SageMaker endpoint",
    tags=TAGS,
    responses=_responses("EndpointView", "The endpoint."),
)
def get_inference_endpoint(tag: Tag, name: Name, namespace: Namespace = None) -> EndpointView:
    where = _target(tag)
    return _endpoint_view(cluster.find(_api(where), manifests.ENDPOINT_KINDS, name, namespace),
                          tag)


@router.post(
    "/clusters/<tag>/inference-endpoints/<name>/invoke",
    operation_id="invokeInferenceEndpoint",
    summary="Invoke an endpoint registered with SageMaker (sagemaker-runtime InvokeEndpoint)",
    tags=TAGS,
    responses={200: json_response("InvokeResult", "The model's answer."),
               **{s: ERROR_RESPONSES[s] for s in (400, 404, 409, 503)},
               424: {"description": "The model answered an error.",
                     "content": ERROR_RESPONSES[409]["content"]}},
)
def invoke_inference_endpoint(tag: Tag, name: Name, request: Annotated[InvokeRequest, Body()],
                              namespace: Namespace = None) -> InvokeResult:
    where = _target(tag)
    view = _endpoint_view(cluster.find(_api(where), manifests.ENDPOINT_KINDS, name, namespace),
                          tag)
    if view.sage_maker is None:
        raise ConflictError(
            f"endpoint {name} is not registered with SageMaker (it was deployed without "
            "sageMakerEndpointName): invoke it from inside the cluster",
            details={"name": name})
    if view.invoke is None:
        raise ConflictError(
            f"endpoint {name}'s SageMaker endpoint {view.sage_maker.endpoint_name} is "
            f"{view.sage_maker.state or 'not created yet'}; wait for the deployment to finish",
            details={"name": name, "state": view.sage_maker.state})
    payload = (request.body.encode() if isinstance(request.body, str)
               else json.dumps(request.body).encode())
    answer = sagemaker_runtime.invoke_endpoint(
        services().feature_clients().client("sagemaker-runtime"),
        view.sage_maker.endpoint_name, payload, request.content_type, request.accept)
    text = answer.body.decode("utf-8", "replace")
    body: Any = text
    if (answer.content_type or "").startswith("application/json"):
        try:
            body = json.loads(text)
        except ValueError:
            body = text
    return InvokeResult(endpoint_name=view.sage_maker.endpoint_name,
                        content_type=answer.content_type, body=body,
                        invoked_production_variant=answer.invoked_production_variant)


@router.delete(
    "/clusters/<tag>/inference-endpoints/<name>",
    operation_id="deleteInferenceEndpoint",
    summary="Delete an inference endpoint (an operation: until the operator's finalizer is done)",
    tags=TAGS,
    responses=ACCEPTED,
)
def delete_inference_endpoint(tag: Tag, name: Name, namespace: Namespace = None
                              ) -> Response[str]:
    where = _target(tag)
    obj = cluster.find(_api(where), manifests.ENDPOINT_KINDS, name, namespace)
    return _launch(OperationKind.DELETE_ENDPOINT, where, str(obj["kind"]),
                   str(obj["metadata"]["namespace"]), name)
