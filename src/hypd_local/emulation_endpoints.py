"""The HyperPod inference operator of the local cloud: part of the Kubernetes sync
(`emulation_kube`), run on every tick for each served cluster whose inference add-on runs (its
controller Deployment exists and is Available).

Each JumpStartModel and InferenceEndpointConfig (``inference.sagemaker.aws.amazon.com/v1``)
gets the finalizer `FINALIZER` and goes, in ``status.state`` (and
``status.deploymentStatus.deploymentObjectOverallState``, and one condition per state, the
current one True):

- ``DeploymentPending`` for `PENDING_SECONDS`; a JumpStartModel of a gated model whose
  ``spec.model.acceptEula`` is not true goes ``DeploymentFailed`` instead. The emulator's rule
  for "gated" (made up): the model id contains ``llama`` or ``meta-``;
- ``DeploymentInProgress``: ``spec.replicas`` (default 1) pods ``<name>-<i>`` on nodes of
  ``spec.server.instanceType`` / ``spec.instanceType`` (the scheduler of `emulation_pods`);
  while some cannot be placed the message says so, and past ``spec.maxDeployTimeInSeconds``
  (default 3600) from creation it is ``DeploymentFailed`` (its pods deleted);
- ``DeploymentComplete`` the deploy time (`emulation_behave`, 120 s by default) after every
  pod runs; ``deploymentStatus.status {replicas, readyReplicas, availableReplicas,
  updatedReplicas}`` counts the pods. A pod whose node fails is made again elsewhere.

With ``spec.sageMakerEndpoint.name`` / ``spec.endpointName`` the operator then registers that
SageMaker endpoint (`emulator.sagemaker_endpoints`): ``status.endpoints.sagemaker {state,
endpointArn, configArn, modelArn}`` is ``CreationInProgress`` for `REGISTER_SECONDS`, then
``CreationCompleted`` (the endpoint InService). Deleting the object (the API server sets its
deletionTimestamp and keeps it for the finalizer) makes it ``DeletionInProgress``: its pods and
SageMaker endpoint go, and `DELETE_SECONDS` later the finalizer is removed (the object is gone).

While the operator does not run, nothing happens: an object being deleted keeps its finalizer
and stays. Deleting the add-on deletes its CRDs, and the local object store deletes the
objects with them, finalizers or not (a real API server keeps the CRD until they are
finalized); a SageMaker endpoint registered then stays, as on AWS. The finalizer's name, the
durations, the pods' names, labels and container are the emulator's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from hypd_local.clock import VirtualClock
from hypd_local.emulation_behave import Workloads
from hypd_local.emulation_operators import served_type, with_condition
from hypd_local.emulation_pods import Cluster, new_pod, node_fault
from hypd_local.emulator.sagemaker_endpoints import SageMakerEndpoints
from hypd_local.kube.resources import ResourceType

Obj = dict[str, Any]

INFERENCE_ADDON = "amazon-sagemaker-hyperpod-inference"
GROUP = "inference.sagemaker.aws.amazon.com"
PLURALS = ("jumpstartmodels", "inferenceendpointconfigs")
FINALIZER = "inference.sagemaker.aws.amazon.com/finalizer"
ENDPOINT_LABEL = "inference.sagemaker.aws.amazon.com/endpoint-name"
OPERATOR = "hyperpod-inference-operator"
WORKER = "worker"
PENDING_SECONDS = 5.0
REGISTER_SECONDS = 30.0
DELETE_SECONDS = 5.0
DEFAULT_MAX_DEPLOY_SECONDS = 3600
_GATED = ("llama", "meta-")


def is_gated(model_id: str) -> bool:
    """The emulator's rule for a model that needs its EULA accepted (made up)."""
    return any(marker in model_id.lower() for marker in _GATED)


