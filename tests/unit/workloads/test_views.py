"""Workloads as clients see them: phase, pods, the nodes and their faults, endpoints."""

from __future__ import annotations

from typing import Any

from hypd.health.records import HealthEntry, NodeHealth
from hypd.workloads import views


def condition(kind: str, status: str = "True", time: str = "2026-01-01T00:00:00Z"
              ) -> dict[str, Any]:
    return {"type": kind, "status": status, "lastTransitionTime": time, "reason": kind}


def the_job(conditions: list[dict[str, Any]], **status: Any) -> dict[str, Any]:
    return {
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": "train", "namespace": "default",
                     "creationTimestamp": "2026-01-01T00:00:00Z",
                     "labels": {"app.kubernetes.io/managed-by": "hypd"}},
        "spec": {"replicaSpecs": [{"name": "pod", "replicas": 1, "template": {"spec": {
            "nodeSelector": {"node.kubernetes.io/instance-type": "ml.g5.8xlarge"},
            "containers": [{"name": "pytorch-job-container", "image": "img"}]}}}],
            "runPolicy": {"jobMaxRetryCount": 2}},
        "status": {"conditions": conditions, **status},
    }


def test_phase_is_the_last_true_condition() -> None:
    assert views.phase(the_job([])) == "Pending"
    assert views.phase(the_job([condition("Created"), condition("Running")])) == "Running"
    assert views.phase(the_job([condition("Created"), condition("Running"),
                                condition("Succeeded", "False")])) == "Running"
    deleting = the_job([condition("Running")])
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"
    assert views.phase(deleting) == "Deleting"


def pod(name: str, node: str | None, phase: str = "Running", restarts: int = 0
        ) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "labels": {"HPJob": "train"}},
            "spec": {"nodeName": node} if node else {},
            "status": {"phase": phase, "startTime": "2026-01-01T00:02:00Z",
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "c", "ready": True,
                                              "restartCount": restarts}]}}


def event(reason: str, obj: str, message: str, time: str) -> dict[str, Any]:
    kind, name = obj.split("/")
    return {"metadata": {"name": f"{name}.{time}", "namespace": "default"},
            "involvedObject": {"kind": kind, "name": name}, "reason": reason,
            "message": message, "type": "Normal", "lastTimestamp": time}


def entry(event_id: str, time: str, status: str, **fields: Any) -> HealthEntry:
    return HealthEntry.model_validate({"eventId": event_id, "time": time, "status": status,
                                       **fields})


def test_a_restarted_job_shows_the_node_it_left_and_the_fault() -> None:
    job = the_job([condition("Created"), condition("Running"),
                   condition("Restarting", time="2026-01-01T00:10:00Z"),
                   condition("Running", time="2026-01-01T00:12:00Z")],
                  restartCount=1, startTime="2026-01-01T00:01:00Z")
    events = [
        event("Scheduled", "Pod/train-pod-0",
              "Successfully assigned default/train-pod-0 to hyperpod-i-aaa",
              "2026-01-01T00:01:00Z"),
        event("Restarting", "HyperPodPyTorchJob/train", "node hyperpod-i-aaa is unhealthy",
              "2026-01-01T00:10:00Z"),
        event("Scheduled", "Pod/train-pod-0",
              "Successfully assigned default/train-pod-0 to hyperpod-i-bbb",
              "2026-01-01T00:11:00Z"),
        event("Scheduled", "Pod/other-pod-0",
              "Successfully assigned default/other-pod-0 to hyperpod-i-ccc",
              "2026-01-01T00:11:00Z"),
    ]
    fault = entry("e2", "2026-01-01T00:09:30Z", "UnschedulablePendingReplacement",
                  reason="NvidiaGpuXidError", repairAction="Replace")
    before = entry("e0", "2025-12-31T00:00:00Z", "UnschedulablePendingReboot")
    health = {"i-aaa": NodeHealth.model_validate({
        "tag": "t", "nodeId": "i-aaa", "instanceGroup": "workers", "latest": fault.model_dump(
            by_alias=True), "history": [before.model_dump(by_alias=True)],
        "updatedAt": "2026-01-01T00:09:30Z"})}

    view = views.job_view(job, [pod("train-pod-0", "hyperpod-i-bbb")], events, health)

    assert view["phase"] == "Running"
    assert view["restarts"] == 1
    assert view["maxRetries"] == 2
    assert [p["node"] for p in view["pods"]] == ["hyperpod-i-bbb"]
    left, current = view["nodes"]
    assert left["node"] == "hyperpod-i-aaa"
    assert not left["current"]
    assert left["instanceId"] == "i-aaa"
    assert left["instanceGroup"] == "workers"
    assert [f["status"] for f in left["faults"]] == ["UnschedulablePendingReplacement"]
    assert left["faults"][0]["repairAction"] == "Replace"
    assert current == {"node": "hyperpod-i-bbb", "instanceId": "i-bbb", "current": True,
                       "firstScheduled": "2026-01-01T00:11:00Z", "faults": []}
    # the group of a node that still exists comes from its label; a gone node's from its record
    named = views.job_view(job, [pod("train-pod-0", "hyperpod-i-bbb")], events, health,
                           {"hyperpod-i-bbb": "workers", "hyperpod-i-aaa": "spares"})
    assert [n.get("instanceGroup") for n in named["nodes"]] == ["spares", "workers"]
    assert [e["reason"] for e in view["events"]] == ["Restarting"]


