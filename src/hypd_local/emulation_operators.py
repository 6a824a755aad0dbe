"""The HyperPod training operator of the local cloud: part of the Kubernetes sync
(`emulation_kube`), run on every tick for each served cluster whose training operator add-on
runs (its controller Deployment exists and is Available). A job created while it does not run
is left untouched (no status), as on a cluster without the operator.

For each HyperPodPyTorchJob (``sagemaker.amazonaws.com/v1``):

- pods ``<job>-pod-<i>`` for i < ``replicaSpecs[0].replicas``, in the job's namespace, labelled
  ``HPJob=<job>`` (FEATURES-FACTS §1) and the template's labels, owned by the job, with the
  template's spec, placed by the scheduler of `emulation_pods` (one per node, Ready,
  schedulable, of the selected instance type, healthy) or Pending (FailedScheduling);
- ``status.conditions`` ``{type, status, reason, message, lastTransitionTime}``, one per type
  in the order they first happen: ``Created`` at once, ``Running`` once every pod runs,
  ``Restarting`` while a restart brings the pods back (False again once they run), then
  ``Succeeded`` or ``Failed``: the type of the last condition whose status is True is the
  phase (what ``hyp list`` reports); ``startTime``, ``completionTime``, ``restartCount``;
- events on the job (source ``hyperpod-training-operator``): ``Created``, ``Running``,
  ``Restarting`` (Warning, naming the node), ``Succeeded``, ``Failed`` (Warning).

The run time and exit code come from the container's command (`emulation_behave`): once every
pod runs, the job runs that long on the virtual clock, then its pods are Succeeded (exit 0) or
Failed (the exit code in ``containerStatuses[].state.terminated``) and so is the job. When a
node of a Running job goes (removed, not Ready, health label not Schedulable), the whole job
restarts while ``restartCount < runPolicy.jobMaxRetryCount`` (absent: 0): its pods are deleted
and made again, on healthy nodes (Pending until one is free), and the run time starts over;
beyond that the job is Failed (its pods too, exit code 137).

Each pod logs (virtual times, `kube.logs`): a start line, ``+ <command>``, progress at 25, 50
and 75 % of the run and its exit code; or the ``logs=`` lines a test set, spread over the run.
Reasons and messages follow the Kubeflow training operator's (``PyTorchJob ns/name is
running.``), which HPTO extends; HPTO's own are not documented, so these are made up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hypd_local.clock import VirtualClock
from hypd_local.emulation_behave import Run, Workloads
from hypd_local.emulation_pods import Cluster, new_pod, node_fault
from hypd_local.emulation_workloads import find_object
from hypd_local.emulator.eks_workloads import WORKLOADS
from hypd_local.kube.resources import ResourceType

Obj = dict[str, Any]

TRAINING_ADDON = "amazon-sagemaker-hyperpod-training-operator"
JOB_GROUP = "sagemaker.amazonaws.com"
JOB_PLURAL = "hyperpodpytorchjobs"
JOB_LABEL = "HPJob"
OPERATOR = "hyperpod-training-operator"
"""The emulated operator's event source and field manager (made up)."""
FAILED_EXIT_CODE = 137  # the containers of a job that fails for a node are killed


@dataclass(frozen=True)
class _Attempt:
    """The current attempt of a Running job: when its pods all ran, and when they end."""

    started: datetime
    ends: datetime


def phase(job: Mapping[str, Any]) -> str | None:
    """The type of the last condition whose status is True (None before any)."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return next((c["type"] for c in reversed(conditions) if c.get("status") == "True"), None)


def with_condition(conditions: list[Obj], kind: str, status: bool, reason: str, message: str,
                   now: str) -> list[Obj]:
    """``conditions`` with the one of ``kind`` set (kept in place, its transition time kept
    while its status does not change), or appended."""
    value = "True" if status else "False"
    out, found = [], False
    for condition in conditions:
        if condition.get("type") == kind:
            found = True
            moved = condition.get("status") != value
            condition = {"type": kind, "status": value, "reason": reason, "message": message,
                         "lastTransitionTime": now if moved else condition.get(
                             "lastTransitionTime", now)}
        out.append(condition)
    if not found:
        out.append({"type": kind, "status": value, "reason": reason, "message": message,
                    "lastTransitionTime": now})
    return out


def operator_available(view: Cluster, addon: str, namespace: str | None) -> bool:
    """Whether the add-on's controller Deployment is there and Available."""
    deployment = WORKLOADS[addon].deployment
    if deployment is None:
        return False
    found = find_object(view.store, view.store.builtin_type("apps", "deployments"),
                        namespace or deployment.namespace, deployment.name)
    return found is not None and any(
        c.get("type") == "Available" and c.get("status") == "True"
        for c in (found.get("status") or {}).get("conditions") or [])