@dataclass(frozen=True)
class _Spec:
    instance_type: str
    replicas: int
    endpoint: str | None
    model: str
    refusal: str | None
    container: Obj
    max_seconds: float

    @classmethod
    def of(cls, obj: Mapping[str, Any], region: str) -> _Spec:
        spec = obj.get("spec") or {}
        refusal = None
        if obj.get("kind") == "JumpStartModel":
            model = spec.get("model") or {}
            model_id = str(model.get("modelId") or "")
            itype = str((spec.get("server") or {}).get("instanceType") or "")
            endpoint = (spec.get("sageMakerEndpoint") or {}).get("name")
            if is_gated(model_id) and model.get("acceptEula") is not True:
                refusal = (f"Model {model_id} is a gated model: its end-user license agreement "
                           "must be accepted (spec.model.acceptEula: true) to deploy it.")
            container: Obj = {"name": WORKER, "image": f"763104351884.dkr.ecr.{region}."
                              f"amazonaws.com/djl-inference:latest", "args": [model_id]}
        else:
            model_id = str(spec.get("modelName") or "")
            itype = str(spec.get("instanceType") or "")
            endpoint = spec.get("endpointName")
            worker = spec.get("worker") or {}
            port = (worker.get("modelInvocationPort") or {}).get("containerPort")
            container = {"name": WORKER, "image": worker.get("image", ""),
                         "resources": worker.get("resources") or {},
                         "env": list(worker.get("environmentVariables") or []),
                         **({"ports": [{"containerPort": port}]} if port else {})}
        return cls(itype, int(spec.get("replicas") or 1), str(endpoint) if endpoint else None,
                   model_id, refusal, container,
                   float(spec.get("maxDeployTimeInSeconds") or DEFAULT_MAX_DEPLOY_SECONDS))


@dataclass(frozen=True)
class _Progress:
    """What the operator remembers of one object (its uid): when each step is due."""

    created: datetime
    complete_at: datetime | None = None
    registered_at: datetime | None = None
    deleted_at: datetime | None = None


