"""What exists for a cluster tag, read from AWS and Kubernetes (never from what hypd last wrote):
the `Inventory` a teardown plan is made from (docs/teardown.md).

What is hypd's is told by `hypd.teardown.finders`; whatever else the inventory sees is kept,
with the reason.
"""

from __future__ import annotations

from typing import Any

from hypd.aws import eks as eks_api
from hypd.aws import logs as logs_api
from hypd.aws import sagemaker as sagemaker_api
from hypd.clusters.models import HYPD_TAG_KEY, Cluster, ClusterSource, deletion_refusal
from hypd.create.storage import CLAIM_NAME
from hypd.errors import HypdError
from hypd.features.catalog import INSTALLED_BY_FEATURES
from hypd.features.state import FeatureClients
from hypd.features.tls_bucket import tls_bucket_name
from hypd.kubernetes.apply import list_objects
from hypd.teardown import finders
from hypd.teardown.plan import Blocker, Inventory, Resource, Workload, first_of_each
from hypd.workloads import views
from hypd.workloads.cluster import list_kinds
from hypd.workloads.manifests import ENDPOINT_KINDS, TRAINING_JOB

DEPLOYMENT_ROLE = "the deployment's role: every cluster hypd creates uses it"
HYPERPOD_LOGS = (
    "HyperPod's logs of the cluster's nodes (lifecycle scripts): HyperPod made it and never "
    "deletes it; kept for what went wrong, with its retention ({retention}); "
    "aws logs delete-log-group --log-group-name {name} deletes it")


def hyperpod_log_groups(logs: Any, hyperpod_name: str) -> list[Resource]:
    """The log groups HyperPod wrote the cluster's nodes' lifecycle-script logs to,
    ``/aws/sagemaker/Clusters/<name>/<id>``: one per cluster of that name there was."""
    return [Resource("LogGroup", str(g["logGroupName"]), g.get("arn"),
                     {"retentionDays": g["retentionInDays"]} if g.get("retentionInDays") else {})
            for g in logs_api.log_groups(logs, f"/aws/sagemaker/Clusters/{hyperpod_name}/")]


def _log_group_kept(group: Resource) -> tuple[Resource, str]:
    days = group.detail.get("retentionDays")
    retention = f"{days} days" if days else "never expires"
    return group, HYPERPOD_LOGS.format(retention=retention, name=group.name)


def _role(arn: str) -> Resource:
    return Resource("IamRole", arn.rsplit("/", 1)[-1], arn)


def read(clients: FeatureClients, record: Cluster,
         running_operation: dict[str, Any] | None = None) -> Inventory:
    """The inventory of `record`'s cluster."""
    tag = record.tag
    kept: list[tuple[Resource, str]] = []
    sagemaker, eks = clients.client("sagemaker"), clients.client("eks")
    tls_buckets = _made_tls_buckets(clients.client("s3"), record)

    hyperpod = None
    quotas: tuple[Resource, ...] = ()
    configs: tuple[Resource, ...] = ()
    described = sagemaker_api.find_cluster(sagemaker, record.hyperpod_name)
    if described is not None:
        arn = str(described["ClusterArn"])
        found = Resource("HyperPodCluster", record.hyperpod_name, arn,
                         {"status": described.get("ClusterStatus")})
        if finders.tagged(sagemaker_api.list_tags(sagemaker, arn), tag):
            hyperpod = found
            quotas = tuple(finders.quotas(sagemaker, arn))
            configs = tuple(finders.scheduler_configs(sagemaker, arn))
            roles = {str(g["ExecutionRole"]) for g in described.get("InstanceGroups") or []
                     if g.get("ExecutionRole")}
            kept += [(_role(arn), DEPLOYMENT_ROLE) for arn in sorted(roles)]
        else:
            kept.append((found, f"not tagged {HYPD_TAG_KEY}={tag}: hypd did not create it"))

    eks_resource = None
    addons: list[Resource] = []
    associations: list[Resource] = []
    workloads: list[Workload] = []
    kube_error = None
    cluster = eks_api.find_cluster(eks, record.eks_name)
    if cluster is not None:
        found = Resource("EksCluster", record.eks_name, cluster.get("arn"),
                         {"status": cluster.get("status")})
        if finders.tagged(cluster.get("tags") or {}, tag):
            eks_resource = found
            if cluster.get("roleArn"):
                kept.append((_role(str(cluster["roleArn"])), DEPLOYMENT_ROLE))
            addons = finders.addons(eks, record.eks_name)
            kept += [(Resource("S3Bucket", str(a.detail["tlsCertificateBucket"])),
                      "the inference operator's TLS certificate bucket: the user's, never "
                      "deleted") for a in addons if a.detail.get("tlsCertificateBucket")
                     not in (None, *(b.name for b in tls_buckets))]
            associations = finders.associations(eks, record.eks_name)
            if cluster.get("status") == "ACTIVE":
                try:
                    workloads, bucket = _kubernetes(clients, record.eks_name)
                except HypdError as exc:
                    kube_error = str(exc)
                else:
                    if bucket:
                        kept.append((Resource("S3Bucket", bucket),
                                     "the cluster's storage: the user's data, never deleted"))
        else:
            kept.append((found, f"not tagged {HYPD_TAG_KEY}={tag}: hypd did not create it"))

    kept += [_log_group_kept(g) for g in hyperpod_log_groups(clients.client("logs"),
                                                             record.hyperpod_name)]

    subnets, stack = finders.network_of(
        clients.client("cloudformation"), clients.client("ec2"), tag,
        record.eks.vpc_id if record.eks else None)
    iam = clients.client("iam")
    workspace = finders.tagged_workspace(clients.client("amp"), tag)
    providers = finders.tagged_oidc_providers(iam, tag)
    return Inventory(
        tag=tag,
        created_by_hypd=record.source == ClusterSource.CREATED,
        protected=record.protection,
        status=record.status.value if record.status else None,
        workloads=tuple(workloads),
        quotas=quotas,
        scheduler_configs=configs,
        hyperpod=hyperpod,
        addons=tuple(addons),
        associations=tuple(associations),
        eks=eks_resource,
        file_systems=tuple(finders.tagged_file_systems(clients.client("fsx"), tag)),
        subnets=tuple(subnets),
        stack=stack,
        roles=tuple(finders.cluster_roles(iam, tag)),
        oidc_providers=tuple(providers),
        workspaces=(workspace,) if workspace else (),
        tls_buckets=tls_buckets,
        # One bucket may be both the storage and the TLS bucket.
        kept=tuple(first_of_each(kept, lambda k: k[0].key)),
        kubernetes_error=kube_error,
        running_operation=running_operation,
        held=_held(record),
    )