def served_type(view: Cluster, group: str, plural: str) -> ResourceType | None:
    """The served type of a CRD's objects (its storage version), None when not served."""
    found = [t for t in view.store.all_types() if (t.group, t.plural) == (group, plural)]
    return next((t for t in found if t.storage), found[0] if found else None)


def log_lines(pod: str, node: str, run: Run, start: datetime) -> list[tuple[datetime, str]]:
    """A job pod's lines for one run (see the module doc)."""
    end = start + timedelta(seconds=run.seconds)
    if run.logs is not None:
        count = len(run.logs)
        return [(start + timedelta(seconds=run.seconds * i / max(count - 1, 1)), line)
                for i, line in enumerate(run.logs)]
    return [(start, f"Starting pod {pod} on node {node}"), (start, f"+ {run.command}"),
            *((start + timedelta(seconds=run.seconds * p / 100),
               f"progress: {p}% ({run.seconds * p / 100:g}s of {run.seconds:g}s)")
              for p in (25, 50, 75)),
            (end, f"exited with code {run.exit_code}")]


def _fault_text(node: str, why: str) -> str:
    if why == "gone":
        return f"node {node} left the cluster"
    if why == "NotReady":
        return f"node {node} is not Ready"
    return f"node {node} is unhealthy ({why})"


