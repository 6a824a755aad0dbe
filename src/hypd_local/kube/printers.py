"""The columns and cells the API server prints for its built-in kinds (``kubectl get`` and
``-o wide``): nodes, pods, namespaces, services, volumes and claims, workloads, jobs, events,
storage classes, RBAC bindings, quotas; the default table (Name, Created At) for the others.

A little over 400 lines, on purpose: one cells function and one `PRINTERS` entry per kind, as
the API server has them, are read (and compared with kubectl's output) together."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from hypd_local.kube.table_cells import (
    AGE,
    CREATED_AT,
    NAME,
    NONE,
    UNKNOWN,
    Cells,
    Column,
    Obj,
    Printer,
    _access_modes,
    _containers,
    _created,
    _label_selector,
    _meta,
    _or_none,
    _parse_time,
    _selector,
    _spec,
    _status,
    _wide,
    age,
    human_duration,
)


def _node_cells(node: Obj, now: datetime) -> list[Any]:
    status = _status(node)
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    states = [] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if _spec(node).get("unschedulable"):
        states.append("SchedulingDisabled")
    labels = _meta(node).get("labels") or {}
    roles = sorted({key.split("/", 1)[1] for key in labels
                    if key.startswith("node-role.kubernetes.io/") and key.split("/", 1)[1]}
                   | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role")
                      else set()))
    info = status.get("nodeInfo") or {}

    def address(kind: str) -> str:
        return next((a.get("address") for a in status.get("addresses") or []
                     if a.get("type") == kind and a.get("address")), NONE)

    return [_meta(node).get("name"), ",".join(states), ",".join(roles) or NONE,
            _created(node, now), info.get("kubeletVersion", ""), address("InternalIP"),
            address("ExternalIP"), info.get("osImage") or UNKNOWN,
            info.get("kernelVersion") or UNKNOWN, info.get("containerRuntimeVersion") or UNKNOWN]


def pod_phase(pod: Obj) -> str:
    """The STATUS column of a pod: its phase, or what its containers are waiting for or ended
    with, or Terminating."""
    status = _status(pod)
    reason = str(status.get("reason") or status.get("phase") or "Pending")
    running = False
    for container in reversed(status.get("containerStatuses") or []):
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = str(waiting["reason"])
        elif terminated and terminated.get("reason"):
            reason = str(terminated["reason"])
        elif terminated:
            signal = terminated.get("signal")
            reason = (f"Signal:{signal}" if signal
                      else f"ExitCode:{terminated.get('exitCode', 0)}")
        elif state.get("running") and container.get("ready"):
            running = True
    if reason == "Completed" and running:
        reason = "Running"
    if _meta(pod).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return reason


def _pod_cells(pod: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(pod), _status(pod)
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    last = max((t for c in statuses
                if (t := _parse_time(((c.get("lastState") or {}).get("terminated") or {})
                                     .get("finishedAt"))) is not None), default=None)
    restart_cell = (f"{restarts} ({human_duration((now - last).total_seconds())} ago)"
                    if restarts and last is not None else str(restarts))
    gates = spec.get("readinessGates") or []
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    gates_cell = (f"{sum(1 for g in gates if conditions.get(g.get('conditionType')) == 'True')}"
                  f"/{len(gates)}") if gates else NONE
    return [_meta(pod).get("name"), f"{ready}/{len(spec.get('containers') or [])}",
            pod_phase(pod), restart_cell, _created(pod, now), _or_none(status.get("podIP")),
            _or_none(spec.get("nodeName")), _or_none(status.get("nominatedNodeName")),
            gates_cell]


def _service_cells(service: Obj, now: datetime) -> list[Any]:
    spec = _spec(service)
    kind = spec.get("type") or "ClusterIP"
    if kind == "LoadBalancer":
        ingress = (_status(service).get("loadBalancer") or {}).get("ingress") or []
        found = [i.get("ip") or i.get("hostname") for i in ingress] + list(
            spec.get("externalIPs") or [])
        external = ",".join(str(f) for f in found if f) or "<pending>"
    elif kind == "ExternalName":
        external = spec.get("externalName") or NONE
    else:
        external = ",".join(spec.get("externalIPs") or []) or NONE
    ports = []
    for port in spec.get("ports") or []:
        text = str(port.get("port"))
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        ports.append(f"{text}/{port.get('protocol') or 'TCP'}")
    return [_meta(service).get("name"), kind, _or_none(spec.get("clusterIP")), external,
            ",".join(ports) or NONE, _created(service, now), _selector(spec.get("selector"))]


def _pv_cells(volume: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(volume), _status(volume)
    claim = spec.get("claimRef") or {}
    claim_cell = f"{claim.get('namespace')}/{claim.get('name')}" if claim.get("name") else ""
    return [_meta(volume).get("name"), (spec.get("capacity") or {}).get("storage", ""),
            _access_modes(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy") or "Retain", status.get("phase") or "",
            claim_cell, spec.get("storageClassName") or "",
            spec.get("volumeAttributesClassName") or "<unset>", status.get("reason") or "",
            _created(volume, now), spec.get("volumeMode") or "Filesystem"]


def _pvc_cells(claim: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(claim), _status(claim)
    phase = status.get("phase") or "Pending"
    bound = phase == "Bound"
    if _meta(claim).get("deletionTimestamp"):
        phase = "Terminating"
    storage_class = spec.get("storageClassName") or (_meta(claim).get("annotations") or {}).get(
        "volume.beta.kubernetes.io/storage-class", "")
    return [_meta(claim).get("name"), phase, spec.get("volumeName") or "",
            (status.get("capacity") or {}).get("storage", "") if bound else "",
            _access_modes(status.get("accessModes")) if bound else "", storage_class,
            spec.get("volumeAttributesClassName") or "<unset>", _created(claim, now),
            spec.get("volumeMode") or "Filesystem"]


def _deployment_cells(deployment: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(deployment), _status(deployment)
    names, images = _containers(spec.get("template"))
    return [_meta(deployment).get("name"),
            f"{status.get('readyReplicas') or 0}/{spec.get('replicas', 1)}",
            int(status.get("updatedReplicas") or 0), int(status.get("availableReplicas") or 0),
            _created(deployment, now), names, images, _label_selector(spec.get("selector"))]


def _replicaset_cells(replicaset: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(replicaset), _status(replicaset)
    names, images = _containers(spec.get("template"))
    return [_meta(replicaset).get("name"), int(spec.get("replicas", 1)),
            int(status.get("replicas") or 0), int(status.get("readyReplicas") or 0),
            _created(replicaset, now), names, images, _label_selector(spec.get("selector"))]


def _statefulset_cells(statefulset: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(statefulset), _status(statefulset)
    names, images = _containers(spec.get("template"))
    return [_meta(statefulset).get("name"),
            f"{status.get('readyReplicas') or 0}/{spec.get('replicas', 1)}",
            _created(statefulset, now), names, images]


def _daemonset_cells(daemonset: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(daemonset), _status(daemonset)
    template = spec.get("template") or {}
    names, images = _containers(template)
    return [_meta(daemonset).get("name"), int(status.get("desiredNumberScheduled") or 0),
            int(status.get("currentNumberScheduled") or 0), int(status.get("numberReady") or 0),
            int(status.get("updatedNumberScheduled") or 0),
            int(status.get("numberAvailable") or 0),
            _selector((template.get("spec") or {}).get("nodeSelector")),
            _created(daemonset, now), names, images, _label_selector(spec.get("selector"))]


def _job_cells(job: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(job), _status(job)
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    state = next((kind for kind in ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet",
                                    "Suspended") if conditions.get(kind) == "True"), None)
    if state is None:
        state = "Terminating" if _meta(job).get("deletionTimestamp") else "Running"
    completions = spec.get("completions")
    succeeded = int(status.get("succeeded") or 0)
    completions_cell = f"{succeeded}/{completions}" if completions is not None else (
        f"{succeeded}/1 of {spec.get('parallelism', 1)}")
    start, end = _parse_time(status.get("startTime")), _parse_time(status.get("completionTime"))
    duration = human_duration(((end or now) - start).total_seconds()) if start else ""
    names, images = _containers(spec.get("template"))
    return [_meta(job).get("name"), state, completions_cell, duration, _created(job, now),
            names, images, _label_selector(spec.get("selector"))]


def _cronjob_cells(cronjob: Obj, now: datetime) -> list[Any]:
    spec, status = _spec(cronjob), _status(cronjob)
    template = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
    names, images = _containers(template)
    last = status.get("lastScheduleTime")
    return [_meta(cronjob).get("name"), spec.get("schedule", ""),
            spec.get("timeZone") or NONE, "True" if spec.get("suspend") else "False",
            len(status.get("active") or []), age(last, now) if last else NONE,
            _created(cronjob, now), names, images,
            _label_selector(((spec.get("jobTemplate") or {}).get("spec") or {}).get("selector"))]


def _event_cells(event: Obj, now: datetime) -> list[Any]:
    involved = event.get("involvedObject") or {}
    last = event.get("lastTimestamp") or event.get("eventTime") or _meta(event).get(
        "creationTimestamp")
    source = event.get("source") or {}
    return [age(last, now), event.get("type", ""), event.get("reason", ""),
            f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
            involved.get("fieldPath", ""),
            ", ".join(str(v) for v in (source.get("component"), source.get("host")) if v),
            str(event.get("message", "")).strip(),
            age(event.get("firstTimestamp") or last, now), int(event.get("count") or 1),
            _meta(event).get("name")]


def _storageclass_cells(storage_class: Obj, now: datetime) -> list[Any]:
    name = str(_meta(storage_class).get("name"))
    annotations = _meta(storage_class).get("annotations") or {}
    if annotations.get("storageclass.kubernetes.io/is-default-class") == "true":
        name += " (default)"
    return [name, storage_class.get("provisioner", ""),
            storage_class.get("reclaimPolicy") or "Delete",
            storage_class.get("volumeBindingMode") or "Immediate",
            bool(storage_class.get("allowVolumeExpansion")), _created(storage_class, now)]


def _binding_cells(binding: Obj, now: datetime) -> list[Any]:
    ref = binding.get("roleRef") or {}
    subjects = binding.get("subjects") or []

    def of(kind: str) -> str:
        names = [(f"{s.get('namespace')}/{s.get('name')}" if kind == "ServiceAccount"
                  else str(s.get("name"))) for s in subjects if s.get("kind") == kind]
        return ", ".join(names)

    return [_meta(binding).get("name"), f"{ref.get('kind', '')}/{ref.get('name', '')}",
            _created(binding, now), of("User"), of("Group"), of("ServiceAccount")]


def _count(*sections: str) -> Callable[[Obj], int]:
    return lambda obj: sum(len(obj.get(section) or {}) for section in sections)


def _csidriver_cells(driver: Obj, now: datetime) -> list[Any]:
    spec = _spec(driver)
    tokens = ",".join(str(t.get("audience", "")) for t in spec.get("tokenRequests") or [])
    return [_meta(driver).get("name"), bool(spec.get("attachRequired", True)),
            bool(spec.get("podInfoOnMount")), bool(spec.get("storageCapacity")),
            tokens or "<unset>", bool(spec.get("requiresRepublish")),
            ",".join(spec.get("volumeLifecycleModes") or ["Persistent"]), _created(driver, now)]


def _simple(*cells: Callable[[Obj, datetime], Any]) -> Cells:
    return lambda obj, now: [_meta(obj).get("name"), *(cell(obj, now) for cell in cells)]


def _quota_cells(quota: Obj, now: datetime) -> list[Any]:
    hard, used = _status(quota).get("hard") or _spec(quota).get("hard") or {}, _status(
        quota).get("used") or {}
    requests = [f"{k}: {used.get(k, '0')}/{v}" for k, v in sorted(hard.items())
                if not k.startswith("limits.")]
    limits = [f"{k}: {used.get(k, '0')}/{v}" for k, v in sorted(hard.items())
              if k.startswith("limits.")]
    return [_meta(quota).get("name"), _created(quota, now), ", ".join(requests),
            ", ".join(limits)]


def _created_at(obj: Obj, _now: datetime) -> Any:
    return _meta(obj).get("creationTimestamp")

PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "nodes"): Printer(
        (NAME, Column("Status", description="The status of the node"),
         Column("Roles", description="The roles of the node"), AGE,
         Column("Version", description="Kubelet Version reported by the node."),
         _wide("Internal-IP", "List of internal IPs (if any)."),
         _wide("External-IP", "List of external IPs (if any)."),
         _wide("OS-Image", "OS Image reported by the node from /etc/os-release."),
         _wide("Kernel-Version", "Kernel Version reported by the node."),
         _wide("Container-Runtime", "Container Runtime Version reported by the node.")),
        _node_cells),
    ("", "pods"): Printer(
        (NAME, Column("Ready", description="The aggregate readiness state of this pod for "
                      "accepting traffic."),
         Column("Status", description="The aggregate status of the containers in this pod."),
         Column("Restarts", description="The number of times the containers in this pod have "
                "been restarted and when the last container in this pod has restarted."),
         AGE, _wide("IP", "IP address allocated to the pod."),
         _wide("Node", "Name of the node the pod is assigned to."),
         _wide("Nominated Node", "Name of the node where the pod may be scheduled."),
         _wide("Readiness Gates", "Pod readiness gates.")),
        _pod_cells),
    ("", "namespaces"): Printer(
        (NAME, Column("Status", description="The status of the namespace"), AGE),
        _simple(lambda ns, _: _status(ns).get("phase", ""), _created)),
    ("", "configmaps"): Printer(
        (NAME, Column("Data", type="integer", description="The number of keys."), AGE),
        _simple(lambda cm, _: _count("data", "binaryData")(cm), _created)),
    ("", "secrets"): Printer(
        (NAME, Column("Type", description="The type of the secret"),
         Column("Data", type="integer", description="The number of keys."), AGE),
        _simple(lambda s, _: s.get("type") or "Opaque", lambda s, _: _count("data")(s),
                _created)),
    ("", "serviceaccounts"): Printer(
        (NAME, Column("Secrets", type="integer", description="The number of secrets."), AGE),
        _simple(lambda sa, _: len(sa.get("secrets") or []), _created)),
    ("", "services"): Printer(
        (NAME, Column("Type", description="The type of the service."),
         Column("Cluster-IP", description="The cluster IP of the service."),
         Column("External-IP", description="The external IPs of the service."),
         Column("Port(s)", description="The ports exposed by the service."), AGE,
         _wide("Selector", "The label selector of the service.")),
        _service_cells),
    ("", "endpoints"): Printer(
        (NAME, Column("Endpoints", description="The endpoints."), AGE),
        _simple(lambda ep, _: ",".join(
            f"{a.get('ip')}:{p.get('port')}" for subset in ep.get("subsets") or []
            for a in subset.get("addresses") or [] for p in subset.get("ports") or [{}]
        ) or NONE, _created)),
    ("", "persistentvolumes"): Printer(
        (NAME, Column("Capacity"), Column("Access Modes"), Column("Reclaim Policy"),
         Column("Status"), Column("Claim"), Column("StorageClass"),
         Column("VolumeAttributesClass"), Column("Reason"), AGE, _wide("VolumeMode")),
        _pv_cells),
    ("", "persistentvolumeclaims"): Printer(
        (NAME, Column("Status"), Column("Volume"), Column("Capacity"), Column("Access Modes"),
         Column("StorageClass"), Column("VolumeAttributesClass"), AGE, _wide("VolumeMode")),
        _pvc_cells),
    ("", "events"): Printer(
        (Column("Last Seen"), Column("Type"), Column("Reason"), Column("Object"),
         _wide("Subobject"), _wide("Source"), Column("Message"), _wide("First Seen"),
         _wide("Count", type_="integer"), _wide("Name")),
        _event_cells),
    ("", "resourcequotas"): Printer(
        (NAME, AGE, Column("Request"), Column("Limit")), _quota_cells),
    ("", "limitranges"): Printer((NAME, CREATED_AT), _simple(_created_at)),
    ("apps", "deployments"): Printer(
        (NAME, Column("Ready"), Column("Up-to-date", type="integer"),
         Column("Available", type="integer"), AGE, _wide("Containers"), _wide("Images"),
         _wide("Selector")),
        _deployment_cells),
    ("apps", "replicasets"): Printer(
        (NAME, Column("Desired", type="integer"), Column("Current", type="integer"),
         Column("Ready", type="integer"), AGE, _wide("Containers"), _wide("Images"),
         _wide("Selector")),
        _replicaset_cells),
    ("apps", "statefulsets"): Printer(
        (NAME, Column("Ready"), AGE, _wide("Containers"), _wide("Images")),
        _statefulset_cells),
    ("apps", "daemonsets"): Printer(
        (NAME, Column("Desired", type="integer"), Column("Current", type="integer"),
         Column("Ready", type="integer"), Column("Up-to-date", type="integer"),
         Column("Available", type="integer"), Column("Node Selector"), AGE,
         _wide("Containers"), _wide("Images"), _wide("Selector")),
        _daemonset_cells),
    ("batch", "jobs"): Printer(
        (NAME, Column("Status"), Column("Completions"), Column("Duration"), AGE,
         _wide("Containers"), _wide("Images"), _wide("Selector")),
        _job_cells),
    ("batch", "cronjobs"): Printer(
        (NAME, Column("Schedule"), Column("Timezone"), Column("Suspend", type="boolean"),
         Column("Active", type="integer"), Column("Last Schedule"), AGE, _wide("Containers"),
         _wide("Images"), _wide("Selector")),
        _cronjob_cells),
    ("coordination.k8s.io", "leases"): Printer(
        (NAME, Column("Holder"), AGE),
        _simple(lambda lease, _: _spec(lease).get("holderIdentity", ""), _created)),
    ("storage.k8s.io", "storageclasses"): Printer(
        (NAME, Column("Provisioner"), Column("ReclaimPolicy"), Column("VolumeBindingMode"),
         Column("AllowVolumeExpansion", type="boolean"), AGE),
        _storageclass_cells),
    ("storage.k8s.io", "csidrivers"): Printer(
        (NAME, Column("AttachRequired", type="boolean"), Column("PodInfoOnMount", type="boolean"),
         Column("StorageCapacity", type="boolean"), Column("TokenRequests"),
         Column("RequiresRepublish", type="boolean"), Column("Modes"), AGE),
        _csidriver_cells),
    ("scheduling.k8s.io", "priorityclasses"): Printer(
        (NAME, Column("Value", type="integer"), Column("Global-Default", type="boolean"), AGE,
         Column("Preemption Policy")),
        _simple(lambda pc, _: int(pc.get("value") or 0),
                lambda pc, _: bool(pc.get("globalDefault")), _created,
                lambda pc, _: pc.get("preemptionPolicy") or "PreemptLowerPriority")),
    ("policy", "poddisruptionbudgets"): Printer(
        (NAME, Column("Min Available"), Column("Max Unavailable"),
         Column("Allowed Disruptions", type="integer"), AGE),
        _simple(lambda p, _: str(_spec(p).get("minAvailable", "N/A")),
                lambda p, _: str(_spec(p).get("maxUnavailable", "N/A")),
                lambda p, _: int(_status(p).get("disruptionsAllowed") or 0), _created)),
    ("rbac.authorization.k8s.io", "roles"): Printer((NAME, CREATED_AT), _simple(_created_at)),
    ("rbac.authorization.k8s.io", "clusterroles"): Printer((NAME, CREATED_AT),
                                                           _simple(_created_at)),
    ("rbac.authorization.k8s.io", "rolebindings"): Printer(
        (NAME, Column("Role"), AGE, _wide("Users"), _wide("Groups"), _wide("ServiceAccounts")),
        _binding_cells),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): Printer(
        (NAME, Column("Role"), AGE, _wide("Users"), _wide("Groups"), _wide("ServiceAccounts")),
        _binding_cells),
}

DEFAULT_PRINTER = Printer((NAME, CREATED_AT), _simple(_created_at))