def _made_tls_buckets(s3: Any, record: Cluster) -> tuple[Resource, ...]:
    """The TLS bucket hypd made for the cluster's inference operator, if it is there: named
    for the account and Region of the record's anchor (where hypd made the cluster)."""
    _arn, partition, _service, region, account, _rest = record.anchor_arn.split(":", 5)
    name = tls_bucket_name(record.tag, account, region)
    if not finders.made_tls_bucket(s3, record.tag, name):
        return ()
    return (Resource("S3Bucket", name, f"arn:{partition}:s3:::{name}",
                     {"installedBy": INSTALLED_BY_FEATURES}),)


def _held(record: Cluster) -> Blocker | None:
    """The blocker of a cluster deleted or being deleted (`deletion_refusal`)."""
    refusal = deletion_refusal(record)
    return Blocker(refusal.code, refusal.message, refusal.details) if refusal else None


def _kubernetes(clients: FeatureClients, eks_name: str) -> tuple[list[Workload], str | None]:
    """The cluster's workloads, and the bucket its shared claim mounts (None: no S3 claim)."""
    api = clients.kubernetes(eks_name)
    workloads = []
    for obj in list_kinds(api, [TRAINING_JOB, *ENDPOINT_KINDS]):
        meta = obj["metadata"]
        if obj.get("kind") == TRAINING_JOB.kind:
            state, endpoint = views.phase(obj), None
        else:
            view = views.endpoint_view(obj)
            state, endpoint = view["state"], view.get("sageMaker")
        workloads.append(Workload(str(obj.get("kind")), str(meta.get("namespace")),
                                  str(meta.get("name")), state,
                                  sagemaker_endpoint=endpoint_resource(endpoint)))
    bucket = None
    for volume in list_objects(api, "v1", "PersistentVolume"):
        claim = (volume.get("spec") or {}).get("claimRef") or {}
        attributes = ((volume.get("spec") or {}).get("csi") or {}).get("volumeAttributes") or {}
        if claim.get("name") == CLAIM_NAME and attributes.get("bucketName"):
            bucket = str(attributes["bucketName"])
    return workloads, bucket


def endpoint_resource(sagemaker: dict[str, Any] | None) -> Resource | None:
    """The SageMaker endpoint an inference object registered (it goes with the object), or
    None: none named, or not registered yet."""
    if not sagemaker or not sagemaker.get("endpointArn"):
        return None
    return Resource("SageMakerEndpoint", str(sagemaker["endpointName"]),
                    str(sagemaker["endpointArn"]))