class TrainingOperatorSync:
    """The emulated training operator (see the module doc)."""

    clock: VirtualClock
    workloads: Workloads
    _attempts: dict[str, _Attempt]
    """HyperPodPyTorchJob uid -> its current run."""

    def _sync_jobs(self, view: Cluster, cluster: str, running: bool) -> tuple[set[str],
                                                                             list[datetime]]:
        """Reconcile every job of the cluster (when the operator is ``running``); the uids of
        the jobs seen and the times something is due next."""
        jobs_type = served_type(view, JOB_GROUP, JOB_PLURAL)
        if jobs_type is None:
            return set(), []
        jobs = view.store.list(jobs_type, None)[0]
        due: list[datetime] = []
        for job in jobs if running else []:
            when = self._sync_job(view, cluster, jobs_type, job)
            if when is not None:
                due.append(when)
        return {str(job["metadata"]["uid"]) for job in jobs}, due

    def _sync_job(self, view: Cluster, cluster: str, jobs: ResourceType, job: Obj
                  ) -> datetime | None:
        meta = job["metadata"]
        if meta.get("deletionTimestamp") or phase(job) in ("Succeeded", "Failed"):
            return None
        run = self.workloads.run_of(cluster, job)
        pods = {p["metadata"]["name"]: p
                for p in view.pods_labelled(meta["namespace"], JOB_LABEL, meta["name"])
                if any(r.get("uid") == meta["uid"]
                       for r in p["metadata"].get("ownerReferences") or [])}
        if not (job.get("status") or {}).get("conditions"):
            job = self._job_status(view, jobs, job, "Created", "is created.", {})
            view.event(job, "Created", f"Created {_replicas(job)} pod(s) of HyperPodPyTorchJob "
                       f"{meta['name']}", component=OPERATOR)
        if phase(job) == "Running":
            return self._run(view, jobs, job, pods, run)
        return self._bring_up(view, jobs, job, pods, run)

    def _bring_up(self, view: Cluster, jobs: ResourceType, job: Obj, pods: dict[str, Obj],
                  run: Run) -> datetime | None:
        """Create the missing pods, place the pending ones; Running once all run."""
        meta = job["metadata"]
        spec = ((job.get("spec") or {}).get("replicaSpecs") or [{}])[0]
        for i in range(_replicas(job)):
            name = f"{meta['name']}-pod-{i}"
            if name not in pods:
                pods[name] = view.store.create(view.pods, meta["namespace"], new_pod(
                    name, job, {JOB_LABEL: meta["name"]}, spec.get("template") or {}),
                    OPERATOR)
        pending = [p for p in pods.values() if not (p.get("spec") or {}).get("nodeName")]
        for pod, node in view.schedule(pending):
            pods[pod["metadata"]["name"]] = pod
            container = ((pod["spec"].get("containers") or [{}])[0]).get("name", "")
            view.server.logs.forget(meta["namespace"], pod["metadata"]["name"])
            view.server.logs.write(meta["namespace"], pod["metadata"]["name"], container,
                                   log_lines(pod["metadata"]["name"], node, run, view.now))
        if not pods or any((p.get("status") or {}).get("phase") != "Running"
                           for p in pods.values()):
            return None
        self._attempts[meta["uid"]] = _Attempt(view.now,
                                               view.now + timedelta(seconds=run.seconds))
        restarted = phase(job) == "Restarting"
        extra = {} if (job.get("status") or {}).get("startTime") else {"startTime": view.stamp}
        job = self._job_status(view, jobs, job, "Running", "is running.", extra)
        if restarted:
            job = self._job_status(view, jobs, job, "Restarting", None, {}, status=False)
        view.event(job, "Running", f"All {len(pods)} pod(s) of HyperPodPyTorchJob "
                   f"{meta['name']} are running", component=OPERATOR)
        return self._run(view, jobs, job, pods, run)

    def _run(self, view: Cluster, jobs: ResourceType, job: Obj, pods: dict[str, Obj],
             run: Run) -> datetime | None:
        """A Running job: restart it for a faulty node, finish it when its time is up."""
        meta = job["metadata"]
        nodes = view.nodes()
        for pod in sorted(pods.values(), key=lambda p: p["metadata"]["name"]):
            node = (pod.get("spec") or {}).get("nodeName")
            why = node_fault(nodes.get(node)) if node else None
            if node and why:
                return self._restart_or_fail(view, jobs, job, pods, run,
                                             _fault_text(node, why))
        attempt = self._attempts.get(meta["uid"])
        if attempt is None:  # the local cloud did not see this run start: it starts now
            attempt = _Attempt(view.now, view.now + timedelta(seconds=run.seconds))
            self._attempts[meta["uid"]] = attempt
        if view.now < attempt.ends:
            return attempt.ends
        for pod in pods.values():
            view.terminate(pod, run.exit_code)
        ok = run.exit_code == 0
        job = self._job_status(
            view, jobs, job, "Succeeded" if ok else "Failed",
            "successfully completed." if ok else
            f"has failed because {len(pods)} pod(s) exited with code {run.exit_code}.",
            {"completionTime": view.stamp})
        view.event(job, "Succeeded" if ok else "Failed",
                   _message(job, "Succeeded" if ok else "Failed"), warning=not ok,
                   component=OPERATOR)
        self._attempts.pop(meta["uid"], None)
        return None

    def _restart_or_fail(self, view: Cluster, jobs: ResourceType, job: Obj,
                         pods: dict[str, Obj], run: Run, fault: str) -> datetime | None:
        meta, status = job["metadata"], job.get("status") or {}
        retries = int(((job.get("spec") or {}).get("runPolicy") or {}).get(
            "jobMaxRetryCount") or 0)
        count = int(status.get("restartCount") or 0)
        self._attempts.pop(meta["uid"], None)
        if count < retries:
            message = f"is restarting ({count + 1} of {retries}): {fault}."
            job = self._job_status(view, jobs, job, "Restarting", message,
                                   {"restartCount": count + 1})
            view.event(job, "Restarting", f"Restarting HyperPodPyTorchJob {meta['name']} "
                       f"({count + 1} of {retries}): {fault}", warning=True, component=OPERATOR)
            view.delete_pods(pods.values())
            return self._bring_up(view, jobs, job, {}, run)
        for pod in pods.values():
            view.server.logs.cut(meta["namespace"], pod["metadata"]["name"], view.now)
            view.terminate(pod, FAILED_EXIT_CODE)
        job = self._job_status(view, jobs, job, "Failed",
                               f"has failed: {fault}, and it has no restart left "
                               f"(runPolicy.jobMaxRetryCount: {retries}).",
                               {"completionTime": view.stamp})
        view.event(job, "Failed", _message(job, "Failed"), warning=True, component=OPERATOR)
        return None

    @staticmethod
    def _job_status(view: Cluster, jobs: ResourceType, job: Obj, kind: str, words: str | None,
                    fields: Mapping[str, Any], *, status: bool = True) -> Obj:
        """Set the condition ``kind`` (and other status ``fields``) of the job; its message
        says ``words`` about the job (None: the condition keeps its message)."""
        meta = job["metadata"]
        message = (_message(job, kind) if words is None
                   else f"HyperPodPyTorchJob {meta['namespace']}/{meta['name']} {words}")

        def change(obj: Obj) -> None:
            current = obj.setdefault("status", {})
            current["conditions"] = with_condition(
                list(current.get("conditions") or []), kind, status,
                f"HyperPodPyTorchJob{kind}", message, view.stamp)
            current.setdefault("restartCount", 0)
            current.update(fields)

        return view.store.mutate(jobs, meta["namespace"], meta["name"], change, OPERATOR)


def _replicas(job: Mapping[str, Any]) -> int:
    spec = ((job.get("spec") or {}).get("replicaSpecs") or [{}])[0]
    return int(spec.get("replicas", 1))


def _message(job: Mapping[str, Any], kind: str) -> str:
    """The message of the job's condition ``kind``."""
    return next((str(c.get("message")) for c in (job.get("status") or {}).get("conditions")
                 or [] if c.get("type") == kind), kind)
