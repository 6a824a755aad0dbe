"""Workloads on one cluster: the checks before a submit, and the reads the routes answer with.

Every check reads the cluster as it is (EKS add-ons, HyperPod's DescribeCluster, task
governance's quotas and scheduler config, the Kubernetes API) and refuses with a 4xx that names
the field; nothing is submitted until all pass (docs/workloads.md, "Checks"). The submit itself
is an operation (`hypd.workloads.tasks`): the API only reads Kubernetes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hypd.aws import ec2 as ec2_api
from hypd.aws import eks as eks_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.capacity.service import CapacityReads, autoscaled_groups
from hypd.catalog.instance_types import ec2_instance_type
from hypd.clusters.models import Cluster
from hypd.clusters.workload_request import EndpointRequest, TrainingJobRequest
from hypd.errors import ConflictError, NotFoundError, ValidationError
from hypd.features.catalog import FEATURES
from hypd.features.state import FeatureClients
from hypd.features.teams import find_quota
from hypd.health.records import HealthStore, NodeHealth
from hypd.instance_groups.nodes import GROUP_LABEL, node_view
from hypd.kubernetes.apply import list_objects, read_object
from hypd.kubernetes.objects import ObjectExists
from hypd.workloads import views
from hypd.workloads.manifests import (
    ENDPOINT_KINDS,
    JOB_POD_LABEL,
    KINDS,
    TRAINING_JOB,
    Devices,
    Kind,
    namespace_of,
)

RUNNING_ADDON = frozenset({"ACTIVE", "DEGRADED", "UPDATING"})
"""An operator whose add-on is in one of these states reconciles its objects."""


class FeatureNotEnabled(ConflictError):
    code = "FeatureNotEnabled"


class WorkloadNotFound(NotFoundError):
    code = "WorkloadNotFound"


class WorkloadReads(CapacityReads, Protocol):
    """What the workload routes read (the API's services)."""

    def feature_clients(self) -> FeatureClients: ...

    def health_store(self) -> HealthStore: ...


@dataclass(frozen=True)
class Target:
    """The cluster a workload request is for, as the checks found it."""

    tag: str
    eks_name: str
    hyperpod_name: str
    region: str
    described: Mapping[str, Any]
    """HyperPod's DescribeCluster."""


def target(reads: WorkloadReads, record: Cluster) -> Target:
    """The cluster's EKS and HyperPod names, and its DescribeCluster.

    Raises:
        ConflictError: the cluster has no HyperPod cluster (yet, or any more).
    """
    eks_name = record.eks_name
    hyperpod_name = record.hyperpod_name
    described = sagemaker_api.find_cluster(reads.sagemaker_client(), hyperpod_name)
    if described is None:
        raise ConflictError(
            f"cluster {record.tag} has no HyperPod cluster {hyperpod_name}: workloads run on "
            "its nodes", details={"tag": record.tag})
    arn = str(described.get("ClusterArn") or "")
    region = arn.split(":")[3] if arn.count(":") >= 5 else ""
    return Target(record.tag, eks_name, hyperpod_name, region, described)


def kube(reads: WorkloadReads, where: Target) -> Any:
    return reads.feature_clients().kubernetes(where.eks_name)


# ---------------------------------------------------------------------------- checks
def require_operator(reads: WorkloadReads, where: Target, kind: Kind) -> None:
    """The operator that reconciles `kind` is installed and running.

    Raises:
        FeatureNotEnabled: its add-on is absent or not running (409 naming the feature).
    """
    feature = FEATURES[kind.feature]
    eks = reads.feature_clients().client("eks")
    addon = eks_api.find_addon(eks, where.eks_name, str(feature.addon))
    status = None if addon is None else str(addon.get("status"))
    if status not in RUNNING_ADDON:
        state = "off" if status is None else f"not running (its add-on is {status})"
        raise FeatureNotEnabled(
            f"the {feature.title} is {state} on cluster {where.tag}: {kind.kind} objects need "
            f"it; turn it on with PATCH /clusters/{where.tag}/features "
            f'{{"{feature.name}": {{"enabled": true}}}}',
            details={"feature": feature.name, "addon": feature.addon, "status": status},
        )


def _groups_of_type(where: Target, instance_type: str) -> list[Mapping[str, Any]]:
    return [g for g in where.described.get("InstanceGroups") or []
            if g.get("InstanceType") == instance_type and g.get("Status") != "Deleting"]


def check_capacity(reads: WorkloadReads, where: Target, instance_type: str, count: int,
                   count_field: str) -> None:
    """`instance_type` is one of the cluster's groups' types and `count` nodes of it fit
    (their current count, unless managed Karpenter scales one of them).

    Raises:
        ValidationError: naming ``instanceType`` or `count_field`.
    """
    groups = _groups_of_type(where, instance_type)
    if not groups:
        types = sorted({str(g.get("InstanceType")) for g in
                        where.described.get("InstanceGroups") or [] if g.get("InstanceType")})
        raise ValidationError(
            f"instanceType: {instance_type} is not the instance type of any instance group of "
            f"cluster {where.tag} (its groups have {', '.join(types) or 'no types'}); add a "
            "group of that type first", details={"field": "instanceType"})
    scaled = autoscaled_groups(reads, where.tag) & {str(g["InstanceGroupName"]) for g in groups}
    if scaled:
        return
    nodes = sum(int(g.get("CurrentCount") or 0) for g in groups)
    if count > nodes:
        names = ", ".join(str(g["InstanceGroupName"]) for g in groups)
        raise ValidationError(
            f"{count_field}: {count} nodes of {instance_type} asked, the cluster's groups of "
            f"that type ({names}) have {nodes}; scale a group up or turn autoscaling on for it",
            details={"field": count_field, "available": nodes})


def check_team(reads: WorkloadReads, where: Target, team: str | None,
               priority: str | None) -> None:
    """The team has a compute quota; the priority is one of the scheduler config's classes.

    Raises:
        FeatureNotEnabled: task governance is off (409).
        ValidationError: naming ``team`` or ``priority``.
    """
    if team is None:
        return
    governance = FEATURES["taskGovernance"]
    addon = eks_api.find_addon(reads.feature_clients().client("eks"), where.eks_name,
                               str(governance.addon))
    if addon is None:
        raise FeatureNotEnabled(
            f"team {team}: task governance is off on cluster {where.tag}; turn it on with "
            f'PATCH /clusters/{where.tag}/features {{"taskGovernance": {{"enabled": true}}}} '
            "and create the team with PUT /clusters/{tag}/teams/{team}",
            details={"feature": "taskGovernance", "field": "team"})
    sagemaker = reads.sagemaker_client()
    arn = str(where.described["ClusterArn"])
    if find_quota(sagemaker, arn, team) is None:
        raise ValidationError(
            f"team: cluster {where.tag} has no team {team} (create it with PUT "
            f"/clusters/{where.tag}/teams/{team})", details={"field": "team"})
    if priority is None:
        return
    classes = priority_classes(sagemaker, arn)
    if priority not in classes:
        raise ValidationError(
            f"priority: {priority} is not a priority class of cluster {where.tag}'s scheduler "
            f"config ({', '.join(classes) or 'none'})", details={"field": "priority"})


def priority_classes(sagemaker: Any, cluster_arn: str) -> list[str]:
    configs = sagemaker_api.list_scheduler_configs(sagemaker, cluster_arn)
    if not configs:
        return []
    config = sagemaker_api.describe_scheduler_config(
        sagemaker, str(configs[0]["ClusterSchedulerConfigId"])) or {}
    return [str(c["Name"]) for c in
            (config.get("SchedulerConfig") or {}).get("PriorityClasses") or []]


def check_claims(api: Any, namespace: str, claims: Sequence[str]) -> None:
    """Raises ValidationError naming ``volumes[i].claim`` for a claim not in `namespace`."""
    for index, claim in enumerate(claims):
        if read_object(api, "v1", "PersistentVolumeClaim", claim, namespace) is None:
            raise ValidationError(
                f"volumes[{index}].claim: there is no PersistentVolumeClaim {claim} in "
                f"namespace {namespace} (the cluster's shared storage is hypd-shared in "
                "namespace default)", details={"field": f"volumes[{index}].claim"})


def check_name_free(api: Any, kinds: Iterable[Kind], namespace: str, name: str) -> None:
    """Raises ObjectExists (409 WorkloadExists, as the submit stage's own check) naming
    ``name`` when an object of one of `kinds` has it."""
    for kind in kinds:
        if read_object(api, kind.api_version, kind.kind, name, namespace) is not None:
            raise ObjectExists(
                f"name: a {kind.kind} named {name} exists already in namespace {namespace}; "
                "choose another name or delete it first",
                details={"field": "name", "kind": kind.kind, "namespace": namespace})


def devices(ec2: Any, instance_type: str) -> Devices:
    """The accelerators and EFA interfaces a pod asks for to get all of its node's."""
    ec2_type = ec2_instance_type(instance_type)
    fact = ec2_api.describe_instance_types(ec2, [ec2_type]).get(ec2_type)
    if fact is None:
        return Devices()
    return Devices(
        gpus=sum(g.count for g in fact.gpus),
        neuron_devices=sum(a.count for a in fact.neuron_devices),
        efa_interfaces=(fact.maximum_efa_interfaces or 0) if fact.efa_supported else 0,
    )


def check_job(reads: WorkloadReads, where: Target, request: TrainingJobRequest) -> Devices:
    """Every check of a training job, in the order a user fixes them; the job's devices."""
    require_operator(reads, where, TRAINING_JOB)
    check_capacity(reads, where, request.instance_type, request.node_count, "nodeCount")
    check_team(reads, where, request.team, request.priority)
    api = kube(reads, where)
    namespace = namespace_of(request.team)
    check_name_free(api, [TRAINING_JOB], namespace, request.name)
    check_claims(api, namespace, [v.claim for v in request.volumes])
    return devices(reads.ec2_client(), request.instance_type)


def check_endpoint(reads: WorkloadReads, where: Target, request: EndpointRequest) -> None:
    require_operator(reads, where, ENDPOINT_KINDS[0])
    check_capacity(reads, where, request.instance_type, request.replicas, "replicas")
    check_team(reads, where, request.team, None)
    check_name_free(kube(reads, where), ENDPOINT_KINDS, namespace_of(request.team), request.name)


# ---------------------------------------------------------------------------- reads
def find(api: Any, kinds: Iterable[Kind], name: str, namespace: str | None
         ) -> dict[str, Any]:
    """The one object of `kinds` named `name` (in `namespace`, or in any).

    Raises:
        WorkloadNotFound: none.
        ConflictError: it is in more than one namespace and none was given.
    """
    found: list[dict[str, Any]] = []
    for kind in kinds:
        if namespace is not None:
            obj = read_object(api, kind.api_version, kind.kind, name, namespace)
            found += [obj] if obj is not None else []
        else:
            found += list_objects(api, kind.api_version, kind.kind,
                                  fields=f"metadata.name={name}")
    if not found:
        what = " or ".join(k.kind for k in kinds)
        where = f"namespace {namespace}" if namespace else "any namespace"
        raise WorkloadNotFound(f"there is no {what} {name} in {where}",
                               details={"name": name, "namespace": namespace})
    if len(found) > 1:
        spaces = sorted(str((o.get("metadata") or {}).get("namespace")) for o in found)
        raise ConflictError(
            f"{name} is in namespaces {', '.join(spaces)}: name one with ?namespace=",
            details={"name": name, "namespaces": spaces, "field": "namespace"})
    return found[0]


def list_kinds(api: Any, kinds: Iterable[Kind]) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for kind in kinds:
        objects += list_objects(api, kind.api_version, kind.kind)
    return sorted(objects, key=lambda o: (str(o["metadata"].get("namespace")),
                                          str(o["metadata"].get("name"))))


def job_pods(api: Any, namespace: str, name: str) -> list[dict[str, Any]]:
    return list_objects(api, "v1", "Pod", namespace, labels=f"{JOB_POD_LABEL}={name}")


def read_job(api: Any, health: Callable[[], HealthStore], tag: str, name: str,
             namespace: str | None) -> dict[str, Any]:
    """One training job's view: its pods, events, and the health of the nodes it ran on."""
    job = find(api, [TRAINING_JOB], name, namespace)
    namespace = str(job["metadata"]["namespace"])
    pods = job_pods(api, namespace, name)
    events = list_objects(api, "v1", "Event", namespace)
    records: dict[str, NodeHealth] = {}
    store = health()
    nodes = {n for _t, n in views.scheduled_nodes(events)} | {
        str((p.get("spec") or {}).get("nodeName")) for p in pods
        if (p.get("spec") or {}).get("nodeName")}
    for node in nodes:
        node_id = views.instance_id(node)
        record = store.node(tag, node_id) if node_id else None
        if record is not None and node_id:
            records[node_id] = record
    # each node's own label names its group (a health event does not): one list of the
    # HyperPod nodes, not a read per node; a node replaced since is gone, and its health
    # record is all that may say
    groups = {view.name: view.group for view in (
        node_view(n) for n in list_objects(api, "v1", "Node", labels=GROUP_LABEL))
        if view.name in nodes and view.group}
    return views.job_view(job, pods, events, records, groups)


def kind_of(obj: Mapping[str, Any]) -> Kind:
    return KINDS[str(obj.get("kind"))]