class InferenceOperatorSync:
    """The emulated inference operator (see the module doc)."""

    clock: VirtualClock
    region: str
    workloads: Workloads
    endpoints: SageMakerEndpoints
    _progress: dict[str, _Progress]

    def _sync_inference(self, view: Cluster, cluster: str, running: bool
                        ) -> tuple[set[str], list[datetime]]:
        seen: set[str] = set()
        due: list[datetime] = []
        for plural in PLURALS:
            rtype = served_type(view, GROUP, plural)
            if rtype is None:
                continue
            for obj in view.store.list(rtype, None)[0]:
                seen.add(str(obj["metadata"]["uid"]))
                if running:
                    due += self._sync_model(view, cluster, rtype, obj)
        return seen, due

    def _sync_model(self, view: Cluster, cluster: str, rtype: ResourceType, obj: Obj
                    ) -> list[datetime]:
        meta = obj["metadata"]
        spec = _Spec.of(obj, self.region)
        progress = self._progress.setdefault(meta["uid"], _Progress(view.now))
        state = (obj.get("status") or {}).get("state")
        if meta.get("deletionTimestamp"):
            return self._delete(view, rtype, obj, spec, progress)
        if FINALIZER not in (meta.get("finalizers") or []):
            obj = self._write(view, rtype, obj, "DeploymentPending", "Deployment is pending.",
                              finalizer=True)
            state = "DeploymentPending"
        if state == "DeploymentPending":
            if spec.refusal is not None:
                self._write(view, rtype, obj, "DeploymentFailed", spec.refusal)
                return []
            started = progress.created + timedelta(seconds=PENDING_SECONDS)
            if view.now < started:
                return [started]
            obj = self._write(view, rtype, obj, "DeploymentInProgress", "Deploying the model.")
            state = "DeploymentInProgress"
        if state not in ("DeploymentInProgress", "DeploymentComplete"):
            return []
        ready, waiting = self._keep_pods(view, obj, spec)
        if state == "DeploymentInProgress":
            return self._deploying(view, cluster, rtype, obj, spec, progress, ready, waiting)
        return self._registering(view, rtype, obj, spec, progress, ready)

    def _keep_pods(self, view: Cluster, obj: Obj, spec: _Spec) -> tuple[int, str | None]:
        """The object's pods: those on faulty nodes replaced, the missing made, the pending
        placed; how many run, and why the others wait (the scheduler's message)."""
        meta = obj["metadata"]
        nodes = view.nodes()
        pods = {p["metadata"]["name"]: p
                for p in view.pods_labelled(meta["namespace"], ENDPOINT_LABEL, meta["name"])}
        faulty = [p for p in pods.values() if p["spec"].get("nodeName")
                  and node_fault(nodes.get(p["spec"]["nodeName"]))]
        view.delete_pods(faulty)
        for pod in faulty:
            del pods[pod["metadata"]["name"]]
        template = {"metadata": {"labels": {"app": meta["name"]}},
                    "spec": {"nodeSelector": {"node.kubernetes.io/instance-type":
                                              spec.instance_type},
                             "containers": [spec.container]}}
        for i in range(spec.replicas):
            name = f"{meta['name']}-{i}"
            if name not in pods:
                pods[name] = view.store.create(view.pods, meta["namespace"], new_pod(
                    name, obj, {ENDPOINT_LABEL: meta["name"]}, template), OPERATOR)
        pending = [p for p in pods.values() if not p["spec"].get("nodeName")]
        port = (spec.container.get("ports") or [{"containerPort": 8080}])[0]["containerPort"]
        for pod, node in view.schedule(pending):
            pods[pod["metadata"]["name"]] = pod
            view.server.logs.write(meta["namespace"], pod["metadata"]["name"], WORKER, [
                (view.now, f"Starting the model server of {spec.model} on node {node}"),
                (view.now, f"Model server listening on port {port}")])
        waiting = [p for p in view.pods_labelled(meta["namespace"], ENDPOINT_LABEL, meta["name"])
                   if not p["spec"].get("nodeName")]
        message = next((c.get("message") for p in waiting
                        for c in (p.get("status") or {}).get("conditions") or []
                        if c.get("type") == "PodScheduled"), None)
        return sum(1 for p in pods.values() if (p.get("status") or {}).get("phase")
                   == "Running"), (message or "waiting for a node") if waiting else None

    def _deploying(self, view: Cluster, cluster: str, rtype: ResourceType, obj: Obj,
                   spec: _Spec, progress: _Progress, ready: int, waiting: str | None
                   ) -> list[datetime]:
        meta = obj["metadata"]
        deadline = progress.created + timedelta(seconds=spec.max_seconds)
        if progress.complete_at is None and view.now >= deadline:
            view.delete_pods(view.pods_labelled(meta["namespace"], ENDPOINT_LABEL, meta["name"]))
            self._write(view, rtype, obj, "DeploymentFailed",
                        f"The deployment did not complete within {spec.max_seconds:g} seconds "
                        f"(spec.maxDeployTimeInSeconds): {ready}/{spec.replicas} replicas "
                        f"ready{f'; {waiting}' if waiting else ''}.", ready=ready)
            return []
        if waiting is not None:
            self._write(view, rtype, obj, "DeploymentInProgress",
                        f"{ready}/{spec.replicas} replicas ready; {waiting}", ready=ready)
            return [deadline]
        if progress.complete_at is None:
            seconds = self.workloads.deploy_seconds(cluster, meta["namespace"], meta["name"])
            progress = replace(progress, complete_at=view.now + timedelta(seconds=seconds))
            self._progress[meta["uid"]] = progress
        assert progress.complete_at is not None
        if view.now < progress.complete_at:
            self._write(view, rtype, obj, "DeploymentInProgress",
                        f"{ready}/{spec.replicas} replicas ready; loading the model.",
                        ready=ready)
            return [progress.complete_at]
        obj = self._write(view, rtype, obj, "DeploymentComplete", "Deployment is complete.",
                          ready=ready)
        return self._registering(view, rtype, obj, spec, progress, ready)

    def _registering(self, view: Cluster, rtype: ResourceType, obj: Obj, spec: _Spec,
                     progress: _Progress, ready: int) -> list[datetime]:
        """A complete deployment: its replica counts, and its SageMaker endpoint."""
        meta = obj["metadata"]
        if spec.endpoint is None:
            self._write(view, rtype, obj, "DeploymentComplete", "Deployment is complete.",
                        ready=ready)
            return []
        if progress.registered_at is None:
            progress = replace(progress, registered_at=view.now + timedelta(
                seconds=REGISTER_SECONDS))
            self._progress[meta["uid"]] = progress
            self.endpoints.register(spec.endpoint, spec.model, (
                view.server.cluster_name, meta["namespace"], meta["name"]))
        assert progress.registered_at is not None
        done = view.now >= progress.registered_at
        if done:
            self.endpoints.set_in_service(spec.endpoint)
        self._write(view, rtype, obj, "DeploymentComplete", "Deployment is complete.",
                    ready=ready, endpoint=self._endpoint_status(
                        spec.endpoint, "CreationCompleted" if done else "CreationInProgress"))
        return [] if done else [progress.registered_at]

    def _endpoint_status(self, name: str, state: str) -> Obj:
        arn = self.endpoints.arn_of(name)
        base = arn.rsplit(":endpoint/", 1)[0]
        return {"state": state, "endpointArn": arn,
                "configArn": f"{base}:endpoint-config/{name.lower()}",
                "modelArn": f"{base}:model/{name.lower()}"}

    def _delete(self, view: Cluster, rtype: ResourceType, obj: Obj, spec: _Spec,
                progress: _Progress) -> list[datetime]:
        meta = obj["metadata"]
        if FINALIZER not in (meta.get("finalizers") or []):
            return []
        if progress.deleted_at is None:
            progress = replace(progress, deleted_at=view.now + timedelta(seconds=DELETE_SECONDS))
            self._progress[meta["uid"]] = progress
            view.delete_pods(view.pods_labelled(meta["namespace"], ENDPOINT_LABEL, meta["name"]))
            if spec.endpoint is not None:
                self.endpoints.deregister(spec.endpoint, (
                    view.server.cluster_name, meta["namespace"], meta["name"]))
            obj = self._write(view, rtype, obj, "DeletionInProgress", "Deleting the model.")
        assert progress.deleted_at is not None
        if view.now < progress.deleted_at:
            return [progress.deleted_at]

        def release(current: Obj) -> None:
            current["metadata"]["finalizers"] = [
                f for f in current["metadata"].get("finalizers") or [] if f != FINALIZER]

        view.store.mutate(rtype, meta["namespace"], meta["name"], release, OPERATOR)
        self._progress.pop(meta["uid"], None)
        return []

    @staticmethod
    def _write(view: Cluster, rtype: ResourceType, obj: Obj, state: str, message: str, *,
               ready: int | None = None, endpoint: Obj | None = None,
               finalizer: bool = False) -> Obj:
        """Set the object's state (and counts, endpoint; add the finalizer)."""
        meta = obj["metadata"]
        replicas = int((obj.get("spec") or {}).get("replicas") or 1)

        def change(current: Obj) -> None:
            if finalizer:
                current["metadata"]["finalizers"] = [
                    *(current["metadata"].get("finalizers") or []), FINALIZER]
            status = current.setdefault("status", {})
            conditions = list(status.get("conditions") or [])
            for other in [c for c in conditions if c.get("type") != state
                          and c.get("status") == "True"]:
                conditions = with_condition(conditions, other["type"], False, other["type"],
                                            str(other.get("message") or ""), view.stamp)
            status["conditions"] = with_condition(conditions, state, True, state, message,
                                                  view.stamp)
            status["state"] = state
            deployment = status.setdefault("deploymentStatus", {})
            deployment["deploymentObjectOverallState"] = state
            deployment["message"] = message
            if ready is not None:
                deployment["status"] = {"replicas": replicas, "readyReplicas": ready,
                                        "availableReplicas": ready, "updatedReplicas": replicas}
            if endpoint is not None:
                status.setdefault("endpoints", {})["sagemaker"] = endpoint

        return view.store.mutate(rtype, meta["namespace"], meta["name"], change, OPERATOR)