def test_pods_views() -> None:
    pending = pod("train-pod-1", None, "Pending")
    pending["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "message": "0/2 nodes are available"}]}
    view = views.job_view(the_job([condition("Created")]),
                          [pending, pod("train-pod-0", "hyperpod-i-aaa", restarts=2)], [], {})
    first, second = view["pods"]
    assert first["name"] == "train-pod-0"
    assert first["ready"]
    assert first["restarts"] == 2
    assert first["instanceId"] == "i-aaa"
    assert second["phase"] == "Pending"
    assert not second["ready"]
    assert second["message"] == "0/2 nodes are available"
    assert view["phase"] == "Created"


def endpoint_obj(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"kind": "JumpStartModel",
            "metadata": {"name": "ep", "namespace": "default",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"model": {"modelId": "m", "acceptEula": True},
                     "server": {"instanceType": "ml.g5.8xlarge"}, "replicas": 2, **spec},
            "status": status or {}}


def test_endpoint_states() -> None:
    fresh = views.endpoint_view(endpoint_obj())
    assert fresh["state"] == "DeploymentPending"
    assert not fresh["ready"]
    assert "sageMaker" not in fresh
    assert not views.registered(fresh)

    done = views.endpoint_view(endpoint_obj(
        {"state": "DeploymentComplete",
         "deploymentStatus": {"deploymentObjectOverallState": "DeploymentComplete",
                              "status": {"readyReplicas": 2, "availableReplicas": 2}},
         "endpoints": {"sagemaker": {"state": "CreationCompleted",
                                     "endpointArn": "arn:aws:sagemaker:r:1:endpoint/ep"}}},
        sageMakerEndpoint={"name": "ep"}))
    assert done["ready"]
    assert done["readyReplicas"] == 2
    assert done["replicas"] == 2
    assert done["sageMaker"] == {"endpointName": "ep", "state": "CreationCompleted",
                                 "endpointArn": "arn:aws:sagemaker:r:1:endpoint/ep"}
    assert views.registered(done)

    failed = views.endpoint_view(endpoint_obj(
        {"state": "DeploymentFailed",
         "deploymentStatus": {"deploymentObjectOverallState": "DeploymentFailed",
                              "message": "EULA not accepted"}}))
    assert failed["state"] == "DeploymentFailed"
    assert failed["message"] == "EULA not accepted"


def test_a_fault_in_the_jobs_first_second_counts_whatever_the_time_format() -> None:
    # Kubernetes writes whole seconds, EventBridge milliseconds: compared as times, not texts.
    job = the_job([condition("Running")], startTime="2026-01-01T00:01:00Z",
                  completionTime="2026-01-01T00:30:00Z")
    events = [event("Scheduled", "Pod/train-pod-0",
                    "Successfully assigned default/train-pod-0 to hyperpod-i-aaa",
                    "2026-01-01T00:01:00Z")]
    at_start = entry("e1", "2026-01-01T00:01:00.000Z", "Unhealthy")
    after_end = entry("e2", "2026-01-01T00:30:00.500Z", "Unhealthy")
    before = entry("e0", "2026-01-01T00:00:59.999Z", "Unhealthy")
    health = {"i-aaa": NodeHealth.model_validate({
        "tag": "t", "nodeId": "i-aaa", "latest": after_end.model_dump(by_alias=True),
        "history": [at_start.model_dump(by_alias=True), before.model_dump(by_alias=True)],
        "updatedAt": "2026-01-01T00:30:00Z"})}
    (node,) = views.job_view(job, [], events, health)["nodes"]
    assert [f["time"] for f in node["faults"]] == ["2026-01-01T00:01:00.000Z",
                                                   "2026-01-01T00:30:00.500Z"]
